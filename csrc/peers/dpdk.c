/* dpdk.c - DPDK rte_ring (single producer / single consumer, 32-byte elements)
 * behind the adapter interface, and its inline twin.
 *
 * No EAL: rte_ring_create_elem() needs EAL memzones, but a ring is just memory,
 * so we size it with rte_ring_get_memsize_elem(), map it ourselves and set it up
 * with rte_ring_init(), which only fills the header (size, mask, sync types).
 * The *_elem functions take the element size per call, so the same ring carries
 * 32-byte elements.  Orderings are rte_ring's own.
 *
 * At its best, as DPDK's ring_perf_autotest (app/test/test_ring_perf.c) runs it:
 * the elem API with RING_F_SP_ENQ | RING_F_SC_DEQ, the element size a
 * compile-time constant at the call (that test passes a literal esize through
 * __rte_always_inline helpers, so the inline copy loops specialise on it: here
 * every call has a branch for the 32-byte message the rows carry), and bursts
 * of 32 (its MAX_BURST): the reader always dequeues bursts of up to 32, the
 * writer enqueues one element per call or, for the burst rows, bursts through
 * rte_ring_sp_enqueue_burst_elem, and those rows' reader dequeues straight into
 * its own array (read_burst), with no callback per element.  No read_each: the
 * per-message rows' poll already dequeues 32 per library call, and this ring's
 * writer reads the reader's index on every enqueue, so its streaming rate
 * follows the reader's pace: a faster driver reader than the twin's would
 * move the driver's writer away from its twin's (DESIGN §8.4).  The ring's
 * size is a run-time power of two (rte_ring has no compile-time capacity). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "adapters/pyq_adapter.h"
#include "adapters/twin_pvt.h"

#define DPDK_BURST 32  /* elements per dequeue; the classic DPDK burst */

struct dpdk_handle {
    struct rte_ring *r;  /* header + table in one mapping */
    size_t map_bytes;
    uint32_t esize;
    /* Reader-owned: elements dequeued but not yet handed to the callback (it may
     * stop a poll in the middle of a burst). */
    uint32_t stash_n, stash_pos;
    uint8_t *stash;      /* DPDK_BURST * esize bytes */
};

static int dpdk_create(const pyq_adapter_params_t *p, void **handle)
{
    struct dpdk_handle *d;
    uint64_t want;
    unsigned int count = 2;
    ssize_t bytes;
    int rc;

    if (p->msg_size == 0 || p->msg_size % 4 != 0 || p->msg_size > 65536)
        return PYQ_EINVAL;
    want = p->capacity_bytes / p->msg_size;
    if (want < 2)
        return PYQ_EINVAL;
    /* Power-of-two count (no RING_F_EXACT_SZ): the largest that fits the budget. */
    while ((uint64_t)count * 2 <= want && (uint64_t)count * 2 <= RTE_RING_SZ_MASK)
        count *= 2;
    bytes = rte_ring_get_memsize_elem(p->msg_size, count);
    if (bytes < 0)
        return PYQ_EINVAL;
    d = calloc(1, sizeof *d);
    if (!d)
        return PYQ_ENOMEM;
    d->esize = p->msg_size;
    d->stash = malloc((size_t)DPDK_BURST * d->esize);
    d->map_bytes = (size_t)bytes;
    /* mmap is page-aligned, more than the cache-line alignment rte_ring needs. */
    d->r = mmap(NULL, d->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!d->stash || d->r == MAP_FAILED) {
        if (d->r != MAP_FAILED)
            munmap(d->r, d->map_bytes);
        free(d->stash);
        free(d);
        return PYQ_ENOMEM;
    }
    rc = rte_ring_init(d->r, "pyq_peer", count, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (rc != 0) {
        munmap(d->r, d->map_bytes);
        free(d->stash);
        free(d);
        return rc < 0 ? rc : PYQ_EINVAL;
    }
    *handle = d;
    return 0;
}

static void dpdk_destroy(void *h)
{
    struct dpdk_handle *d = h;

    if (d) {
        munmap(d->r, d->map_bytes);
        free(d->stash);
        free(d);
    }
}

static uint64_t dpdk_capacity(void *h)
{
    return rte_ring_get_capacity(((struct dpdk_handle *)h)->r);
}

static int dpdk_try_write(void *h, const void *msg, uint32_t len)
{
    struct dpdk_handle *d = h;

    int rc;

    /* Two calls so the 32-byte one is inlined with a constant element size. */
    if (d->esize == PYQ_ADAPTER_MSG_SIZE)
        rc = rte_ring_sp_enqueue_elem(d->r, (void *)msg, PYQ_ADAPTER_MSG_SIZE);
    else
        rc = rte_ring_sp_enqueue_elem(d->r, (void *)msg, d->esize);
    return rc == 0 ? 0 : PYQ_EAGAIN; /* 0, or -ENOBUFS when full */
}

static int64_t dpdk_try_write_burst(void *h, const void *msgs, uint32_t n, uint32_t len)
{
    struct dpdk_handle *d = h;

    if (d->esize == PYQ_ADAPTER_MSG_SIZE)
        return rte_ring_sp_enqueue_burst_elem(d->r, msgs, PYQ_ADAPTER_MSG_SIZE, n, NULL);
    return rte_ring_sp_enqueue_burst_elem(d->r, msgs, d->esize, n, NULL);
}

static void dpdk_flush(void *h)
{
    (void)h; /* each enqueue is visible when it returns */
}

static int64_t dpdk_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct dpdk_handle *d = h;
    uint64_t n = 0;

    while (n < max) {
        int rc;

        if (d->stash_pos == d->stash_n) {
            uint64_t want = max - n < DPDK_BURST ? max - n : DPDK_BURST;

            d->stash_pos = 0;
            if (d->esize == PYQ_ADAPTER_MSG_SIZE)
                d->stash_n = rte_ring_sc_dequeue_burst_elem(d->r, d->stash, PYQ_ADAPTER_MSG_SIZE,
                                                            (unsigned int)want, NULL);
            else
                d->stash_n = rte_ring_sc_dequeue_burst_elem(d->r, d->stash, d->esize,
                                                            (unsigned int)want, NULL);
            if (d->stash_n == 0)
                break;
        }
        n++;
        rc = fn(ctx, d->stash + (size_t)d->stash_pos++ * d->esize, d->esize);
        if (rc != 0)
            return rc < 0 ? rc : (int64_t)n;
    }
    return (int64_t)n;
}

/* The burst rows' reader: rte_ring_sc_dequeue_burst_elem straight into the
 * caller's array, as ring_perf_autotest dequeues; what an earlier poll dequeued
 * but did not deliver goes first (FIFO).  `out` is restrict: the caller's array
 * is never the ring, and without the promise GCC keeps rte_ring's 32-bit copy
 * loop scalar here (eight loads and stores an element) where the inlined twin,
 * whose array it can see, copies 16 bytes at a time (DESIGN §8.3). */
static int64_t dpdk_read_burst(void *h, void *restrict out, uint32_t max, uint32_t len)
{
    struct dpdk_handle *d = h;
    uint32_t n = 0;

    (void)len;
    if (d->stash_pos < d->stash_n) {
        n = d->stash_n - d->stash_pos < max ? d->stash_n - d->stash_pos : max;
        memcpy(out, d->stash + (size_t)d->stash_pos * d->esize, (size_t)n * d->esize);
        d->stash_pos += n;
        if (n == max)
            return n;
    }
    out = (uint8_t *)out + (size_t)n * d->esize;
    if (d->esize == PYQ_ADAPTER_MSG_SIZE)
        return n + rte_ring_sc_dequeue_burst_elem(d->r, out, PYQ_ADAPTER_MSG_SIZE, max - n, NULL);
    return n + rte_ring_sc_dequeue_burst_elem(d->r, out, d->esize, max - n, NULL);
}

/* The per-message rows' streaming writer: dpdk_try_write in a loop (write_each). */
PYQ_TWIN_WRITE_EACH(dpdk, dpdk_try_write)

/* The round trip's receive: dpdk_poll(max 1) spun on in this file (read_spin). */
PYQ_TWIN_READ_SPIN(dpdk, dpdk_poll)

static const pyq_adapter_t adapter = {
    .abi = PYQ_ADAPTER_ABI,
    .name = "dpdk",
    .create = dpdk_create,
    .destroy = dpdk_destroy,
    .capacity = dpdk_capacity,
    .try_write = dpdk_try_write,
    .try_write_burst = dpdk_try_write_burst,
    .flush = dpdk_flush,
    .poll = dpdk_poll,
    .wait_readable = NULL,
    .read_burst = dpdk_read_burst,
    .read_each = NULL, /* poll dequeues 32 per library call already */
    .write_each = dpdk_write_each,
    .read_spin = dpdk_read_spin,
};

__attribute__((visibility("default"))) const pyq_adapter_t *pyq_peer_adapter(void)
{
    return &adapter;
}

/* The twin: the operations above called directly, inlined (adapters/twin_pvt.h). */
PYQ_TWIN_DEFINE_EACH(dpdk, adapter, dpdk_try_write, dpdk_try_write_burst, dpdk_write_each,
                     dpdk_poll,
                     dpdk_read_burst, NULL, dpdk_flush)

static const pyq_twin_t twins[] = {
    {"dpdk", "rte_ring_sp_enqueue_elem (burst rows: rte_ring_sp_enqueue_burst_elem) / "
     "rte_ring_sc_dequeue_burst_elem of up to 32 (burst rows: into the reader's array), "
     "esize a constant 32", PYQ_TWIN_HAS_BURST, 0,
     dpdk_twin_throughput, dpdk_twin_roundtrip},
};

PYQ_TWIN_PEER_TABLE(twins)
