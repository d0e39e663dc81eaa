/*
 * shared_owner.c - who owns each side of a shared queue, whether that
 * process still lives, and taking a side over.  Slow paths only: take,
 * release, and a sleeper's look at its peer once a slice.
 *
 * Liveness is a lock the kernel holds for a process, not a pid read from
 * /proc (a process in another pid namespace -- a container sharing
 * /dev/shm -- has a pid that means nothing here): each handle holds an open
 * file description of the segment (q->p.fd), and on it an open file
 * description lock (fcntl F_OFD_SETLK) on one byte per role:
 *   PYQ_LOCK_SIDE(side)  write lock, held by the side's owner;
 *   PYQ_LOCK_USERS       read lock, held by every handle mapping the segment
 *                        (a write lock on it means: nobody else maps it);
 *   PYQ_LOCK_INIT        write lock, held by a creator until the segment is
 *                        complete (shared.c).
 * The kernel drops a description's locks when its last descriptor closes --
 * at the process's exit, however it ends -- so a side whose byte nobody
 * holds has no live owner, and F_OFD_GETLK tells that from any namespace.
 * The owner words in the segment keep the pid for messages only.
 *
 * A description is shared with a fork() child: the child gets its own
 * (own_fd(), from pyq_queue_adopt() or its first lock operation) before it
 * takes or releases anything, so it never drops its parent's locks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/shared_pvt.h"

static int ofd_lock(int fd, int byte, short type)
{
    struct flock fl;

    memset(&fl, 0, sizeof(fl));
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

int pyq_shm_lock(struct pyq_queue *q, int byte, int write)
{
    int rc = ofd_lock(q->p.fd, byte, write ? F_WRLCK : F_RDLCK);
    return rc == 0 ? 0 : rc == -EAGAIN || rc == -EACCES ? PYQ_EOWNED : PYQ_EINVAL;
}

void pyq_shm_unlock(struct pyq_queue *q, int byte)
{
    ofd_lock(q->p.fd, byte, F_UNLCK);
}

int pyq_shm_lock_held(int fd, int byte)
{
    struct flock fl;

    memset(&fl, 0, sizeof(fl));
    fl.l_type = F_WRLCK; /* conflicts with any lock another description holds */
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return 0;
    return fl.l_type != F_UNLCK;
}

/* This process's own description of the segment, made (and registered as a
 * user) the first time a fork() child needs one.  0, or PYQ_EMFILE /
 * PYQ_EINVAL (the child then uses no lock of its parent's). */
int pyq_shm_own_fd(struct pyq_queue *q)
{
    char path[64];
    struct stat st;
    int fd;

    if (q->p.pid == getpid())
        return 0;
    /* /proc/self/fd reopens the same file as a new description, a memfd too. */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", q->p.fd);
    fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == EMFILE || errno == ENFILE ? PYQ_EMFILE : PYQ_EINVAL;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != q->p.ino || (uint64_t)st.st_dev != q->p.dev ||
        ofd_lock(fd, PYQ_LOCK_USERS, F_RDLCK) != 0) {
        close(fd);
        return PYQ_EINVAL;
    }
    close(q->p.fd); /* the parent's description: its locks stay the parent's */
    q->p.fd = fd;
    q->p.pid = getpid();
    q->p.held = 0;
    return 0;
}

/* Whether this handle (in this process) owns side. */
static int holds(const struct pyq_queue *q, int side)
{
    return q->p.pid == getpid() && (q->p.held >> side & 1);
}

/* 1 when side has an owner whose lock is held: this handle, or any live
 * process's (another description's). */
static int side_alive(struct pyq_queue *q, int side)
{
    return holds(q, side) || pyq_shm_lock_held(q->p.fd, PYQ_LOCK_SIDE(side));
}

/* 1 if the process owning the other side of side is recorded and dead. */
int pyq_shm_peer_dead(struct pyq_queue *q, int side)
{
    uint64_t o = pyq_load_acquire(&q->sh.owner[!side]); /* pairs with the take's store */
    return o && !side_alive(q, !side);
}

/* The dead writer whose lock this process holds now: publish what it
 * committed (its mirror, checked) and end the stream. */
static void recover_locked(struct pyq_queue *q, uint64_t o)
{
    pyq_store_relaxed(&q->sh.dead[PYQ_SIDE_WRITER], o);
    if (pyq_shm_restore_writer(q, 1) == 0) {
        /* Its last call may have published past its mirror (a seal): what is
         * published is complete, and the mirror's records are below it. */
        if (q->w.blk && q->w.blk_start + q->w.pos <= pyq_load_acquire(&q->pub_pos))
            q->w.blk = NULL; /* published already: the detach publishes nothing more */
        pyq_writer_detach(q); /* W4: everything committed is published */
    } else {
        /* Its mirror describes no writer of this queue: end the stream at what
         * was published, and say so to this reader. */
        q->p.corrupt |= PYQ_CORRUPT_READER;
        pyq_q_mark_closed(q);
        pyq_store_release(&q->detached, 1);
    }
    /* Release: the recovery is complete before the side reads free. */
    pyq_store_release(&q->sh.owner[PYQ_SIDE_WRITER], 0);
}

/* A dead writer: publish what it committed and end the stream, from the
 * process that found it dead.  Its lock byte, taken here, makes sure no two
 * processes recover it at once and that it is dead (no live description
 * holds it); dead[] names it.
 * @return 1 recovered now, 0 nothing to do (not dead, or already done). */
int pyq_shm_recover_writer(struct pyq_queue *q)
{
    uint64_t o = pyq_load_acquire(&q->sh.owner[PYQ_SIDE_WRITER]);

    if (!o || holds(q, PYQ_SIDE_WRITER) || pyq_shm_own_fd(q) != 0)
        return 0;
    if (pyq_shm_lock(q, PYQ_LOCK_SIDE(PYQ_SIDE_WRITER), 1) != 0)
        return 0; /* alive, or another process recovers it */
    /* Acquire: the dead writer's mirror is complete for us (its stores were
     * made before its lock went, the kernel's own order). */
    o = pyq_load_acquire(&q->sh.owner[PYQ_SIDE_WRITER]);
    if (o)
        recover_locked(q, o);
    pyq_shm_unlock(q, PYQ_LOCK_SIDE(PYQ_SIDE_WRITER));
    return o != 0;
}

int pyq_queue_take(pyq_queue_t *q, int side, int flags)
{
    uint64_t cur;
    int rc;

    if (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER)
        return PYQ_EINVAL;
    if (!q->xproc)
        return 0;
    if (holds(q, side))
        return 0;
    if ((rc = pyq_shm_own_fd(q)) != 0)
        return rc;
    if (pyq_shm_lock(q, PYQ_LOCK_SIDE(side), 1) != 0)
        return PYQ_EOWNED;
    /* Ours now.  A word left behind names an owner whose lock went without
     * a release: it died. */
    cur = pyq_load_acquire(&q->sh.owner[side]);
    if (cur && !(flags & PYQ_TAKE_DEAD)) {
        pyq_shm_unlock(q, PYQ_LOCK_SIDE(side));
        return PYQ_EPEER;
    }
    if (cur && side == PYQ_SIDE_WRITER) {
        recover_locked(q, cur); /* its messages are published, its stream ends */
    } else if (cur) {
        pyq_store_relaxed(&q->sh.dead[side], cur);
    }
    /* A dead writer's last call may have taken a block past its mirror. */
    if ((side == PYQ_SIDE_WRITER ? pyq_shm_restore_writer(q, cur != 0)
                                 : pyq_shm_restore_reader(q)) != 0) {
        pyq_store_release(&q->sh.owner[side], 0);
        pyq_shm_unlock(q, PYQ_LOCK_SIDE(side));
        return PYQ_ECORRUPT;
    }
    q->p.held |= 1u << side;
    pyq_store_release(&q->sh.owner[side], (uint64_t)getpid());
    return 0;
}

int pyq_queue_release(pyq_queue_t *q, int side)
{
    if (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER)
        return PYQ_EINVAL;
    if (!q->xproc)
        return 0;
    if (!holds(q, side))
        return PYQ_EOWNED;
    /* The side's last state to its mirror (every call ends with it; once
     * more for a state fixed since, never for one found corrupt). */
    if (!(q->p.corrupt & (side == PYQ_SIDE_WRITER ? PYQ_CORRUPT_WRITER : PYQ_CORRUPT_READER)))
        (side == PYQ_SIDE_WRITER ? pyq_w_mirror : pyq_r_mirror)(q);
    /* Release: that state is visible to whoever takes the side next. */
    pyq_store_release(&q->sh.owner[side], 0);
    q->p.held &= ~(1u << side);
    pyq_shm_unlock(q, PYQ_LOCK_SIDE(side));
    return 0;
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
    o &= INT64_MAX;
    return side_alive(q, side) ? (int64_t)o : -(int64_t)o;
}

int64_t pyq_queue_dead_peer(const pyq_queue_t *cq, int side)
{
    struct pyq_queue *q = (struct pyq_queue *)cq;

    if (!q->xproc || (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER))
        return 0;
    return (int64_t)(pyq_load_relaxed(&q->sh.dead[side]) & INT64_MAX);
}
