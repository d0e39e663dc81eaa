/*
 * clock.c - CLOCK_MONOTONIC, the cycle counter (rdtsc / CNTVCT_EL0) calibrated
 * against it, and the cost of a read of each, timed on the calling thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_pvt.h"

static pthread_mutex_t calib_lock = PTHREAD_MUTEX_INITIALIZER;
static pyq_clock_info_t calib; /* written under calib_lock */
/* The ticks-per-ns double as bits, so hot readers need no lock.  CLOCK-C1: stored with
 * release after calib is complete; pairs with the acquire load in
 * pyq_clock_ticks_per_ns(). 0 = not calibrated yet. */
static _Atomic uint64_t ticks_per_ns_bits;

uint64_t pyq_clock_now_ns(void)
{
    return pyq_now_ns();
}

uint64_t pyq_clock_cycles(void)
{
    return pyq_cycles_now();
}

static uint64_t counter_hz(void)
{
#if defined(__aarch64__)
    uint64_t f;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
    return f;
#else
    return 0; /* x86 has no architectural TSC frequency register */
#endif
}

/* Ticks per ns over about interval_ns: each end brackets the cycle read between
 * two clock reads and uses their midpoint, so the clock's own cost cancels. */
static double measure(uint64_t interval_ns)
{
    uint64_t a0 = pyq_now_ns(), c0 = pyq_cycles_fenced(), b0 = pyq_now_ns();
    struct timespec req = {.tv_sec = (time_t)(interval_ns / 1000000000u),
                           .tv_nsec = (long)(interval_ns % 1000000000u)};
    nanosleep(&req, NULL);
    uint64_t a1 = pyq_now_ns(), c1 = pyq_cycles_fenced(), b1 = pyq_now_ns();
    double ns = ((double)a1 + (double)b1) / 2 - ((double)a0 + (double)b0) / 2;

    return ns > 0 ? (double)(c1 - c0) / ns : 0;
}

int pyq_clock_calibrate(uint64_t interval_ns, int force, pyq_clock_info_t *out)
{
    int rc = 0;

    if (interval_ns == 0)
        interval_ns = 20000000u;
    pthread_mutex_lock(&calib_lock);
    if (!PYQ_HAVE_CYCLES) {
        calib.has_cycles = 0;
        calib.cycles_name = PYQ_CYCLES_NAME;
        rc = PYQ_ENOTSUP;
    } else if (!calib.calibrated || force) {
        double tpn = measure(interval_ns);
        uint64_t bits;

        calib.has_cycles = 1;
        calib.calibrated = tpn > 0;
        calib.ticks_per_ns = tpn;
        calib.counter_hz = (double)counter_hz();
        calib.calib_ns = interval_ns;
        calib.cycles_name = PYQ_CYCLES_NAME;
        memcpy(&bits, &tpn, sizeof bits);
        /* CLOCK-C1: publish the calibration; pairs with CLOCK-C2. */
        atomic_store_explicit(&ticks_per_ns_bits, bits, memory_order_release);
    }
    if (out)
        *out = calib;
    pthread_mutex_unlock(&calib_lock);
    return rc;
}

double pyq_clock_ticks_per_ns(void)
{
    /* CLOCK-C2: pairs with CLOCK-C1; a stale 0 only means we calibrate (again) below. */
    uint64_t bits = atomic_load_explicit(&ticks_per_ns_bits, memory_order_acquire);
    double tpn;

    if (!PYQ_HAVE_CYCLES)
        return 0;
    if (bits == 0) {
        pyq_clock_info_t info;
        pyq_clock_calibrate(0, 0, &info);
        return info.ticks_per_ns;
    }
    memcpy(&tpn, &bits, sizeof tpn);
    return tpn;
}

double pyq_clock_cycles_to_ns(uint64_t ticks)
{
    double tpn = pyq_clock_ticks_per_ns();

    return tpn > 0 ? (double)ticks / tpn : 0;
}

static uint64_t read_clock(int which)
{
    struct timespec ts;

    switch (which) {
    case PYQ_CLOCK_MONOTONIC:
        return pyq_now_ns();
    case PYQ_CLOCK_CYCLES:
        return pyq_cycles_now();
    case PYQ_CLOCK_CYCLES_FENCED:
        return pyq_cycles_fenced();
    default:
        clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
}

/* 0 when clock `which` exists here, else PYQ_EINVAL or PYQ_ENOTSUP. */
static int clock_usable(int which)
{
    if (which < 0 || which >= PYQ_CLOCK_COUNT)
        return PYQ_EINVAL;
    if (!PYQ_HAVE_CYCLES && (which == PYQ_CLOCK_CYCLES || which == PYQ_CLOCK_CYCLES_FENCED))
        return PYQ_ENOTSUP;
    return 0;
}

int pyq_clock_cost_ns(int which, uint32_t n, double *ns_per_read)
{
    uint64_t sink = 0, t0, t1;
    int rc;

    if (!ns_per_read)
        return PYQ_EINVAL;
    if ((rc = clock_usable(which)) != 0)
        return rc;
    if (n == 0)
        n = 1;
    /* The switch is hoisted out of the timed loops: each loop times one clock. */
    t0 = pyq_now_ns();
    switch (which) {
    case PYQ_CLOCK_MONOTONIC:
        for (uint32_t i = 0; i < n; i++)
            sink += pyq_now_ns();
        break;
    case PYQ_CLOCK_CYCLES:
        for (uint32_t i = 0; i < n; i++)
            sink += pyq_cycles_now();
        break;
    case PYQ_CLOCK_CYCLES_FENCED:
        for (uint32_t i = 0; i < n; i++)
            sink += pyq_cycles_fenced();
        break;
    default:
        for (uint32_t i = 0; i < n; i++)
            sink += read_clock(which);
    }
    t1 = pyq_now_ns();
    __asm__ __volatile__("" : : "r"(sink)); /* keep the reads */
    *ns_per_read = (double)(t1 - t0) / n;
    return 0;
}

/* Largest step s (4..PYQ_STEP_MAX) such that 90 % of the non-zero deltas lie
 * within one unit of a multiple of s; 1 if none does. */
#define PYQ_STEP_MAX 256u
static uint64_t common_step(const uint64_t *d, uint32_t n)
{
    uint32_t moved = 0;

    for (uint32_t i = 0; i < n; i++)
        moved += d[i] != 0;
    if (moved < n / 10 + 1)
        return 0;
    for (uint64_t s = PYQ_STEP_MAX; s >= 4; s--) {
        uint32_t near = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t r = d[i] % s;
            near += d[i] && (r <= 1 || r == s - 1);
        }
        if (near >= moved - moved / 10)
            return s;
    }
    return 1;
}

int pyq_clock_step(int which, uint32_t n, uint64_t *step)
{
    uint64_t *d, x = 0x9e3779b97f4a7c15ull;
    int rc;

    if (!step || n == 0 || n > (1u << 24))
        return PYQ_EINVAL;
    if ((rc = clock_usable(which)) != 0)
        return rc;
    if (!(d = malloc((size_t)n * sizeof(*d))))
        return PYQ_ENOMEM;
    /* Two reads a random short spin apart: the differences of a clock with
     * resolution 1 spread over every value, those of a clock that moves in
     * steps (a VM's scaled TSC, a coarse clocksource) cluster at multiples of
     * the step.  The smallest back-to-back difference would only show the
     * cost of a read.  A counter too coarse to move within such a spin (a
     * 25 MHz CNTVCT_EL0) gets spins 4x longer, up to 2^16 iterations. */
    for (uint32_t span = 128;; span <<= 2) {
        uint32_t moved = 0;

        for (uint32_t i = 0; i < n; i++) {
            uint64_t t0 = read_clock(which);
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            for (volatile uint32_t k = (uint32_t)(x & (span - 1)); k; k--)
                ;
            d[i] = read_clock(which) - t0;
            moved += d[i] != 0;
        }
        if (moved >= n / 2 || span >= (1u << 16))
            break;
    }
    *step = common_step(d, n);
    free(d);
    return 0;
}

const char *pyq_clock_name(int which)
{
    switch (which) {
    case PYQ_CLOCK_MONOTONIC: return "monotonic";
    case PYQ_CLOCK_CYCLES: return PYQ_CYCLES_NAME;
    case PYQ_CLOCK_CYCLES_FENCED: return PYQ_HAVE_CYCLES ? PYQ_CYCLES_NAME "+fence" : "none";
    case PYQ_CLOCK_MONOTONIC_RAW: return "monotonic_raw";
    default: return "unknown";
    }
}
