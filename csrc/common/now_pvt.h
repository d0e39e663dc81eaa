/*
 * now_pvt.h - CLOCK_MONOTONIC in ns, the one clock read of the queue core's
 * timeouts (queue_pvt.h) and of the runtime's loops (runtime_pvt.h).  Private,
 * never installed.
 */
#ifndef PYQ_NOW_PVT_H
#define PYQ_NOW_PVT_H

#include <stdint.h>
#include <time.h>

static inline uint64_t pyq_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* PYQ_NOW_PVT_H */
