/*
 * shared_owner.c - who owns each side of a shared queue, whether that
 * process still lives, and taking a side over.  Slow paths
 * only: take, release, and a sleeper's look at its peer once a slice.
 *
 * An owner is recorded as one word, pid | start time << 22 (the start time in
 * clock ticks since boot, field 22 of /proc/PID/stat): a pid the kernel gave
 * to a new process after the owner died does not match the word, so the
 * owner counts as dead.  A zombie (state Z or X) is dead too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/shared_pvt.h"

#define PID_BITS 22
#define PID_MASK ((UINT64_C(1) << PID_BITS) - 1)

/* Read /proc/PID/stat: 1 and state and start time, or 0 if unreadable. */
static int read_stat(int pid, char *state, uint64_t *start)
{
    char path[64], buf[1024], *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    p = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
    if (!p || p[1] != ' ')
        return 0;
    *state = p[2];
    p += 2;
    for (int field = 3; field < 22; field++) { /* state is field 3 */
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return 1;
}

/* The owner word of process pid, or 0 if it is not running. */
uint64_t pyq_proc_id(int pid)
{
    char state;
    uint64_t start;

    if (pid <= 0 || (uint64_t)pid > PID_MASK)
        return 0;
    if (!read_stat(pid, &state, &start)) {
        /* No /proc: the pid alone (pid reuse goes unseen there). */
        return kill(pid, 0) == 0 || errno == EPERM ? (uint64_t)pid : 0;
    }
    if (state == 'Z' || state == 'X')
        return 0;
    return (uint64_t)pid | start << PID_BITS;
}

int pyq_proc_alive(uint64_t id)
{
    uint64_t now;

    if (!id)
        return 0;
    now = pyq_proc_id((int)(id & PID_MASK));
    /* A word recorded without /proc matches on the pid alone. */
    return now && (now == id || (id >> PID_BITS) == 0 || (now >> PID_BITS) == 0);
}

static uint64_t self_id(void)
{
    return pyq_proc_id(getpid());
}

/* 1 if the process owning the other side of side is recorded and dead. */
int pyq_shm_peer_dead(struct pyq_queue *q, int side)
{
    uint64_t o = pyq_load_acquire(&q->sh.owner[!side]); /* pairs with the take's CAS */
    return o && !pyq_proc_alive(o);
}

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
static int restore_writer(struct pyq_queue *q, int dead)
{
    struct pyq_writer_state *w = &q->w;
    const uint32_t bs = q->cfg.block_size;
    uint64_t g = mirror_gen(&q->wm.gen), tail, seq, pos_run, run_id, head[PYQ_TIERS], last_pub;
    uint32_t pos, run_n, run_hdr, has_blk, size;
    const struct pyq_wslot *s = &q->wm.s[g & 1];

    bind(q, PYQ_SIDE_WRITER);
    w->claim_len = PYQ_NO_CLAIM;
    w->prefetched = NULL;
    w->nt_pending = 0;
    q->p.wgen = g;
    if (g == 0)
        return 0; /* never written: pyq_q_init's state */
    seq = pyq_load_relaxed(&s->seq);
    pos_run = pyq_load_relaxed(&s->pos_run);
    run_id = pyq_load_relaxed(&s->run_id);
    last_pub = pyq_load_relaxed(&s->last_pub);
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
        pos > bs || run_n > PYQ_RUN_MAX || (has_blk && seq == 0) || has_blk > 1 ||
        last_pub > (has_blk ? (seq - 1) * bs + pos : seq * bs))
        return PYQ_EBADSEG;
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
static int restore_reader(struct pyq_queue *q)
{
    struct pyq_reader_state *r = &q->r;
    const uint32_t bs = q->cfg.block_size;
    uint64_t g = mirror_gen(&q->rm.gen), tail, seq;
    const struct pyq_rslot *s = &q->rm.s[g & 1];
    uint32_t pos, left, len, has_blk;

    bind(q, PYQ_SIDE_READER);
    for (int t = 0; t < PYQ_TIERS; t++)
        r->free_tail[t] = pyq_load_acquire(&q->free_tail[t].v);
    r->limit = 0;
    r->pub_cache = 0;
    r->drained_pub = 0;
    r->tail_cache = 0;
    r->block_size = bs;
    q->p.rgen = g;
    if (g == 0)
        return 0;
    seq = pyq_load_relaxed(&s->seq);
    pos = pyq_load_relaxed(&s->pos);
    left = pyq_load_relaxed(&s->run_left);
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

/* A dead writer: publish what it committed and end the stream, from the
 * process that found it dead.  The owner word goes dead -> us -> 0, so two
 * processes never recover it at once; dead[] names the dead one.
 * @return 1 recovered now, 0 nothing to do (not dead, or already done). */
int pyq_shm_recover_writer(struct pyq_queue *q)
{
    uint64_t o = pyq_load_acquire(&q->sh.owner[PYQ_SIDE_WRITER]);
    uint64_t me = self_id();

    if (!o || o == me || pyq_proc_alive(o))
        return 0;
    /* acq_rel: the dead writer's mirror (acquire) is ours; our recovery is
     * published by the release store of 0 below. */
    if (!atomic_compare_exchange_strong_explicit(&q->sh.owner[PYQ_SIDE_WRITER], &o, me,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return 0;
    pyq_store_relaxed(&q->sh.dead[PYQ_SIDE_WRITER], o);
    if (restore_writer(q, 1) == 0) {
        /* Its last call may have published past its mirror (a seal): what is
         * published is complete, and the mirror's records are below it. */
        if (q->w.blk && q->w.blk_start + q->w.pos <= pyq_load_acquire(&q->pub_pos))
            q->w.blk = NULL; /* published already: the detach publishes nothing more */
        pyq_writer_detach(q); /* W4: everything committed is published */
    } else {
        /* Its state cannot be trusted: end the stream at what was published. */
        pyq_q_mark_closed(q);
        pyq_store_release(&q->detached, 1);
    }
    pyq_store_release(&q->sh.owner[PYQ_SIDE_WRITER], 0);
    return 1;
}

int pyq_queue_take(pyq_queue_t *q, int side, int flags)
{
    uint64_t me, cur;

    if (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER)
        return PYQ_EINVAL;
    if (!q->xproc)
        return 0;
    me = self_id();
    if (!me)
        return PYQ_EPERM;
    cur = pyq_load_acquire(&q->sh.owner[side]);
    for (;;) {
        if (cur == me) {
            bind(q, side);
            return 0;
        }
        if (cur && pyq_proc_alive(cur))
            return PYQ_EOWNED;
        if (cur && !(flags & PYQ_TAKE_DEAD))
            return PYQ_EPEER;
        if (cur && side == PYQ_SIDE_WRITER) {
            pyq_shm_recover_writer(q);
            cur = pyq_load_acquire(&q->sh.owner[side]);
            continue;
        }
        /* acq_rel: the previous owner's side state (acquire) before ours. */
        if (atomic_compare_exchange_weak_explicit(&q->sh.owner[side], &cur, me,
                                                  memory_order_acq_rel, memory_order_acquire))
            break;
    }
    if (cur)
        pyq_store_relaxed(&q->sh.dead[side], cur);
    if ((side == PYQ_SIDE_WRITER ? restore_writer(q, 0) : restore_reader(q)) != 0) {
        pyq_store_release(&q->sh.owner[side], 0);
        return PYQ_ECORRUPT;
    }
    return 0;
}

int pyq_queue_release(pyq_queue_t *q, int side)
{
    uint64_t me;

    if (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER)
        return PYQ_EINVAL;
    if (!q->xproc)
        return 0;
    me = self_id();
    /* Release: this side's last state is visible to whoever takes it next. */
    return atomic_compare_exchange_strong_explicit(&q->sh.owner[side], &me, 0,
                                                   memory_order_release, memory_order_relaxed)
               ? 0
               : PYQ_EOWNED;
}

int64_t pyq_queue_owner(const pyq_queue_t *cq, int side)
{
    struct pyq_queue *q = (struct pyq_queue *)cq;
    uint64_t o;

    if (!q->xproc || (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER))
        return 0;
    o = pyq_load_acquire(&q->sh.owner[side]);
    if (!o)
        return 0;
    return pyq_proc_alive(o) ? (int64_t)(o & PID_MASK) : -(int64_t)(o & PID_MASK);
}

int64_t pyq_queue_dead_peer(const pyq_queue_t *cq, int side)
{
    struct pyq_queue *q = (struct pyq_queue *)cq;

    if (!q->xproc || (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER))
        return 0;
    return (int64_t)(pyq_load_relaxed(&q->sh.dead[side]) & PID_MASK);
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
