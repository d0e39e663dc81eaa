/*
 * writer_batch.c - pyq_writer_write_batch(): n equal-sized messages in one
 * call, framed as runs (queue_pvt.h, Runs), and the AVX copy of a run's
 * payloads.  Writer thread only.  The single records are writer.c's.
 */
#include <string.h>

#include "core/writer_run_pvt.h"

/* The AVX body of copy_run() (writer_run_pvt.h): compiled for AVX on its own,
 * called only where the CPU has it. */
#if PYQ_HAVE_AVX_COPY
#define PYQ_LOAD32(k) __m256i v##k = _mm256_loadu_si256((const __m256i *)(const void *)(s + o + 32 * k))
#define PYQ_STORE32(k) _mm256_storeu_si256((__m256i *)(void *)(d + o + 32 * k), v##k)
__attribute__((target("avx"), noinline)) int64_t pyq_w_copy_run_avx(uint8_t *d, const uint8_t *s,
                                                                   uint64_t bytes, int64_t ret)
{
    uint64_t o = 0, big = bytes & ~(uint64_t)511;

    for (; o < big; o += 512) { /* the 16 ymm registers, one loop step a half KiB */
        PYQ_LOAD32(0); PYQ_LOAD32(1); PYQ_LOAD32(2); PYQ_LOAD32(3);
        PYQ_LOAD32(4); PYQ_LOAD32(5); PYQ_LOAD32(6); PYQ_LOAD32(7);
        PYQ_LOAD32(8); PYQ_LOAD32(9); PYQ_LOAD32(10); PYQ_LOAD32(11);
        PYQ_LOAD32(12); PYQ_LOAD32(13); PYQ_LOAD32(14); PYQ_LOAD32(15);
        PYQ_STORE32(0); PYQ_STORE32(1); PYQ_STORE32(2); PYQ_STORE32(3);
        PYQ_STORE32(4); PYQ_STORE32(5); PYQ_STORE32(6); PYQ_STORE32(7);
        PYQ_STORE32(8); PYQ_STORE32(9); PYQ_STORE32(10); PYQ_STORE32(11);
        PYQ_STORE32(12); PYQ_STORE32(13); PYQ_STORE32(14); PYQ_STORE32(15);
    }
    /* The rest, under 512 bytes, by halves: a test and the moves each. */
    if (bytes & 256) {
        PYQ_LOAD32(0); PYQ_LOAD32(1); PYQ_LOAD32(2); PYQ_LOAD32(3);
        PYQ_LOAD32(4); PYQ_LOAD32(5); PYQ_LOAD32(6); PYQ_LOAD32(7);
        PYQ_STORE32(0); PYQ_STORE32(1); PYQ_STORE32(2); PYQ_STORE32(3);
        PYQ_STORE32(4); PYQ_STORE32(5); PYQ_STORE32(6); PYQ_STORE32(7);
        o += 256;
    }
    if (bytes & 128) {
        PYQ_LOAD32(0); PYQ_LOAD32(1); PYQ_LOAD32(2); PYQ_LOAD32(3);
        PYQ_STORE32(0); PYQ_STORE32(1); PYQ_STORE32(2); PYQ_STORE32(3);
        o += 128;
    }
    if (bytes & 64) {
        PYQ_LOAD32(0); PYQ_LOAD32(1);
        PYQ_STORE32(0); PYQ_STORE32(1);
        o += 64;
    }
    if (bytes & 32) {
        PYQ_LOAD32(0);
        PYQ_STORE32(0);
        o += 32;
    }
    for (; o < bytes; o += 8) /* bytes is a multiple of 8 */
        memcpy(d + o, s + o, 8);
    return ret;
}
#undef PYQ_LOAD32
#undef PYQ_STORE32
#endif

/* pyq_writer_write_batch() in general: the open run takes what fits, block by
 * block; what does not fit, or cannot run, goes message by message. */
static __attribute__((noinline)) int64_t write_batch_loop(struct pyq_queue *q, const void *data,
                                                          uint64_t n, uint32_t msg_size,
                                                          int64_t timeout_ns, int *err)
{
    struct pyq_writer_state *w = &q->w;
    const uint8_t *src = data;
    const int small = is_small(msg_size);
    uint64_t i;

    *err = 0;
    if (msg_size > q->max_message) {
        *err = PYQ_ETOOBIG;
        return 0;
    }
    for (i = 0; i < n;) {
        /* The open run takes as many as fit (counted when it ends). */
        if (msg_size == w->run_len && !atomic_load_explicit(&q->closed, memory_order_relaxed)) {
            uint32_t step = w->run_step;
            uint64_t room = (w->run_limit - w->pos) / step;
            if (room) {
                uint64_t k = room < n - i ? room : n - i;
                uint8_t *dst = w->blk + w->pos;
                const uint8_t *from = src + i * msg_size;
                if (small) /* one loop per copy, not a test per message */
                    put_members(q, dst, from, k, msg_size, step, REC_SMALL);
                else
                    put_members(q, dst, from, k, msg_size, step, 0);
                run_advance(w, k * step, k); /* counted when the run ends */
                i += k;
                if (w->pos == q->cfg.block_size)
                    pyq_w_seal_early(q); /* exactly full (no scanning reader) */
                continue;
            }
        }
        /* No run to extend: the next messages start one, with one header for
         * the lot -- in the next block when this one has no room for a member.
         * The framing and the counts a write and its extensions make. */
        if (q->batch_ok && msg_size && w->claim_len == PYQ_NO_CLAIM &&
            !atomic_load_explicit(&q->closed, memory_order_relaxed)) {
            uint32_t step = (msg_size + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
            uint64_t room, k;
            int rc = run_room(q, step, timeout_ns);
            if (PYQ_UNLIKELY(rc != 0)) {
                *err = rc;
                break;
            }
            room = (q->cfg.block_size - w->pos - PYQ_RECORD_HEADER) / step;
            k = room < n - i ? room : n - i;
            if (k > PYQ_RUN_MAX)
                k = PYQ_RUN_MAX;
            if (small)
                run_start(q, src + i * msg_size, k, msg_size, step, REC_SMALL);
            else
                run_start(q, src + i * msg_size, k, msg_size, step, 0);
            i += k;
            continue;
        }
        /* A record of its own, a full or closed queue, a claim, a
         * configuration without runs. */
        int rc = pyq_writer_write(q, src + i * msg_size, msg_size, timeout_ns);
        if (PYQ_UNLIKELY(rc != 0)) {
            *err = rc;
            break;
        }
        i++;
    }
    return (int64_t)i;
}

/* A batch of n >= 1 messages of msg_size bytes (a multiple of 8, at most
 * max_message) that runs (q->batch_ok) in cached blocks (the gate's
 * PYQ_GATE_RUN bits clear: not streamed, no touch, not closed), no claim: the
 * open run takes what fits, then each next block gets one run of what fits
 * there -- write_batch_loop's framing and counts without its per-step tests of
 * the cases this batch is not (a block change, or the first batch after a
 * publish, every few batches). */
static __attribute__((noinline)) int64_t write_batch_runs(struct pyq_queue *q, const uint8_t *src,
                                                          uint64_t n, uint32_t msg_size,
                                                          int64_t timeout_ns, int *err)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t i = 0;

    if (msg_size == w->run_len) {
        uint64_t k = (w->run_limit - w->pos) / msg_size;
        if (k > n)
            k = n;
        copy_run(w->blk + w->pos, src, k * msg_size, 0);
        run_advance(w, k * msg_size, k); /* counted when the run ends */
        i = k;
        if (w->pos == q->cfg.block_size)
            pyq_w_seal_early(q); /* exactly full (no scanning reader) */
    }
    while (i < n) {
        uint64_t k;
        int rc = PYQ_UNLIKELY(atomic_load_explicit(&q->closed, memory_order_relaxed))
                     ? PYQ_ECLOSED /* closed meanwhile: what write() would say */
                     : run_room(q, msg_size, timeout_ns);
        if (PYQ_UNLIKELY(rc != 0)) {
            *err = rc;
            return (int64_t)i;
        }
        k = (q->cfg.block_size - w->pos - PYQ_RECORD_HEADER) / msg_size;
        if (k > n - i)
            k = n - i;
        if (k > PYQ_RUN_MAX)
            k = PYQ_RUN_MAX;
        run_start(q, src + i * msg_size, k, msg_size, msg_size, 0);
        i += k;
    }
    *err = 0;
    return (int64_t)n;
}

/* The common batch first: all n messages extend the open run of their size
 * in a cached block (the gate's PYQ_GATE_RUN bits clear: not streamed, no
 * touch, not closed), back to back (a multiple of 8 bytes), with room past
 * them (so nothing is sealed here, as in run_extend) -- SPEC §3.1's one run:
 * one copy of the lot and one count, no per-message work. */
static inline __attribute__((always_inline)) int64_t write_batch(pyq_queue_t *q,
                                                                 const void *data, uint64_t n,
                                                                 uint32_t msg_size,
                                                                 int64_t timeout_ns, int *err)
{
    struct pyq_writer_state *w = &q->w;

    if (PYQ_LIKELY(msg_size == w->run_len && msg_size == w->run_step && n - 1 < PYQ_RUN_MAX &&
                   !(pyq_load_relaxed(&w->gate) & PYQ_GATE_RUN))) {
        uint32_t pos = w->pos; /* the low half, already zero-extended */
        uint64_t bytes = n * (uint64_t)msg_size; /* < 2^48: n <= PYQ_RUN_MAX */
        if (PYQ_LIKELY(bytes < w->run_limit - pos)) {
            /* The bookkeeping first, so that the copy is the tail call: only
             * this thread writes below pos until a publish, which comes later.
             * The position and the count (counted when the run ends) in one
             * add to their word: n * run_inc is bytes in the low half
             * (msg_size is run_step; < 2^32, checked above) and n in the high
             * half, one multiply. */
            pyq__pos_run_add(&w->pos_run, n * w->run_inc);
            *err = 0;
            return copy_run(w->blk + pos, data, bytes, (int64_t)n);
        }
    }
    if (PYQ_LIKELY(q->batch_ok && n && msg_size && !(msg_size % PYQ_RECORD_ALIGN) &&
                   msg_size <= q->max_message && w->claim_len == PYQ_NO_CLAIM &&
                   !(pyq_load_relaxed(&w->gate) & PYQ_GATE_RUN)))
        return write_batch_runs(q, data, n, msg_size, timeout_ns, err);
    return write_batch_loop(q, data, n, msg_size, timeout_ns, err);
}

int64_t pyq_writer_write_batch(pyq_queue_t *q, const void *data, uint64_t n,
                               uint32_t msg_size, int64_t timeout_ns, int *err)
{
    if (PYQ_UNLIKELY(q->xproc)) { /* then the writer's mirror (queue_pvt.h) */
        int64_t done;
        if (PYQ_UNLIKELY(q->p.corrupt & PYQ_CORRUPT_WRITER)) {
            *err = PYQ_ECORRUPT;
            return 0;
        }
        done = write_batch(q, data, n, msg_size, timeout_ns, err);
        pyq_w_mirror(q);
        return done;
    }
    return write_batch(q, data, n, msg_size, timeout_ns, err);
}
