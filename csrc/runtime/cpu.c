/*
 * cpu.c - pinning, SCHED_FIFO and CPU id sampling for the calling thread.
 * Nothing here is on a hot path except pyq_cpu_current(), which
 * glibc serves from rseq/vDSO without a system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "runtime/pyq_runtime.h"

int pyq_cpu_allowed(int cpu)
{
    cpu_set_t set;

    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return 0;
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0)
        return 0;
    return CPU_ISSET(cpu, &set) ? 1 : 0;
}

int pyq_cpu_pin_self(int cpu)
{
    cpu_set_t set;

    /* No check against the current mask: a pinned thread may move to another
     * CPU.  The kernel refuses (EINVAL) a CPU outside the cpuset or offline. */
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return PYQ_EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return -pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int pyq_cpu_unpin_self(const int *cpus, uint32_t n)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    for (uint32_t i = 0; i < n; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE)
            return PYQ_EINVAL;
        CPU_SET(cpus[i], &set);
    }
    return -pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int pyq_cpu_set_fifo_self(int priority)
{
    struct sched_param sp = {.sched_priority = priority};
    int policy = priority ? SCHED_FIFO : SCHED_OTHER;
    int rc;

    if (priority < 0 || (priority && (priority < sched_get_priority_min(SCHED_FIFO) ||
                                      priority > sched_get_priority_max(SCHED_FIFO))))
        return PYQ_EINVAL;
    rc = pthread_setschedparam(pthread_self(), policy, &sp);
    if (rc == EPERM || rc == EACCES)
        return PYQ_EPERM;
    return -rc;
}

int pyq_cpu_policy_self(int *priority)
{
    struct sched_param sp;
    int policy;

    if (pthread_getschedparam(pthread_self(), &policy, &sp) != 0)
        return PYQ_EINVAL;
    if (priority)
        *priority = sp.sched_priority;
    return policy;
}

int pyq_cpu_current(void)
{
    int cpu = sched_getcpu();

    return cpu < 0 ? PYQ_ENOTSUP : cpu;
}

double pyq_cpu_sample_cost_ns(uint32_t n)
{
    uint64_t t0, t1;
    int sink = 0;

    if (n == 0)
        n = 1;
    t0 = pyq_clock_now_ns();
    for (uint32_t i = 0; i < n; i++)
        sink += sched_getcpu();
    t1 = pyq_clock_now_ns();
    /* The sum keeps the calls alive; it is never meaningfully negative. */
    __asm__ __volatile__("" : : "r"(sink));
    return (double)(t1 - t0) / n;
}
