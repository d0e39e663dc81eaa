/*
 * bench_pvt.h - private helpers shared by the benchmark loops (bench.c,
 * bench_adapter.c): the start barrier, the two-thread runner and the per-sample
 * timer.  Never installed.
 */
#ifndef PYQ_BENCH_PVT_H
#define PYQ_BENCH_PVT_H

#include <pthread.h>

#include "common/atomic.h"
#include "common/join2_pvt.h"
#include "runtime/pyq_runtime.h"
#include "runtime/runtime_pvt.h"

#define PYQ_BENCH_WARMUP_TRIPS 1000
#define PYQ_BENCH_YIELD_EVERY 1024 /* full-queue policy of every driver (SPEC §3.6) */

/* Both threads pin, then meet here, so the clock starts with both running. */
struct pyq_bench_start {
    _Atomic int ready;
};

static inline void pyq_bench_meet(struct pyq_bench_start *s, int parties)
{
    /* acq_rel: each side's setup happens before the other leaves the barrier. */
    atomic_fetch_add_explicit(&s->ready, 1, memory_order_acq_rel);
    while (atomic_load_explicit(&s->ready, memory_order_acquire) < parties)
        pyq_cpu_relax();
}

/* Run w and rd in two new threads over arg and join both.  0 or -errno. */
static inline int pyq_bench_join_two(void *(*w)(void *), void *(*rd)(void *), void *arg)
{
    return pyq_join2(w, rd, arg);
}

/* The per-sample timer of every latency loop (floor, probe and queues alike):
 * the cycle counter when there is one (~10 ns a read here, against ~25 ns for
 * clock_gettime), CLOCK_MONOTONIC otherwise.  Stamps are converted to ns once,
 * after the loop. */
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
