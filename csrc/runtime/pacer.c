/*
 * pacer.c - a token-bucket pacer in GCRA form: each message gets a
 * scheduled send time computed from when it was ready and from the bucket alone,
 * never from when earlier messages actually went out.  A producer that falls
 * behind (queue full) finds its schedule in the past and sends at once, and the
 * latency measured from the schedule keeps the time it lost (no coordinated
 * omission).  Owner thread only; no allocation; the wait sleeps only for gaps
 * longer than spin_ns.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <time.h>

#include "runtime/runtime_pvt.h"

int pyq_pacer_init(pyq_pacer_t *p, double rate, uint32_t burst, uint64_t spin_ns)
{
    if (!(rate >= 0) || rate > 1e12 || burst == 0)
        return PYQ_EINVAL;
    p->rate = rate;
    p->interval_ns = rate > 0 ? 1e9 / rate : 0;
    p->tolerance_ns = (double)(burst - 1) * p->interval_ns;
    p->anchor_ns = 0;
    p->steps = 0;
    p->burst = burst;
    p->pad = 0;
    p->spin_ns = spin_ns ? spin_ns : PYQ_PACER_DEFAULT_SPIN_NS;
    return 0;
}

/* Round half away from zero without libm. */
static inline int64_t round_ns(double x)
{
    return x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(-x + 0.5);
}

uint64_t pyq_pacer_next(pyq_pacer_t *p, uint64_t ready_ns)
{
    double ready, tat, at;

    if (p->rate <= 0)
        return ready_ns;
    /* GCRA: a message conforms from TAT - tolerance on (the bucket holds a
     * token); TAT moves one interval per message and restarts from the ready
     * time after an idle spell (the bucket refilled).  TAT is kept as
     * anchor + steps * interval, one rounding however long the stream: a TAT
     * summed in absolute double ns loses the interval's fraction once
     * CLOCK_MONOTONIC is large (1 ns steps after ~52 days of uptime), which
     * would shift the rate by up to 0.1-0.5 %. */
    ready = (double)(int64_t)(ready_ns - p->anchor_ns);
    tat = (double)p->steps * p->interval_ns;
    at = tat - p->tolerance_ns;
    if (at < ready)
        at = ready;
    if (p->steps == 0 || at > tat) {
        /* first message, or ready after TAT (then at == ready): restart the schedule */
        p->anchor_ns = ready_ns;
        p->steps = 1;
        return ready_ns;
    }
    p->steps++;
    return p->anchor_ns + (uint64_t)round_ns(at);
}

uint64_t pyq_pacer_wait_until(const pyq_pacer_t *p, uint64_t when_ns, const _Atomic int *stop)
{
    uint64_t now = pyq_now_ns();

    while (now + p->spin_ns < when_ns) {
        /* Sleep in slices of at most 10 ms so a stop request is seen. */
        uint64_t wake = when_ns - p->spin_ns;
        if (wake > now + 10000000u)
            wake = now + 10000000u;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000u), .tv_nsec = (long)(wake % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL); /* EINTR: loop again */
        /* Relaxed: a stop request carries no data (see threads.c, THREAD-S1). */
        if (stop && atomic_load_explicit(stop, memory_order_relaxed))
            return pyq_now_ns();
        now = pyq_now_ns();
    }
    while (now < when_ns)
        now = pyq_now_ns();
    return now;
}

uint64_t pyq_pacer_wait(const pyq_pacer_t *p, uint64_t when_ns)
{
    return pyq_pacer_wait_until(p, when_ns, NULL);
}
