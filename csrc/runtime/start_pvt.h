/*
 * start_pvt.h - the start barrier of every C loop that runs on two or more
 * threads (the lab's loops, the benchmark drivers, the stress harnesses, the
 * adapter validator).  Each party sets itself up (pins itself, opens its
 * counters), then counts itself in with the result; no party starts before
 * all are in, and each learns whether any of them failed, so a failed setup
 * never leaves a partner spinning.  Private, never installed.
 *
 * A zeroed pyq_start_t is ready for use (the callers calloc or memset their
 * run state); pyq_start_reset() makes it ready again for another run.
 *
 * Ordering:
 *   MEET-S1 arrived fetch_add acq_rel (each party, after its setup and its result)
 *       -> MEET-S2 arrived acquire load (each waiter): once it reads the full count,
 *          every party's setup and result are visible to it
 */
#ifndef PYQ_START_PVT_H
#define PYQ_START_PVT_H

#include <sched.h>
#include <stdatomic.h>

#include "common/atomic.h"

#define PYQ_START_YIELD_EVERY 1024 /* polls between sched_yield()s in pyq_start_meet */

typedef struct pyq_start {
    _Atomic int arrived; /* MEET-S1 / MEET-S2: parties counted in */
    _Atomic int failed;  /* first nonzero setup result; relaxed, published by MEET-S1 */
} pyq_start_t;

/* Any party, once per run; never waits.  Count in with this party's setup
 * result: 0, or the PYQ_E* code of what failed.  The thread that starts the
 * parties also arrives, with the code, for one it could not start, so nobody
 * waits for it. */
static inline void pyq_start_arrive(pyq_start_t *s, int rc)
{
    int none = 0;

    /* Relaxed: MEET-S1 below publishes it. */
    if (rc)
        atomic_compare_exchange_strong_explicit(&s->failed, &none, rc, memory_order_relaxed,
                                                memory_order_relaxed);
    /* MEET-S1: this party's setup happens before any party leaves; pairs with MEET-S2. */
    atomic_fetch_add_explicit(&s->arrived, 1, memory_order_acq_rel);
}

/* Any thread.  Nonzero once all parties are in.  Wait-free. */
static inline int pyq_start_ready(pyq_start_t *s, int parties)
{
    /* MEET-S2: pairs with every party's MEET-S1. */
    return atomic_load_explicit(&s->arrived, memory_order_acquire) >= parties;
}

/* Any thread, after pyq_start_ready() returned nonzero.  0 when every party
 * set up, else the first failure a party reported. */
static inline int pyq_start_failed(pyq_start_t *s)
{
    /* Relaxed: ordered by MEET-S1 / MEET-S2. */
    return atomic_load_explicit(&s->failed, memory_order_relaxed);
}

/* Any party, once per run.  Arrive with rc, then wait for the other parties,
 * spinning with the relax hint and a sched_yield() every PYQ_START_YIELD_EVERY
 * polls (a partner may share this CPU).  A thread that may be SCHED_FIFO beside
 * a partner should instead poll pyq_start_ready() and sleep.
 * @return 0 (everyone is set up: start), or the first failure of any party
 *         (every party gets the same code: give up). */
static inline int pyq_start_meet(pyq_start_t *s, int parties, int rc)
{
    unsigned spins = 0;

    pyq_start_arrive(s, rc);
    while (!pyq_start_ready(s, parties)) {
        if (++spins % PYQ_START_YIELD_EVERY == 0)
            sched_yield();
        else
            pyq_cpu_relax();
    }
    return pyq_start_failed(s);
}

/* The thread that starts the parties, before it starts any of them for
 * another run (pthread_create orders these stores before the new thread). */
static inline void pyq_start_reset(pyq_start_t *s)
{
    atomic_store_explicit(&s->arrived, 0, memory_order_relaxed);
    atomic_store_explicit(&s->failed, 0, memory_order_relaxed);
}

#endif /* PYQ_START_PVT_H */
