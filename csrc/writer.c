/*
 * writer.c - the writer side: claim / commit / write / flush and the full-queue
 * wait (SPEC §3.3, §3.5, §3.6, §3.7).  Writer thread only.
 *
 * Hot path (block has room): bounds checks, the payload copy, one header store,
 * two single-writer counter bumps.  No malloc, lock or system call; the only
 * system call is the sched_yield() of the full-queue wait.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <time.h>

#include "queue_pvt.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#define PYQ_HAVE_NT 1
#else
#define PYQ_HAVE_NT 0
#endif

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Make everything committed up to pos visible to a non-scanning reader. */
static inline void publish(struct pyq_queue *q, uint64_t pos)
{
    struct pyq_writer_state *w = &q->w;

    if (pos == w->last_pub)
        return;
#if PYQ_HAVE_NT
    if (w->nt_pending) {
        /* Streaming stores are weakly ordered: fence them before the release. */
        _mm_sfence();
        w->nt_pending = 0;
    }
#endif
    w->last_pub = pos;
    /* W2: every record below pos is complete; pairs with A2 in reader.c. */
    pyq_store_release(&q->pub_pos, pos);
    pyq_counter_add(&q->ws.publishes, 1);
}

/* The current block gets no more records: mark its end with pad (PYQ_HDR_PAD,
 * or a linked PAD naming the next block) and publish it whole. */
static __attribute__((noinline)) void seal(struct pyq_queue *q, uint64_t pad)
{
    struct pyq_writer_state *w = &q->w;

    if (w->pos < q->cfg.block_size) {
#if PYQ_HAVE_NT
        if (w->nt_pending && q->scan) {
            _mm_sfence();
            w->nt_pending = 0;
        }
#endif
        /* W3: end of block for a scanning reader (and, linked, the next block's
         * zeroed first header); pairs with A3 in reader.c. */
        pyq_store_release(pyq_hdr(w->blk, w->pos), pad);
    }
    publish(q, w->seq * (uint64_t)q->cfg.block_size);
    pyq_counter_add(&q->ws.blocks_published, 1);
    w->blk = NULL;
    w->fast_limit = 0;
}

/* The fast path of pyq_writer_write() needs a current block and no claim
 * outstanding; with a scanning reader, not a streamed block (commit() fences the
 * streamed payload before the header a scanning reader waits on). */
static inline uint32_t fast_limit(const struct pyq_queue *q)
{
    const struct pyq_writer_state *w = &q->w;
    return w->blk && w->claim_len == PYQ_NO_CLAIM && !(q->scan && w->nt) ? q->cfg.block_size : 0;
}

/* The first 4 KiB of a block, every line in exclusive state (PREFETCHW). */
static inline void prefetch_for_write(const struct pyq_queue *q, uint8_t *blk)
{
    uint32_t span = q->cfg.block_size < 4096 ? q->cfg.block_size : 4096;

    for (uint32_t off = 0; off < span; off += PYQ_CACHELINE)
        pyq_prefetch_write(blk + off);
}

/* A block the writer takes, for a scanning reader: headers left from its last
 * use must read zero before the reader can get there (W1 or a linked PAD's W3
 * publishes these stores).  The first header; with line headers also the
 * second line's, for ahead_headers(). */
static inline void clear_headers(const struct pyq_queue *q, uint8_t *blk)
{
    pyq_store_relaxed(pyq_hdr(blk, 0), 0);
    if (q->line_headers && q->cfg.block_size > PYQ_RECORD_ALIGN_SCAN)
        pyq_store_relaxed(pyq_hdr(blk, PYQ_RECORD_ALIGN_SCAN), 0);
}

/* Line headers (scan_current), around the commit of a record at pos ending at
 * next.  Invariant: when a record is written at pos, the header of the line
 * after pos already reads zero (clear_headers for pos 0).  So a one-line
 * record -- every small message -- stores nothing ahead of its commit: the
 * line after it, which the reader's next-line prefetch may hold Shared, would
 * put an invalidation in front of every commit.  A longer record clears the
 * header at next before its commit (`before`).  After the commit, the record
 * clears the header one line past next, keeping the invariant for the next
 * record; that store also leaves that line Modified here before the reader
 * first reads it, so its commit later only has to invalidate the reader's copy
 * instead of waiting for a full transfer (round trip 1.37x -> 1.15x the
 * same-line floor in a minimal ring, 'near' placement). */
static inline void ahead_headers(uint8_t *blk, uint32_t pos, uint32_t next, uint32_t limit,
                                 int before)
{
    if (before) {
        if (next - pos > PYQ_RECORD_ALIGN_SCAN && next < limit)
            pyq_store_relaxed(pyq_hdr(blk, next), 0);
    } else if (next + PYQ_RECORD_ALIGN_SCAN < limit) {
        pyq_store_relaxed(pyq_hdr(blk, next + PYQ_RECORD_ALIGN_SCAN), 0);
    }
}

static inline void start_block(struct pyq_queue *q, uint32_t idx, int tier, int zeroed)
{
    struct pyq_writer_state *w = &q->w;
    uint8_t *blk = q->base + (size_t)idx * q->cfg.block_size;
    uint64_t rd, wr;

    w->blk = blk;
    w->pos = 0;
    w->tier = tier;
    w->nt = PYQ_HAVE_NT && tier == PYQ_TIER_SPILL && q->cfg.spill_nontemporal;
    w->special = w->nt || q->line_headers;
    w->fast_limit = fast_limit(q);
    if (q->scan && !zeroed)
        clear_headers(q, blk); /* W1 below makes the zeros visible with the block */
    if (q->cfg.prefetch) {
        /* Ask for every line of the block in exclusive state now, so the
         * ownership transfers from the reader's cache overlap instead of
         * arriving one store-buffer stall at a time -- and for the hot block
         * taken after this one, so that its transfers have the whole of this
         * block's writing to arrive in.  That block is the head of the hot free
         * ring as last seen (free_tail_cache: no read of the reader's line);
         * A4 made its slot visible.  A spill block is left alone: it is
         * usually streamed, and fetching lines a streaming store then evicts
         * would be waste. */
        uint64_t next = w->free_head[PYQ_TIER_HOT];
        prefetch_for_write(q, blk);
        if (next != w->free_tail_cache[PYQ_TIER_HOT])
            prefetch_for_write(q, q->base + (size_t)q->free_slots[PYQ_TIER_HOT]
                                                [next & q->free_mask[PYQ_TIER_HOT]] *
                                                q->cfg.block_size);
    }
    q->ring[w->seq & q->ring_mask] = idx;
    w->seq++;
    /* W1: ring slot (and the zeroed first header) visible; pairs with A1 in reader.c. */
    pyq_store_release(&q->ring_tail, w->seq);
    pyq_counter_add(&q->ws.takes[tier], 1);

    /* Peak backlog, sampled once per block: a read of the reader's counter line. */
    rd = pyq_load_relaxed(&q->rs.bytes);
    wr = pyq_load_relaxed(&q->ws.bytes);
    if (wr > rd && wr - rd > pyq_load_relaxed(&q->ws.peak_backlog))
        pyq_store_relaxed(&q->ws.peak_backlog, wr - rd);
}

/* Pop a free block of tier t without waiting: its index, or -1 if none. */
static inline int64_t pop_free(struct pyq_queue *q, int t)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t head = w->free_head[t];

    if (head == w->free_tail_cache[t]) {
        /* A4: the reader is done with blocks below free_tail; pairs with R1. */
        w->free_tail_cache[t] = pyq_load_acquire(&q->free_tail[t]);
        if (head == w->free_tail_cache[t])
            return -1;
    }
    w->free_head[t] = head + 1;
    return q->free_slots[t][head & q->free_mask[t]];
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
    clear_headers(q, q->base + (size_t)idx * q->cfg.block_size);
    seal(q, pyq_hdr_link(idx, q->w.seq));
    start_block(q, idx, tier, 1);
}

/* Scanning reader, the next record does not fit: take the next block (tier 1
 * first) before sealing this one, and link to it.  Returns 1 when done, 0
 * (nothing changed) when no block is free now. */
static __attribute__((noinline)) int take_linked(struct pyq_queue *q)
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

/* After a commit that left less room than the record just written: the next
 * record of that size will not fit.  With a scanning reader, take the next
 * hot block now and seal this one with a PAD that names it (nothing to mark
 * if it is exactly full) rather than at the next write: the reader meets the
 * PAD right behind the last record, often in the same line, and goes to wait
 * on the next block's first header while the queue is idle -- so a message
 * that starts a block costs one line transfer like any other.  Hot tier only
 * and never waiting: a take at the next write would choose the same block
 * (free hot blocks only accumulate until the writer takes one), so tiers and
 * full-queue outcomes do not change.  Otherwise (not scanning, closed, no free
 * hot block) only an exactly full block is sealed, and the next write that
 * does not fit seals as before. */
static __attribute__((noinline)) void seal_early(struct pyq_queue *q)
{
    struct pyq_writer_state *w = &q->w;

    if (q->scan && !atomic_load_explicit(&q->closed, memory_order_relaxed)) {
        int64_t idx = pop_free(q, PYQ_TIER_HOT);
        if (idx >= 0) {
            seal_linked(q, (uint32_t)idx, PYQ_TIER_HOT);
            return;
        }
    }
    if (w->pos == q->cfg.block_size)
        seal(q, PYQ_HDR_PAD);
}

/* SPEC §3.6: spin with a relax hint, sched_yield() every retry_yield_every
 * failed retries (0 = never), until a block is free, the timeout passes or the
 * queue is closed. */
static int take_block(struct pyq_queue *q, int64_t timeout_ns)
{
    uint32_t every = q->cfg.retry_yield_every, since_yield = 0;
    uint64_t deadline = 0, n = 0;

    if (PYQ_LIKELY(try_take(q)))
        return 0;
    pyq_counter_add(&q->ws.full_events, 1);
    if (timeout_ns == 0)
        return PYQ_EAGAIN;
    if (timeout_ns > 0)
        deadline = monotonic_ns() + (uint64_t)timeout_ns;
    for (;;) {
        if (atomic_load_explicit(&q->closed, memory_order_relaxed))
            return PYQ_ECLOSED;
        n++;
        pyq_counter_add(&q->ws.retries, 1);
        if (every && ++since_yield >= every) {
            since_yield = 0;
            pyq_counter_add(&q->ws.yields, 1);
            sched_yield();
        } else {
            pyq_cpu_relax();
        }
        if (try_take(q))
            return 0;
        if (timeout_ns > 0 && (n & 63) == 0 && monotonic_ns() >= deadline)
            return PYQ_EAGAIN;
    }
}

static inline int claim(struct pyq_queue *q, uint32_t len, int64_t timeout_ns, uint8_t **payload)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t rec;

    if (PYQ_UNLIKELY(w->claim_len != PYQ_NO_CLAIM))
        return PYQ_EBUSY;
    if (PYQ_UNLIKELY(len > q->max_message))
        return PYQ_ETOOBIG;
    if (PYQ_UNLIKELY(atomic_load_explicit(&q->closed, memory_order_relaxed)))
        return PYQ_ECLOSED;
    rec = pyq_record_size(q, len);
    if (PYQ_UNLIKELY(!w->blk || w->pos + rec > q->cfg.block_size)) {
        int rc = 0;
        if (!w->blk || !q->scan || !take_linked(q)) {
            if (w->blk)
                seal(q, PYQ_HDR_PAD);
            rc = take_block(q, timeout_ns);
        }
        if (rc != 0)
            return rc;
    }
    w->claim_len = len;
    w->fast_limit = 0;
    *payload = w->blk + w->pos + PYQ_RECORD_HEADER;
    return 0;
}

/* SPEC §3.3 after a record ending at offset next of the current block: each
 * publishes it now, bytes:N once N bytes are unpublished (max: seal or flush). */
static inline void publish_policy(struct pyq_queue *q, uint32_t next)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t at = (w->seq - 1) * (uint64_t)q->cfg.block_size + next;

    if (q->cfg.publish == PYQ_PUBLISH_EACH || at - w->last_pub >= q->cfg.publish_bytes)
        publish(q, at);
}

static inline void commit(struct pyq_queue *q)
{
    struct pyq_writer_state *w = &q->w;
    const uint32_t bs = q->cfg.block_size;
    uint32_t len = w->claim_len, pos = w->pos, rec = pyq_record_size(q, len), next = pos + rec;
    uint64_t hdr = PYQ_HDR_COMMIT | len;

    if (q->scan) {
        if (q->line_headers) {
            ahead_headers(w->blk, pos, next, bs, 1);
        } else if (next < bs) {
            /* Clear the stale header after this record; W3 publishes the zero
             * together with the record, so a scanning reader stops there. */
            pyq_store_relaxed(pyq_hdr(w->blk, next), 0);
        }
#if PYQ_HAVE_NT
        if (w->nt_pending) {
            _mm_sfence();
            w->nt_pending = 0;
        }
#endif
    }
#if PYQ_HAVE_NT
    if (w->nt && !q->scan) {
        /* Non-scanning readers only look below pub_pos: publish() fences. */
        _mm_stream_si64((long long *)(void *)(w->blk + pos), (long long)hdr);
        w->nt_pending = 1;
    } else
#endif
    {
        /* W3: the payload is complete; pairs with A3 in reader.c (q->scan).
         * Without scanning, W2 is the edge and this costs a plain store on x86. */
        pyq_store_release(pyq_hdr(w->blk, pos), hdr);
    }
    if (q->line_headers)
        ahead_headers(w->blk, pos, next, bs, 0);
    w->pos = next;
    w->claim_len = PYQ_NO_CLAIM;
    w->fast_limit = fast_limit(q);
    pyq_counter_add(&q->ws.messages, 1);
    pyq_counter_add(&q->ws.bytes, len);

    if (q->cfg.touch_after_write && !w->nt) {
        /* SPEC §3.7: a cache touch of the message just written (not a sync device).
         * Skipped for streamed blocks: it would fetch back the line just streamed out. */
        (void)*(volatile uint8_t *)(w->blk + pos + (len ? PYQ_RECORD_HEADER : 0));
    }

    if (q->cfg.publish != PYQ_PUBLISH_MAX)
        publish_policy(q, next);
    if (bs - next < rec)
        seal_early(q);
}

int pyq_writer_claim(pyq_queue_t *q, uint32_t len, int64_t timeout_ns, void **ptr)
{
    uint8_t *p;
    int rc = claim(q, len, timeout_ns, &p);
    if (rc == 0)
        *ptr = p;
    return rc;
}

int pyq_writer_commit(pyq_queue_t *q)
{
    if (q->w.claim_len == PYQ_NO_CLAIM)
        return PYQ_ENOCLAIM;
    commit(q);
    return 0;
}

int pyq_writer_abort(pyq_queue_t *q)
{
    if (q->w.claim_len == PYQ_NO_CLAIM)
        return PYQ_ENOCLAIM;
    /* Nothing was published: the header at pos is still zero (or stale and
     * below pub_pos never), so dropping the claim is enough -- except that a
     * long claim's payload may have overwritten the header of the line after
     * pos, which line headers keep zero (ahead_headers). */
    if (q->line_headers && q->w.pos + PYQ_RECORD_ALIGN_SCAN < q->cfg.block_size)
        pyq_store_relaxed(pyq_hdr(q->w.blk, q->w.pos + PYQ_RECORD_ALIGN_SCAN), 0);
    q->w.claim_len = PYQ_NO_CLAIM;
    q->w.fast_limit = fast_limit(q);
    return 0;
}

static inline void copy_payload(struct pyq_queue *q, uint8_t *dst, const void *src, uint32_t len)
{
#if PYQ_HAVE_NT
    if (q->w.nt) {
        const uint8_t *s = src;
        uint32_t words = len / 8, rem = len % 8;
        for (uint32_t i = 0; i < words; i++) {
            long long v;
            memcpy(&v, s + 8 * i, 8);
            _mm_stream_si64((long long *)(void *)(dst + 8 * i), v);
        }
        if (rem) {
            long long v = 0;
            memcpy(&v, s + 8 * words, rem);
            _mm_stream_si64((long long *)(void *)(dst + 8 * words), v);
        }
        q->w.nt_pending = 1;
        return;
    }
#endif
    memcpy(dst, src, len);
}

/* Lengths copy_small() moves without a call. */
#define PYQ_SMALL_MIN 8u
#define PYQ_SMALL_MAX 64u
static inline int is_small(uint32_t len)
{
    return len - PYQ_SMALL_MIN <= PYQ_SMALL_MAX - PYQ_SMALL_MIN;
}

/* memcpy for the small messages of the hot path: fixed-size overlapping moves
 * the compiler inlines, instead of a call for every 32-byte message.  Other
 * lengths call memcpy -- only where small is 0, so that the call (and the
 * registers it makes the caller save) stays out of pyq_writer_write(). */
static inline __attribute__((always_inline)) void copy_small(uint8_t *d, const void *src,
                                                             uint32_t len, int small)
{
    const uint8_t *s = src;

    if (!small) {
        memcpy(d, s, len);
    } else if (len >= 16 && len <= 32) {
        memcpy(d, s, 16);
        memcpy(d + len - 16, s + len - 16, 16);
    } else if (len > 32) {
        memcpy(d, s, 32);
        memcpy(d + len - 32, s + len - 32, 32);
    } else {
        memcpy(d, s, 8);
        memcpy(d + len - 8, s + len - 8, 8);
    }
}

/* Header and payload of one record: ordinary stores and the SPEC §3.7 touch,
 * or -- for a non-scanning reader only (fast_limit) -- streaming stores for a spill
 * block: the reader then looks only below pub_pos, and publish() fences them. */
#if PYQ_HAVE_NT
static __attribute__((noinline)) void put_record_nt(struct pyq_queue *q, uint8_t *rec,
                                                    const void *data, uint32_t len)
{
    copy_payload(q, rec + PYQ_RECORD_HEADER, data, len);
    _mm_stream_si64((long long *)(void *)rec, (long long)(PYQ_HDR_COMMIT | len));
}
#endif

static inline __attribute__((always_inline)) void put_record(struct pyq_queue *q, uint8_t *rec,
                                                             const void *data, uint32_t len,
                                                             int small, int may_nt)
{
#if PYQ_HAVE_NT
    if (may_nt && PYQ_UNLIKELY(q->w.nt)) {
        put_record_nt(q, rec, data, len);
        return;
    }
#endif
    copy_small(rec + PYQ_RECORD_HEADER, data, len, small);
    /* W3 as in commit(): pairs with A3 in reader.c (q->scan); without
     * scanning W2 is the edge.  A plain store on x86. */
    pyq_store_release(pyq_hdr(rec, 0), PYQ_HDR_COMMIT | len);
    if (q->cfg.touch_after_write)
        (void)*(volatile uint8_t *)(rec + (len ? PYQ_RECORD_HEADER : 0));
}

/* The common case in one place: room in the current block, no claim -- claim
 * and commit() in one, for every publish policy.  small: is_small(len) holds;
 * may_nt: the block may be streamed (else the caller checked w->nt).  Both 0/1
 * constants, so that pyq_writer_write() inlines a copy that calls nothing but
 * seal_early() and keeps the callee-saved registers untouched.
 * Returns 1 when the message was written. */
static inline __attribute__((always_inline)) int write_fast(struct pyq_queue *q, const void *data,
                                                            uint32_t len, int small, int may_nt,
                                                            int lines)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t pos = w->pos;
    /* 64-bit: a len near 4 GiB must not wrap into a small record. */
    uint64_t next = (uint64_t)pos + ((PYQ_RECORD_HEADER + (uint64_t)len + q->rec_mask) &
                                     ~(uint64_t)q->rec_mask);
    uint8_t *rec;

    if (PYQ_UNLIKELY(next > w->fast_limit ||
                     atomic_load_explicit(&q->closed, memory_order_relaxed)))
        return 0;
    rec = w->blk + pos;
    if (lines) {
        ahead_headers(w->blk, pos, (uint32_t)next, w->fast_limit, 1);
    } else if (q->scan && next < w->fast_limit) {
        /* As in commit(): the stale header after this record reads zero; the
         * header store of put_record (W3) publishes it with the record. */
        pyq_store_relaxed(pyq_hdr(w->blk, (uint32_t)next), 0);
    }
    put_record(q, rec, data, len, small, may_nt);
    if (lines)
        ahead_headers(w->blk, pos, (uint32_t)next, w->fast_limit, 0);
    w->pos = (uint32_t)next;
    pyq_counter_add(&q->ws.messages, 1);
    pyq_counter_add(&q->ws.bytes, len);
    if (q->cfg.publish != PYQ_PUBLISH_MAX)
        publish_policy(q, (uint32_t)next);
    if (PYQ_UNLIKELY(w->fast_limit - next < next - pos))
        seal_early(q); /* no room for another record of this size */
    return 1;
}

/* Everything but the fast path, out of line so the fast path stays small. */
static __attribute__((noinline)) int write_slow(struct pyq_queue *q, const void *data,
                                                uint32_t len, int64_t timeout_ns)
{
    uint8_t *p;
    int rc;

    /* Other lengths, streamed blocks; `lines` a constant in each copy. */
    if (q->line_headers ? write_fast(q, data, len, 0, 1, 1) : write_fast(q, data, len, 0, 1, 0))
        return 0;
    rc = claim(q, len, timeout_ns, &p);

    if (PYQ_UNLIKELY(rc != 0))
        return rc;
    copy_payload(q, p, data, len);
    commit(q);
    return 0;
}

/* The small-message fast path of scan_current (line headers), apart: its
 * extra stores would otherwise cost every other configuration's fast path
 * two callee-saved registers.  Reached by a tail call. */
static __attribute__((noinline)) int write_lines(struct pyq_queue *q, const void *data,
                                                 uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(write_fast(q, data, len, 1, 0, 1)))
        return 0;
    return write_slow(q, data, len, timeout_ns);
}

int pyq_writer_write(pyq_queue_t *q, const void *data, uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(is_small(len) && !q->w.special) &&
        PYQ_LIKELY(write_fast(q, data, len, 1, 0, 0)))
        return 0;
    if (q->line_headers && is_small(len) && !q->w.nt)
        return write_lines(q, data, len, timeout_ns);
    return write_slow(q, data, len, timeout_ns);
}

int pyq_writer_try_write(pyq_queue_t *q, const void *data, uint32_t len)
{
    return pyq_writer_write(q, data, len, 0);
}

int64_t pyq_writer_write_batch(pyq_queue_t *q, const void *data, uint64_t n,
                               uint32_t msg_size, int64_t timeout_ns, int *err)
{
    const uint8_t *src = data;
    uint64_t i;

    struct pyq_writer_state *w = &q->w;
    const uint32_t rec = PYQ_RECORD_HEADER + ((msg_size + 7u) & ~7u);
    const int small = is_small(msg_size);

    *err = 0;
    if (msg_size > q->max_message) {
        *err = PYQ_ETOOBIG;
        return 0;
    }
    for (i = 0; i < n;) {
        uint64_t room = q->batch_ok && w->fast_limit > w->pos ? (w->fast_limit - w->pos) / rec : 0;
        if (room && !atomic_load_explicit(&q->closed, memory_order_relaxed)) {
            /* A run of records in the current block: counters once per run. */
            uint64_t k = room < n - i ? room : n - i;
            uint8_t *dst = w->blk + w->pos;
            const uint8_t *from = src + i * msg_size;
            if (small)  /* one loop per copy, not a test per record */
                for (uint64_t j = 0; j < k; j++, dst += rec, from += msg_size)
                    put_record(q, dst, from, msg_size, 1, 1);
            else
                for (uint64_t j = 0; j < k; j++, dst += rec, from += msg_size)
                    put_record(q, dst, from, msg_size, 0, 1);
            w->pos += (uint32_t)(k * rec);
            pyq_counter_add(&q->ws.messages, k);
            pyq_counter_add(&q->ws.bytes, k * msg_size);
            i += k;
            if (w->pos == w->fast_limit)
                seal(q, PYQ_HDR_PAD); /* batch_ok: no scanning reader */
            continue;
        }
        /* Block change, a full queue, or a path the run does not cover. */
        int rc = pyq_writer_write(q, src + i * msg_size, msg_size, timeout_ns);
        if (PYQ_UNLIKELY(rc != 0)) {
            *err = rc;
            break;
        }
        i++;
    }
    return (int64_t)i;
}

int pyq_writer_flush(pyq_queue_t *q)
{
    struct pyq_writer_state *w = &q->w;

    if (w->blk)
        publish(q, (w->seq - 1) * (uint64_t)q->cfg.block_size + w->pos);
    return 0;
}

void pyq_writer_detach(pyq_queue_t *q)
{
    atomic_store_explicit(&q->closed, 1, memory_order_relaxed);
    pyq_writer_flush(q);
    /* W4: every committed record is published before this; pairs with A5. */
    pyq_store_release(&q->detached, 1);
}
