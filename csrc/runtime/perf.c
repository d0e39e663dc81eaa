/*
 * perf.c - perf_event_open counters of the calling thread.
 *
 * Hardware counters count user space only (exclude_kernel/hv), so a window
 * measures the code in it rather than the read system calls around it.  Software
 * counters (context switches, migrations, page faults) are kernel events, so
 * they are asked for without exclude_kernel first and, when the paranoia level
 * refuses that, user-only.  Every counter is a separate event (no group): one
 * missing hardware event must not take the others down with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime_pvt.h"

_Static_assert(PYQ_PERF_NEVENTS == 8, "pyq_perf_t arrays are declared [8] in pyq_runtime.h");
_Static_assert(PYQ_PERF_ALL == (1 << PYQ_PERF_NEVENTS) - 1, "mask of all counters");
_Static_assert(PYQ_PERF_SOFTWARE == ((1 << PYQ_PERF_CONTEXT_SWITCHES) | (1 << PYQ_PERF_CPU_MIGRATIONS) |
                                     (1 << PYQ_PERF_PAGE_FAULTS)), "mask of software counters");

/* Test hook; relaxed: a plain setting, nothing is published with it. */
static _Atomic int simulated_errno;

static const struct {
    const char *name;
    uint32_t type;
    uint64_t config;
} events[PYQ_PERF_NEVENTS] = {
    [PYQ_PERF_CYCLES] = {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    [PYQ_PERF_INSTRUCTIONS] = {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    [PYQ_PERF_L1D_READ_MISSES] = {"L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
                                  PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                      (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)},
    [PYQ_PERF_STALLED_FRONTEND] = {"stalled-cycles-frontend", PERF_TYPE_HARDWARE,
                                   PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    [PYQ_PERF_STALLED_BACKEND] = {"stalled-cycles-backend", PERF_TYPE_HARDWARE,
                                  PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    [PYQ_PERF_CONTEXT_SWITCHES] = {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    [PYQ_PERF_CPU_MIGRATIONS] = {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    [PYQ_PERF_PAGE_FAULTS] = {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
};

static int open_event(int i, int exclude_kernel)
{
    struct perf_event_attr attr;
    int sim = atomic_load_explicit(&simulated_errno, memory_order_relaxed);
    long fd;

    if (sim > 0)
        return -sim;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = events[i].type;
    attr.config = events[i].config;
    attr.exclude_kernel = exclude_kernel;
    attr.exclude_hv = 1;
    attr.read_format = 0;
    /* pid 0, cpu -1: this thread, on whatever CPU it runs. */
    fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

int pyq_perf_open(pyq_perf_t *p, uint32_t mask)
{
    int n = 0;

    memset(p, 0, sizeof *p);
    p->mask = mask & PYQ_PERF_ALL;
    for (int i = 0; i < PYQ_PERF_NEVENTS; i++) {
        int fd;

        p->fd[i] = -1;
        if (!(p->mask & (1u << i))) {
            p->status[i] = PYQ_EINVAL;
            continue;
        }
        if (events[i].type == PERF_TYPE_SOFTWARE) {
            fd = open_event(i, 0);
            if (fd == -EACCES || fd == -EPERM)
                fd = open_event(i, 1);
        } else {
            fd = open_event(i, 1);
        }
        if (fd < 0) {
            p->status[i] = fd;
            continue;
        }
        p->fd[i] = fd;
        p->status[i] = 0;
        p->opened |= 1u << i;
        n++;
    }
    return n;
}

int pyq_perf_read(const pyq_perf_t *p, uint64_t *values)
{
    int n = 0;

    for (int i = 0; i < PYQ_PERF_NEVENTS; i++) {
        values[i] = 0;
        if (!(p->opened & (1u << i)))
            continue;
        ssize_t r = read(p->fd[i], &values[i], sizeof values[i]);
        if (r != (ssize_t)sizeof values[i])
            return r < 0 ? -errno : PYQ_EINVAL;
        n++;
    }
    return n;
}

void pyq_perf_close(pyq_perf_t *p)
{
    for (int i = 0; i < PYQ_PERF_NEVENTS; i++) {
        if (p->opened & (1u << i))
            close(p->fd[i]);
        p->fd[i] = -1;
    }
    p->opened = 0;
}

double pyq_perf_read_cost_ns(const pyq_perf_t *p, uint32_t n)
{
    uint64_t values[PYQ_PERF_NEVENTS], t0, t1;

    if (!p->opened)
        return -1;
    if (n == 0)
        n = 1;
    t0 = pyq_now_ns();
    for (uint32_t i = 0; i < n; i++)
        pyq_perf_read(p, values);
    t1 = pyq_now_ns();
    return (double)(t1 - t0) / n;
}

const char *pyq_perf_name(int i)
{
    return i >= 0 && i < PYQ_PERF_NEVENTS ? events[i].name : "unknown";
}

void pyq_perf_simulate_failure(int errno_value)
{
    atomic_store_explicit(&simulated_errno, errno_value > 0 ? errno_value : 0, memory_order_relaxed);
}
