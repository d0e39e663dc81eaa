/*
 * twins.c - pyqueue's inline twins and the yardstick's (see pyq_twins.h), on
 * the loops of adapters/twin_pvt.h.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "adapters/twin_pvt.h"
#include "bench/pq_calls_pvt.h"
#include "bench/pyq_twins.h"

/* ---- pyqueue, through its public API --------------------------------------- */

/* The operations below are always_inline (PYQ_TWIN_INLINE): nothing else calls
 * them, and a constant-propagated clone of a once-called function escapes the
 * loops' flatten. */

static int pq_create(const pyq_adapter_params_t *p, void **h)
{
    if (p->msg_size != PYQ_ADAPTER_MSG_SIZE)
        return PYQ_EINVAL;
    return pyq_queue_create(&p->queue, (pyq_queue_t **)h);
}

static void pq_destroy(void *h)
{
    pyq_queue_destroy(h);
}

/* The adapter's capacity() is an estimate from the framing; a twin reports 0. */
static uint64_t pq_capacity(void *h)
{
    (void)h;
    return 0;
}

PYQ_TWIN_INLINE int pq_try_write(void *q, const void *msg, uint32_t len)
{
    return pyq_writer_try_write(q, msg, len);
}

/* As the adapter's: 0 only when full, else the count or the error. */
PYQ_TWIN_INLINE int64_t pq_try_write_burst(void *q, const void *msgs, uint32_t n, uint32_t len)
{
    int err = 0;
    int64_t k = pyq_writer_write_batch(q, msgs, n, len, 0, &err);

    return (k == 0 && err != 0 && err != PYQ_EAGAIN) ? err : k;
}


/* The burst rows' reader, as the adapter's read_burst: fixed-size messages
 * copied out whole. */
PYQ_TWIN_INLINE int64_t pq_read_burst(void *q, void *out, uint32_t max, uint32_t len)
{
    return pyq_reader_poll_fixed(q, out, max, len);
}

/* Each message copied out by value, the check inlined (no callback pointer). */
PYQ_TWIN_INLINE int64_t pq_read_one(void *q, uint64_t max, pyq_message_fn fn, void *ctx)
{
    uint8_t msg[PYQ_ADAPTER_MSG_SIZE] __attribute__((aligned(8)));
    uint64_t n;
    int rc = 0;

    for (n = 0; n < max && rc == 0; n++) {
        int64_t len = pyq_reader_read_one(q, msg, sizeof msg);

        if (len < 0) /* PYQ_EAGAIN: nothing visible */
            return len == PYQ_EAGAIN ? (int64_t)n : len;
        rc = fn(ctx, msg, (uint32_t)len);
    }
    return rc < 0 ? rc : (int64_t)n;
}

/* The per-message rows' streaming writer, as the adapter's write_each: the
 * public inline fast path (pyqueue_inline.h) in a loop. */
PYQ_TWIN_INLINE int pq_try_write_inline(void *q, const void *msg, uint32_t len)
{
    return pyq_writer_try_write_inline(q, msg, len);
}

PYQ_TWIN_WRITE_EACH(pq, pq_try_write_inline)

/* The per-message rows' reader, as the adapter's read_each: the public inline
 * poll (pyqueue_inline.h) copying each message out, its callback inlined. */
PYQ_TWIN_INLINE int64_t pq_read_each(void *q, void *out, uint32_t max, uint32_t len)
{
    return pyq_twin_pq_read_each(q, out, max, len);
}

/* The queue's table: create / destroy / capacity and the warm-up's calls. */
static const pyq_adapter_t pq_queue = {
    .abi = PYQ_ADAPTER_ABI, .name = "pyqueue", .create = pq_create, .destroy = pq_destroy,
    .capacity = pq_capacity, .try_write = pq_try_write, .flush = pq_flush, .poll = pq_poll,
};

PYQ_TWIN_DEFINE_EACH(pq, pq_queue, pq_try_write, pq_try_write_burst, pq_write_each, pq_poll,
                     pq_read_burst, pq_read_each, pq_flush)
PYQ_TWIN_DEFINE_WAITING(pqd, pq_queue, pq_write, pq_poll, pq_flush)
PYQ_TWIN_DEFINE(pqr, pq_queue, pq_try_write, NULL, pq_read_one, pq_flush)

/* ---- yardstick: rigtorp's SPSCQueue design, 32-byte slots ------------------- */

struct ys_slot {
    uint8_t b[PYQ_ADAPTER_MSG_SIZE];
};

struct ys_ring {
    PYQ_ALIGNED_LINE _Atomic uint64_t tail; /* writer: messages written (YT1 / YT2) */
    uint64_t head_cache;                    /* writer's copy of head */
    PYQ_ALIGNED_LINE _Atomic uint64_t head; /* reader: messages consumed (YT3 / YT4) */
    uint64_t tail_cache;                    /* reader's copy of tail */
    PYQ_ALIGNED_LINE uint64_t mask;         /* read-only after create */
    PYQ_ALIGNED_LINE struct ys_slot slots[]; /* mask + 1, in the same allocation */
};

/* capacity_bytes / 32 slots, rounded down to a power of two. */
static int ys_create(const pyq_adapter_params_t *p, void **h)
{
    uint64_t want = p->capacity_bytes / sizeof(struct ys_slot), n = 2;
    size_t bytes;
    struct ys_ring *y;

    if (p->msg_size != PYQ_ADAPTER_MSG_SIZE || want < 2)
        return PYQ_EINVAL;
    while (n * 2 <= want && n < (1ull << 40))
        n *= 2;
    bytes = sizeof *y + n * sizeof(struct ys_slot);
    if (!(y = aligned_alloc(PYQ_CACHELINE, bytes)))
        return PYQ_ENOMEM;
    memset(y, 0, bytes);
    y->mask = n - 1;
    *h = y;
    return 0;
}

static void ys_destroy(void *h)
{
    free(h);
}

static uint64_t ys_capacity(void *h)
{
    return ((struct ys_ring *)h)->mask + 1;
}

PYQ_TWIN_INLINE int ys_try_write(void *h, const void *msg, uint32_t len)
{
    struct ys_ring *y = h;
    uint64_t t = atomic_load_explicit(&y->tail, memory_order_relaxed); /* own field */

    if (t - y->head_cache > y->mask) {
        /* YT3: pairs with YT4 in ys_poll -- slots below head are copied out. */
        y->head_cache = atomic_load_explicit(&y->head, memory_order_acquire);
        if (t - y->head_cache > y->mask)
            return PYQ_EAGAIN;
    }
    memcpy(&y->slots[t & y->mask], msg, sizeof(struct ys_slot));
    /* YT1: the slot before the new tail; pairs with YT2 in ys_poll. */
    atomic_store_explicit(&y->tail, t + 1, memory_order_release);
    return 0;
}

PYQ_TWIN_INLINE void ys_flush(void *h)
{
    (void)h; /* every write is visible when its tail store is */
}

/* rigtorp's front() + pop(): the slot at *hd copied to *dst and released, 1;
 * 0 when the ring is empty. */
PYQ_TWIN_INLINE int ys_pop(struct ys_ring *y, uint64_t *hd, struct ys_slot *dst)
{
    if (*hd == y->tail_cache) {
        /* YT2: pairs with YT1 -- the slots below tail are written. */
        y->tail_cache = atomic_load_explicit(&y->tail, memory_order_acquire);
        if (*hd == y->tail_cache)
            return 0;
    }
    *dst = y->slots[*hd & y->mask];
    /* YT4: the slot is copied out, the writer may reuse it; pairs with YT3. */
    atomic_store_explicit(&y->head, ++*hd, memory_order_release);
    return 1;
}

/* One message at a time, head published after each copy (rigtorp's pop). */
PYQ_TWIN_INLINE int64_t ys_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct ys_ring *y = h;
    uint64_t hd = atomic_load_explicit(&y->head, memory_order_relaxed); /* own field */
    struct ys_slot m;
    uint64_t n = 0;
    int rc;

    while (n < max && ys_pop(y, &hd, &m)) {
        n++;
        if ((rc = fn(ctx, &m, sizeof m)) != 0)
            return rc < 0 ? rc : (int64_t)n;
    }
    return (int64_t)n;
}

/* The per-message rows' reader: ys_pop per message straight into the reader's
 * array (no callback per message) -- the read_each of the other rings that
 * hand out one message a call (ck, rwq, atomic_queue).  Through the table,
 * ys_poll's callback is an indirect call per message that the twin inlines;
 * at a slot ring's rate that call sets the reader's pace (docs/BENCHMARKS.md,
 * "What the driver got wrong", the yardstick's entry). */
PYQ_TWIN_INLINE int64_t ys_read_each(void *h, void *out, uint32_t max, uint32_t len)
{
    struct ys_ring *y = h;
    struct ys_slot *m = out;
    uint64_t hd = atomic_load_explicit(&y->head, memory_order_relaxed); /* own field */
    uint32_t n = 0;

    (void)len;
    while (n < max && ys_pop(y, &hd, &m[n]))
        n++;
    return n;
}

PYQ_TWIN_WRITE_EACH(ys, ys_try_write)

static const pyq_adapter_t ys_queue = {
    .abi = PYQ_ADAPTER_ABI, .name = "yardstick", .create = ys_create, .destroy = ys_destroy,
    .capacity = ys_capacity, .try_write = ys_try_write, .flush = ys_flush, .poll = ys_poll,
    .read_each = ys_read_each, .write_each = ys_write_each,
};

PYQ_TWIN_DEFINE_EACH(ys, ys_queue, ys_try_write, NULL, ys_write_each, ys_poll, NULL, ys_read_each,
                     ys_flush)

/* The driver's row: the same table (its operations out of line, called through
 * it as every adapter's). */
const pyq_adapter_t *pyq_bench_yardstick(void)
{
    return &ys_queue;
}

/* ---- the table ------------------------------------------------------------- */

static const pyq_twin_t twins[] = {
    {"pyqueue", "pyq_writer_try_write_inline, 32 a loop (paced: pyq_writer_try_write; burst: "
     "pyq_writer_write_batch, timeout 0) / pyq_reader_poll_inline copying out, 32 a call "
     "(burst: pyq_reader_poll_fixed), direct calls", PYQ_TWIN_HAS_BURST, 0, pq_twin_throughput,
     pq_twin_roundtrip},
    {"pyqueue_direct", "pyq_writer_write (waits inside, 1 ms at a time: full retries are "
     "the queue's stats) / pyq_reader_poll, direct calls", 0, 0, pqd_twin_throughput, pqd_twin_roundtrip},
    {"pyqueue_read_one", "pyq_writer_try_write / pyq_reader_read_one (copy out, no "
     "callback), direct calls", 0, 0, pqr_twin_throughput, pqr_twin_roundtrip},
    {"yardstick", "a rigtorp-style ring (cached indices, head published per message) of "
     "32-byte slots, inlined", PYQ_TWIN_NO_ADAPTER, 0, ys_twin_throughput, ys_twin_roundtrip},
};

static const pyq_twin_table_t table = {PYQ_TWIN_ABI, sizeof twins / sizeof twins[0], twins};

const pyq_twin_table_t *pyq_twin_bench(void)
{
    return &table;
}

int pyq_bench_warm(const pyq_adapter_t *a, void *h)
{
    if (!a || !h)
        return PYQ_EINVAL;
    return pyq_twin_warm(a, h);
}
