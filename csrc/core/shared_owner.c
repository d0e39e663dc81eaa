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

/* The side's state, as a dead owner left it, must not send the new owner out
 * of the mapping. */
static int state_ok(struct pyq_queue *q, int side)
{
    uint32_t bs = q->cfg.block_size;

    if (side == PYQ_SIDE_READER)
        return q->r.idx < q->nblocks && q->r.pos <= bs && q->r.limit <= bs;
    if (q->w.pos > bs)
        return 0;
    if (q->w.blk) {
        uint64_t off = (uint64_t)(q->w.blk - q->w.base);
        if (!q->w.base || off % bs || off / bs >= q->nblocks)
            return 0;
    }
    return 1;
}

static void bind(struct pyq_queue *q, int side)
{
    pyq_q_bind(q, side, pyq_shm_ctl(q), pyq_shm_pool(q));
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
    /* acq_rel: the dead writer's state (acquire) is ours; our recovery is
     * published by the release store of 0 below. */
    if (!atomic_compare_exchange_strong_explicit(&q->sh.owner[PYQ_SIDE_WRITER], &o, me,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return 0;
    pyq_store_relaxed(&q->sh.dead[PYQ_SIDE_WRITER], o);
    if (state_ok(q, PYQ_SIDE_WRITER)) {
        struct pyq_writer_state *w = &q->w;
        /* An open run's count is the truth (queue_pvt.h, Runs): a writer killed
         * between a member's position and its count left pos one member off. */
        if (w->run_n > 0 && w->run_hdr + PYQ_RECORD_HEADER +
                                (uint64_t)w->run_n * w->run_step <= q->cfg.block_size)
            w->pos = w->run_hdr + PYQ_RECORD_HEADER + w->run_n * w->run_step;
        bind(q, PYQ_SIDE_WRITER);
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
    if (!state_ok(q, side)) {
        pyq_store_release(&q->sh.owner[side], 0);
        return PYQ_EBADSEG;
    }
    bind(q, side);
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
