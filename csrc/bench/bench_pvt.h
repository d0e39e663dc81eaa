/*
 * bench_pvt.h - private helpers shared by the benchmark loops (bench.c,
 * bench_adapter.c): the two-thread runner and the per-sample timer; their
 * threads meet at the runtime's start barrier (runtime/start_pvt.h).  Never
 * installed.
 */
#ifndef PYQ_BENCH_PVT_H
#define PYQ_BENCH_PVT_H

#include <pthread.h>

#include "common/atomic.h"
#include "runtime/pyq_runtime.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"

#define PYQ_BENCH_WARMUP_TRIPS 1000

/* Run w and rd in two new threads over arg, both meeting at start, and join
 * both.  0 or -errno. */
static inline int pyq_bench_join_two(void *(*w)(void *), void *(*rd)(void *), void *arg,
                                     pyq_start_t *start)
{
    pthread_t wt, rt;
    int rc;

    if ((rc = pthread_create(&rt, NULL, rd, arg)) != 0)
        return -rc;
    if ((rc = pthread_create(&wt, NULL, w, arg)) != 0) {
        pyq_start_arrive(start, -rc); /* for the writer: the reader gives up */
        pthread_join(rt, NULL);
        return -rc;
    }
    pthread_join(wt, NULL);
    pthread_join(rt, NULL);
    return 0;
}

/* The per-sample timer of every latency loop (floor, probe and queues alike):
 * the cycle counter when there is one (a cheaper read than clock_gettime),
 * CLOCK_MONOTONIC otherwise.  Stamps are converted to ns once, after the loop. */
static inline int pyq_bench_timer_cycles(void)
{
    pyq_clock_info_t info;

    return pyq_clock_calibrate(0, 0, &info) == 0 && info.has_cycles;
}

static inline uint64_t pyq_bench_stamp(int cycles)
{
    return cycles ? pyq_cycles_now() : pyq_now_ns();
}

/* Turn n stamp differences (in place) into ns. */
static inline void pyq_bench_to_ns(int cycles, uint64_t *d, uint64_t n)
{
    if (!cycles)
        return;
    for (uint64_t i = 0; i < n; i++)
        d[i] = (uint64_t)(pyq_clock_cycles_to_ns(d[i]) + 0.5);
}

#endif /* PYQ_BENCH_PVT_H */
