/* twin_registry.c - finding the twins of an adapter (pyq_twin.h): the built-in
 * ring_floor, record_ring and mutex carry theirs; a peer's are in the library its adapter
 * came from, found through the adapter's own address so the two cannot come
 * from different builds. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common/private.h"
#include "adapters/pyq_twin.h"

extern PYQ_PRIVATE const pyq_twin_table_t pyq_twin_ring_floor;
extern PYQ_PRIVATE const pyq_twin_table_t pyq_twin_record_ring;
extern PYQ_PRIVATE const pyq_twin_table_t pyq_twin_mutex;

static _Thread_local char last_error[1024];

const char *pyq_twin_error(void)
{
    return last_error;
}

/* The pyq_peer_twin() table of the shared object that holds adapter a. */
static int peer_table(const char *name, const pyq_adapter_t *a, const pyq_twin_table_t **out)
{
    Dl_info info;
    void *lib;
    pyq_peer_twin_fn entry;
    const pyq_twin_table_t *t;

    if (!dladdr(a, &info) || !info.dli_fname) {
        snprintf(last_error, sizeof last_error, "peer '%s': its library is not known", name);
        return PYQ_ENOTSUP;
    }
    /* RTLD_NOLOAD: pyq_adapter_get() loaded it and keeps it open. */
    lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) {
        snprintf(last_error, sizeof last_error, "peer '%s': %s", name, dlerror());
        return PYQ_ENOTSUP;
    }
    *(void **)&entry = dlsym(lib, "pyq_peer_twin");
    dlclose(lib); /* drops only the reference NOLOAD took */
    if (!entry) {
        snprintf(last_error, sizeof last_error, "peer '%s' in %s has no twins (pyq_peer_twin): "
                 "rebuild pyqueue", name, info.dli_fname);
        return PYQ_ENOTSUP;
    }
    t = entry();
    if (!t || t->abi != PYQ_TWIN_ABI) {
        snprintf(last_error, sizeof last_error, "peer '%s' in %s has twin ABI %u, this is %d: "
                 "rebuild pyqueue", name, info.dli_fname, t ? t->abi : 0u, PYQ_TWIN_ABI);
        return PYQ_ENOTSUP;
    }
    *out = t;
    return 0;
}

int pyq_twin_get(const char *name, const char *peer_dir, const pyq_twin_table_t **out)
{
    const pyq_adapter_t *a;
    int rc;

    last_error[0] = '\0';
    if (!name || !out) {
        snprintf(last_error, sizeof last_error, "name and out must not be NULL");
        return PYQ_EINVAL;
    }
    if (strcmp(name, "ring_floor") == 0) {
        *out = &pyq_twin_ring_floor;
        return 0;
    }
    if (strcmp(name, "record_ring") == 0) {
        *out = &pyq_twin_record_ring;
        return 0;
    }
    if (strcmp(name, "mutex") == 0) {
        *out = &pyq_twin_mutex;
        return 0;
    }
    if (strcmp(name, "pyqueue") == 0) {
        snprintf(last_error, sizeof last_error, "pyqueue's twins are pyq_twin_bench()");
        return PYQ_ENOTSUP;
    }
    if ((rc = pyq_adapter_get(name, peer_dir, &a)) != 0) {
        snprintf(last_error, sizeof last_error, "%s", pyq_adapter_error());
        return rc;
    }
    return peer_table(name, a, out);
}
