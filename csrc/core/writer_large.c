/*
 * writer_large.c - the writer's large messages (queue_pvt.h, Large): a slot
 * of the pool's large region for the payload, and a 16-byte record in the
 * block stream that names it, committed as a record of kind PYQ_HDR_LARGE.
 * Writer thread only; pyq_large_restore() is the side taking over.  Nothing
 * here runs for a message a block holds.
 *
 * Slots are taken in order at 64-bit positions that only grow: at head, or at
 * the next multiple of the region's size L when the rest of the region is
 * too short for the message, so that every payload is contiguous.  The
 * reader gives each back by storing its end to large_tail once the message
 * is consumed (R2), in order, so head - tail is what is in use.  The record
 * is claimed first (it may wait for a block), then the slot (it may wait for
 * the reader): a claim holds both until it is committed or aborted, and only
 * a commit moves head, so an aborted claim -- or one whose process died --
 * leaves its slot to the next claim.
 */
#include <string.h>

#include "core/writer_pvt.h"

static inline uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* The slot a message of len bytes takes after head: its position. */
static inline uint64_t slot_at(const struct pyq_queue *q, uint64_t head, uint32_t len)
{
    uint64_t L = q->lg.bytes, off = head % L;
    return off + align_up(len, PYQ_LARGE_ALIGN) > L ? head + (L - off) : head;
}

/* pyq_w_wait()'s test: 1 when the slot for *(uint32_t *)arg bytes is free
 * (its position in lg.claim_pos), 0 not yet, PYQ_ECORRUPT when large_tail
 * is no value a reader of this geometry stores. */
static int slot_free(struct pyq_queue *q, void *arg)
{
    struct pyq_large *lg = &q->lg;
    uint32_t len = *(const uint32_t *)arg;
    uint64_t at = slot_at(q, lg->head, len), end = at + align_up(len, PYQ_LARGE_ALIGN);

    if (end - lg->tail_cache > lg->bytes) {
        /* A8: the reader is done with the slots below large_tail; pairs with R2. */
        uint64_t tail = pyq_load_acquire(&q->large_tail);
        if (PYQ_UNLIKELY(tail < lg->tail_cache || tail > lg->head)) {
            q->p.corrupt |= PYQ_CORRUPT_WRITER;
            return PYQ_ECORRUPT;
        }
        lg->tail_cache = tail;
        if (end - tail > lg->bytes)
            return 0;
    }
    lg->claim_pos = at;
    return 1;
}

int pyq_w_large_claim(struct pyq_queue *q, uint32_t len, int64_t timeout_ns, uint8_t **payload)
{
    struct pyq_large *lg = &q->lg;
    uint64_t deadline = timeout_ns > 0 ? pyq_now_ns() + (uint64_t)timeout_ns : 0;
    uint8_t *rec;
    int rc;

    if (PYQ_UNLIKELY(q->w.claim_len != PYQ_NO_CLAIM))
        return PYQ_EBUSY;
    if (len > lg->max)
        return PYQ_ETOOBIG;
    if (PYQ_UNLIKELY(q->p.corrupt & PYQ_CORRUPT_WRITER))
        return PYQ_ECORRUPT;
    rc = pyq_w_block_claim(q, PYQ_LARGE_DESC, timeout_ns, &rec);
    if (rc != 0)
        return rc;
    rc = slot_free(q, &len);
    if (rc == 0) {
        /* The reader frees slots only as it reads their records: it must see
         * the ones committed so far (publish max keeps them back). */
        if (!q->scan && q->w.blk)
            publish(q, q->w.blk_start + q->w.pos);
        if (timeout_ns > 0) {
            uint64_t now = pyq_now_ns();
            timeout_ns = now >= deadline ? 0 : (int64_t)(deadline - now);
        }
        rc = pyq_w_wait(q, timeout_ns, slot_free, &len);
    } else {
        rc = rc > 0 ? 0 : rc;
    }
    if (rc != 0) {
        pyq_writer_abort(q); /* the record's claim */
        return rc;
    }
    lg->claim_len = len;
    *payload = lg->wbase + lg->claim_pos % lg->bytes;
    return 0;
}

int pyq_w_large_commit(struct pyq_queue *q)
{
    struct pyq_large *lg = &q->lg;
    struct pyq_large_desc d = { lg->claim_pos, lg->claim_len, 0 };
    uint8_t *rec = q->w.blk + q->w.pos + PYQ_RECORD_HEADER;

    memcpy(rec, &d, sizeof(d));
    lg->head = lg->claim_pos + align_up(lg->claim_len, PYQ_LARGE_ALIGN);
    lg->claim_len = PYQ_NO_CLAIM;
    /* W7: a writer taking the side over starts after this slot; stored before
     * the record can be read (W2/W3 in the commit), so that the reader never
     * frees a slot beyond it. */
    pyq_store_release(&q->large_head, lg->head);
    pyq_w_commit_kind(q, PYQ_HDR_LARGE);
    /* The record counted its 16 bytes; the message is d.len. */
    pyq_count(&q->ws.bytes, (uint64_t)d.len - PYQ_LARGE_DESC);
    return 0;
}

int pyq_w_large_write(struct pyq_queue *q, const void *data, uint32_t len, int64_t timeout_ns)
{
    uint8_t *p;
    int rc = pyq_w_large_claim(q, len, timeout_ns, &p);

    if (rc != 0)
        return rc;
    memcpy(p, data, len);
    return pyq_w_large_commit(q);
}

/* A side taking a shared queue over (shared_mirror.c): the writer starts
 * after the last committed slot, the reader checks the next ones against
 * the tail it stored last.  0, or PYQ_EBADSEG when the words describe no
 * state of this geometry. */
int pyq_large_restore(struct pyq_queue *q, int side)
{
    struct pyq_large *lg = &q->lg;
    uint64_t head = pyq_load_acquire(&q->large_head), tail = pyq_load_acquire(&q->large_tail);

    if (!lg->bytes)
        return 0;
    if (tail > head || head - tail > lg->bytes || head % PYQ_LARGE_ALIGN)
        return PYQ_EBADSEG;
    if (side == PYQ_SIDE_WRITER) {
        lg->head = head;
        lg->tail_cache = tail;
        lg->claim_len = PYQ_NO_CLAIM;
    } else {
        lg->tail = tail;
        lg->viewing = 0;
        q->r.large_end = 0;
    }
    return 0;
}
