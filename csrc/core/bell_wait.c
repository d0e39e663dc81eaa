/*
 * bell_wait.c - the waits a bell also ends (pyq_reader_wait_bell,
 * pyq_writer_wait_room, pyq_queue_ring; pyqueue.h): the waits of a thread
 * that waits on a side for an event loop (pyqueue/aio.py).  Such a thread
 * consumes nothing and writes nothing; it must hand the side back at once
 * when the task it waits for is cancelled or the queue closes, and the
 * loop's thread asks for that by ringing the bell, a word the caller owns.
 *
 * Sleeping: across processes on the segment's futex words, woken by the
 * other side's hand-over (shared_pvt.h, SHM-S1/SHM-S2) or by a ring, which
 * bumps the same word.  In-process a writer wakes nobody (publish_local), so
 * the sleeper sleeps on the bell itself in steps that grow to
 * PYQ_BELL_SLEEP_CAP_NS: a ring ends the step at once, a message or a free
 * block is seen when it ends.
 *
 * Ordering:
 *   BELL-R1 seq_cst fence (ringer: after raising the bell, before the futex
 *      word's bump)  <->  SHM-S2 (sleeper: after raising its flag, before its
 *      last look at the bell).  Either the last look sees the bell, or the
 *      word the sleeper read before it is not the word the ringer leaves, so
 *      its FUTEX_WAIT returns at once or is woken.  In-process FUTEX_WAIT on
 *      the bell compares it with 0 in the kernel: no window at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/queue_pvt.h"
#include "core/shared_pvt.h"

/* The API passes the bell as a plain word (cffi has no _Atomic); these
 * functions are the only ones that touch it, always atomically. */
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
                   _Alignof(_Atomic uint32_t) == _Alignof(uint32_t),
               "a bell is one 32-bit word");

static _Atomic uint32_t *bell_word(uint32_t *bell)
{
    return (_Atomic uint32_t *)bell;
}

/* Relaxed: the bell hands nothing over but itself (the caller's own locks
 * order its request). */
static int rang(uint32_t *bell)
{
    return bell && pyq_load_relaxed(bell_word(bell)) != 0;
}

/* In-process: sleep for ns, or until the bell rings or the deadline (0: none)
 * passes. */
static void bell_sleep(uint32_t *bell, uint64_t ns, uint64_t deadline)
{
    struct timespec ts;

    if (deadline) {
        uint64_t now = pyq_now_ns();
        if (now >= deadline)
            return;
        if (deadline - now < ns)
            ns = deadline - now;
    }
    ts.tv_sec = (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    if (bell) /* returns at once when the bell is no longer 0 */
        syscall(SYS_futex, (uint32_t *)bell, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    else
        nanosleep(&ts, NULL);
}

static uint64_t grown(uint64_t ns)
{
    return ns * 2 < PYQ_BELL_SLEEP_CAP_NS ? ns * 2 : PYQ_BELL_SLEEP_CAP_NS;
}

int pyq_reader_wait_bell(pyq_queue_t *q, int64_t timeout_ns, uint32_t *bell)
{
    uint64_t deadline = 0, sleep_ns = 1000;
    uint32_t looks = 0;

    if (timeout_ns > 0)
        deadline = pyq_now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        /* One look of pyq_reader_wait: a message, the end, a dead writer's end. */
        int rc = pyq_reader_wait(q, 0);

        if (rc != PYQ_EAGAIN)
            return rc;
        if (rang(bell))
            return PYQ_EINTR;
        if (timeout_ns == 0 || (deadline && pyq_now_ns() >= deadline))
            return PYQ_EAGAIN;
        if (looks < PYQ_READER_WAIT_SPINS) {
            looks++;
            pyq_cpu_relax();
            continue;
        }
        if (q->xproc) {
            uint32_t ev = pyq_shm_sleep_prepare(q, PYQ_SIDE_READER);
            /* The last look after SHM-S2: a publish or a ring from now on
             * moves the word from ev (SHM-S1, BELL-R1). */
            if (rang(bell) || pyq_queue_writer_detached(q) ||
                pyq_reader_next_len(q) != PYQ_EAGAIN) {
                pyq_shm_sleep_cancel(q, PYQ_SIDE_READER);
                continue;
            }
            if (pyq_shm_sleep(q, PYQ_SIDE_READER, ev, deadline) == PYQ_EPEER)
                pyq_shm_recover_writer(q); /* its messages, then the end (W4) */
            continue;
        }
        bell_sleep(bell, sleep_ns, deadline);
        sleep_ns = grown(sleep_ns);
    }
}

/* Room for a len-byte record now: a claim that takes no time, given back.
 * @return 1, PYQ_EAGAIN, or the claim's refusal. */
static int room(struct pyq_queue *q, uint32_t len)
{
    void *p;
    int rc = pyq_writer_claim(q, len, 0, &p);

    if (rc != 0)
        return rc;
    pyq_writer_abort(q);
    return 1;
}

int pyq_writer_wait_room(pyq_queue_t *q, uint32_t len, int64_t timeout_ns, uint32_t *bell)
{
    uint64_t deadline = 0, sleep_ns = 1000;
    uint32_t looks = 0;

    if (timeout_ns > 0)
        deadline = pyq_now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        int rc = room(q, len);

        if (rc != PYQ_EAGAIN)
            return rc;
        if (rang(bell))
            return PYQ_EINTR;
        if (timeout_ns == 0 || (deadline && pyq_now_ns() >= deadline))
            return PYQ_EAGAIN;
        if (looks < PYQ_READER_WAIT_SPINS) {
            looks++;
            pyq_cpu_relax();
            continue;
        }
        if (q->xproc) {
            uint32_t ev = pyq_shm_sleep_prepare(q, PYQ_SIDE_WRITER);
            /* The last look after SHM-S2: a block returned or a ring from
             * now on moves the word from ev (SHM-S1, BELL-R1). */
            if (rang(bell) || (rc = room(q, len)) != PYQ_EAGAIN) {
                pyq_shm_sleep_cancel(q, PYQ_SIDE_WRITER);
                if (rc != PYQ_EAGAIN)
                    return rc;
                continue;
            }
            if (pyq_shm_sleep(q, PYQ_SIDE_WRITER, ev, deadline) == PYQ_EPEER)
                return PYQ_EPEER;
            continue;
        }
        bell_sleep(bell, sleep_ns, deadline);
        sleep_ns = grown(sleep_ns);
    }
}

int pyq_queue_ring(pyq_queue_t *q, int side, uint32_t *bell)
{
    if (side != PYQ_SIDE_WRITER && side != PYQ_SIDE_READER)
        return PYQ_EINVAL;
    pyq_store_relaxed(bell_word(bell), 1);
    /* BELL-R1: the bell before the word's bump; pairs with SHM-S2 in
     * pyq_shm_sleep_prepare (the sleeper's last look at the bell). */
    atomic_thread_fence(memory_order_seq_cst);
    if (q->xproc)
        pyq_shm_wake(q, side);
    syscall(SYS_futex, (uint32_t *)bell, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    return 0;
}
