/* pin.h - private: pin the calling thread to one CPU (-1 = leave it alone). */
#ifndef PYQ_PIN_H
#define PYQ_PIN_H
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "pyqueue.h"

static inline int pyq_pin_self(int cpu)
{
    cpu_set_t set;
    int rc;

    if (cpu < 0)
        return 0;
    if (cpu >= CPU_SETSIZE)
        return PYQ_EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    return rc ? -rc : 0;
}

static inline uint64_t pyq_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif
