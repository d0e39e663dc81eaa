/*
 * bench_pvt.h - private helpers shared by the benchmark loops (bench.c,
 * bench_adapter.c): the per-sample timer of the latency loops, and the
 * runtime's start barrier (runtime/start_pvt.h) the ping-pong floor's two
 * threads meet at.  The throughput and round-trip runs are the twins'
 * (adapters/twin_pvt.h).  Never installed.
 */
#ifndef PYQ_BENCH_PVT_H
#define PYQ_BENCH_PVT_H

#include "common/atomic.h"
#include "runtime/pyq_runtime.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"
#include "adapters/twin_pvt.h"
#include "bench/pyq_bench.h"

#define PYQ_BENCH_WARMUP_TRIPS 1000

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

/* A twin run's result as the bench's rows report it; returns its error. */
static inline int pyq_bench_result_of(pyq_bench_result_t *res, const pyq_twin_result_t *tr)
{
    res->messages = tr->messages;
    res->elapsed_ns = tr->elapsed_ns;
    res->end_ns = tr->start_ns + tr->elapsed_ns;
    res->writer_ns = tr->writer_ns;
    res->full_retries = tr->full_retries;
    res->full_runs = tr->full_runs;
    res->polls = tr->polls;
    res->empty_polls = tr->empty_polls;
    res->empty_runs = tr->empty_runs;
    res->episodes = tr->episodes;
    return res->error = tr->error;
}

#endif /* PYQ_BENCH_PVT_H */
