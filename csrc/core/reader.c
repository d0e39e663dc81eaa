/*
 * reader.c - the reader side: poll with a per-message callback, the copying
 * variants used by Python, and the return of drained blocks to their tier.
 * Reader thread only.  Every call is wait-free: it delivers what is visible
 * and returns.
 */
#include <string.h>

#include "core/queue_pvt.h"
#include "core/shared_pvt.h"

/* Evict a block read to its end from this core's caches (q->flush), so that
 * the writer takes its lines again from memory, many at once, not one by one
 * from this core (DESIGN §3.10).  No fence: a line written meanwhile is
 * written back, never lost, and R1 in finish_block() orders the reads. */
static void flush_block(const uint8_t *blk, uint32_t bytes)
{
#if defined(__x86_64__)
    for (uint32_t o = 0; o < bytes; o += PYQ_CACHELINE)
        __asm__ __volatile__("clflushopt %0" : : "m"(*(const volatile uint8_t *)(blk + o)));
#else
    (void)blk;
    (void)bytes;
#endif
}

/* How far the writer is ahead of the end of the block being finished, in
 * bytes, as far as this reader last looked (pub_cache, or without it
 * tail_cache's blocks taken): no load of the writer's lines. */
static inline uint64_t writer_ahead(const struct pyq_queue *q, const struct pyq_reader_state *r)
{
    const uint64_t bs = q->cfg.block_size;
    /* Scanning: the writer is at least at the start of its current block,
     * tail_cache - 1. */
    uint64_t end = (r->seq + 1) * bs,
             at = q->scan ? (r->tail_cache ? r->tail_cache - 1 : 0) * bs : r->pub_cache;

    return at > end ? at - end : 0;
}

/* Give a drained block back to its tier and move to the next ring position. */
static inline void finish_block(struct pyq_queue *q)
{
    struct pyq_reader_state *r = &q->r;
    int t = r->idx < q->cfg.hot_blocks ? PYQ_TIER_HOT : PYQ_TIER_SPILL;
    uint64_t tail = r->free_tail[t];

    /* Spill blocks and a large hot tier's come back to the writer long after
     * they are read; a small tier's at once, so only while the writer streams
     * far ahead (a reader that far behind is not chasing it). */
    if (r->blk && (q->flush[t] || (t == PYQ_TIER_HOT && q->flush_backlog &&
                                   writer_ahead(q, r) >= q->flush_backlog))) {
        flush_block(r->blk, q->cfg.block_size);
        pyq_counter_add(&q->rs.flushed, 1);
    }

    r->free_slots[t][tail & q->free_mask[t]] = r->idx ^ pyq_free_code(q, t, tail & q->free_mask[t]);
    r->free_tail[t] = tail + 1;
    /* R1: the slot and our last reads of the block happen before the writer may
     * take it again; pairs with A4 in writer_block.c. */
    pyq_store_release(&q->free_tail[t].v, tail + 1);
    if (q->xproc)
        pyq_shm_wake_writer(q);
    pyq_counter_add(&q->rs.returns[t], 1);
    r->blk = NULL;
    r->limit = 0;
    r->seq++;
}

/* A linked PAD ends the block being drained (queue_pvt.h, Link): return the
 * block and enter the one it names, whose first header A3 made visible as
 * zero or newer -- without the ring_tail and ring slot reads.  A link that does
 * not name a block of the pool at the next ring position leaves the reader
 * between blocks, to take the ring way (the writer writes the ring anyway). */
static inline void follow_link(struct pyq_queue *q, uint64_t hdr)
{
    struct pyq_reader_state *r = &q->r;
    uint32_t idx = (uint32_t)(hdr & PYQ_HDR_LEN_MASK);

    finish_block(q);
    if (idx < q->nblocks &&
        (hdr >> PYQ_HDR_LINK_POS_SHIFT) == (r->seq & 0xffff)) {
        r->idx = idx;
        r->blk = r->base + (size_t)idx * q->cfg.block_size;
        r->pos = 0;
    }
}

/* Fetch the complete part of a new block in parallel (up to 4 KiB): the lines
 * come from the writer's cache, and one miss at a time would serialise them.
 * Scanning, only a sealed block (the writer took a later one, W1): the lines
 * of the current one are still being written, and a shared copy here would
 * cost the writer an invalidation per line. */
static inline void prefetch_block(struct pyq_queue *q, struct pyq_reader_state *r)
{
    const uint32_t bs = q->cfg.block_size;
    uint64_t start = r->seq * bs;
    uint64_t avail;

    if (q->scan)
        avail = r->tail_cache > r->seq + 1 ? bs : 0;
    else
        avail = r->pub_cache - start < bs ? r->pub_cache - start : bs;
    if (avail > 4096)
        avail = 4096;
    /* Whole lines: pub_pos may end inside one, and that line is wanted too. */
    avail = (avail + PYQ_CACHELINE - 1) & ~(uint64_t)(PYQ_CACHELINE - 1);
    pyq_prefetch_span(r->blk, (uint32_t)avail, 0);
}

/* Header of the next visible record, or NULL when nothing more is visible now.
 * Moves across drained blocks (returning them) and links as it goes.  The whole
 * logic; next_record() below inlines its common case. */
static __attribute__((noinline)) _Atomic uint64_t *next_record_slow(struct pyq_queue *q,
                                                                    uint64_t *hdr_out)
{
    struct pyq_reader_state *r = &q->r;
    const uint32_t bs = q->cfg.block_size;

    for (;;) {
        uint64_t hdr;

        if (PYQ_LIKELY(r->pos < r->limit)) {
            /* Below pub_pos (no q->scan): ordered by A2, nobody writes it now. */
            hdr = pyq_load_relaxed(pyq_hdr(r->blk, r->pos));
            if (PYQ_LIKELY(hdr != PYQ_HDR_PAD)) {
                *hdr_out = hdr;
                return pyq_hdr(r->blk, r->pos);
            }
            finish_block(q);
            continue;
        }
        if (!r->blk) {
            if (q->scan) {
                if (r->seq >= r->tail_cache) {
                    /* A1: pairs with W1: the ring slot and zeroed header are visible. */
                    r->tail_cache = pyq_load_acquire(&q->ring_tail);
                    if (r->seq >= r->tail_cache)
                        return NULL;
                }
            } else if (r->pub_cache <= r->seq * bs) {
                /* A2: pairs with W2: records below pub_pos are complete. */
                r->pub_cache = pyq_load_acquire(&q->pub_pos);
                if (r->pub_cache <= r->seq * bs) {
                    r->drained_pub = r->pub_cache;
                    return NULL;
                }
            }
            r->idx = r->ring[r->seq & q->ring_mask];
            r->blk = r->base + (size_t)r->idx * bs;
            r->pos = 0;
            if (q->cfg.prefetch)
                prefetch_block(q, r);
        }
        if (r->pos >= bs) {
            finish_block(q);
            continue;
        }
        if (q->scan) {
            /* A3: pairs with W3: a committed header means a complete payload. */
            hdr = pyq_load_acquire(pyq_hdr(r->blk, r->pos));
            if (hdr == 0)
                return NULL;
        } else {
            uint64_t start = r->seq * bs, end;
            if (r->pub_cache <= start + r->pos) {
                r->pub_cache = pyq_load_acquire(&q->pub_pos); /* A2 again */
                if (r->pub_cache <= start + r->pos) {
                    r->drained_pub = r->pub_cache;
                    return NULL;
                }
            }
            /* Everything below the published end of this block is readable:
             * the loop's fast path takes it from here. */
            end = r->pub_cache - start;
            r->limit = end < bs ? (uint32_t)end : bs;
            continue;
        }
        if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) != PYQ_HDR_COMMIT)) {
            if ((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_LINK)
                follow_link(q, hdr);
            else
                finish_block(q); /* PYQ_HDR_PAD */
            continue;
        }
        *hdr_out = hdr;
        return pyq_hdr(r->blk, r->pos);
    }
}

/* The common cases inline -- a published record of the block being drained,
 * or, scanning, a committed one -- and the rest out of line, so the callers'
 * per-message loops save no registers for block changes, links, PADs and
 * the look that finds nothing. */
static inline _Atomic uint64_t *next_record(struct pyq_queue *q, uint64_t *hdr_out)
{
    struct pyq_reader_state *r = &q->r;
    uint64_t hdr;

    if (PYQ_LIKELY(r->pos < r->limit)) {
        /* Below pub_pos (no q->scan): ordered by A2, nobody writes it now. */
        hdr = pyq_load_relaxed(pyq_hdr(r->blk, r->pos));
        if (PYQ_LIKELY(hdr != PYQ_HDR_PAD)) {
            *hdr_out = hdr;
            return pyq_hdr(r->blk, r->pos);
        }
    } else if (q->scan && r->blk && r->pos < r->block_size) {
        /* A3: pairs with W3: a committed header means a complete payload (a
         * scanning reader's every message: publish each, scan_current). */
        hdr = pyq_load_acquire(pyq_hdr(r->blk, r->pos));
        if (PYQ_LIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_COMMIT)) {
            *hdr_out = hdr;
            return pyq_hdr(r->blk, r->pos);
        }
    }
    return next_record_slow(q, hdr_out);
}

/* A run header at pos (queue_pvt.h, Runs; never with q->scan): step over it
 * and hold its messages in run_left, pos at the first payload. */
static inline void enter_run(struct pyq_reader_state *r, uint64_t hdr)
{
    uint32_t len = (uint32_t)(hdr & PYQ_HDR_LEN_MASK);

    r->pos += PYQ_RECORD_HEADER;
    r->run_left = (uint32_t)(hdr >> PYQ_HDR_RUN_COUNT_SHIFT);
    r->run_len = len;
    r->run_step = (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
}

/* The next visible message: its payload, and its length in *len; NULL when
 * nothing more is visible now.  Leaves it unconsumed (consumed() does that),
 * but may step into a run (the state then says so: run_left). */
static inline const uint8_t *next_message(struct pyq_queue *q, uint32_t *len)
{
    struct pyq_reader_state *r = &q->r;
    _Atomic uint64_t *h;
    uint64_t hdr;

    if (r->run_left) {
        *len = r->run_len;
        return r->blk + r->pos;
    }
    h = next_record(q, &hdr);
    if (!h)
        return NULL;
    if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_RUN)) {
        enter_run(&q->r, hdr);
        *len = r->run_len;
        return r->blk + r->pos;
    }
    *len = (uint32_t)(hdr & PYQ_HDR_LEN_MASK);
    return (const uint8_t *)h + PYQ_RECORD_HEADER;
}

/* The message next_message() returned (of len bytes) is consumed. */
static inline void consumed(struct pyq_queue *q, uint32_t len)
{
    struct pyq_reader_state *r = &q->r;

    if (r->run_left) {
        r->pos += r->run_step;
        r->run_left--;
    } else {
        r->pos += (uint32_t)pyq_record_size(len, q->rec_mask);
    }
}

/* k more messages of the current run are consumed (k <= run_left). */
static inline void consumed_run(struct pyq_reader_state *r, uint32_t k)
{
    r->pos += k * r->run_step;
    r->run_left -= k;
}

/* Counters once per call, not per message: readers of stats see them when the
 * poll returns (the writer's peak-backlog sample may lag by one poll). */
static inline void account(struct pyq_queue *q, uint64_t n, uint64_t bytes)
{
    pyq_count(&q->rs.messages, n);
    pyq_count(&q->rs.bytes, bytes);
}

/* After the last message of a block, hand the block back at once rather than
 * at the next poll, so the writer can reuse it. */
static inline void eager_finish(struct pyq_queue *q)
{
    struct pyq_reader_state *r = &q->r;
    if (r->blk && r->pos >= q->cfg.block_size)
        finish_block(q);
}

/* The committed record at h (header hdr, not a run) to the callback, then
 * consumed and counted in *n and *bytes; the callback's return. */
static inline int deliver_record(struct pyq_queue *q, pyq_message_fn fn, void *ctx,
                                 const _Atomic uint64_t *h, uint64_t hdr, uint64_t *n,
                                 uint64_t *bytes)
{
    uint32_t len = (uint32_t)(hdr & PYQ_HDR_LEN_MASK);
    int rc = fn(ctx, (const uint8_t *)h + PYQ_RECORD_HEADER, len);

    consumed(q, len);
    ++*n;
    *bytes += len;
    return rc;
}

/* A poll's end after n messages (bytes payload bytes): the counts, the block
 * handed back at once if it is drained; a callback's error rc < 0 is returned
 * instead of n. */
static inline int64_t poll_done(struct pyq_queue *q, uint64_t n, uint64_t bytes, int rc)
{
    if (n)
        account(q, n, bytes);
    eager_finish(q);
    return rc < 0 ? rc : (int64_t)n;
}

static __attribute__((noinline)) int64_t poll_loop_any(struct pyq_queue *q,
                                                       uint64_t max_messages, pyq_message_fn fn,
                                                       void *ctx, uint64_t n, uint64_t bytes);

/* poll_loop() for a scanning reader (q->scan: publish each, scan_current).
 * Its records are never runs and r->limit stays 0, so the committed record
 * at pos of the block being drained is tested first and alone: the block, the
 * block's end, the header (A3) -- what next_record() reached after its
 * limit, scan and run tests.  The state is read from r at every message, as
 * the general loop does (the callback is opaque); anything else (no block,
 * the block's end, zero, a PAD, a link) goes the general way. */
static __attribute__((noinline)) int64_t poll_loop_scan(struct pyq_queue *q,
                                                        uint64_t max_messages, pyq_message_fn fn,
                                                        void *ctx, uint64_t n, uint64_t bytes)
{
    struct pyq_reader_state *r = &q->r;

    while (n < max_messages) {
        _Atomic uint64_t *h;
        uint64_t hdr;
        int rc;

        if (PYQ_LIKELY(r->blk && r->pos < r->block_size)) {
            /* A3: pairs with W3: a committed header means a complete payload. */
            h = pyq_hdr(r->blk, r->pos);
            hdr = pyq_load_acquire(h);
            if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) != PYQ_HDR_COMMIT))
                h = next_record_slow(q, &hdr);
        } else {
            h = next_record_slow(q, &hdr);
        }
        if (!h)
            break;
        if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_RUN)) {
            /* Never written for a scanning reader; the general loop's way. */
            enter_run(r, hdr);
            return poll_loop_any(q, max_messages, fn, ctx, n, bytes);
        }
        rc = deliver_record(q, fn, ctx, h, hdr, &n, &bytes);
        if (PYQ_UNLIKELY(rc != 0))
            return poll_done(q, n, bytes, rc);
    }
    return poll_done(q, n, bytes, 0);
}

/* The rest of a poll after `n` messages (`bytes` payload bytes) were delivered:
 * the general loop, out of line so the one-message path stays small; a
 * scanning reader's is poll_loop_scan(). */
static inline int64_t poll_loop(struct pyq_queue *q, uint64_t max_messages, pyq_message_fn fn,
                                void *ctx, uint64_t n, uint64_t bytes)
{
    if (q->scan && !q->r.run_left)
        return poll_loop_scan(q, max_messages, fn, ctx, n, bytes);
    return poll_loop_any(q, max_messages, fn, ctx, n, bytes);
}

static __attribute__((noinline)) int64_t poll_loop_any(struct pyq_queue *q,
                                                       uint64_t max_messages, pyq_message_fn fn,
                                                       void *ctx, uint64_t n, uint64_t bytes)
{
    struct pyq_reader_state *r = &q->r;
    uint64_t hdr;

    while (n < max_messages) {
        _Atomic uint64_t *h;
        uint32_t len;
        int rc = 0;

        if (r->run_left) {
            /* A run: its messages in a tight loop, the state in registers
             * (the callback must not poll this queue: reader thread only). */
            const uint8_t *p = r->blk + r->pos;
            uint32_t step = r->run_step, j = 0, k = r->run_left;
            if (k > max_messages - n)
                k = (uint32_t)(max_messages - n);
            len = r->run_len;
            while (j < k) {
                rc = fn(ctx, p, len);
                p += step;
                j++;
                if (PYQ_UNLIKELY(rc != 0))
                    break;
            }
            consumed_run(r, j);
            n += j;
            bytes += (uint64_t)j * len;
        } else {
            h = next_record(q, &hdr);
            if (!h)
                break;
            if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_RUN)) {
                enter_run(r, hdr);
                continue;
            }
            rc = deliver_record(q, fn, ctx, h, hdr, &n, &bytes);
        }
        if (PYQ_UNLIKELY(rc != 0))
            return poll_done(q, n, bytes, rc);
    }
    return poll_done(q, n, bytes, 0);
}

/* The next record of the block being drained, without leaving it: 1 with its
 * header in *hdr_out, 0 when nothing new is visible (no store made, so an idle
 * reader spinning here keeps every line it reads Shared), -1 when the general
 * path must decide (block change, end of block, limit to refresh). */
static inline int peek(struct pyq_queue *q, uint64_t *hdr_out)
{
    struct pyq_reader_state *r = &q->r;
    uint64_t hdr;

    if (q->scan) {
        if (PYQ_UNLIKELY(!r->blk || r->pos >= q->cfg.block_size))
            return -1;
        /* A3: pairs with W3: a committed header means a complete payload. */
        hdr = pyq_load_acquire(pyq_hdr(r->blk, r->pos));
        if (hdr == 0)
            return 0;
    } else {
        if (r->pos >= r->limit) {
            /* A2: pairs with W2.  Everything below drained_pub was consumed and
             * pub_pos only grows: the same value means nothing new. */
            uint64_t pub = pyq_load_acquire(&q->pub_pos), end;
            if (pub == r->drained_pub)
                return 0;
            if (PYQ_UNLIKELY(!r->blk))
                return -1;
            /* pub >= the start of blk: the reader entered it below pub_pos. */
            end = pub - r->seq * q->cfg.block_size;
            if (end <= r->pos) {
                r->drained_pub = pub;
                return 0;
            }
            r->pub_cache = pub;
            r->limit = end < q->cfg.block_size ? (uint32_t)end : q->cfg.block_size;
            if (PYQ_UNLIKELY(r->pos >= r->limit))
                return -1;
        }
        /* Below pub_pos: ordered by A2, nobody writes it now. */
        hdr = pyq_load_relaxed(pyq_hdr(r->blk, r->pos));
    }
    if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) != PYQ_HDR_COMMIT))
        return -1; /* PAD or linked PAD */
    *hdr_out = hdr;
    return 1;
}

/* One message from the current block (the round trip's whole poll), then the
 * general loop if more are wanted.  Out of line: the idle poll that precedes
 * it saves no register. */
static __attribute__((noinline)) int64_t poll_first(struct pyq_queue *q, uint64_t max_messages,
                                                    pyq_message_fn fn, void *ctx, uint64_t hdr)
{
    struct pyq_reader_state *r = &q->r;
    uint32_t len = (uint32_t)(hdr & PYQ_HDR_LEN_MASK);
    int rc = fn(ctx, r->blk + r->pos + PYQ_RECORD_HEADER, len);

    consumed(q, len);
    if (PYQ_LIKELY(max_messages == 1) || PYQ_UNLIKELY(rc != 0))
        return poll_done(q, 1, len, rc);
    return poll_loop(q, max_messages, fn, ctx, 1, len);
}

int64_t pyq_reader_poll(pyq_queue_t *q, uint64_t max_messages, pyq_message_fn fn, void *ctx)
{
    uint64_t hdr = 0;
    int k;

    if (PYQ_UNLIKELY(max_messages == 0))
        return 0;
    if (q->r.run_left)
        return poll_loop(q, max_messages, fn, ctx, 0, 0);
    k = peek(q, &hdr);
    if (PYQ_LIKELY(k > 0))
        return poll_first(q, max_messages, fn, ctx, hdr);
    if (k == 0)
        return 0;
    return poll_loop(q, max_messages, fn, ctx, 0, 0);
}

int64_t pyq_reader_poll_copy(pyq_queue_t *q, void *buf, uint64_t cap, uint32_t *lens,
                             uint64_t max_messages)
{
    struct pyq_reader_state *r = &q->r;
    uint8_t *out = buf;
    uint64_t n = 0, used = 0, bytes = 0;

    while (n < max_messages) {
        uint32_t len;
        const uint8_t *msg = next_message(q, &len);
        uint64_t need;

        if (!msg)
            break;
        need = (len + 7u) & ~(uint64_t)7u;
        if (used + need > cap)
            break;
        if (r->run_left > 1 && len == r->run_step) {
            /* Payloads back to back, as the output wants them: one copy. */
            uint64_t k = r->run_left, fit = (cap - used) / need;
            if (k > max_messages - n)
                k = max_messages - n;
            if (k > fit)
                k = fit;
            memcpy(out + used, msg, k * len);
            for (uint64_t j = 0; j < k; j++)
                lens[n + j] = len;
            n += k;
            used += k * need;
            bytes += k * len;
            consumed_run(r, (uint32_t)k);
            continue;
        }
        memcpy(out + used, msg, len);
        lens[n++] = len;
        used += need;
        bytes += len;
        consumed(q, len);
    }
    account(q, n, bytes);
    eager_finish(q);
    return (int64_t)n;
}

int64_t pyq_reader_read_one(pyq_queue_t *q, void *buf, uint64_t cap)
{
    uint32_t len;
    const uint8_t *msg = next_message(q, &len);

    if (!msg)
        return PYQ_EAGAIN;
    if (len > cap)
        return PYQ_ETOOBIG;
    memcpy(buf, msg, len);
    consumed(q, len);
    account(q, 1, len);
    eager_finish(q);
    return len;
}

int64_t pyq_reader_poll_fixed(pyq_queue_t *q, void *out, uint64_t n_max, uint32_t msg_size)
{
    struct pyq_reader_state *r = &q->r;
    uint8_t *dst = out;
    uint64_t n = 0;

    while (n < n_max) {
        uint32_t len;
        const uint8_t *msg = next_message(q, &len);

        if (!msg)
            break;
        if (len != msg_size) {
            if (n == 0) {
                eager_finish(q);
                return PYQ_ERANGE;
            }
            break;
        }
        if (r->run_left > 1) {
            /* The rest of the run that fits: one copy when back to back. */
            uint64_t k = r->run_left < n_max - n ? r->run_left : n_max - n;
            if (len == r->run_step) {
                memcpy(dst + n * msg_size, msg, k * len);
            } else {
                for (uint64_t j = 0; j < k; j++)
                    memcpy(dst + (n + j) * msg_size, msg + j * r->run_step, len);
            }
            n += k;
            consumed_run(r, (uint32_t)k);
            continue;
        }
        memcpy(dst + n * msg_size, msg, len);
        n++;
        consumed(q, len);
    }
    account(q, n, n * msg_size);
    eager_finish(q);
    return (int64_t)n;
}

int64_t pyq_reader_next_len(pyq_queue_t *q)
{
    uint32_t len;
    return next_message(q, &len) ? (int64_t)len : PYQ_EAGAIN;
}
