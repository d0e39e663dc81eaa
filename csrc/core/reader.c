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

/* The reader's position as a reader taking the side over needs it
 * (queue_pvt.h, struct pyq_rmirror): the slot after the last complete one,
 * then its generation. */
void pyq_r_mirror(struct pyq_queue *q)
{
    const struct pyq_reader_state *r = &q->r;
    uint64_t g = q->p.rgen, pos_left = r->pos | (uint64_t)r->run_left << 32;
    uint32_t blk = r->blk != NULL;
    struct pyq_rslot *s;

    if (PYQ_LIKELY(g && r->seq == q->p.rm_seq && r->run_len == q->p.rm_run_len &&
                   blk == q->p.rm_blk)) {
        /* Only the position moved (or nothing: an empty poll stores nothing). */
        if (pos_left != q->p.rm_pos_left) {
            pyq_store_relaxed(&q->rm.s[g & 1].pos_left, pos_left);
            q->p.rm_pos_left = pos_left;
        }
        return;
    }
    s = &q->rm.s[++g & 1];
    pyq_store_relaxed(&s->seq, r->seq);
    pyq_store_relaxed(&s->pos_left, pos_left);
    pyq_store_relaxed(&s->run_len, r->run_len);
    pyq_store_relaxed(&s->has_blk, blk);
    q->p.rgen = g;
    q->p.rm_seq = r->seq;
    q->p.rm_pos_left = pos_left;
    q->p.rm_run_len = r->run_len;
    q->p.rm_blk = blk;
    /* MIR-L3: the slot is whole before its generation; pairs with MIR-L4
     * (shared_mirror.c, the reader's restore). */
    pyq_store_release(&q->rm.gen, g);
}

/* Give a drained block back to its tier and move to the next ring position. */
static __attribute__((noinline)) void mirror_next_block(struct pyq_queue *q)
{
    struct pyq_reader_state *r = &q->r;
    uint8_t *blk = r->blk;
    uint32_t pos = r->pos, left = r->run_left;

    /* A reader taking the side over must never come back to a block given
     * back: the mirror says "the next one" before R1 does. */
    r->seq++, r->blk = NULL, r->pos = 0, r->run_left = 0;
    pyq_r_mirror(q);
    r->seq--, r->blk = blk, r->pos = pos, r->run_left = left;
}

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

    if (q->xproc)
        mirror_next_block(q);
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

/* Checks of what a shared queue's reader reads from the segment (DESIGN
 * §3.9, "Trust"): every function below that takes `chk` is compiled twice,
 * chk 0 for an in-process queue (nothing but this process writes it: no
 * check is made, the code is what it was) and chk 1 for a shared one, where
 * each value that steers an address, a length or a loop is tested against the
 * geometry this process fixed at attach before it is used.  A value that does
 * not fit makes the reader's state inert and the queue corrupt for this
 * process: the call returns what it delivered before, every later one
 * PYQ_ECORRUPT.  Read once into a register, then tested, then used: a peer
 * that changes the word meanwhile changes nothing here. */

/* The reader found the segment inconsistent: no fast path reads on. */
static __attribute__((noinline, cold)) void corrupt(struct pyq_queue *q)
{
    struct pyq_reader_state *r = &q->r;

    q->p.corrupt |= PYQ_CORRUPT_READER;
    r->blk = NULL;
    r->limit = 0;
    r->run_left = 0;
    r->pos = 0;
}

/* A header below the published end (room bytes of the block from pos on)
 * that the reader may act on: a record that fits, or a run (enter_run checks
 * its members). */
static inline int rec_fits(uint64_t hdr, uint32_t room)
{
    uint64_t kind = hdr & PYQ_HDR_KIND_MASK;
    if (PYQ_LIKELY(kind == PYQ_HDR_COMMIT))
        return (hdr & PYQ_HDR_LEN_MASK) + PYQ_RECORD_HEADER <= room;
    return kind == PYQ_HDR_RUN ||
           (hdr == (PYQ_HDR_LARGE | PYQ_LARGE_DESC) && PYQ_LARGE_DESC + PYQ_RECORD_HEADER <= room);
}

/* A committed record at pos of a scanning reader's block that fits in it
 * (a large message's record too: its 16 bytes are checked when read). */
static inline int scan_fits(uint64_t hdr, uint32_t pos, uint32_t bs)
{
    if (PYQ_LIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_COMMIT))
        return (hdr & PYQ_HDR_LEN_MASK) + PYQ_RECORD_HEADER <= (uint64_t)(bs - pos);
    return hdr == (PYQ_HDR_LARGE | PYQ_LARGE_DESC) &&
           PYQ_LARGE_DESC + PYQ_RECORD_HEADER <= (uint64_t)(bs - pos);
}

/* The large message whose record's payload is at rec (queue_pvt.h, Large):
 * its payload in the region, its length in *len, the end of its slot in
 * r->large_end for consumed().  The record is read once, then checked
 * against this process's geometry: a slot inside the region, after the last
 * one given back and within the region's size of it, of a length only a
 * large message has.  NULL, and the queue corrupt, when it is not. */
static __attribute__((noinline)) const uint8_t *large_msg(struct pyq_queue *q, const uint8_t *rec,
                                                          uint32_t *len)
{
    const struct pyq_large *lg = &q->lg;
    struct pyq_large_desc d;
    uint64_t L = lg->bytes, end;

    memcpy(&d, rec, sizeof(d));
    end = d.pos + ((d.len + (uint64_t)PYQ_LARGE_ALIGN - 1) & ~(uint64_t)(PYQ_LARGE_ALIGN - 1));
    if (!L || d.len <= q->max_message || d.len > lg->max || d.pos % PYQ_LARGE_ALIGN ||
        d.pos < lg->tail || d.pos > UINT64_MAX - L || end - lg->tail > L ||
        d.pos % L + d.len > L) {
        q->p.corrupt |= PYQ_CORRUPT_READER;
        q->r.blk = NULL;
        q->r.limit = 0;
        q->r.pos = 0;
        return NULL;
    }
    q->r.large_end = end;
    *len = d.len;
    return lg->rbase + d.pos % L;
}

/* The large message found at pos is consumed: past its record, and its slot
 * back to the writer.  A shared queue's mirror passes the record first, so
 * that a reader taking the side over never reads a slot given back. */
static __attribute__((noinline)) void large_consumed(struct pyq_queue *q)
{
    struct pyq_reader_state *r = &q->r;
    uint64_t end = r->large_end;

    r->pos += (uint32_t)pyq_record_size(PYQ_LARGE_DESC, q->rec_mask);
    r->large_end = 0;
    if (q->xproc)
        pyq_r_mirror(q);
    q->lg.tail = end;
    /* R2: our reads of the slot happen before the writer writes it again;
     * pairs with A8 in writer_large.c. */
    pyq_store_release(&q->large_tail, end);
    if (q->xproc)
        pyq_shm_wake_writer(q);
}

/* A pub_pos a writer of this geometry can have stored: never behind what
 * this reader saw, never past the blocks taken (ring_tail, loaded after it:
 * W1 precedes the W2 of the same block), and those never more than the pool
 * ahead of this reader -- so a reader led on by a forged position stops. */
static inline int pub_ok(struct pyq_queue *q, const struct pyq_reader_state *r, uint64_t pub)
{
    uint64_t tail = pyq_load_relaxed(&q->ring_tail);
    return pub >= r->pub_cache && tail >= r->seq && tail - r->seq <= q->nblocks &&
           pub <= tail * q->cfg.block_size;
}

/* Header of the next visible record, or NULL when nothing more is visible now.
 * Moves across drained blocks (returning them) and links as it goes.  The whole
 * logic; next_record() below inlines its common case. */
static inline __attribute__((always_inline)) _Atomic uint64_t *
next_record_slow_t(struct pyq_queue *q, uint64_t *hdr_out, const int chk)
{
    struct pyq_reader_state *r = &q->r;
    const uint32_t bs = q->cfg.block_size;
    uint64_t crossed = 0;

    if (chk && q->p.corrupt)
        return NULL;
    for (;;) {
        uint64_t hdr;

        /* No more blocks in one call than the pool holds: a record is found
         * in the block after at most one empty one (a link's), so a longer
         * walk is a forged chain. */
        if (chk && crossed > q->nblocks + 1) {
            corrupt(q);
            return NULL;
        }
        if (PYQ_LIKELY(r->pos < r->limit)) {
            /* Below pub_pos (no q->scan): ordered by A2, nobody writes it now. */
            hdr = pyq_load_relaxed(pyq_hdr(r->blk, r->pos));
            if (PYQ_LIKELY(hdr != PYQ_HDR_PAD)) {
                if (chk && !rec_fits(hdr, r->limit - r->pos)) {
                    corrupt(q);
                    return NULL;
                }
                *hdr_out = hdr;
                return pyq_hdr(r->blk, r->pos);
            }
            finish_block(q);
            crossed++;
            continue;
        }
        if (!r->blk) {
            uint32_t idx;
            if (q->scan) {
                if (r->seq >= r->tail_cache) {
                    /* A1: pairs with W1: the ring slot and zeroed header are visible. */
                    r->tail_cache = pyq_load_acquire(&q->ring_tail);
                    if (r->seq >= r->tail_cache)
                        return NULL;
                    if (chk && r->tail_cache - r->seq > q->nblocks) {
                        corrupt(q);
                        return NULL;
                    }
                }
            } else if (r->pub_cache <= r->seq * bs) {
                /* A2: pairs with W2: records below pub_pos are complete. */
                uint64_t pub = pyq_load_acquire(&q->pub_pos);
                if (chk && !pub_ok(q, r, pub)) {
                    corrupt(q);
                    return NULL;
                }
                r->pub_cache = pub;
                if (r->pub_cache <= r->seq * bs) {
                    r->drained_pub = r->pub_cache;
                    return NULL;
                }
            }
            idx = r->ring[r->seq & q->ring_mask];
            if (PYQ_UNLIKELY(idx >= q->nblocks)) { /* a ring slot no writer stores */
                corrupt(q);
                return NULL;
            }
            r->idx = idx;
            r->blk = r->base + (size_t)idx * bs;
            r->pos = 0;
            if (q->cfg.prefetch)
                prefetch_block(q, r);
        }
        if (r->pos >= bs) {
            finish_block(q);
            crossed++;
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
                uint64_t pub = pyq_load_acquire(&q->pub_pos); /* A2 again */
                if (chk && !pub_ok(q, r, pub)) {
                    corrupt(q);
                    return NULL;
                }
                r->pub_cache = pub;
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
        if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) != PYQ_HDR_COMMIT &&
                         (hdr & PYQ_HDR_KIND_MASK) != PYQ_HDR_LARGE)) {
            if ((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_LINK) {
                follow_link(q, hdr);
            } else if (chk && hdr != PYQ_HDR_PAD) { /* a run or garbage: no writer's */
                corrupt(q);
                return NULL;
            } else {
                finish_block(q); /* PYQ_HDR_PAD */
            }
            crossed++;
            continue;
        }
        if (chk && !scan_fits(hdr, r->pos, bs)) {
            corrupt(q);
            return NULL;
        }
        *hdr_out = hdr;
        return pyq_hdr(r->blk, r->pos);
    }
}

static __attribute__((noinline)) _Atomic uint64_t *next_record_slow_local(struct pyq_queue *q,
                                                                          uint64_t *hdr_out)
{
    return next_record_slow_t(q, hdr_out, 0);
}

static __attribute__((noinline)) _Atomic uint64_t *next_record_slow_chk(struct pyq_queue *q,
                                                                        uint64_t *hdr_out)
{
    return next_record_slow_t(q, hdr_out, 1);
}

static inline __attribute__((always_inline)) _Atomic uint64_t *
next_record_slow(struct pyq_queue *q, uint64_t *hdr_out, const int chk)
{
    return chk ? next_record_slow_chk(q, hdr_out) : next_record_slow_local(q, hdr_out);
}

/* The common cases inline -- a published record of the block being drained,
 * or, scanning, a committed one -- and the rest out of line, so the callers'
 * per-message loops save no registers for block changes, links, PADs and
 * the look that finds nothing. */
static inline __attribute__((always_inline)) _Atomic uint64_t *
next_record(struct pyq_queue *q, uint64_t *hdr_out, const int chk)
{
    struct pyq_reader_state *r = &q->r;
    uint64_t hdr;

    if (PYQ_LIKELY(r->pos < r->limit)) {
        /* Below pub_pos (no q->scan): ordered by A2, nobody writes it now. */
        hdr = pyq_load_relaxed(pyq_hdr(r->blk, r->pos));
        if (PYQ_LIKELY(chk ? rec_fits(hdr, r->limit - r->pos) : hdr != PYQ_HDR_PAD)) {
            *hdr_out = hdr;
            return pyq_hdr(r->blk, r->pos);
        }
    } else if (q->scan && r->blk && r->pos < r->block_size) {
        /* A3: pairs with W3: a committed header means a complete payload (a
         * scanning reader's every message: publish each, scan_current). */
        hdr = pyq_load_acquire(pyq_hdr(r->blk, r->pos));
        if (PYQ_LIKELY(chk ? scan_fits(hdr, r->pos, r->block_size)
                           : (hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_COMMIT)) {
            *hdr_out = hdr;
            return pyq_hdr(r->blk, r->pos);
        }
    }
    return next_record_slow(q, hdr_out, chk);
}

/* A run header at pos (queue_pvt.h, Runs; never with q->scan): step over it
 * and hold its messages in run_left, pos at the first payload.  Checked
 * (chk): its members all lie below the published end, 2 to PYQ_RUN_MAX of
 * them, each a message a block can hold; else 0 and the queue is corrupt. */
static inline __attribute__((always_inline)) int enter_run(struct pyq_queue *q, uint64_t hdr,
                                                           const int chk)
{
    struct pyq_reader_state *r = &q->r;
    uint32_t len = (uint32_t)(hdr & PYQ_HDR_LEN_MASK);
    uint32_t n = (uint32_t)(hdr >> PYQ_HDR_RUN_COUNT_SHIFT);
    uint32_t step = (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);

    if (chk && (q->scan || n < 2 || len == 0 || len > q->max_message ||
                (uint64_t)r->pos + PYQ_RECORD_HEADER + (uint64_t)n * step > r->limit)) {
        corrupt(q);
        return 0;
    }
    r->pos += PYQ_RECORD_HEADER;
    r->run_left = n;
    r->run_len = len;
    r->run_step = step;
    return 1;
}

/* The next visible message: its payload, and its length in *len; NULL when
 * nothing more is visible now.  Leaves it unconsumed (consumed() does that),
 * but may step into a run (the state then says so: run_left). */
static inline __attribute__((always_inline)) const uint8_t *next_message(struct pyq_queue *q,
                                                                         uint32_t *len,
                                                                         const int chk)
{
    struct pyq_reader_state *r = &q->r;
    _Atomic uint64_t *h;
    uint64_t hdr;

    if (r->run_left) {
        *len = r->run_len;
        return r->blk + r->pos;
    }
    h = next_record(q, &hdr, chk);
    if (!h)
        return NULL;
    if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_RUN)) {
        if (!enter_run(q, hdr, chk))
            return NULL;
        *len = r->run_len;
        return r->blk + r->pos;
    }
    if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_LARGE))
        return large_msg(q, (const uint8_t *)h + PYQ_RECORD_HEADER, len);
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
    } else if (PYQ_UNLIKELY(r->large_end)) {
        large_consumed(q);
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
    const uint8_t *p = (const uint8_t *)h + PYQ_RECORD_HEADER;
    int rc;

    if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_LARGE) &&
        !(p = large_msg(q, p, &len)))
        return 1; /* corrupt: the poll stops here (shared_end says so) */
    rc = fn(ctx, p, len);
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

static __attribute__((noinline)) int64_t poll_loop_any_local(struct pyq_queue *q,
                                                             uint64_t max_messages,
                                                             pyq_message_fn fn, void *ctx,
                                                             uint64_t n, uint64_t bytes);
static __attribute__((noinline)) int64_t poll_loop_any_chk(struct pyq_queue *q,
                                                           uint64_t max_messages,
                                                           pyq_message_fn fn, void *ctx,
                                                           uint64_t n, uint64_t bytes);

static inline __attribute__((always_inline)) int64_t poll_loop_any(struct pyq_queue *q,
                                                                   uint64_t max_messages,
                                                                   pyq_message_fn fn, void *ctx,
                                                                   uint64_t n, uint64_t bytes,
                                                                   const int chk)
{
    return chk ? poll_loop_any_chk(q, max_messages, fn, ctx, n, bytes)
               : poll_loop_any_local(q, max_messages, fn, ctx, n, bytes);
}

/* poll_loop() for a scanning reader (q->scan: publish each, scan_current).
 * Its records are never runs and r->limit stays 0, so the committed record
 * at pos of the block being drained is tested first and alone: the block, the
 * block's end, the header (A3) -- what next_record() reached after its
 * limit, scan and run tests.  The state is read from r at every message, as
 * the general loop does (the callback is opaque); anything else (no block,
 * the block's end, zero, a PAD, a link) goes the general way. */
static inline __attribute__((always_inline)) int64_t poll_loop_scan_t(struct pyq_queue *q,
                                                                      uint64_t max_messages,
                                                                      pyq_message_fn fn,
                                                                      void *ctx, uint64_t n,
                                                                      uint64_t bytes,
                                                                      const int chk)
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
            if (PYQ_UNLIKELY(chk ? !scan_fits(hdr, r->pos, r->block_size)
                                 : (hdr & PYQ_HDR_KIND_MASK) != PYQ_HDR_COMMIT))
                h = next_record_slow(q, &hdr, chk);
        } else {
            h = next_record_slow(q, &hdr, chk);
        }
        if (!h)
            break;
        if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_RUN)) {
            /* Never written for a scanning reader; the general loop's way. */
            if (!enter_run(q, hdr, chk))
                break;
            return poll_loop_any(q, max_messages, fn, ctx, n, bytes, chk);
        }
        rc = deliver_record(q, fn, ctx, h, hdr, &n, &bytes);
        if (PYQ_UNLIKELY(rc != 0))
            return poll_done(q, n, bytes, rc);
    }
    return poll_done(q, n, bytes, 0);
}

static __attribute__((noinline)) int64_t poll_loop_scan_local(struct pyq_queue *q,
                                                              uint64_t max_messages,
                                                              pyq_message_fn fn, void *ctx,
                                                              uint64_t n, uint64_t bytes)
{
    return poll_loop_scan_t(q, max_messages, fn, ctx, n, bytes, 0);
}

static __attribute__((noinline)) int64_t poll_loop_scan_chk(struct pyq_queue *q,
                                                            uint64_t max_messages,
                                                            pyq_message_fn fn, void *ctx,
                                                            uint64_t n, uint64_t bytes)
{
    return poll_loop_scan_t(q, max_messages, fn, ctx, n, bytes, 1);
}

/* The rest of a poll after `n` messages (`bytes` payload bytes) were delivered:
 * the general loop, out of line so the one-message path stays small; a
 * scanning reader's is poll_loop_scan(). */
static inline __attribute__((always_inline)) int64_t poll_loop(struct pyq_queue *q,
                                                               uint64_t max_messages,
                                                               pyq_message_fn fn, void *ctx,
                                                               uint64_t n, uint64_t bytes,
                                                               const int chk)
{
    if (q->scan && !q->r.run_left)
        return chk ? poll_loop_scan_chk(q, max_messages, fn, ctx, n, bytes)
                   : poll_loop_scan_local(q, max_messages, fn, ctx, n, bytes);
    return poll_loop_any(q, max_messages, fn, ctx, n, bytes, chk);
}

static inline __attribute__((always_inline)) int64_t poll_loop_any_t(struct pyq_queue *q,
                                                                     uint64_t max_messages,
                                                                     pyq_message_fn fn,
                                                                     void *ctx, uint64_t n,
                                                                     uint64_t bytes,
                                                                     const int chk)
{
    struct pyq_reader_state *r = &q->r;
    uint64_t hdr;

    while (n < max_messages) {
        _Atomic uint64_t *h;
        uint32_t len;
        int rc = 0;

        if (r->run_left) {
            /* A run: its messages in a tight loop, the state in registers
             * (the callback must not poll this queue: reader thread only).
             * Its members were checked when it was entered (enter_run). */
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
            h = next_record(q, &hdr, chk);
            if (!h)
                break;
            if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_RUN)) {
                if (!enter_run(q, hdr, chk))
                    break;
                continue;
            }
            rc = deliver_record(q, fn, ctx, h, hdr, &n, &bytes);
        }
        if (PYQ_UNLIKELY(rc != 0))
            return poll_done(q, n, bytes, rc);
    }
    return poll_done(q, n, bytes, 0);
}

static __attribute__((noinline)) int64_t poll_loop_any_local(struct pyq_queue *q,
                                                             uint64_t max_messages,
                                                             pyq_message_fn fn, void *ctx,
                                                             uint64_t n, uint64_t bytes)
{
    return poll_loop_any_t(q, max_messages, fn, ctx, n, bytes, 0);
}

static __attribute__((noinline)) int64_t poll_loop_any_chk(struct pyq_queue *q,
                                                           uint64_t max_messages,
                                                           pyq_message_fn fn, void *ctx,
                                                           uint64_t n, uint64_t bytes)
{
    return poll_loop_any_t(q, max_messages, fn, ctx, n, bytes, 1);
}

/* The next record of the block being drained, without leaving it: 1 with its
 * header in *hdr_out, 0 when nothing new is visible (no store made, so an idle
 * reader spinning here keeps every line it reads Shared), -1 when the general
 * path must decide (block change, end of block, limit to refresh, and -- chk
 * -- anything that does not check out, which it then names). */
static inline __attribute__((always_inline)) int peek(struct pyq_queue *q, uint64_t *hdr_out,
                                                      const int chk)
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
        if (chk && !scan_fits(hdr, r->pos, q->cfg.block_size))
            return -1;
    } else {
        if (r->pos >= r->limit) {
            /* A2: pairs with W2.  Everything below drained_pub was consumed and
             * pub_pos only grows: the same value means nothing new. */
            uint64_t pub = pyq_load_acquire(&q->pub_pos), end;
            if (pub == r->drained_pub)
                return 0;
            if (PYQ_UNLIKELY(!r->blk))
                return -1;
            if (chk && !pub_ok(q, r, pub))
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
        if (chk && (hdr & PYQ_HDR_KIND_MASK) == PYQ_HDR_COMMIT &&
            !rec_fits(hdr, r->limit - r->pos))
            return -1;
    }
    if (PYQ_UNLIKELY((hdr & PYQ_HDR_KIND_MASK) != PYQ_HDR_COMMIT))
        return -1; /* PAD or linked PAD */
    *hdr_out = hdr;
    return 1;
}

/* One message from the current block (the round trip's whole poll), then the
 * general loop if more are wanted.  Out of line: the idle poll that precedes
 * it saves no register. */
static inline __attribute__((always_inline)) int64_t poll_first_t(struct pyq_queue *q,
                                                                  uint64_t max_messages,
                                                                  pyq_message_fn fn, void *ctx,
                                                                  uint64_t hdr, const int chk)
{
    struct pyq_reader_state *r = &q->r;
    uint32_t len = (uint32_t)(hdr & PYQ_HDR_LEN_MASK);
    int rc = fn(ctx, r->blk + r->pos + PYQ_RECORD_HEADER, len);

    consumed(q, len);
    if (PYQ_LIKELY(max_messages == 1) || PYQ_UNLIKELY(rc != 0))
        return poll_done(q, 1, len, rc);
    return poll_loop(q, max_messages, fn, ctx, 1, len, chk);
}

static __attribute__((noinline)) int64_t poll_first_local(struct pyq_queue *q,
                                                          uint64_t max_messages,
                                                          pyq_message_fn fn, void *ctx,
                                                          uint64_t hdr)
{
    return poll_first_t(q, max_messages, fn, ctx, hdr, 0);
}

static __attribute__((noinline)) int64_t poll_first_chk(struct pyq_queue *q,
                                                        uint64_t max_messages,
                                                        pyq_message_fn fn, void *ctx,
                                                        uint64_t hdr)
{
    return poll_first_t(q, max_messages, fn, ctx, hdr, 1);
}

static inline __attribute__((always_inline)) int64_t poll(pyq_queue_t *q,
                                                          uint64_t max_messages,
                                                          pyq_message_fn fn, void *ctx,
                                                          const int chk)
{
    uint64_t hdr = 0;
    int k;

    if (PYQ_UNLIKELY(max_messages == 0))
        return 0;
    if (q->r.run_left)
        return poll_loop(q, max_messages, fn, ctx, 0, 0, chk);
    k = peek(q, &hdr, chk);
    if (PYQ_LIKELY(k > 0))
        return chk ? poll_first_chk(q, max_messages, fn, ctx, hdr)
                   : poll_first_local(q, max_messages, fn, ctx, hdr);
    if (k == 0)
        return 0;
    return poll_loop(q, max_messages, fn, ctx, 0, 0, chk);
}

/* The end of a shared queue's reader call that returned n: PYQ_ECORRUPT when
 * it delivered nothing on a queue found corrupt (what it did deliver before it
 * found out is returned first), else the reader's mirror (queue_pvt.h). */
static int64_t shared_end(struct pyq_queue *q, int64_t n, int64_t nothing)
{
    if (PYQ_UNLIKELY(q->p.corrupt & PYQ_CORRUPT_READER))
        return n == nothing ? PYQ_ECORRUPT : n;
    pyq_r_mirror(q);
    return n;
}

void pyq_shm_set_checks(struct pyq_queue *q, int on)
{
    q->p.unchecked = !on;
}

static __attribute__((noinline)) int64_t poll_shared(pyq_queue_t *q, uint64_t max_messages,
                                                     pyq_message_fn fn, void *ctx)
{
    if (PYQ_UNLIKELY(q->p.unchecked))
        return shared_end(q, poll(q, max_messages, fn, ctx, 0), 0);
    return shared_end(q, poll(q, max_messages, fn, ctx, 1), 0);
}

int64_t pyq_reader_poll(pyq_queue_t *q, uint64_t max_messages, pyq_message_fn fn, void *ctx)
{
    /* One test for both: a shared queue's checked poll, a view held (EBUSY). */
    if (PYQ_UNLIKELY(q->xproc | q->lg.viewing))
        return q->lg.viewing ? PYQ_EBUSY : poll_shared(q, max_messages, fn, ctx);
    return poll(q, max_messages, fn, ctx, 0);
}

static inline __attribute__((always_inline)) int64_t poll_copy(pyq_queue_t *q, void *buf,
                                                               uint64_t cap, uint32_t *lens,
                                                               uint64_t max_messages,
                                                               const int chk)
{
    struct pyq_reader_state *r = &q->r;
    uint8_t *out = buf;
    uint64_t n = 0, used = 0, bytes = 0;

    while (n < max_messages) {
        uint32_t len;
        const uint8_t *msg = next_message(q, &len, chk);
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

int64_t pyq_reader_poll_copy(pyq_queue_t *q, void *buf, uint64_t cap, uint32_t *lens,
                             uint64_t max_messages)
{
    if (PYQ_UNLIKELY(q->lg.viewing))
        return PYQ_EBUSY;
    if (PYQ_UNLIKELY(q->xproc))
        return shared_end(q, poll_copy(q, buf, cap, lens, max_messages, 1), 0);
    return poll_copy(q, buf, cap, lens, max_messages, 0);
}

static inline __attribute__((always_inline)) int64_t read_one(pyq_queue_t *q, void *buf,
                                                              uint64_t cap, const int chk)
{
    uint32_t len;
    const uint8_t *msg = next_message(q, &len, chk);

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

static __attribute__((noinline)) int64_t read_one_shared(pyq_queue_t *q, void *buf, uint64_t cap)
{
    if (PYQ_UNLIKELY(q->p.unchecked))
        return shared_end(q, read_one(q, buf, cap, 0), PYQ_EAGAIN);
    return shared_end(q, read_one(q, buf, cap, 1), PYQ_EAGAIN);
}

int64_t pyq_reader_read_one(pyq_queue_t *q, void *buf, uint64_t cap)
{
    if (PYQ_UNLIKELY(q->lg.viewing))
        return PYQ_EBUSY;
    if (PYQ_UNLIKELY(q->xproc))
        return read_one_shared(q, buf, cap);
    return read_one(q, buf, cap, 0);
}

static inline __attribute__((always_inline)) int64_t poll_fixed(pyq_queue_t *q, void *out,
                                                                uint64_t n_max, uint32_t msg_size,
                                                                const int chk)
{
    struct pyq_reader_state *r = &q->r;
    uint8_t *dst = out;
    uint64_t n = 0;

    while (n < n_max) {
        uint32_t len;
        const uint8_t *msg = next_message(q, &len, chk);

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

int64_t pyq_reader_poll_fixed(pyq_queue_t *q, void *out, uint64_t n_max, uint32_t msg_size)
{
    if (PYQ_UNLIKELY(q->lg.viewing))
        return PYQ_EBUSY;
    if (PYQ_UNLIKELY(q->xproc))
        return shared_end(q, poll_fixed(q, out, n_max, msg_size, 1), 0);
    return poll_fixed(q, out, n_max, msg_size, 0);
}

int64_t pyq_reader_next_len(pyq_queue_t *q)
{
    uint32_t len;

    if (PYQ_UNLIKELY(q->lg.viewing))
        return PYQ_EBUSY;
    /* It may step into a run or past drained blocks (and the inline poll,
     * pyqueue_inline.h, calls it at each block's end): the mirror follows. */
    if (PYQ_UNLIKELY(q->xproc))
        return shared_end(q, next_message(q, &len, 1) ? (int64_t)len : PYQ_EAGAIN, PYQ_EAGAIN);
    return next_message(q, &len, 0) ? (int64_t)len : PYQ_EAGAIN;
}

/* The view (pyq_reader_view): the next message, left unconsumed, and where
 * it is, to know it again at the release. */
static inline __attribute__((always_inline)) int64_t view(pyq_queue_t *q, const void **ptr,
                                                          const int chk)
{
    struct pyq_reader_state *r = &q->r;
    struct pyq_large *lg = &q->lg;
    uint32_t len;
    const uint8_t *msg = next_message(q, &len, chk);

    if (!msg)
        return PYQ_EAGAIN;
    lg->viewing = 1;
    lg->view_len = len;
    lg->view_seq = r->seq;
    lg->view_pos = r->pos;
    lg->view_left = r->run_left;
    *ptr = msg;
    return len;
}

int64_t pyq_reader_view(pyq_queue_t *q, const void **ptr)
{
    if (q->lg.viewing)
        return PYQ_EBUSY;
    if (q->xproc)
        return shared_end(q, view(q, ptr, 1), PYQ_EAGAIN);
    return view(q, ptr, 0);
}

int pyq_reader_release(pyq_queue_t *q)
{
    struct pyq_reader_state *r = &q->r;
    struct pyq_large *lg = &q->lg;

    if (!lg->viewing)
        return PYQ_ENOCLAIM;
    lg->viewing = 0;
    /* Every other reader call was refused meanwhile: the message is where
     * the view found it. */
    if (r->seq != lg->view_seq || r->pos != lg->view_pos || r->run_left != lg->view_left)
        return PYQ_ENOCLAIM;
    consumed(q, lg->view_len);
    account(q, 1, lg->view_len);
    eager_finish(q);
    if (q->xproc)
        pyq_r_mirror(q);
    return 0;
}

int pyq_reader_unview(pyq_queue_t *q)
{
    if (!q->lg.viewing)
        return PYQ_ENOCLAIM;
    q->lg.viewing = 0;
    return 0;
}
