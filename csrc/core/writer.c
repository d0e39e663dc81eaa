/*
 * writer.c - the writer's single records: claim / commit / write / flush.
 * Writer thread only.  Batches are
 * writer_batch.c's; the pieces of a record and of a run that both use,
 * writer_run_pvt.h's; taking and sealing blocks, and the full-queue wait,
 * writer_block.c's.
 *
 * Hot path (block has room): bounds checks, the payload copy, one header store,
 * two single-writer counter bumps -- or, extending a run, the copy and two
 * stores (its members are counted when it ends).  Every special case is a bit
 * of one gate word (pyqueue_inline.h, PYQ_GATE_*), tested once.  No malloc,
 * lock or system call; the only system call is the sched_yield() of the
 * full-queue wait.
 */
#include <string.h>

/* The small copies' offset register (pyqueue_inline.h, pyq__move16x2): r8,
 * the first argument register the exported writes leave free -- they take
 * (q, data, len, timeout) in rdi, rsi, edx, rcx and pass len on to their slow
 * paths in edx, so the compiler's own pick (edx for len - 16) would move len
 * out of the way first.  Only here: in a caller's inlined loop a fixed
 * register costs moves. */
#define PYQ__MOVE_OFF_REG "r8"
#include "core/writer_run_pvt.h"


/* Scanning reader, before the commit of a record ending at next: its next
 * header must read zero.  It already does for a record that ends inside the
 * zeroed span -- every small message -- so nothing is stored ahead of its
 * commit: a store into the line after the record, which the reader's next-line
 * prefetch may hold Shared, would put an invalidation in front of the commit. */
static inline void before_commit(struct pyq_writer_state *w, uint32_t next, uint32_t limit)
{
    if (next + PYQ_RECORD_HEADER > w->zeroed && next < limit) /* the first test fails */
        pyq_store_relaxed(pyq_hdr(w->blk, next), 0);
}

/* After it: zero ahead to the end of the line after next's (writer_pvt.h).
 * These stores also leave that line Modified here before the reader first
 * reads it, so a later commit there only has to invalidate the reader's copy
 * instead of waiting for a full transfer.  after_commit_line() does the common cases and returns 1 when the general
 * span is left to do (after_commit_span): only words the reader cannot reach
 * before the next commit are in it (the header at next is zero already,
 * before_commit), so a caller may make it after its bookkeeping. */
static inline int after_commit_line(struct pyq_queue *q, uint32_t next, uint32_t limit)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t zeroed = w->zeroed;

    /* zeroed and limit are multiples of a line (block takes, and every span
     * ends at one), so the end of the line after next's, (next & ~63) + 128,
     * passes zeroed exactly when next + 64 >= zeroed: one test for the
     * commits of a line but the one that reaches it. */
    if (PYQ_LIKELY(next + (PYQ_ZERO_AHEAD - PYQ_CACHELINE) < zeroed))
        return 0;
    /* The commit that reaches the last zeroed line, short of it and of the
     * block's end (every small record but the one ending on a line's start):
     * the end of the line after next's is zeroed + 64 -- that one line. */
    if (PYQ_LIKELY(next < zeroed && zeroed < limit && !q->line_headers)) {
        zero_line(w->blk + zeroed);
        w->zeroed = zeroed + PYQ_CACHELINE;
        return 0;
    }
    return 1;
}

static void after_commit_span(struct pyq_queue *q, uint32_t next, uint32_t limit)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t zeroed = w->zeroed, to = (next & ~(uint32_t)(PYQ_CACHELINE - 1)) + PYQ_ZERO_AHEAD;

    if (to > limit)
        to = limit;
    if (to > zeroed) {
        zero_ahead(q, w->blk, next > zeroed ? next : zeroed, to);
        w->zeroed = to;
    }
}

static inline int claim(struct pyq_queue *q, uint32_t len, int64_t timeout_ns, uint8_t **payload)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t rec;

    if (PYQ_UNLIKELY(w->claim_len != PYQ_NO_CLAIM))
        return PYQ_EBUSY;
    if (PYQ_UNLIKELY(len > q->max_message))
        return PYQ_ETOOBIG;
    if (PYQ_UNLIKELY(atomic_load_explicit(&q->closed, memory_order_relaxed)))
        return PYQ_ECLOSED;
    rec = pyq_record_size(len, q->rec_mask);
    if (PYQ_UNLIKELY(!w->blk || w->pos + rec > q->cfg.block_size)) {
        int rc = 0;
        if (!w->blk || !q->scan || !pyq_w_take_linked(q)) {
            if (w->blk)
                pyq_w_seal(q, PYQ_HDR_PAD);
            rc = pyq_w_take_block(q, timeout_ns);
        }
        if (rc != 0)
            return rc;
    }
    w->claim_len = len;
    w->fast_limit = 0;
    w->run_len = PYQ_NO_RUN; /* a claim is a record of its own */
    w->run_key = PYQ__RUN_KEY(PYQ_NO_RUN);
    *payload = w->blk + w->pos + PYQ_RECORD_HEADER;
    return 0;
}

/* The publish policy, after a record ending at offset next of the current
 * block: each publishes it now, bytes:N once N bytes are unpublished (max: at
 * the seal or a flush). */
static inline void publish_policy(struct pyq_queue *q, uint32_t next, unsigned how)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t at = w->blk_start + next;

    if (!(how & REC_LOCAL) && q->cfg.publish == PYQ_PUBLISH_MAX)
        pyq_shm_wake_reader(q); /* shared scan_current: the commit is the hand-over */
    else if (q->cfg.publish == PYQ_PUBLISH_EACH || at - w->last_pub >= q->cfg.publish_bytes) {
        if (how & REC_SCAN) /* no run is open under q->scan (publish_store) */
            publish_store(q, at);
        else
            publish_local(q, at);
        if (!(how & REC_LOCAL) && q->xproc)
            pyq_shm_wake_reader(q);
    }
}

/* touch_after_write: a cache touch of the message just written (not a sync
 * device).  Never for a streamed block: it would fetch back the line just
 * streamed out. */
static inline void touch_record(const uint8_t *rec, uint32_t len)
{
    (void)*(const volatile uint8_t *)(rec + (len ? PYQ_RECORD_HEADER : 0));
}

#if PYQ_HAVE_NT
/* Out of line: the streamed case stays out of write_fast()'s register budget. */
static __attribute__((noinline)) void stream_payload_call(uint8_t *dst, const void *src,
                                                          uint32_t len)
{
    stream_payload(dst, src, len);
}
#endif

/* The one ending of a record, for commit() and write_fast(): the record at rec
 * (size bytes, ending at offset next <= limit) has its payload in place; store
 * its header, then the writer's bookkeeping.  nt: the block is streamed (w->nt
 * as the caller read it; 0 when REC_MAY_NT is not in how).  Returns 1, or with
 * REC_SEAL_OUT 2 when the early seal is due and left to the caller, 3 when
 * after_commit_span() and then the seal test are. */
static inline __attribute__((always_inline)) int finish_record(struct pyq_queue *q, uint8_t *rec,
                                                                uint32_t next, uint32_t size,
                                                                uint32_t len, uint32_t limit,
                                                                unsigned how, int nt)
{
    struct pyq_writer_state *w = &q->w;
    int span = 0;

    if (how & REC_SCAN) {
        before_commit(w, next, limit); /* W3 publishes the zero with the record */
        if (how & REC_MAY_NT)
            fence_streamed(w); /* the payload may be streamed; W3 is the edge */
    }
#if PYQ_HAVE_NT
    if (!(how & REC_SCAN) && nt) {
        stream_header_how(rec, len, how);
        w->nt_pending = 1;
    } else
#endif
    {
        commit_header_how(rec, len, how);
        if (!(how & (REC_PLAIN | REC_GATED)) && !nt && PYQ_UNLIKELY(q->cfg.touch_after_write))
            touch_record(rec, len);
    }
    if (how & REC_SCAN) {
        span = after_commit_line(q, next, limit);
        if (!(how & REC_SEAL_OUT) && PYQ_UNLIKELY(span)) {
            after_commit_span(q, next, limit);
            span = 0;
        }
        w->pos = next;
    } else if ((how & REC_PLAIN) || q->batch_ok) { /* a zero gate: publish max, no scan */
        /* and the position; a large message's record opens no run (length 0) */
        run_open(q, next - size, (how & REC_LARGE) ? 0 : len, next, 1);
    } else {
        w->pos = next;
    }
    pyq_count(&q->ws.messages, 1);
    pyq_count(&q->ws.bytes, len);
    if (!(how & REC_PLAIN) && q->commit_hook)
        publish_policy(q, next, how);
    if (PYQ_UNLIKELY(span))
        return 3; /* REC_SEAL_OUT: the zero span, then the seal test (write_scan_rest) */
    if (PYQ_UNLIKELY(limit - next < size)) { /* no room for another record of this size */
        if (how & REC_SEAL_OUT)
            return 2;
        pyq_w_seal_early(q);
    }
    return 1;
}

static inline void commit_how(struct pyq_queue *q, unsigned large)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t len = w->claim_len, pos = w->pos;
    uint32_t size = (uint32_t)pyq_record_size(len, q->rec_mask);

    w->claim_len = PYQ_NO_CLAIM;
    w->fast_limit = fast_limit(q);
    finish_record(q, w->blk + pos, pos + size, size, len, q->cfg.block_size,
                  REC_MAY_NT | (q->scan ? REC_SCAN : 0) | large, w->nt);
}

static inline void commit(struct pyq_queue *q)
{
    commit_how(q, 0);
}

void pyq_w_commit_kind(struct pyq_queue *q, uint64_t kind)
{
    commit_how(q, kind == PYQ_HDR_LARGE ? REC_LARGE : 0);
}

/* A block's claim, or the record of a large one (writer_large.c). */
int pyq_w_block_claim(struct pyq_queue *q, uint32_t len, int64_t timeout_ns, uint8_t **payload)
{
    return claim(q, len, timeout_ns, payload);
}

int pyq_writer_claim(pyq_queue_t *q, uint32_t len, int64_t timeout_ns, void **ptr)
{
    uint8_t *p;
    int rc = PYQ_UNLIKELY(len > q->max_message && q->w.claim_len == PYQ_NO_CLAIM)
                 ? pyq_w_large_claim(q, len, timeout_ns, &p)
                 : claim(q, len, timeout_ns, &p);
    if (rc == 0)
        *ptr = p;
    if (q->xproc)
        pyq_w_mirror(q); /* a block taken or sealed */
    return rc;
}

int pyq_writer_commit(pyq_queue_t *q)
{
    if (q->w.claim_len == PYQ_NO_CLAIM)   /* detach dropped a claim left open */
        return pyq_load_relaxed(&q->detached) ? PYQ_ECLOSED : PYQ_ENOCLAIM;
    if (PYQ_UNLIKELY(q->lg.claim_len != PYQ_NO_CLAIM))
        pyq_w_large_commit(q);
    else
        commit(q);
    if (q->xproc)
        pyq_w_mirror(q);
    return 0;
}

int pyq_writer_abort(pyq_queue_t *q)
{
    if (q->w.claim_len == PYQ_NO_CLAIM)
        return PYQ_ENOCLAIM;
    q->lg.claim_len = PYQ_NO_CLAIM; /* a large claim's slot: never written past head */
    /* Nothing was published: the header at pos is still zero (or stale and
     * below pub_pos never), so dropping the claim is enough -- except that the
     * claim's payload may have overwritten words of the zeroed span, which a
     * scanning reader's next headers rely on (writer_pvt.h, zero_ahead). */
    if (q->scan) {
        uint64_t end = (uint64_t)q->w.pos + PYQ_RECORD_HEADER + q->w.claim_len;
        zero_ahead(q, q->w.blk, q->w.pos + PYQ_RECORD_HEADER,
                   end < q->w.zeroed ? (uint32_t)end : q->w.zeroed);
    }
    q->w.claim_len = PYQ_NO_CLAIM;
    q->w.fast_limit = fast_limit(q);
    return 0;
}

static inline void copy_payload(struct pyq_queue *q, uint8_t *dst, const void *src, uint32_t len)
{
#if PYQ_HAVE_NT
    if (q->w.nt) {
        stream_payload(dst, src, len);
        q->w.nt_pending = 1;
        return;
    }
#endif
    memcpy(dst, src, len);
}

/* One more message of the open run's length (len == w->run_len): its payload
 * at pos, no header (run_close() stores the count), not counted (run_close()
 * counts it).  Returns 1 when written, 0 when the run is at its limit or the
 * queue is closed (the caller's general path decides).  how: REC_SMALL for a
 * small len that pyq__run_member() found the run's with none of the gate's
 * PYQ_GATE_RUN bits set (a cached block, no touch, not closed: that one
 * compare), which needs room past this member (pyqueue_inline.h's
 * pyq_writer_try_write_inline() is this case); REC_NT in a streamed block;
 * else REC_MAY_NT. */
static inline __attribute__((always_inline)) int run_extend(struct pyq_queue *q, const void *data,
                                                            uint32_t len, unsigned how)
{
    struct pyq_writer_state *w = &q->w;
    /* The word after this member: the position past it (its low half) and
     * the count with it (shared_owner.c: a writer killed after its store left
     * both past this member, before it neither). */
    uint64_t pos_run = pyq__pos_run_load(&w->pos_run), after = pos_run + w->run_inc;
    uint32_t step = w->run_step, pos = (uint32_t)pos_run, next = (uint32_t)after;
    uint8_t *dst;

    if (how & REC_SMALL) {
        /* Strictly below the limit: this copy never fills the block, so it
         * never tests for the seal (the next path does: write_run_other). */
        if (PYQ_UNLIKELY(next >= w->run_limit))
            return 0;
    } else if (PYQ_UNLIKELY(next > w->run_limit ||
                            atomic_load_explicit(&q->closed, memory_order_relaxed))) {
        return 0;
    }
    dst = w->blk + pos;
#if PYQ_HAVE_NT
    if (how & REC_NT) { /* write_run_other's: a small len, under backlog most members */
        stream_small(dst, data, len);
        w->nt_pending = 1;
    } else if ((how & REC_MAY_NT) && w->nt) {
        stream_payload(dst, data, len);
        w->nt_pending = 1;
    } else
#endif
    if (how & REC_MAY_NT) {
        put_members(q, dst, data, 1, len, step, 0);
    } else if (PYQ_UNLIKELY(!pyq__copy_member(dst, data, len))) {
        return 0; /* len is "no run" (UINT32_MAX), whose key run_key holds, not a member */
    }
    pyq__pos_run_store(&w->pos_run, after);
    if (!(how & REC_SMALL) && PYQ_UNLIKELY(next == q->cfg.block_size))
        pyq_w_seal_early(q); /* exactly full: sealed now (no scanning reader) */
    return 1;
}

/* The common case in one place: room in the current block, no claim -- claim
 * and commit() in one, for every publish policy.  how: REC_* constants, so
 * that pyq_writer_write() inlines a copy that calls nothing but
 * pyq_w_seal_early() and keeps the callee-saved registers untouched.
 * Returns 1 when the message was written (2: and, with REC_SEAL_OUT, the
 * early seal is the caller's to make). */
static inline __attribute__((always_inline)) int write_fast(struct pyq_queue *q, const void *data,
                                                            uint32_t len, unsigned how)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t pos = w->pos;
    uint64_t size = pyq_record_size(len, q->rec_mask), next = pos + size;
    uint8_t *rec;
    int nt;

    if (PYQ_UNLIKELY(next > w->fast_limit ||
                     (!(how & (REC_PLAIN | REC_GATED)) &&
                      atomic_load_explicit(&q->closed, memory_order_relaxed))))
        return 0;
    rec = w->blk + pos;
    nt = (how & REC_MAY_NT) && PYQ_UNLIKELY(w->nt);
#if PYQ_HAVE_NT
    if (nt)
        stream_payload_call(rec + PYQ_RECORD_HEADER, data, len);
    else
#endif
        copy_small(rec + PYQ_RECORD_HEADER, data, len, how);
    return finish_record(q, rec, (uint32_t)next, (uint32_t)size, len, w->fast_limit, how, nt);
}

/* A record through claim() and commit(): a block change, a full queue, a
 * closed queue.  Out of line, so that the paths before it stay small. */
static __attribute__((noinline)) int write_claimed(struct pyq_queue *q, const void *data,
                                                   uint32_t len, int64_t timeout_ns)
{
    uint8_t *p;
    int rc;

    if (PYQ_UNLIKELY(len > q->max_message))
        return pyq_w_large_write(q, data, len, timeout_ns);
    rc = claim(q, len, timeout_ns, &p);
    if (PYQ_UNLIKELY(rc != 0))
        return rc;
    copy_payload(q, p, data, len);
    commit(q);
    return 0;
}

/* Other lengths, streamed blocks.  Under q->scan a streamed block has no
 * fast_limit, so that copy need not test w->nt. */
static __attribute__((noinline)) int write_slow(struct pyq_queue *q, const void *data,
                                                uint32_t len, int64_t timeout_ns)
{
    /* run_len is PYQ_NO_RUN (UINT32_MAX, a len too) when no run is open. */
    if (len == q->w.run_len && len <= q->max_message && run_extend(q, data, len, REC_MAY_NT))
        return 0;
    if (q->scan ? write_fast(q, data, len, REC_SCAN) : write_fast(q, data, len, REC_MAY_NT))
        return 0;
    return write_claimed(q, data, len, timeout_ns);
}

/* write_scan()'s record of len bytes, now at w->pos, left the general zero
 * span and the seal test to do (finish_record, REC_SEAL_OUT).  Returns 0. */
static __attribute__((noinline)) int write_scan_rest(struct pyq_queue *q, uint32_t len)
{
    uint32_t next = q->w.pos, limit = q->cfg.block_size; /* write_fast's limit */

    after_commit_span(q, next, limit);
    if (limit - next < (uint32_t)pyq_record_size(len, q->rec_mask))
        return pyq_w_seal_early(q);
    return 0;
}

/* The small-message fast path for a scanning reader (publish each or
 * scan_current) of an in-process queue, apart: its header zeroing would
 * otherwise cost every other configuration's fast path two callee-saved
 * registers.  Reached by a tail call from write_record(), which found the gate
 * word SCAN and at most HOOK: not closed, no touch, a cached block, no reader
 * to wake (REC_GATED, REC_LOCAL); when it fails, so would write_slow()'s. */
static __attribute__((noinline)) int write_scan(struct pyq_queue *q, const void *data,
                                                uint32_t len, int64_t timeout_ns)
{
    int done = write_fast(q, data, len, REC_SMALL | REC_SCAN | REC_LOCAL | REC_GATED | REC_SEAL_OUT);

    /* The calls after the record are tail calls: nothing is live across a
     * call, so this path saves no register. */
    if (PYQ_LIKELY(done == 1))
        return 0;
    if (done == 2)
        return pyq_w_seal_early(q); /* 0 */
    if (done == 3)
        return write_scan_rest(q, len);
    return write_claimed(q, data, len, timeout_ns);
}

/* write_scan() for a shared queue: its commits may wake a sleeping reader. */
static __attribute__((noinline)) int write_scan_shared(struct pyq_queue *q, const void *data,
                                                       uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(write_fast(q, data, len, REC_SMALL | REC_SCAN)))
        return 0;
    return write_claimed(q, data, len, timeout_ns);
}

/* The plain small record: the gate word was zero, the one test for every
 * special case. */
static __attribute__((noinline)) int write_plain(struct pyq_queue *q, const void *data,
                                                 uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(write_fast(q, data, len, REC_SMALL | REC_LOCAL | REC_PLAIN)))
        return 0;
    return write_claimed(q, data, len, timeout_ns); /* write_slow's would fail alike */
}

/* Touch, bytes:N -- the small record with its tests -- and the rest. */
static __attribute__((noinline)) int write_general(struct pyq_queue *q, const void *data,
                                                   uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(is_small(len) && !q->w.special)) {
        if (PYQ_LIKELY(write_fast(q, data, len, REC_SMALL | REC_LOCAL)))
            return 0;
        return write_claimed(q, data, len, timeout_ns); /* write_slow's would fail alike */
    }
    return write_slow(q, data, len, timeout_ns);
}

/* Everything but the extension of a run, by tail calls only: a body shared
 * with the paths would save their callee-saved registers before choosing. */
static int write_run_other(struct pyq_queue *q, const void *data, uint32_t len,
                           int64_t timeout_ns);
static int write_shared(struct pyq_queue *q, const void *data, uint32_t len,
                        int64_t timeout_ns);

static __attribute__((noinline)) int write_record(struct pyq_queue *q, const void *data,
                                                  uint32_t len, int64_t timeout_ns)
{
    uint32_t gate = pyq_load_relaxed(&q->w.gate);

    if (PYQ_LIKELY(is_small(len))) {
        if (PYQ_LIKELY(gate == 0))
            return write_plain(q, data, len, timeout_ns);
        /* A scanning reader in-process (each, or scan_current with any
         * policy), nothing else set: the gate's one compare. */
        if ((gate & ~PYQ_GATE_HOOK) == PYQ_GATE_SCAN)
            return write_scan(q, data, len, timeout_ns);
    }
    if (PYQ_UNLIKELY(gate & PYQ_GATE_XPROC))
        return write_shared(q, data, len, timeout_ns);
    if (PYQ_LIKELY(is_small(len))) {
        /* The open run's length under a PYQ_GATE_RUN bit (write_one's compare
         * failed on run_gate): a streamed block or touch, write_run_other's
         * cases -- here, not in write_one, so that a record pays no compare
         * for them.  Closed goes the general way, which refuses
         * (write_run_other comes back here when it cannot extend). */
        if (PYQ__RUN_KEY(len) == q->w.run_key && !(gate & PYQ_GATE_CLOSED) &&
            !atomic_load_explicit(&q->closed, memory_order_relaxed))
            return write_run_other(q, data, len, timeout_ns);
    }
    return write_general(q, data, len, timeout_ns);
}

/* The member that does not fit in the open run (its block's end or its cap;
 * a small len, q->batch_ok, no claim, not closed): it starts the next run, in
 * the next block when this one has no room -- the record write_record()
 * would make, without its general path. */
static __attribute__((noinline)) int write_run_next(struct pyq_queue *q, const void *data,
                                                    uint32_t len, int64_t timeout_ns)
{
    uint32_t step = (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
    int rc = run_room(q, step, timeout_ns);

    if (PYQ_UNLIKELY(rc != 0))
        return rc;
    run_start(q, data, 1, len, step, REC_SMALL);
    return 0;
}

/* The next message of the open run that pyq_writer_write()'s copy turned
 * away: in a streamed (spill) block -- under backlog most messages go this
 * way --, with touch_after_write, the member that fills the block or reaches
 * the run's cap.  Apart from write_record(), whose other paths make it save
 * five registers first. */
static __attribute__((noinline)) int write_run_other(struct pyq_queue *q, const void *data,
                                                     uint32_t len, int64_t timeout_ns)
{
    if (PYQ_UNLIKELY(!is_small(len))) /* UINT32_MAX, "no run", whose key run_key holds */
        return write_record(q, data, len, timeout_ns);
    if (PYQ_LIKELY(q->w.nt)) {
        if (PYQ_LIKELY(run_extend(q, data, len, REC_NT)))
            return 0;
    } else if (run_extend(q, data, len, REC_MAY_NT)) {
        return 0;
    }
    if (PYQ_LIKELY(!atomic_load_explicit(&q->closed, memory_order_relaxed)))
        return write_run_next(q, data, len, timeout_ns);
    return write_record(q, data, len, timeout_ns);
}

/* Every write of a shared queue (the gate's XPROC; run_gate holds it too, so
 * no inline run path gets here first): the in-process paths' choice for the
 * cases a shared queue has, then the writer's mirror (queue_pvt.h), so that
 * what this call committed is where a peer can find it. */
static __attribute__((noinline)) int write_shared(struct pyq_queue *q, const void *data,
                                                  uint32_t len, int64_t timeout_ns)
{
    uint32_t gate = pyq_load_relaxed(&q->w.gate);
    int rc;

    if (PYQ_UNLIKELY(q->p.corrupt & PYQ_CORRUPT_WRITER))
        return PYQ_ECORRUPT;
    /* The next member of the open run, as write_one() takes it in-process:
     * run_gate holds nothing but XPROC (not closed, no touch, a cached block). */
    if (PYQ_LIKELY(q->w.run_key == PYQ__RUN_KEY(len) &&
                   pyq_load_relaxed(&q->w.run_gate) == PYQ_GATE_XPROC) &&
        run_extend(q, data, len, REC_SMALL)) {
        w_mirror(q);
        return 0;
    }
    if (is_small(len) && (gate & PYQ_GATE_SCAN) && !q->w.nt)
        rc = write_scan_shared(q, data, len, timeout_ns);
    else if (is_small(len) && PYQ__RUN_KEY(len) == q->w.run_key && !(gate & PYQ_GATE_CLOSED) &&
             !atomic_load_explicit(&q->closed, memory_order_relaxed))
        rc = write_run_other(q, data, len, timeout_ns);
    else
        rc = write_general(q, data, len, timeout_ns);
    w_mirror(q);
    return rc;
}

/* The next message of a run first, on its own: write_record()'s paths need
 * callee-saved registers, and sharing a body with them would make this one
 * save and restore them too.  Inlined into both exported writes, so that
 * pyq_writer_try_write() is not a jump to pyq_writer_write(). */
static inline __attribute__((always_inline)) int write_one(struct pyq_queue *q, const void *data,
                                                           uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(pyq__run_member(&q->w.run_key, len))) {
        if (PYQ_LIKELY(run_extend(q, data, len, REC_SMALL)))
            return 0;
        return write_run_other(q, data, len, timeout_ns);
    }
    return write_record(q, data, len, timeout_ns);
}

int pyq_writer_write(pyq_queue_t *q, const void *data, uint32_t len, int64_t timeout_ns)
{
    return write_one(q, data, len, timeout_ns);
}

int pyq_writer_try_write(pyq_queue_t *q, const void *data, uint32_t len)
{
    return write_one(q, data, len, 0);
}

int pyq_writer_flush(pyq_queue_t *q)
{
    struct pyq_writer_state *w = &q->w;

    if (w->blk)
        publish(q, w->blk_start + w->pos);
    if (q->xproc)
        pyq_w_mirror(q);
    return 0;
}

void pyq_writer_detach(pyq_queue_t *q)
{
    /* A claim still open is dropped: committed after the reader was told
     * end-of-stream it would appear past the end (commit then says ECLOSED). */
    if (q->w.claim_len != PYQ_NO_CLAIM)
        pyq_writer_abort(q);
    pyq_q_mark_closed(q);
    pyq_writer_flush(q);
    /* W4: every committed record is published before this; pairs with A5. */
    pyq_store_release(&q->detached, 1);
    if (q->xproc)
        pyq_shm_wake_reader(q); /* a reader asleep on the futex sees the end */
}
