/*
 * shared_pvt.h - what the queue core needs of a shared queue (shared.c):
 * the wake-ups on the hand-over paths, the sleeps of the wait paths, process
 * identities.  Private, never installed.
 *
 * Sleeping without a lost wake-up (a Dekker pair, one flag per sleeper):
 *   SHM-S1 seq_cst fence (waker: after its hand-over store W2/W3/W4 or R1, before
 *      reading the sleeper's flag)  <->  SHM-S2 seq_cst fence (sleeper: after
 *      raising its flag, before looking at the queue again).  Of the two, at
 *      least one sees the other's store: either the sleeper sees the message
 *      (or the free block) and does not sleep, or the waker sees the flag and
 *      bumps the futex word the sleeper read before raising it -- so the
 *      futex wait returns at once or is woken.
 *   A bell's ring (core/bell_wait.c, BELL-R1) is a waker too: SHM-S2 pairs
 *   with it the same way.
 * Only shared queues (q->xproc) pay SHM-S1, and only on a hand-over; the flag's
 * line is written only by a sleeper, so it stays Shared in the waker's cache.
 */
#ifndef PYQ_SHARED_PVT_H
#define PYQ_SHARED_PVT_H

#include "core/queue_pvt.h"

/* shared_wait.c */
PYQ_PRIVATE void pyq_shm_wake(struct pyq_queue *q, int sleeper);
PYQ_PRIVATE void pyq_shm_wake_both(struct pyq_queue *q);
PYQ_PRIVATE uint32_t pyq_shm_sleep_prepare(struct pyq_queue *q, int side);
PYQ_PRIVATE void pyq_shm_sleep_cancel(struct pyq_queue *q, int side);
PYQ_PRIVATE int pyq_shm_sleep(struct pyq_queue *q, int side, uint32_t ev, uint64_t deadline);

/* shared_owner.c: the lock bytes of the segment's descriptions (advisory,
 * past nothing: they need no byte of the file). */
#define PYQ_LOCK_INIT 0                 /* a creator until the segment is complete */
#define PYQ_LOCK_SIDE(side) (1 + (side)) /* the side's owner */
#define PYQ_LOCK_USERS 3                /* read: a handle maps it; write: the last one */
PYQ_PRIVATE int pyq_shm_lock(struct pyq_queue *q, int byte, int write);
PYQ_PRIVATE void pyq_shm_unlock(struct pyq_queue *q, int byte);
PYQ_PRIVATE int pyq_shm_lock_held(int fd, int byte);
PYQ_PRIVATE int pyq_shm_own_fd(struct pyq_queue *q);
PYQ_PRIVATE int pyq_shm_peer_dead(struct pyq_queue *q, int side);
PYQ_PRIVATE int pyq_shm_recover_writer(struct pyq_queue *q);

/* shared_fault.c: a SIGBUS in a watched view (a segment cut short) makes the
 * queue corrupt instead of killing the process. */
PYQ_PRIVATE void pyq_shm_fault_watch(struct pyq_queue *q, void *start, size_t len);
PYQ_PRIVATE void pyq_shm_fault_unwatch(void *start);

/* reader.c: a shared queue's reader without its checks of the segment (0) or
 * with them (1, the default), for one benchmark binary to measure what the
 * checks cost (benchmarks/peers/segment_checks.c).  Never a way to run. */
PYQ_PRIVATE void pyq_shm_set_checks(struct pyq_queue *q, int on);

/* shared_mirror.c */
PYQ_PRIVATE int pyq_shm_restore_writer(struct pyq_queue *q, int dead);
PYQ_PRIVATE int pyq_shm_restore_reader(struct pyq_queue *q);

/* shared.c */
PYQ_PRIVATE void pyq_shm_destroy(struct pyq_queue *q);
PYQ_PRIVATE uint8_t *pyq_shm_ctl(struct pyq_queue *q);
PYQ_PRIVATE uint8_t *pyq_shm_pool(struct pyq_queue *q);

/* The waker's half, inline on the hand-over paths of a shared queue. */
static inline void pyq_shm_wake_reader(struct pyq_queue *q)
{
    /* SHM-S1: the hand-over before this is ordered before the flag's load; pairs
     * with SHM-S2 in pyq_shm_sleep_prepare. */
    atomic_thread_fence(memory_order_seq_cst);
    if (PYQ_UNLIKELY(pyq_load_relaxed(&q->sh.r_waiting)))
        pyq_shm_wake(q, PYQ_SIDE_READER);
}

static inline void pyq_shm_wake_writer(struct pyq_queue *q)
{
    atomic_thread_fence(memory_order_seq_cst); /* SHM-S1, for R1 */
    if (PYQ_UNLIKELY(pyq_load_relaxed(&q->sh.w_waiting)))
        pyq_shm_wake(q, PYQ_SIDE_WRITER);
}

#endif /* PYQ_SHARED_PVT_H */
