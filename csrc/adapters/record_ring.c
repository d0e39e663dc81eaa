/* record_ring.c - the flat-out yardstick "record_ring" (not a peer): the
 * floor of 32-byte-message throughput (SPEC §8), a ring of 32-byte records
 * with no queue logic beyond its two indices, behind the same adapter table
 * as pyqueue and the peers so that the bench's driver and its twin measure it
 * exactly as they measure them.
 *
 * Records are the messages themselves, back to back (two to a cache line):
 * the bytes that cross between the cores are the data lines and two index
 * lines, nothing else.  Each side caches the other's index and reloads it
 * only when the ring looks full (writer) or empty (reader), and publishes its
 * own once per call: write_each (also its try_write_burst) and read_each
 * move up to n records a call with one index store, as a burst ring does;
 * try_write and poll publish per message (the paced pass and the round trip
 * use them).
 *
 * Single writer thread, single reader thread.  Fixed PYQ_ADAPTER_MSG_SIZE
 * records; capacity_bytes / 32 slots rounded down to a power of two (the
 * bench gives it 64 KiB: 2,048 records).  Ordering labels: RR-P<n> on the
 * producer (writer) side, RR-C<n> on the consumer's; one number, one edge. */
#define _GNU_SOURCE /* the twin's pinning (adapters/twin_pvt.h) */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/private.h"
#include "adapters/pyq_adapter.h"
#include "adapters/twin_pvt.h"

struct rr_record {
    uint8_t b[PYQ_ADAPTER_MSG_SIZE];
};

struct rr_ring {
    PYQ_ALIGNED_LINE _Atomic uint64_t tail; /* writer: records written (RR-P1 / RR-C1) */
    uint64_t head_cache;                    /* writer's copy of head */
    PYQ_ALIGNED_LINE _Atomic uint64_t head; /* reader: records consumed (RR-C2 / RR-P2) */
    uint64_t tail_cache;                    /* reader's copy of tail */
    PYQ_ALIGNED_LINE uint64_t mask;         /* read-only after create */
    PYQ_ALIGNED_LINE struct rr_record rec[]; /* mask + 1, in the same allocation */
};

_Static_assert(offsetof(struct rr_ring, head) - offsetof(struct rr_ring, tail) >= PYQ_CACHELINE,
               "writer and reader fields on separate lines");

static int rr_create(const pyq_adapter_params_t *p, void **h)
{
    uint64_t want = p->capacity_bytes / sizeof(struct rr_record), n = 2;
    size_t bytes;
    struct rr_ring *r;

    if (p->msg_size != PYQ_ADAPTER_MSG_SIZE || want < 2)
        return PYQ_EINVAL;
    while (n * 2 <= want && n < (1ull << 40))
        n *= 2;
    bytes = sizeof *r + n * sizeof(struct rr_record);
    if (!(r = aligned_alloc(PYQ_CACHELINE, bytes)))
        return PYQ_ENOMEM;
    memset(r, 0, bytes);
    r->mask = n - 1;
    *h = r;
    return 0;
}

static void rr_destroy(void *h)
{
    free(h);
}

static uint64_t rr_capacity(void *h)
{
    return ((struct rr_ring *)h)->mask + 1;
}

/* Free records from the writer's tail t, the reader's head reloaded only when
 * fewer than want are known free. */
PYQ_TWIN_INLINE uint64_t rr_room(struct rr_ring *r, uint64_t t, uint64_t want)
{
    uint64_t room = r->mask + 1 - (t - r->head_cache);

    if (room < want) {
        /* RR-P2: pairs with RR-C2 -- records below head are copied out. */
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        room = r->mask + 1 - (t - r->head_cache);
    }
    return room;
}

/* Up to n records from msgs, then one tail store.  The count (0: full). */
PYQ_TWIN_INLINE int64_t rr_write_n(struct rr_ring *r, const struct rr_record *m, uint64_t n)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed); /* own field */
    uint64_t room = rr_room(r, t, n), k = n < room ? n : room;

    for (uint64_t j = 0; j < k; j++)
        r->rec[(t + j) & r->mask] = m[j];
    /* RR-P1: the records below the new tail are written; pairs with RR-C1. */
    atomic_store_explicit(&r->tail, t + k, memory_order_release);
    return (int64_t)k;
}

PYQ_TWIN_INLINE int rr_try_write(void *h, const void *msg, uint32_t len)
{
    (void)len; /* PYQ_ADAPTER_MSG_SIZE: create refused others */
    return rr_write_n(h, msg, 1) ? 0 : PYQ_EAGAIN;
}

PYQ_TWIN_INLINE int64_t rr_write_each(void *h, const void *msgs, uint32_t n, uint32_t len)
{
    (void)len;
    return rr_write_n(h, msgs, n);
}

PYQ_TWIN_INLINE void rr_flush(void *h)
{
    (void)h; /* every record is visible when its tail store is */
}

/* Records available at head hd, the writer's tail reloaded only when none are known. */
PYQ_TWIN_INLINE uint64_t rr_avail(struct rr_ring *r, uint64_t hd)
{
    if (hd == r->tail_cache)
        /* RR-C1: pairs with RR-P1 -- the records below tail are written. */
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
    return r->tail_cache - hd;
}

/* Up to max records copied into out, then one head store.  The count (0: empty). */
PYQ_TWIN_INLINE int64_t rr_read_each(void *h, void *out, uint32_t max, uint32_t len)
{
    struct rr_ring *r = h;
    struct rr_record *o = out;
    uint64_t hd = atomic_load_explicit(&r->head, memory_order_relaxed); /* own field */
    uint64_t k = rr_avail(r, hd);

    (void)len;
    if (k > max)
        k = max;
    for (uint64_t j = 0; j < k; j++)
        o[j] = r->rec[(hd + j) & r->mask];
    /* RR-C2: the records are copied out, the writer may reuse them; pairs with RR-P2. */
    atomic_store_explicit(&r->head, hd + k, memory_order_release);
    return (int64_t)k;
}

/* One record at a time to fn, head published after each (RR-C2). */
PYQ_TWIN_INLINE int64_t rr_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct rr_record m;
    uint64_t n = 0;
    int rc;

    while (n < max && rr_read_each(h, &m, 1, sizeof m) == 1) {
        n++;
        if ((rc = fn(ctx, &m, sizeof m)) != 0)
            return rc < 0 ? rc : (int64_t)n;
    }
    return (int64_t)n;
}

PYQ_PRIVATE const pyq_adapter_t pyq_adapter_record_ring = {
    .abi = PYQ_ADAPTER_ABI, .name = "record_ring", .create = rr_create,
    .destroy = rr_destroy, .capacity = rr_capacity, .try_write = rr_try_write,
    .try_write_burst = rr_write_each, .flush = rr_flush, .poll = rr_poll, .read_each = rr_read_each, .write_each = rr_write_each,
};

/* The twin: the same operations called directly (adapters/twin_pvt.h). */
PYQ_TWIN_DEFINE_EACH(rr, pyq_adapter_record_ring, rr_try_write, rr_write_each, rr_write_each,
                     rr_poll,
                     NULL, rr_read_each, rr_flush)

static const pyq_twin_t rr_twins[] = {
    {"record_ring", "a ring of 32-byte records, each side's index cached and published once "
     "a call (write_each / read_each of up to 32), inlined", PYQ_TWIN_HAS_BURST, 0, rr_twin_throughput,
     rr_twin_roundtrip},
};

PYQ_PRIVATE const pyq_twin_table_t pyq_twin_record_ring = {PYQ_TWIN_ABI, 1, rr_twins};
