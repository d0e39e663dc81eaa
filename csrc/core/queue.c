/*
 * queue.c - configuration, creation, close, stats and error names.
 * Nothing here is on the hot path.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "core/queue_pvt.h"
#include "core/shared_pvt.h"

void pyq_config_init(pyq_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->block_size = 4096;
    cfg->hot_blocks = 4;
    cfg->spill_blocks = 65536;
    cfg->publish = PYQ_PUBLISH_MAX;
    cfg->publish_bytes = 0;
    cfg->scan_current = 0;
    cfg->retry_yield_every = 1024;
    cfg->touch_after_write = 0;   /* off: it lengthens the round trip, gains no throughput */
    cfg->prefetch = 1;
#if defined(__x86_64__) && defined(__SSE2__)
    /* A spill block is written under backlog and read much later: streaming it
     * keeps the writer's own working set in its caches (the burst-tail study). */
    cfg->spill_nontemporal = 1;
#endif
    cfg->nontemporal_backlog_kib = PYQ_NT_BACKLOG_KIB;
    cfg->flush_hot_kib = PYQ_FLUSH_HOT_KIB;
    cfg->flush_backlog_kib = PYQ_FLUSH_BACKLOG_KIB;
}

/* Every flag field is 0 or 1: a 7 or a -3 is a caller's bug, not a "yes". */
#define PYQ_IS_FLAG(v) ((v) == 0 || (v) == 1)
#define PYQ_FLAG(f) { offsetof(pyq_config_t, f), #f }
static const struct { size_t off; const char *name; } flags[] = {
    PYQ_FLAG(scan_current), PYQ_FLAG(touch_after_write), PYQ_FLAG(hugepages),
    PYQ_FLAG(prefault), PYQ_FLAG(mlock), PYQ_FLAG(spill_nontemporal), PYQ_FLAG(prefetch),
    PYQ_FLAG(hot_nontemporal),
};

/* How many configurations this copy of the core has checked: a counter for
 * tests (one queue construction, one check), never read on a queue's path. */
static _Atomic uint64_t config_checks;

uint64_t pyq_config_check_count(void)
{
    return atomic_load_explicit(&config_checks, memory_order_relaxed); /* a tally: no order */
}

int pyq_config_check(const pyq_config_t *c, const char **bad)
{
    const char *why = NULL;

    atomic_fetch_add_explicit(&config_checks, 1, memory_order_relaxed); /* a tally: no order */

    if (c->block_size < PYQ_MIN_BLOCK_SIZE || c->block_size > PYQ_MAX_BLOCK_SIZE ||
        c->block_size % PYQ_CACHELINE != 0)
        why = "block_size";
    else if (c->hot_blocks < 1 || c->hot_blocks > PYQ_MAX_BLOCKS)
        why = "hot_blocks";
    else if (c->spill_blocks > PYQ_MAX_BLOCKS - c->hot_blocks)
        why = "spill_blocks";
    else if (c->publish < PYQ_PUBLISH_MAX || c->publish > PYQ_PUBLISH_BYTES)
        why = "publish";
    else if (c->publish == PYQ_PUBLISH_BYTES && c->publish_bytes < 1)
        why = "publish_bytes";
    else if (c->max_message > PYQ_MAX_MESSAGE)
        why = "max_message";
    else if (c->large_bytes != 0 &&
             (c->max_message <= c->block_size - PYQ_RECORD_HEADER ||
              c->large_bytes % PYQ_LARGE_PAGE != 0 ||
              c->large_bytes < ((uint64_t)c->max_message + PYQ_LARGE_ALIGN - 1) /
                                   PYQ_LARGE_ALIGN * PYQ_LARGE_ALIGN))
        why = "large_bytes";
    for (size_t i = 0; !why && i < sizeof(flags) / sizeof(flags[0]); i++)
        if (!PYQ_IS_FLAG(*(const int32_t *)((const char *)c + flags[i].off)))
            why = flags[i].name;
#if !(defined(__x86_64__) && defined(__SSE2__))
    if (!why && c->spill_nontemporal)
        why = "spill_nontemporal";
    if (!why && c->hot_nontemporal)
        why = "hot_nontemporal";
#endif
    if (bad)
        *bad = why;
    return why ? PYQ_EINVAL : 0;
}

/* Whether the CPU has CLFLUSHOPT: CPUID.(EAX=7, ECX=0):EBX bit 23. */
static bool have_clflushopt(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;

    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 23 & 1);
#else
    return false;
#endif
}

/* The fields every queue derives from its configuration (in-process or in a
 * segment: shared.c checks an attached segment against them).  cfg has passed
 * pyq_config_check(): each caller checks it once, at its door. */
int pyq_q_init(struct pyq_queue *q, const pyq_config_t *cfg)
{
    bool flush;

    memset(q, 0, sizeof(*q));
    q->seg.layout = PYQ_SEG_LAYOUT;
    q->seg.queue_bytes = (uint32_t)sizeof(*q);
    q->cfg = *cfg;
    q->nblocks = cfg->hot_blocks + cfg->spill_blocks;
    q->max_message = cfg->block_size - PYQ_RECORD_HEADER;
    q->lg.max = q->max_message;
    q->lg.claim_len = PYQ_NO_CLAIM;
    if (cfg->max_message > q->max_message) {
        /* The large region (queue_pvt.h, Large): given, or two of the
         * largest messages, so that one is written while one is read. */
        q->lg.max = cfg->max_message;
        q->lg.bytes = cfg->large_bytes ? cfg->large_bytes
                                       : 2 * (((uint64_t)cfg->max_message + PYQ_LARGE_PAGE - 1) /
                                              PYQ_LARGE_PAGE * PYQ_LARGE_PAGE);
    }
    /* publish each: every committed record is published at once, so a reader
     * scanning headers delivers what one reading pub_pos would -- and waits
     * on the record's own line instead of pub_pos's line, then the record's. */
    q->scan = cfg->scan_current != 0 || cfg->publish == PYQ_PUBLISH_EACH;
    q->rec_mask = cfg->scan_current ? PYQ_RECORD_ALIGN_SCAN - 1 : PYQ_RECORD_ALIGN - 1;
    q->line_headers = cfg->scan_current != 0;
    q->batch_ok = !q->scan && cfg->publish == PYQ_PUBLISH_MAX;
    q->commit_hook = cfg->publish != PYQ_PUBLISH_MAX;
    flush = have_clflushopt();
    q->flush[PYQ_TIER_SPILL] = flush && cfg->spill_nontemporal;
    q->flush[PYQ_TIER_HOT] = flush && cfg->flush_hot_kib != 0 &&
                             (uint64_t)cfg->hot_blocks * cfg->block_size >=
                                 (uint64_t)cfg->flush_hot_kib << 10;
    /* A tier flushed whole needs no backlog rule. */
    q->flush_backlog = flush && !q->flush[PYQ_TIER_HOT] && cfg->flush_backlog_kib != 0
                           ? (uint64_t)cfg->flush_backlog_kib << 10
                           : 0;
    pyq_q_gate(q);
    q->r.block_size = cfg->block_size;
    q->w.claim_len = PYQ_NO_CLAIM;
    q->w.run_len = PYQ_NO_RUN;
    q->w.run_key = PYQ__RUN_KEY(PYQ_NO_RUN);
    q->w.run_one = 1; /* run_inc: one member a stride */
    q->p.fd = -1;
    atomic_init(&q->ring_tail, 0);
    atomic_init(&q->pub_pos, 0);
    atomic_init(&q->closed, 0);
    atomic_init(&q->detached, 0);
    pyq_pool_layout(q);
    return 0;
}

/* The writer's gate word from the configuration (pyqueue_inline.h, PYQ_GATE_*):
 * again after shared.c sets xproc and commit_hook.  Before any writer runs. */
void pyq_q_gate(struct pyq_queue *q)
{
    uint32_t gate = (q->cfg.touch_after_write ? PYQ_GATE_TOUCH : 0) |
                    (q->scan ? PYQ_GATE_SCAN : 0) | (q->xproc ? PYQ_GATE_XPROC : 0) |
                    (q->commit_hook ? PYQ_GATE_HOOK : 0);

    atomic_init(&q->w.gate, gate);
    /* A shared queue's writes all take the library's way (writer.c,
     * write_shared): each ends with the writer's mirror, so the inline run
     * path -- which stores nothing but the private position -- must not
     * apply; XPROC in run_gate turns it away at the compare it makes anyway. */
    atomic_init(&q->w.run_gate, gate & (PYQ_GATE_RUN | PYQ_GATE_XPROC));
}

/* The queue is closed: the flag every slow path reads, and the gate bit (in
 * both words that carry it) that turns the writer's inline paths away.  Any
 * thread.  Relaxed: only flags, no data (the writer's wait loop polls closed). */
void pyq_q_mark_closed(struct pyq_queue *q)
{
    atomic_store_explicit(&q->closed, 1, memory_order_relaxed);
    atomic_fetch_or_explicit(&q->w.gate, PYQ_GATE_CLOSED, memory_order_relaxed);
    atomic_fetch_or_explicit(&q->w.run_gate, PYQ_GATE_CLOSED, memory_order_relaxed);
}

/* Point one side's copies of the mapping at this process's view of it: the
 * control block at ctl, the pool at pool (queue_pvt.h).  The side's current
 * block is set by whoever fixes its state (pyq_shm_restore_*), never carried
 * over from another view. */
void pyq_q_bind(struct pyq_queue *q, int side, uint8_t *ctl, uint8_t *pool)
{
    uint8_t **base = side == PYQ_SIDE_WRITER ? &q->w.base : &q->r.base;
    uint32_t **ring = side == PYQ_SIDE_WRITER ? &q->w.ring : &q->r.ring;
    uint32_t **slots = side == PYQ_SIDE_WRITER ? q->w.free_slots : q->r.free_slots;

    if (side == PYQ_SIDE_WRITER)
        q->w.prefetched = NULL;
    *base = pool;
    *ring = (uint32_t *)(void *)ctl;
    for (int t = 0; t < PYQ_TIERS; t++)
        slots[t] = (uint32_t *)(void *)(ctl + q->seg.free_off[t]);
    /* The large region follows the blocks (pool.c). */
    *(side == PYQ_SIDE_WRITER ? &q->lg.wbase : &q->lg.rbase) =
        q->lg.bytes ? pool + (size_t)q->nblocks * q->cfg.block_size : NULL;
}

int pyq_queue_create(const pyq_config_t *cfg, pyq_queue_t **out)
{
    struct pyq_queue *q;
    int rc;

    *out = NULL;
    if (pyq_config_check(cfg, NULL) != 0)
        return PYQ_EINVAL;
    q = aligned_alloc(PYQ_PAGE, sizeof(*q)); /* the parts are page-aligned (queue_pvt.h) */
    if (!q)
        return PYQ_ENOMEM;
    pyq_q_init(q, cfg);
    atomic_store_explicit(&q->seg.magic, PYQ_SEG_MAGIC, memory_order_relaxed);
    rc = pyq_pool_map(q);
    if (rc != 0) {
        pyq_queue_destroy(q);
        return rc;
    }
    *out = q;
    return 0;
}

void pyq_queue_destroy(pyq_queue_t *q)
{
    if (!q)
        return;
    if (q->seg.seg_bytes) {
        pyq_shm_destroy(q);
        return;
    }
    pyq_pool_unmap(q);
    free(q);
}

void pyq_queue_close(pyq_queue_t *q)
{
    pyq_q_mark_closed(q);
    if (q->xproc)
        pyq_shm_wake_both(q); /* a side asleep on a futex sees the flag at once */
}

int pyq_queue_is_closed(const pyq_queue_t *q)
{
    return atomic_load_explicit(&((struct pyq_queue *)q)->closed, memory_order_relaxed);
}

int pyq_queue_writer_detached(const pyq_queue_t *q)
{
    /* A5: pairs with W4 in pyq_writer_detach(). */
    return pyq_load_acquire(&((struct pyq_queue *)q)->detached);
}

uint32_t pyq_queue_max_message(const pyq_queue_t *q)
{
    return q->lg.max;
}

void pyq_queue_config(const pyq_queue_t *q, pyq_config_t *out)
{
    *out = q->cfg;
}

uint64_t pyq_queue_backlog(const pyq_queue_t *cq)
{
    struct pyq_queue *q = (struct pyq_queue *)cq;
    /* Read the reader's count first: it never exceeds the writer's, so a late
     * writer count can only overstate the backlog, never wrap it below zero. */
    uint64_t rd = pyq_load_relaxed(&q->rs.bytes), pending;
    /* A6: pairs with W5: the open run read after it is not in wr yet. */
    uint64_t wr = pyq_load_acquire(&q->ws.bytes);

    pyq_w_pending(q, &pending);
    wr += pending;
    return wr > rd ? wr - rd : 0;
}

void pyq_queue_stats(const pyq_queue_t *cq, pyq_stats_t *s)
{
    struct pyq_queue *q = (struct pyq_queue *)cq;
    uint64_t pending_bytes;

    memset(s, 0, sizeof(*s));
    s->messages_read = pyq_load_relaxed(&q->rs.messages);
    s->bytes_read = pyq_load_relaxed(&q->rs.bytes);
    s->returns_hot = pyq_load_relaxed(&q->rs.returns[PYQ_TIER_HOT]);
    s->returns_spill = pyq_load_relaxed(&q->rs.returns[PYQ_TIER_SPILL]);
    s->blocks_flushed = pyq_load_relaxed(&q->rs.flushed);
    /* A6: pairs with W5: the open run read after these is not in them yet, so
     * adding its members back is exact from the writer's thread and never an
     * overcount from another. */
    s->messages_written = pyq_load_acquire(&q->ws.messages);
    s->bytes_written = pyq_load_acquire(&q->ws.bytes);
    s->messages_written += pyq_w_pending(q, &pending_bytes);
    s->bytes_written += pending_bytes;
    s->blocks_published = pyq_load_relaxed(&q->ws.blocks_published);
    s->publishes = pyq_load_relaxed(&q->ws.publishes);
    s->takes_hot = pyq_load_relaxed(&q->ws.takes[PYQ_TIER_HOT]);
    s->takes_spill = pyq_load_relaxed(&q->ws.takes[PYQ_TIER_SPILL]);
    s->retries = pyq_load_relaxed(&q->ws.retries);
    s->yields = pyq_load_relaxed(&q->ws.yields);
    s->full_events = pyq_load_relaxed(&q->ws.full_events);
    s->peak_backlog = pyq_load_relaxed(&q->ws.peak_backlog);
    s->backlog = s->bytes_written > s->bytes_read ? s->bytes_written - s->bytes_read : 0;
    s->hugepages_used = q->hugepages_used;
    s->mlocked = q->mlocked;
}

const char *pyq_strerror(int code)
{
    switch (code) {
    case PYQ_OK: return "success";
    case PYQ_EINVAL: return "invalid argument or configuration";
    case PYQ_ENOMEM: return "out of memory (pool or control block could not be mapped)";
    case PYQ_EAGAIN: return "queue full";
    case PYQ_ETOOBIG: return "message larger than the block allows";
    case PYQ_ECLOSED: return "queue closed";
    case PYQ_EBUSY: return "a claim is outstanding (commit or abort it first)";
    case PYQ_ENOCLAIM: return "no outstanding claim";
    case PYQ_EPERM: return "operation not permitted by the OS";
    case PYQ_ERANGE: return "message size differs from the fixed size asked for";
    case PYQ_EBADMSG: return "verification failed: message lost, duplicated, reordered or corrupted";
    case PYQ_ENOTSUP: return "not supported on this platform or kernel";
    case PYQ_EINTR: return "interrupted by a stop request";
    case PYQ_EPEER: return "the process on the other side of the shared queue died";
    case PYQ_EOWNED: return "that side of the shared queue is owned by another live process";
    case PYQ_EBADSEG: return "not a pyqueue segment, or one of another layout version";
    case PYQ_ENOSEG: return "no such shared queue";
    case PYQ_EEXIST: return "a shared queue of that name exists";
    case PYQ_EMFILE: return "too many open files (the process's or the system's descriptor limit)";
    case PYQ_EUNTRUSTED:
        return "the shared segment belongs to another user or is open to others (mode wider "
               "than 0600); attaching needs an explicit opt-in";
    case PYQ_ECORRUPT:
        return "the shared segment is corrupt: it holds a value no writer or reader of this "
               "queue's geometry stores (a damaged or hostile peer)";
    default: return "unknown error";
    }
}

const char *pyq_version(void)
{
    return PYQ_VERSION;
}
