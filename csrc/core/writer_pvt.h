/*
 * writer_pvt.h - what the records (writer.c, writer_batch.c) and the blocks
 * (writer_block.c) share.
 * Private, never installed.  Writer thread only.
 */
#ifndef PYQ_WRITER_PVT_H
#define PYQ_WRITER_PVT_H

#include "core/queue_pvt.h"
#include "core/shared_pvt.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#define PYQ_HAVE_NT 1
#else
#define PYQ_HAVE_NT 0
#endif

/* Streaming stores (a spill block under spill_nontemporal) are weakly ordered:
 * no release orders them, so they are fenced before the release that hands
 * them to the reader.  Which release that is depends on how the reader finds
 * records: a scanning reader (q->scan) takes each at its header or PAD (W3),
 * so commit and seal fence before storing that header through the cache; any
 * other reader looks only below pub_pos, so its headers may be streamed too
 * and publish() fences before W2. */
static inline void fence_streamed(struct pyq_writer_state *w)
{
#if PYQ_HAVE_NT
    if (w->nt_pending) {
        _mm_sfence();
        w->nt_pending = 0;
    }
#else
    (void)w;
#endif
}

PYQ_PRIVATE void pyq_w_run_end(struct pyq_queue *q, uint32_t n);

/* pyq_w_mirror() inline while only the position moved (queue_pvt.h, struct
 * pyq_wmirror): one store. */
static inline void w_mirror(struct pyq_queue *q)
{
    const struct pyq_writer_state *w = &q->w;
    uint64_t g = q->p.wgen;

    if (PYQ_LIKELY(g && w->seq == q->p.wm_seq && w->run_hdr == q->p.wm_run_hdr &&
                   __atomic_load_n(&w->run_id, __ATOMIC_RELAXED) == q->p.wm_run_id &&
                   (w->blk != NULL) == q->p.wm_blk))
        pyq_store_relaxed(&q->wm.s[g & 1].pos_run,
                          __atomic_load_n(&w->pos_run, __ATOMIC_RELAXED));
    else
        pyq_w_mirror(q);
}

/* No run to end: the open run's count (queue_pvt.h, struct pyq_writer_state:
 * run_n, the high half of pos_run) zeroed, a release store as every store of
 * the count (W6; a plain store on x86-64): pyq_queue_stats() may read it from
 * any thread (pyq_w_pending). */
static inline void run_clear(struct pyq_writer_state *w)
{
    __atomic_store_n(&w->run_n, 0, __ATOMIC_RELEASE); /* a count store: W6 */
}

/* A run of len opens: a new id (the length and one more generation) when its
 * length is not the last run's; its count follows (run_open).  Runs of one
 * length keep one id: their counts all go with it (pyq_w_pending), and a
 * block's next run of the same length -- the streaming case -- stores nothing
 * here. */
static inline void run_begin(struct pyq_writer_state *w, uint32_t len)
{
    /* W6: the id after every earlier count (the count after the id: every
     * store of the count is a release store, pyq__pos_run_store); pairs with
     * A7 in pyq_w_pending. */
    if (PYQ_UNLIKELY(len != w->run_size))
        __atomic_store_n(&w->run_id, ((uint64_t)(w->run_gen + 1) << 32) | len,
                         __ATOMIC_RELEASE);
}

/* k more members of bytes in all at pos: the position and the count move in
 * one add to memory (on x86-64, pyqueue_inline.h's pyq__pos_run_add; a release
 * store), never a 4-byte store of one half that the next 8-byte load of the
 * word could not take from the store buffer. */
static inline void run_advance(struct pyq_writer_state *w, uint64_t bytes, uint64_t k)
{
    pyq__pos_run_add(&w->pos_run, bytes + (k << 32));
}

/* End the open run (queue_pvt.h, Runs): no write extends it any more, and a
 * run of more than one message gets its count and its members after the first
 * counted (pyq_w_run_end, out of line: this stays small enough for the
 * per-commit publish of each and bytes:N to inline). */
static inline void run_close(struct pyq_queue *q)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t n = w->run_n;

    w->run_len = PYQ_NO_RUN;
    w->run_key = PYQ__RUN_KEY(PYQ_NO_RUN);
    if (PYQ_UNLIKELY(n > 1))
        pyq_w_run_end(q, n);
    else if (n)
        run_clear(w);
}

/* Make everything committed up to pos visible to a non-scanning reader, no
 * run being open: publish_local() without its run_close().  Under q->scan no
 * run is ever open (runs need q->batch_ok: publish max, no scanning reader),
 * so the per-commit publish of each and bytes:N there skips that close. */
static inline void publish_store(struct pyq_queue *q, uint64_t pos)
{
    struct pyq_writer_state *w = &q->w;

    if (pos == w->last_pub)
        return;
    fence_streamed(w);
    w->last_pub = pos;
    /* W2: every record below pos is complete; pairs with A2 in reader.c. */
    pyq_store_release(&q->pub_pos, pos);
    pyq_count(&q->ws.publishes, 1);
}

/* Make everything committed up to pos visible to a non-scanning reader.
 * publish_local: an in-process queue's (no reader asleep on a futex). */
static inline void publish_local(struct pyq_queue *q, uint64_t pos)
{
    run_close(q); /* a published run never grows: the reader may have read it */
    publish_store(q, pos);
}

static inline void publish(struct pyq_queue *q, uint64_t pos)
{
    publish_local(q, pos);
    if (q->xproc)
        pyq_shm_wake_reader(q);
}

/* The fast path of pyq_writer_write() needs a current block and no claim
 * outstanding; with a scanning reader, not a streamed block (its payload must be
 * fenced before the header, fence_streamed: the fast path never does that). */
static inline uint32_t fast_limit(const struct pyq_queue *q)
{
    const struct pyq_writer_state *w = &q->w;
    return w->blk && w->claim_len == PYQ_NO_CLAIM && !(q->scan && w->nt) ? q->cfg.block_size : 0;
}

/* Scanning reader (q->scan): the writer keeps every possible header position
 * in [w->pos, w->zeroed) of its block reading zero, so that the header after a
 * record is already zero when the record is committed, and nothing has to be
 * stored ahead of a small record's commit.  The zeros are made in whole lines,
 * ahead, after commits (writer.c, after_commit_line and after_commit_span) and
 * when a block is taken (writer_block.c, clear_headers).  Header positions: every 8-byte word, or
 * with line headers (scan_current) the first word of each line.  Relaxed
 * stores: the reader may be reading these words as headers (W3 or W1 publishes
 * them). */
#define PYQ_ZERO_AHEAD 128u /* zeroed up to the end of the line after next's */

/* The eight header words of the line at p (line-aligned), written out: the
 * compiler does not unroll a loop of atomic stores, and a loop would pay its
 * step and test on every word. */
static inline void zero_line(uint8_t *p)
{
    _Static_assert(PYQ_CACHELINE == 8 * PYQ_RECORD_ALIGN, "eight header words a line");
    pyq_store_relaxed(pyq_hdr(p, 0), 0);
    pyq_store_relaxed(pyq_hdr(p, 8), 0);
    pyq_store_relaxed(pyq_hdr(p, 16), 0);
    pyq_store_relaxed(pyq_hdr(p, 24), 0);
    pyq_store_relaxed(pyq_hdr(p, 32), 0);
    pyq_store_relaxed(pyq_hdr(p, 40), 0);
    pyq_store_relaxed(pyq_hdr(p, 48), 0);
    pyq_store_relaxed(pyq_hdr(p, 56), 0);
}

static inline void zero_ahead(const struct pyq_queue *q, uint8_t *blk, uint32_t from, uint32_t to)
{
    if (q->line_headers) {
        for (uint32_t o = (from + PYQ_CACHELINE - 1) & ~(uint32_t)(PYQ_CACHELINE - 1); o < to;
             o += PYQ_CACHELINE)
            pyq_store_relaxed(pyq_hdr(blk, o), 0);
    } else {
        /* blk is line-aligned (the pool is page-aligned, block_size a multiple
         * of a line), so p's line offset is the block offset's. */
        uint8_t *p = blk + from, *end = blk + to;

        for (; p < end && ((uintptr_t)p & (PYQ_CACHELINE - 1)); p += PYQ_RECORD_ALIGN)
            pyq_store_relaxed(pyq_hdr(p, 0), 0);
        for (; p < end && end - p >= PYQ_CACHELINE; p += PYQ_CACHELINE)
            zero_line(p);
        for (; p < end; p += PYQ_RECORD_ALIGN)
            pyq_store_relaxed(pyq_hdr(p, 0), 0);
    }
}

/* writer_block.c: taking, sealing and linking blocks; the end of a run. */
PYQ_PRIVATE void pyq_w_seal(struct pyq_queue *q, uint64_t pad);
PYQ_PRIVATE int pyq_w_take_linked(struct pyq_queue *q);
PYQ_PRIVATE int pyq_w_seal_early(struct pyq_queue *q); /* 0, for tail calls */
PYQ_PRIVATE int pyq_w_take_block(struct pyq_queue *q, int64_t timeout_ns);

#endif
