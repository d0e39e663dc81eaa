/*
 * shared_mirror.c - a side's private state from its mirror in the segment
 * (queue_pvt.h, struct pyq_wmirror / pyq_rmirror), for a process that takes
 * the side over or recovers a dead writer, and the writer's open run as
 * another process's stats see it.  Every value read is checked against the
 * geometry this process fixed at attach (DESIGN §3.9, "Trust").  Slow paths
 * only.
 */
#include "core/shared_pvt.h"

static void bind(struct pyq_queue *q, int side)
{
    pyq_q_bind(q, side, pyq_shm_ctl(q), pyq_shm_pool(q));
}

/* The last complete slot of a mirror whose generation is gen (acquire:
 * MIR-L2/MIR-L4, pairs with MIR-L1/MIR-L3): 0 when none was ever written. */
static uint64_t mirror_gen(_Atomic uint64_t *gen)
{
    return pyq_load_acquire(gen);
}

static uint32_t pad8(uint32_t len)
{
    return (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
}

/* The writer's private state from its mirror (queue_pvt.h), for this
 * process's view, every value checked against the geometry this process
 * fixed at attach.  dead: a dead writer's (its last call may have gone on
 * past the mirror: a block taken, a publish).  0, or PYQ_EBADSEG when the
 * mirror cannot describe a queue of this geometry. */
int pyq_shm_restore_writer(struct pyq_queue *q, int dead)
{
    struct pyq_writer_state *w = &q->w;
    const uint32_t bs = q->cfg.block_size;
    uint64_t g = mirror_gen(&q->wm.gen), tail, seq, pos_run, run_id, head[PYQ_TIERS], last_pub, end;
    uint32_t pos, run_n, run_hdr, has_blk, size;
    const struct pyq_wslot *s = &q->wm.s[g & 1];

    bind(q, PYQ_SIDE_WRITER);
    if (pyq_large_restore(q, PYQ_SIDE_WRITER) != 0)
        return PYQ_EBADSEG;
    w->claim_len = PYQ_NO_CLAIM;
    w->prefetched = NULL;
    w->nt_pending = 0;
    q->p.wgen = g;
    q->p.wm_blk = 2; /* matches nothing: the next mirror writes a whole slot after g */
    if (g == 0)
        return 0; /* never written: pyq_q_init's state */
    seq = pyq_load_relaxed(&s->seq);
    pos_run = pyq_load_relaxed(&s->pos_run);
    run_id = pyq_load_relaxed(&s->run_id);
    run_hdr = pyq_load_relaxed(&s->run_hdr);
    has_blk = pyq_load_relaxed(&s->has_blk);
    pos = (uint32_t)pos_run;
    run_n = (uint32_t)(pos_run >> 32);
    size = (uint32_t)run_id;
    tail = pyq_load_acquire(&q->ring_tail);
    for (int t = 0; t < PYQ_TIERS; t++) {
        uint64_t tier_n = t ? q->cfg.spill_blocks : q->cfg.hot_blocks;
        uint64_t ft = pyq_load_acquire(&q->free_tail[t].v);
        head[t] = pyq_load_relaxed(&s->free_head[t]);
        if (ft - head[t] > tier_n)
            return PYQ_EBADSEG;
    }
    if (head[0] + head[1] != seq || tail < seq || tail - seq > (uint64_t)(dead ? 1 : 0) ||
        pos > bs || run_n > PYQ_RUN_MAX || (has_blk && seq == 0) || has_blk > 1)
        return PYQ_EBADSEG;
    /* What the writer last published: pub_pos, never past its records (it only
     * saves a store when they are equal, publish_store). */
    end = has_blk ? (seq - 1) * bs + pos : seq * bs;
    last_pub = pyq_load_acquire(&q->pub_pos);
    if (last_pub > end)
        last_pub = end;
    if (run_n && (size == 0 || size > q->max_message || !q->batch_ok ||
                  (uint64_t)run_hdr + PYQ_RECORD_HEADER + (uint64_t)run_n * pad8(size) != pos))
        return PYQ_EBADSEG;
    w->blk = NULL;
    if (has_blk) {
        uint32_t idx = w->ring[(seq - 1) & q->ring_mask];
        if (idx >= q->nblocks)
            return PYQ_EBADSEG;
        w->blk = w->base + (size_t)idx * bs;
        w->tier = idx < q->cfg.hot_blocks ? PYQ_TIER_HOT : PYQ_TIER_SPILL;
    }
    w->seq = seq;
    w->blk_start = seq ? (seq - 1) * bs : 0;
    w->pos_run = pos_run;
    w->run_id = run_id;
    w->run_hdr = run_hdr;
    w->run_step = pad8(size);
    /* An open run is ended by the next record or publish (run_close), never
     * extended by this process: its members are counted then. */
    w->run_len = PYQ_NO_RUN;
    w->run_key = PYQ__RUN_KEY(PYQ_NO_RUN);
    w->run_limit = 0;
    w->last_pub = last_pub;
    for (int t = 0; t < PYQ_TIERS; t++) {
        w->free_head[t] = head[t];
        w->free_tail_cache[t] = head[t]; /* the next take loads free_tail */
    }
    /* Cached stores from here on; a scanning reader's header after pos was
     * zeroed by the writer before it (writer_pvt.h, zero_ahead). */
    w->nt = 0;
    atomic_fetch_and_explicit(&w->gate, ~PYQ_GATE_NT, memory_order_relaxed);
    atomic_fetch_and_explicit(&w->run_gate, ~PYQ_GATE_NT, memory_order_relaxed);
    w->special = q->scan | q->xproc;
    w->zeroed = pos;
    w->fast_limit = w->blk ? bs : 0;
    return 0;
}

/* The reader's private state from its mirror, checked likewise. */
int pyq_shm_restore_reader(struct pyq_queue *q)
{
    struct pyq_reader_state *r = &q->r;
    const uint32_t bs = q->cfg.block_size;
    uint64_t g = mirror_gen(&q->rm.gen), tail, seq;
    const struct pyq_rslot *s = &q->rm.s[g & 1];
    uint32_t pos, left, len, has_blk;

    bind(q, PYQ_SIDE_READER);
    if (pyq_large_restore(q, PYQ_SIDE_READER) != 0)
        return PYQ_EBADSEG;
    for (int t = 0; t < PYQ_TIERS; t++)
        r->free_tail[t] = pyq_load_acquire(&q->free_tail[t].v);
    r->limit = 0;
    r->pub_cache = 0;
    r->drained_pub = 0;
    r->tail_cache = 0;
    r->block_size = bs;
    q->p.rgen = g;
    q->p.rm_blk = 2; /* matches nothing: the next mirror writes a whole slot after g */
    if (g == 0)
        return 0;
    seq = pyq_load_relaxed(&s->seq);
    pos = (uint32_t)pyq_load_relaxed(&s->pos_left);
    left = (uint32_t)(pyq_load_relaxed(&s->pos_left) >> 32);
    len = pyq_load_relaxed(&s->run_len);
    has_blk = pyq_load_relaxed(&s->has_blk);
    tail = pyq_load_acquire(&q->ring_tail);
    if (seq > tail || tail - seq > q->nblocks || pos > bs || has_blk > 1 ||
        left > PYQ_RUN_MAX || (left && (len > q->max_message ||
                                        (uint64_t)pos + (uint64_t)left * pad8(len) > bs)))
        return PYQ_EBADSEG;
    r->blk = NULL;
    if (has_blk) {
        uint32_t idx = r->ring[seq & q->ring_mask];
        if (idx >= q->nblocks)
            return PYQ_EBADSEG;
        r->idx = idx;
        r->blk = r->base + (size_t)idx * bs;
    }
    r->seq = seq;
    r->pos = has_blk ? pos : 0;
    r->run_left = has_blk ? left : 0;
    r->run_len = len;
    r->run_step = pad8(len);
    return 0;
}

/* pyq_w_pending() of a shared queue: the open run of the writer's mirror,
 * whichever process writes it.  A slot read while the writer wrote the
 * same one again (two generations on) is read again (MIR-L2). */
uint64_t pyq_w_pending_shared(const struct pyq_queue *cq, uint64_t *bytes)
{
    struct pyq_queue *q = (struct pyq_queue *)cq;
    uint64_t pos_run = 0, run_id = 0;

    for (int tries = 0; tries < 3; tries++) {
        uint64_t g = pyq_load_acquire(&q->wm.gen);
        const struct pyq_wslot *s = &q->wm.s[g & 1];
        pos_run = pyq_load_relaxed(&s->pos_run);
        run_id = pyq_load_relaxed(&s->run_id);
        atomic_thread_fence(memory_order_acquire);
        if (pyq_load_relaxed(&q->wm.gen) - g <= 1)
            break;
    }
    uint64_t n = pos_run >> 32;
    n = n > 1 && n <= PYQ_RUN_MAX ? n - 1 : 0;
    *bytes = n * (uint32_t)run_id;
    return n;
}
