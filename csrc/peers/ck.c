/* ck.c - Concurrency Kit ck_ring (SPSC) behind the adapter interface,
 * and its inline twin.
 *
 * At its best for 32-byte messages: messages travel by value through the typed
 * interface -- CK_RING_PROTOTYPE makes ck_ring_enqueue_spsc_msg32 /
 * ck_ring_dequeue_spsc_msg32 over a buffer of 32-byte structs, the element
 * size a compile-time constant -- as ck's own regressions (ck_ring/validate,
 * ck_ring/benchmark) call enqueue / dequeue one entry at a time.  ck_ring has
 * no burst call for SPSC, and its capacity is a run-time power of two.  The
 * orderings are ck_ring's own (ck_pr fences). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <ck_ring.h>

#include "adapters/pyq_adapter.h"
#include "adapters/twin_pvt.h"

struct msg32 {
    unsigned char b[PYQ_ADAPTER_MSG_SIZE];
};

CK_RING_PROTOTYPE(msg32, msg32)

struct ck_handle {
    ck_ring_t ring;       /* consumer and producer counters on their own lines (ck layout) */
    struct msg32 *slots;  /* ring.size slots, mmap()ed */
    size_t map_bytes;
};

static int ck_create(const pyq_adapter_params_t *p, void **handle)
{
    struct ck_handle *c;
    uint64_t want = p->capacity_bytes / sizeof(struct msg32);
    unsigned int size = 2;

    if (p->msg_size != sizeof(struct msg32) || want < 2)
        return PYQ_EINVAL;
    /* ck_ring needs a power of two: the largest that fits the budget (<= 2^31). */
    while ((uint64_t)size * 2 <= want && size < (1u << 31))
        size *= 2;
    if (posix_memalign((void **)&c, 64, sizeof *c) != 0)
        return PYQ_ENOMEM;
    memset(c, 0, sizeof *c);
    c->map_bytes = (size_t)size * sizeof(struct msg32);
    c->slots = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->slots == MAP_FAILED) {
        free(c);
        return PYQ_ENOMEM;
    }
    ck_ring_init(&c->ring, size);
    *handle = c;
    return 0;
}

static void ck_destroy(void *h)
{
    struct ck_handle *c = h;

    if (c) {
        munmap(c->slots, c->map_bytes);
        free(c);
    }
}

static uint64_t ck_capacity(void *h)
{
    /* One slot stays empty to tell full from empty. */
    return ck_ring_capacity(&((struct ck_handle *)h)->ring) - 1;
}

static int ck_try_write(void *h, const void *msg, uint32_t len)
{
    struct ck_handle *c = h;
    struct msg32 m;

    memcpy(&m, msg, sizeof m);
    return ck_ring_enqueue_spsc_msg32(&c->ring, c->slots, &m) ? 0 : PYQ_EAGAIN;
}

static void ck_flush(void *h)
{
    (void)h; /* each enqueue is visible when it returns */
}

static int64_t ck_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct ck_handle *c = h;
    struct msg32 m;
    uint64_t n = 0;

    while (n < max && ck_ring_dequeue_spsc_msg32(&c->ring, c->slots, &m)) {
        int rc;

        n++;
        rc = fn(ctx, &m, sizeof m);
        if (rc != 0)
            return rc < 0 ? rc : (int64_t)n;
    }
    return (int64_t)n;
}

/* The per-message rows' reader: one ck_ring_dequeue_spsc_msg32 per message, as
 * ck_poll, straight into the reader's array (no callback per message). */
static int64_t ck_read_each(void *h, void *out, uint32_t max, uint32_t len)
{
    struct ck_handle *c = h;
    struct msg32 *m = out;
    uint32_t n = 0;

    (void)len;
    while (n < max && ck_ring_dequeue_spsc_msg32(&c->ring, c->slots, &m[n]))
        n++;
    return n;
}

/* The per-message rows' streaming writer: ck_try_write in a loop (write_each). */
PYQ_TWIN_WRITE_EACH(ck, ck_try_write)

/* The round trip's receive: ck_poll(max 1) spun on in this file (read_spin). */
PYQ_TWIN_READ_SPIN(ck, ck_poll)

static const pyq_adapter_t adapter = {
    .abi = PYQ_ADAPTER_ABI,
    .name = "ck",
    .create = ck_create,
    .destroy = ck_destroy,
    .capacity = ck_capacity,
    .try_write = ck_try_write,
    .try_write_burst = NULL,
    .flush = ck_flush,
    .poll = ck_poll,
    .wait_readable = NULL,
    .read_burst = NULL,
    .read_each = ck_read_each,
    .write_each = ck_write_each,
    .read_spin = ck_read_spin,
};

__attribute__((visibility("default"))) const pyq_adapter_t *pyq_peer_adapter(void)
{
    return &adapter;
}

/* The twin: the operations above called directly, inlined (adapters/twin_pvt.h). */
PYQ_TWIN_DEFINE_EACH(ck, adapter, ck_try_write, NULL, ck_write_each, ck_poll, NULL, ck_read_each,
                     ck_flush)

static const pyq_twin_t twins[] = {
    {"ck", "ck_ring_enqueue_spsc_msg32 / ck_ring_dequeue_spsc_msg32: typed, by value, one "
     "entry per call (ck has no SPSC burst)", 0, 0, ck_twin_throughput, ck_twin_roundtrip},
};

PYQ_TWIN_PEER_TABLE(twins)
