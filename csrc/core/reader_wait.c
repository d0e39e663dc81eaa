/*
 * reader_wait.c - the reader waiting for a message or for the end of the
 * stream (pyq_reader_wait, pyqueue.h): spin, then sleep in growing steps --
 * or, shared across processes, on the futex the writer's publish wakes
 * (shared_pvt.h), looking at the writer's process once a slice.  Apart from
 * reader.c because it is the one reader call that may sleep.
 */
#define _GNU_SOURCE
#include <time.h>

#include "core/queue_pvt.h"
#include "core/shared_pvt.h"

/* A non-blocking look found nothing: is the writer's process dead?  Looked
 * at (a lock test, a system call) at most every PEER_CHECK_NS and read the
 * clock only every PEER_CLOCK_LOOKS looks, so an empty-poll loop pays one
 * increment and a test per look.  1 when it was dead and is now recovered
 * (its committed messages published, the stream ended). */
#define PEER_CHECK_NS 10000000u
#define PEER_CLOCK_LOOKS 8u

static int writer_dead(struct pyq_queue *q)
{
    uint64_t now;

    if (q->p.peer_looks++ % PEER_CLOCK_LOOKS)
        return 0;
    now = pyq_now_ns();
    if (now - q->p.peer_check_ns < PEER_CHECK_NS)
        return 0;
    q->p.peer_check_ns = now;
    return pyq_shm_peer_dead(q, PYQ_SIDE_READER) && pyq_shm_recover_writer(q);
}

int pyq_reader_wait(pyq_queue_t *q, int64_t timeout_ns)
{
    uint64_t deadline = 0, sleep_ns = 1000;
    uint32_t looks = 0;

    if (timeout_ns > 0)
        deadline = pyq_now_ns() + (uint64_t)timeout_ns;
    for (;;) {
        /* Detached first (acquire: every message written before the detach is
         * visible), then look: nothing visible after a 1 means none will come. */
        int detached = pyq_queue_writer_detached(q);
        int64_t next = pyq_reader_next_len(q);

        if (next != PYQ_EAGAIN)
            return next == PYQ_ECORRUPT ? PYQ_ECORRUPT : 1;
        if (detached)
            return 0;
        if (timeout_ns == 0 && q->xproc && writer_dead(q))
            continue; /* its messages were published: look again */
        if (timeout_ns == 0 || (timeout_ns > 0 && pyq_now_ns() >= deadline))
            return PYQ_EAGAIN;
        if (looks < PYQ_READER_WAIT_SPINS) {
            looks++;
            pyq_cpu_relax();
            continue;
        }
        if (q->xproc) {
            uint32_t ev = pyq_shm_sleep_prepare(q, PYQ_SIDE_READER);
            /* A last look after SHM-S2: a publish from now on sees our flag. */
            if (pyq_queue_writer_detached(q) || pyq_reader_next_len(q) != PYQ_EAGAIN) {
                pyq_shm_sleep_cancel(q, PYQ_SIDE_READER);
                continue;
            }
            if (pyq_shm_sleep(q, PYQ_SIDE_READER, ev, deadline) == PYQ_EPEER)
                pyq_shm_recover_writer(q); /* its messages, then the end (W4) */
            continue;
        }
        struct timespec ts = { 0, (long)sleep_ns };
        nanosleep(&ts, NULL);
        if (sleep_ns < PYQ_READER_WAIT_SLEEP_CAP_NS)
            sleep_ns = sleep_ns * 2 < PYQ_READER_WAIT_SLEEP_CAP_NS ? sleep_ns * 2
                                                                   : PYQ_READER_WAIT_SLEEP_CAP_NS;
    }
}
