/*
 * runtime_pvt.h - private inline helpers of the runtime (never installed):
 * the cycle counter read for hot loops and the calibration it needs, and
 * optional pinning.  The start barrier of the multi-thread loops is start_pvt.h.
 */
#ifndef PYQ_RUNTIME_PVT_H
#define PYQ_RUNTIME_PVT_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "common/atomic.h"
#include "common/now_pvt.h"
#include "common/private.h"
#include "runtime/pyq_runtime.h"

/* Pin the calling thread to cpu, or leave it where it is when cpu < 0 (the
 * lab's "not pinned").  0 or a negative PYQ_E* code, as pyq_cpu_pin_self(). */
static inline int pyq_cpu_pin_opt(int cpu)
{
    return cpu < 0 ? 0 : pyq_cpu_pin_self(cpu);
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PYQ_HAVE_CYCLES 1
#define PYQ_CYCLES_NAME "rdtsc"
static inline uint64_t pyq_cycles_now(void) { return __rdtsc(); }
/* lfence: the read waits for earlier instructions, as in Intel's timing guide. */
static inline uint64_t pyq_cycles_fenced(void) { _mm_lfence(); return __rdtsc(); }
#elif defined(__aarch64__)
#define PYQ_HAVE_CYCLES 1
#define PYQ_CYCLES_NAME "cntvct_el0"
static inline uint64_t pyq_cycles_now(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
static inline uint64_t pyq_cycles_fenced(void)
{
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
}
#else
#define PYQ_HAVE_CYCLES 0
#define PYQ_CYCLES_NAME "none"
static inline uint64_t pyq_cycles_now(void) { return 0; }
static inline uint64_t pyq_cycles_fenced(void) { return 0; }
#endif

/* The burst study's per-message consumer work: 64 dependent multiply-adds.
 * The empty asm makes x opaque each round, so the compiler cannot fold the loop
 * into a formula.  Shared by the runtime consumer and the burst-tail study. */
static inline uint64_t pyq_work_loop64(uint64_t x)
{
    for (int i = 0; i < 64; i++) {
        x = x * 6364136223846793005ull + (uint64_t)i;
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}

/* Ticks per ns of the cycle counter, calibrating on first use; 0 without one. */
PYQ_PRIVATE double pyq_clock_ticks_per_ns(void);

/* Spin (no relax: the cost must be exact) for ns, on the cycle counter when
 * there is one, else on CLOCK_MONOTONIC.  ticks = ns * pyq_clock_ticks_per_ns(),
 * precomputed by the caller (0 without a counter). */
static inline void pyq_spin_ticks(uint64_t ticks, uint64_t ns)
{
    if (PYQ_HAVE_CYCLES && ticks) {
        uint64_t t0 = pyq_cycles_now();
        while (pyq_cycles_now() - t0 < ticks)
            ;
    } else if (ns) {
        uint64_t t0 = pyq_now_ns();
        while (pyq_now_ns() - t0 < ns)
            ;
    }
}

/* pyq_pacer_wait() that also returns early once *stop is set (stop may be NULL). */
PYQ_PRIVATE uint64_t pyq_pacer_wait_until(const pyq_pacer_t *p, uint64_t when_ns, const _Atomic int *stop);

#endif /* PYQ_RUNTIME_PVT_H */
