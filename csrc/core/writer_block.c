/*
 * writer_block.c - the writer's blocks: taking one from a tier's free ring
 * (waiting while the queue is full), sealing one with a PAD or a
 * linked PAD, and the early seal for scanning readers.  Writer thread only.
 * The records inside a block are writer.c's and writer_batch.c's.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "core/writer_pvt.h"

/* run_close() of a run of n > 1 messages: its count into its header, and its
 * members after the first into the counters (the writes that extended it did
 * not count them).  Plain (or, in a streamed block, streaming) header store:
 * the reader reads it only below pub_pos, so W2 of the publish that follows
 * (fenced after streaming) is its edge. */
void pyq_w_run_end(struct pyq_queue *q, uint32_t n)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t size = w->run_size;
    uint64_t hdr = PYQ_HDR_RUN | (uint64_t)n << PYQ_HDR_RUN_COUNT_SHIFT | size;

#if PYQ_HAVE_NT
    if (w->nt) {
        _mm_stream_si64((long long *)(void *)(w->blk + w->run_hdr), (long long)hdr);
        w->nt_pending = 1;
    } else
#endif
        pyq_store_relaxed(pyq_hdr(w->blk, w->run_hdr), hdr);
    run_clear(w);
    if (q->xproc)
        pyq_w_mirror(q); /* another process's stats read the count there (W5's twin) */
    /* W5: the run's count is zero before its members are counted; pairs with
     * A6 in queue.c (stats never counts them twice). */
    pyq_counter_add_release(&q->ws.messages, n - 1);
    pyq_counter_add_release(&q->ws.bytes, (uint64_t)(n - 1) * size);
}

/* The writer's state as a peer needs it (queue_pvt.h, struct pyq_wmirror):
 * everything below w.pos of the current block is committed whenever this
 * runs (the callers: the end of every call, a run's end), and the open run's
 * count goes with the position in one word.  While only that word moved, it
 * alone is stored, into the slot the generation names; else the slot after it,
 * then its generation. */
void pyq_w_mirror(struct pyq_queue *q)
{
    const struct pyq_writer_state *w = &q->w;
    uint64_t pos_run = __atomic_load_n(&w->pos_run, __ATOMIC_RELAXED);
    uint64_t run_id = __atomic_load_n(&w->run_id, __ATOMIC_RELAXED), g = q->p.wgen;
    uint32_t blk = w->blk != NULL;
    struct pyq_wslot *s;

    if (PYQ_LIKELY(g && w->seq == q->p.wm_seq && run_id == q->p.wm_run_id &&
                   w->run_hdr == q->p.wm_run_hdr && blk == q->p.wm_blk)) {
        pyq_store_relaxed(&q->wm.s[g & 1].pos_run, pos_run);
        return;
    }
    s = &q->wm.s[++g & 1];
    pyq_store_relaxed(&s->seq, w->seq);
    pyq_store_relaxed(&s->pos_run, pos_run);
    pyq_store_relaxed(&s->run_id, run_id);
    pyq_store_relaxed(&s->free_head[PYQ_TIER_HOT], w->free_head[PYQ_TIER_HOT]);
    pyq_store_relaxed(&s->free_head[PYQ_TIER_SPILL], w->free_head[PYQ_TIER_SPILL]);
    pyq_store_relaxed(&s->run_hdr, w->run_hdr);
    pyq_store_relaxed(&s->has_blk, blk);
    q->p.wgen = g;
    q->p.wm_seq = w->seq;
    q->p.wm_run_id = run_id;
    q->p.wm_run_hdr = w->run_hdr;
    q->p.wm_blk = blk;
    /* MIR-L1: the slot is whole before its generation; pairs with MIR-L2
     * (shared_mirror.c: the restore, pyq_w_pending_shared). */
    pyq_store_release(&q->wm.gen, g);
}

/* The current block gets no more records: mark its end with pad (PYQ_HDR_PAD,
 * or a linked PAD naming the next block) and publish it whole. */
void pyq_w_seal(struct pyq_queue *q, uint64_t pad)
{
    struct pyq_writer_state *w = &q->w;

    if (w->pos < q->cfg.block_size) {
        if (q->scan)
            fence_streamed(w); /* the PAD is a scanning reader's edge */
        /* W3: end of block for a scanning reader (and, linked, the next block's
         * zeroed first lines); pairs with A3 in reader.c. */
        pyq_store_release(pyq_hdr(w->blk, w->pos), pad);
    }
    publish(q, w->seq * (uint64_t)q->cfg.block_size);
    pyq_counter_add(&q->ws.blocks_published, 1);
    w->blk = NULL;
    w->fast_limit = 0;
}

/* The first 4 KiB of a block, every line in exclusive state (PREFETCHW):
 * unrolled for the usual block of 4 KiB or more, the loop for a smaller one. */
static inline void prefetch_for_write(const struct pyq_queue *q, uint8_t *blk)
{
    if (PYQ_LIKELY(q->cfg.block_size >= 4096))
        pyq_prefetch_write_4k(blk);
    else
        pyq_prefetch_span(blk, q->cfg.block_size, 1);
}

/* A block the writer takes, for a scanning reader: headers left from its last
 * use must read zero before the reader can get there (W1 or a linked PAD's W3
 * publishes these stores) -- its first two lines' (writer_pvt.h, zero_ahead). */
static inline void clear_headers(const struct pyq_queue *q, uint8_t *blk)
{
    uint32_t bs = q->cfg.block_size;

    zero_ahead(q, blk, 0, bs < PYQ_ZERO_AHEAD ? bs : PYQ_ZERO_AHEAD);
}

static inline void start_block(struct pyq_queue *q, uint32_t idx, int tier, int zeroed)
{
    struct pyq_writer_state *w = &q->w;
    uint8_t *blk = w->base + (size_t)idx * q->cfg.block_size;
    /* The backlog, sampled once per block: a read of the reader's counter
     * line (a seal or a claim ended the run before this take: ws is exact). */
    uint64_t rd = pyq_load_relaxed(&q->rs.bytes), wr = pyq_load_relaxed(&q->ws.bytes);
    uint64_t backlog = wr > rd ? wr - rd : 0;
    int nt;

    w->blk = blk;
    w->pos = 0;
    w->tier = tier;
    /* A spill block is streamed only when the reader is far behind: one it
     * reads within nontemporal_backlog_kib is still in the caches then, and
     * streaming it costs the writer (streaming stores are slower than cached
     * ones) and the reader (a read from memory). */
    nt = PYQ_HAVE_NT && (tier == PYQ_TIER_SPILL
                             ? q->cfg.spill_nontemporal &&
                                   backlog >= (uint64_t)q->cfg.nontemporal_backlog_kib << 10
                             : q->cfg.hot_nontemporal);
    if (nt != w->nt) { /* atomic: pyq_queue_close() may set CLOSED meanwhile */
        if (nt) {
            atomic_fetch_or_explicit(&w->gate, PYQ_GATE_NT, memory_order_relaxed);
            atomic_fetch_or_explicit(&w->run_gate, PYQ_GATE_NT, memory_order_relaxed);
        } else {
            atomic_fetch_and_explicit(&w->gate, ~PYQ_GATE_NT, memory_order_relaxed);
            atomic_fetch_and_explicit(&w->run_gate, ~PYQ_GATE_NT, memory_order_relaxed);
        }
        w->nt = nt;
    }
    w->special = w->nt | q->scan | q->xproc; /* no branches: one take a block */
    w->fast_limit = fast_limit(q);
    if (q->scan) { /* zeroed is read under q->scan only (writer_pvt.h, zero_ahead) */
        w->zeroed = q->cfg.block_size < PYQ_ZERO_AHEAD ? q->cfg.block_size : PYQ_ZERO_AHEAD;
        if (!zeroed)
            clear_headers(q, blk); /* W1 below makes the zeros visible with the block */
    }
    if (q->cfg.prefetch) {
        /* Ask for every line of the block in exclusive state now, so that the
         * transfers from the reader's cache overlap instead of stalling the
         * stores one at a time -- unless the block is streamed (its stores
         * evict the lines) or the last take asked for it already.  Ask for the
         * next hot block too, the hot free ring's head as last seen (its slot
         * made visible by A4; no read of the reader's line), so that its
         * transfers have this block's writing to arrive in.  Never a spill
         * block ahead: under a deep backlog it is streamed. */
        uint64_t next = w->free_head[PYQ_TIER_HOT];
        if (blk != w->prefetched && !nt)
            prefetch_for_write(q, blk);
        w->prefetched = NULL;
        if (next != w->free_tail_cache[PYQ_TIER_HOT]) {
            uint8_t *nb = w->base + (size_t)pyq_free_slot(q, PYQ_TIER_HOT, next) *
                                        q->cfg.block_size;
            prefetch_for_write(q, nb);
            w->prefetched = nb;
        }
    }
    w->ring[w->seq & q->ring_mask] = idx;
    w->blk_start = w->seq * (uint64_t)q->cfg.block_size;
    w->seq++;
    /* W1: ring slot (and the zeroed first lines) visible; pairs with A1 in reader.c.
     * In-process, only a scanning reader loads ring_tail: the others find the
     * slot below pub_pos (W2 of the publish that follows orders it), and a
     * store here would take the line they spin on, pub_pos's, once more each
     * block.  A shared queue keeps it for the other process, which may check
     * what it reads against the blocks taken (DESIGN §3.9, "Trust"). */
    if (q->scan || q->xproc)
        pyq_store_release(&q->ring_tail, w->seq);
    pyq_counter_add(&q->ws.takes[tier], 1);
    if (backlog > pyq_load_relaxed(&q->ws.peak_backlog))
        pyq_store_relaxed(&q->ws.peak_backlog, backlog);
}

/* The writer found the segment inconsistent (a free ring no reader of this
 * geometry writes): its calls fail with PYQ_ECORRUPT from now on. */
static __attribute__((noinline, cold)) int64_t writer_corrupt(struct pyq_queue *q)
{
    q->p.corrupt |= PYQ_CORRUPT_WRITER;
    return -1;
}

/* Pop a free block of tier t without waiting: its index, or -1 if none.  What
 * the reader stores is checked against this process's geometry (per block
 * taken, so in-process queues keep the checks too): the reader never returns
 * more blocks than the tier has, and every slot names a block of the tier. */
static inline int64_t pop_free(struct pyq_queue *q, int t)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t head = w->free_head[t], first = t ? q->cfg.hot_blocks : 0;
    uint64_t tier_n = t ? q->cfg.spill_blocks : q->cfg.hot_blocks;
    uint32_t idx;

    if (head == w->free_tail_cache[t]) {
        /* A4: the reader is done with blocks below free_tail; pairs with R1. */
        uint64_t tail = pyq_load_acquire(&q->free_tail[t].v);
        if (PYQ_UNLIKELY(tail - head > tier_n))
            return writer_corrupt(q);
        w->free_tail_cache[t] = tail;
        if (head == tail)
            return -1;
    }
    idx = pyq_free_slot(q, t, head);
    if (PYQ_UNLIKELY(idx - first >= tier_n))
        return writer_corrupt(q);
    w->free_head[t] = head + 1;
    return idx;
}

/* Take a free block, tier 1 first.  Returns 1 on success, 0 if both are empty. */
static inline int try_take(struct pyq_queue *q)
{
    for (int t = 0; t < PYQ_TIERS; t++) {
        int64_t idx = pop_free(q, t);
        if (idx >= 0) {
            start_block(q, (uint32_t)idx, t, 0);
            return 1;
        }
    }
    return 0;
}

/* Seal the current block with a PAD that names block idx (queue_pvt.h, Link),
 * just popped from tier t, and make idx the current block. */
static inline void seal_linked(struct pyq_queue *q, uint32_t idx, int tier)
{
    /* The linked PAD (W3) makes these zeros visible before the reader gets there. */
    clear_headers(q, q->w.base + (size_t)idx * q->cfg.block_size);
    pyq_w_seal(q, pyq_hdr_link(idx, q->w.seq));
    start_block(q, idx, tier, 1);
}

/* Scanning reader, the next record does not fit: take the next block (tier 1
 * first) before sealing this one, and link to it.  Returns 1 when done, 0
 * (nothing changed) when no block is free now. */
int pyq_w_take_linked(struct pyq_queue *q)
{
    for (int t = 0; t < PYQ_TIERS; t++) {
        int64_t idx = pop_free(q, t);
        if (idx >= 0) {
            seal_linked(q, (uint32_t)idx, t);
            return 1;
        }
    }
    return 0;
}

/* After a commit that left less room than the record just written.  With a
 * scanning reader, take the next hot block now and seal this one with a PAD
 * naming it, so that the reader waits on the next block's first header while
 * the queue is idle and a message that starts a block costs one line transfer
 * like any other.  Hot tier only, never waiting: the next write's take would
 * choose the same block, so tiers and full-queue outcomes do not change.
 * Otherwise only an exactly full block is sealed.  Returns 0. */
int pyq_w_seal_early(struct pyq_queue *q)
{
    struct pyq_writer_state *w = &q->w;

    if (q->scan && !atomic_load_explicit(&q->closed, memory_order_relaxed)) {
        int64_t idx = pop_free(q, PYQ_TIER_HOT);
        if (idx >= 0) {
            seal_linked(q, (uint32_t)idx, PYQ_TIER_HOT);
            return 0;
        }
    }
    if (w->pos == q->cfg.block_size)
        pyq_w_seal(q, PYQ_HDR_PAD);
    return 0;
}

/* try_take() as pyq_w_wait()'s readiness test. */
static int take_ready(struct pyq_queue *q, void *arg)
{
    (void)arg;
    return try_take(q);
}

/* The full-queue wait: spin with a relax hint, sched_yield() every retry_yield_every
 * failed retries (0 = never), until ready(q, arg) says 1, the timeout passes or the
 * queue is closed.  A shared queue's writer then sleeps on the futex the
 * reader's returns wake (shared_pvt.h), and gives up when the reader's
 * process has died.  ready() returns 1 (done), 0 (not yet), or a negative code
 * to return. */
int pyq_w_wait(struct pyq_queue *q, int64_t timeout_ns, int (*ready)(struct pyq_queue *, void *),
               void *arg)
{
    uint32_t every = q->cfg.retry_yield_every, since_yield = 0;
    uint64_t deadline = 0, n = 0;
    int got;

    if (PYQ_UNLIKELY(q->p.corrupt))
        return PYQ_ECORRUPT;
    pyq_counter_add(&q->ws.full_events, 1);
    if (timeout_ns == 0)
        return PYQ_EAGAIN;
    if (timeout_ns > 0)
        deadline = pyq_now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        if (atomic_load_explicit(&q->closed, memory_order_relaxed))
            return PYQ_ECLOSED;
        n++;
        pyq_counter_add(&q->ws.retries, 1);
        if (q->xproc && n > PYQ_SHM_SPIN_RETRIES) {
            uint32_t ev = pyq_shm_sleep_prepare(q, PYQ_SIDE_WRITER);
            if ((got = ready(q, arg)) != 0) { /* the last look after SHM-S2 */
                pyq_shm_sleep_cancel(q, PYQ_SIDE_WRITER);
                return got < 0 ? got : 0;
            }
            if (pyq_shm_sleep(q, PYQ_SIDE_WRITER, ev, deadline) == PYQ_EPEER)
                return PYQ_EPEER;
        } else if (every && ++since_yield >= every) {
            since_yield = 0;
            pyq_counter_add(&q->ws.yields, 1);
            sched_yield();
        } else {
            pyq_cpu_relax();
        }
        if ((got = ready(q, arg)) != 0)
            return got < 0 ? got : 0;
        if (PYQ_UNLIKELY(q->p.corrupt))
            return PYQ_ECORRUPT;
        if (timeout_ns > 0 && ((n & 63) == 0 || n > PYQ_SHM_SPIN_RETRIES) &&
            pyq_now_ns() >= deadline)
            return PYQ_EAGAIN;
    }
}

/* A free block, tier 1 first, waiting for one per pyq_w_wait(). */
int pyq_w_take_block(struct pyq_queue *q, int64_t timeout_ns)
{
    if (PYQ_LIKELY(try_take(q)))
        return 0;
    return pyq_w_wait(q, timeout_ns, take_ready, NULL);
}
