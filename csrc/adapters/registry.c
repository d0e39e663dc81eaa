/* registry.c - finding an adapter by name: built-ins, or a peer library dlopen()ed
 * from the peer folder (see pyq_adapter.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/private.h"
#include "adapters/pyq_adapter.h"

extern PYQ_PRIVATE const pyq_adapter_t pyq_adapter_pyqueue;
extern PYQ_PRIVATE const pyq_adapter_t pyq_adapter_mutex;
extern PYQ_PRIVATE const pyq_adapter_t pyq_adapter_ring_floor;
extern PYQ_PRIVATE const pyq_adapter_t pyq_adapter_record_ring;

/* The built-in adapters, in the order pyq_adapter_builtin() lists them; each
 * one's name is its own .name, so the names are written once, in its file. */
static const struct {
    const pyq_adapter_t *adapter;
    int yardstick; /* measured beside the peers, never one of them */
} builtins[] = {
    {&pyq_adapter_pyqueue, 0},
    {&pyq_adapter_mutex, 0},
    {&pyq_adapter_ring_floor, 1},
    {&pyq_adapter_record_ring, 1},
};

#define PEERS_MAX 16

/* Loaded peers stay loaded: their code may run in threads we do not track. */
static struct {
    char path[4096];
    const pyq_adapter_t *adapter;
} peers[PEERS_MAX];
static int npeers;
static pthread_mutex_t peers_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local char last_error[1024];

/* Record why pyq_adapter_get() failed and return code. */
static int FAIL(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap); /* truncation is fine */
    va_end(ap);
    return code;
}

void pyq_adapter_params_init(pyq_adapter_params_t *p)
{
    memset(p, 0, sizeof *p);
    pyq_config_init(&p->queue);
    p->msg_size = PYQ_ADAPTER_MSG_SIZE;
    p->capacity_bytes = (uint64_t)p->queue.block_size *
                        ((uint64_t)p->queue.hot_blocks + p->queue.spill_blocks);
}

const char *pyq_adapter_error(void)
{
    return last_error;
}

const char *pyq_adapter_builtin(int i, int *yardstick)
{
    if (i < 0 || (size_t)i >= sizeof builtins / sizeof builtins[0])
        return NULL;
    if (yardstick)
        *yardstick = builtins[i].yardstick;
    return builtins[i].adapter->name;
}

static int valid_name(const char *name)
{
    size_t n = 0;

    for (; name[n]; n++) {
        char c = name[n];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return n >= 1 && n <= PYQ_ADAPTER_NAME_MAX;
}

/* Called with peers_lock held. */
static int load_peer(const char *name, const char *path, const pyq_adapter_t **out)
{
    void *lib;
    pyq_peer_entry_fn entry;
    const pyq_adapter_t *a;

    for (int i = 0; i < npeers; i++)
        if (strcmp(peers[i].path, path) == 0) {
            *out = peers[i].adapter;
            return 0;
        }
    if (npeers == PEERS_MAX)
        return FAIL(PYQ_ENOMEM, "too many peer libraries loaded (%d)", PEERS_MAX);
    if (access(path, F_OK) != 0)
        return FAIL(PYQ_ENOTSUP, "peer '%s' is not built: no %s", name, path);
    dlerror();
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return FAIL(PYQ_ENOTSUP, "peer '%s' does not load: %s", name, dlerror());
    *(void **)&entry = dlsym(lib, "pyq_peer_adapter");
    if (!entry) {
        const char *why = dlerror();
        FAIL(PYQ_ENOTSUP, "peer '%s': %s", name, why ? why : "pyq_peer_adapter is NULL");
        dlclose(lib);
        return PYQ_ENOTSUP;
    }
    a = entry();
    if (!a || a->abi != PYQ_ADAPTER_ABI || !a->create || !a->destroy || !a->capacity ||
        !a->try_write || !a->flush || !a->poll) {
        FAIL(PYQ_ENOTSUP, "peer '%s' in %s was built for adapter ABI %u, this is %d "
             "(or is incomplete): rebuild pyqueue", name, path, a ? a->abi : 0u, PYQ_ADAPTER_ABI);
        dlclose(lib);
        return PYQ_ENOTSUP;
    }
    if (!a->name || strcmp(a->name, name) != 0) {
        FAIL(PYQ_ENOTSUP, "%s names itself '%s', not '%s'", path, a->name ? a->name : "", name);
        dlclose(lib);
        return PYQ_ENOTSUP;
    }
    snprintf(peers[npeers].path, sizeof peers[npeers].path, "%s", path);
    peers[npeers].adapter = a;
    npeers++;
    *out = a;
    return 0;
}

int pyq_adapter_get(const char *name, const char *peer_dir, const pyq_adapter_t **out)
{
    char path[4096];
    int rc;

    last_error[0] = '\0';
    if (!name || !out)
        return FAIL(PYQ_EINVAL, "name and out must not be NULL");
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(name, builtins[i].adapter->name) == 0) {
            *out = builtins[i].adapter;
            return 0;
        }
    if (!valid_name(name))
        return FAIL(PYQ_EINVAL, "'%s' is not an adapter name ([a-z0-9_]{1,%d})", name,
                    PYQ_ADAPTER_NAME_MAX);
    if (!peer_dir)
        return FAIL(PYQ_EINVAL, "peer '%s' needs the peer folder", name);
    if ((size_t)snprintf(path, sizeof path, "%s/libpyq_peer_%s.so", peer_dir, name) >= sizeof path)
        return FAIL(PYQ_EINVAL, "peer folder path too long");
    pthread_mutex_lock(&peers_lock);
    rc = load_peer(name, path, out);
    pthread_mutex_unlock(&peers_lock);
    return rc;
}
