/*
 * shared_wait.c - a side of a shared queue asleep on a futex word in the
 * segment, and the wake-up that ends the sleep (shared_pvt.h, SHM-S1/SHM-S2).  The
 * sleeps are bounded by PYQ_SHM_SLEEP_SLICE_NS, after which the sleeper
 * looks at its peer's process: a dead peer never wakes anyone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/shared_pvt.h"

/* The sleeper's flag and the futex word its waker bumps. */
static _Atomic uint32_t *flag_of(struct pyq_queue *q, int side)
{
    return side == PYQ_SIDE_READER ? &q->sh.r_waiting : &q->sh.w_waiting;
}

static _Atomic uint32_t *word_of(struct pyq_queue *q, int side)
{
    return side == PYQ_SIDE_READER ? &q->sh.w_event : &q->sh.r_event;
}

/* Not FUTEX_PRIVATE: the word is in a MAP_SHARED segment other processes map. */
static void futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void pyq_shm_wake(struct pyq_queue *q, int sleeper)
{
    /* Relaxed: the futex word carries no data, the hand-over store (before SHM-S1)
     * does; the bump only makes the sleeper's FUTEX_WAIT fail or return. */
    atomic_fetch_add_explicit(word_of(q, sleeper), 1, memory_order_relaxed);
    futex_wake_all(word_of(q, sleeper));
}

void pyq_queue_set_sleep_slice(pyq_queue_t *q, int64_t ns)
{
    if (q->xproc)
        q->p.slice_ns = ns < 0 ? -1 : ns; /* this process's own: a peer's never sets it */
}

void pyq_shm_wake_both(struct pyq_queue *q)
{
    pyq_shm_wake(q, PYQ_SIDE_READER);
    pyq_shm_wake(q, PYQ_SIDE_WRITER);
}

/* Before looking at the queue a last time: read the futex word, then raise
 * the flag.  Returns the word for pyq_shm_sleep(). */
uint32_t pyq_shm_sleep_prepare(struct pyq_queue *q, int side)
{
    uint32_t ev = atomic_load_explicit(word_of(q, side), memory_order_relaxed);

    pyq_store_relaxed(flag_of(q, side), 1);
    /* SHM-S2: the flag is visible before the look that follows; pairs with SHM-S1. */
    atomic_thread_fence(memory_order_seq_cst);
    return ev;
}

void pyq_shm_sleep_cancel(struct pyq_queue *q, int side)
{
    pyq_store_relaxed(flag_of(q, side), 0);
}

/* Sleep until the word moves from ev, a wake-up, the slice ends or the
 * deadline (0: none) passes; then lower the flag.  @return 0, or PYQ_EPEER
 * when the slice ended and the peer's process is dead. */
int pyq_shm_sleep(struct pyq_queue *q, int side, uint32_t ev, uint64_t deadline)
{
    int64_t slice = q->p.slice_ns;
    uint64_t ns = slice > 0 ? (uint64_t)slice : PYQ_SHM_SLEEP_SLICE_NS;
    struct timespec ts;
    long rc;

    if (slice < 0 && !deadline) { /* no slice: only a wake-up ends the sleep */
        syscall(SYS_futex, (uint32_t *)word_of(q, side), FUTEX_WAIT, ev, NULL, NULL, 0);
        pyq_shm_sleep_cancel(q, side);
        return 0;
    }
    if (deadline) {
        uint64_t now = pyq_now_ns();
        ns = now >= deadline ? 0 : (deadline - now < ns ? deadline - now : ns);
    }
    ts.tv_sec = (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    rc = ns ? syscall(SYS_futex, (uint32_t *)word_of(q, side), FUTEX_WAIT, ev, &ts, NULL, 0) : 0;
    pyq_shm_sleep_cancel(q, side);
    if (rc != 0 && errno == ETIMEDOUT && pyq_shm_peer_dead(q, side))
        return PYQ_EPEER;
    return 0;
}
