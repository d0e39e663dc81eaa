/*
 * twin_base_pvt.h - what every loop of twin_pvt.h is made of: the rows'
 * message, the queue's operations as function-pointer types, the clocks and
 * the pace, pinning, the two threads' start barrier and error word, the
 * full-queue wait, and the warm-up every run's queue gets.  Never installed.
 *
 * Ordering: the harness's own shared words (start barrier, error flag) use
 * the compiler's __atomic builtins, which C11 <stdatomic.h> and C++ <atomic>
 * both lower to: the one spelling a header shared by C and C++ peers can use.
 */
#ifndef PYQ_TWIN_BASE_PVT_H
#define PYQ_TWIN_BASE_PVT_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "adapters/pyq_twin.h"

#define PYQ_TWIN_INLINE static inline __attribute__((always_inline))
/* The loops' rare steps (a window's stamp, an episode's release or hold): out of
 * line, and called under __builtin_expect(..., 0) -- but not `cold`: GCC moves a
 * block that may reach a cold call to the function's .cold part with whatever
 * shares it, the loop's own latch included (BENCHMARKS, "The cold latch"). */
#define PYQ_TWIN_RARE static __attribute__((noinline, unused))
/* flatten: the queue's operations reach a loop as constant pointers, so they
 * become direct calls only after the early inliner ran; flatten inlines them
 * (and poll's callback) anyway. */
#define PYQ_TWIN_FLAT __attribute__((flatten))
#define PYQ_TWIN_LINE __attribute__((aligned(64)))
#define PYQ_TWIN_EXPORT __attribute__((visibility("default")))
/* The full-queue policy of every loop: sched_yield() every this many failures. */
#define PYQ_TWIN_YIELD_EVERY 1024
/* Messages a per-message row's streaming writer hands write_each at a time, and
 * its reader asks read_each for. */
#define PYQ_TWIN_EACH_MAX 32

/* The message of every row: 32 bytes by value, the sequence number first, the
 * rest 0x5A. */
typedef struct pyq_twin_msg {
    uint64_t seq;
    uint8_t rest[PYQ_ADAPTER_MSG_SIZE - 8];
} pyq_twin_msg_t;

/* A one-message writer's message: up to PYQ_TWIN_MSG_MAX bytes, the rows'
 * message first (bench.c's pyqueue_direct rows send 8 to 256 bytes). */
#define PYQ_TWIN_MSG_MAX 256
typedef union pyq_twin_msg_any {
    pyq_twin_msg_t m;
    uint8_t b[PYQ_TWIN_MSG_MAX];
} pyq_twin_msg_any_t;

/* The reader's expected sequence number: a local of the reader loop. */
struct pyq_twin_seq {
    uint64_t expected;
};

/* The adapter operations a loop calls (pyq_adapter.h has their contracts). */
typedef int (*pyq_twin_write_fn)(void *h, const void *msg, uint32_t len);
typedef int64_t (*pyq_twin_burst_fn)(void *h, const void *msgs, uint32_t n, uint32_t len);
typedef int64_t (*pyq_twin_poll_fn)(void *h, uint64_t max, pyq_message_fn fn, void *ctx);
typedef void (*pyq_twin_flush_fn)(void *h);
typedef int64_t (*pyq_twin_read_fn)(void *h, void *out, uint32_t max, uint32_t len);
typedef int64_t (*pyq_twin_spin_fn)(void *h, uint64_t seq, const int *stop);

/* Whether an instantiation has a burst call (a function, not the macro argument:
 * comparing a function's name with NULL draws -Waddress). */
PYQ_TWIN_INLINE int pyq_twin_has(pyq_twin_burst_fn f)
{
    return f != NULL;
}

PYQ_TWIN_INLINE void pyq_twin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

PYQ_TWIN_INLINE uint64_t pyq_twin_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The round-trip timer and the pace's clock: the cycle counter where there is
 * one (what runtime/runtime_pvt.h's pyq_cycles_now reads), else CLOCK_MONOTONIC. */
#if defined(__x86_64__) || defined(__i386__)
#define PYQ_TWIN_TICKS 1
PYQ_TWIN_INLINE uint64_t pyq_twin_stamp(void) { return __rdtsc(); }
#elif defined(__aarch64__)
#define PYQ_TWIN_TICKS 1
PYQ_TWIN_INLINE uint64_t pyq_twin_stamp(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#else
#define PYQ_TWIN_TICKS 0
PYQ_TWIN_INLINE uint64_t pyq_twin_stamp(void) { return pyq_twin_now_ns(); }
#endif

/* The chasing regime's pace: busy-wait (no relax: the cost must be exact)
 * until `ticks` after the last write was due, on a schedule, not `ticks`
 * after this one returned.  So the write and the clock reads fall inside the
 * gap instead of adding to it, the same for a writer of one message a call
 * and for one of k (which paces once per burst, ticks k * gap): every writer
 * that keeps up writes one message per gap, and one that does not runs as
 * fast as it can.  A writer late by more than a gap (a stall, a full queue)
 * starts the schedule again from now, so it never owes a burst of writes at
 * once that would put its reader out of the chasing regime.  *due starts at
 * pyq_twin_stamp() before the first write. */
PYQ_TWIN_INLINE void pyq_twin_pace(uint64_t *due, uint64_t ticks)
{
    uint64_t d = *due + ticks, now;

    while ((now = pyq_twin_stamp()) < d)
        ;
    *due = now - d > ticks ? now : d;
}

/* poll's callback: check the sequence number.  Its address is a constant in
 * every loop, so a twin inlines it into the queue's poll. */
static inline int pyq_twin_next(void *ctx, const void *msg, uint32_t len)
{
    struct pyq_twin_seq *s = (struct pyq_twin_seq *)ctx;
    uint64_t seq;

    (void)len;
    memcpy(&seq, msg, sizeof seq);
    if (seq != s->expected)
        return PYQ_EBADMSG;
    s->expected++;
    return 0;
}

/* Pin the calling thread to cpu (< 0: leave it unpinned), as pyq_cpu_pin_opt.
 * 0, PYQ_EINVAL (cpu past CPU_SETSIZE) or the kernel's -errno. */
static inline int pyq_twin_pin(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        return 0;
    if (cpu >= CPU_SETSIZE)
        return PYQ_EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return -pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

PYQ_TWIN_INLINE void pyq_twin_fail(int *err, int rc)
{
    int zero = 0;

    /* Keep the first error only; relaxed: it is a flag, nothing is published. */
    __atomic_compare_exchange_n(err, &zero, rc, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

PYQ_TWIN_INLINE int pyq_twin_failed(const int *err)
{
    return __atomic_load_n(err, __ATOMIC_RELAXED);
}

/* Both threads pinned (or failed, flagged in the error word), then both leave. */
static inline void pyq_twin_meet(int *ready)
{
    /* Arrive: this side's setup and error flag before the count; pairs with
     * the other side's acquire load below. */
    __atomic_fetch_add(ready, 1, __ATOMIC_ACQ_REL);
    /* Pairs with the other side's arrival: its setup and flag are visible. */
    while (__atomic_load_n(ready, __ATOMIC_ACQUIRE) < 2)
        pyq_twin_relax();
}

/* A full queue: relax, sched_yield() every PYQ_TWIN_YIELD_EVERY failures.
 * Nonzero: give up (the other side failed). */
PYQ_TWIN_INLINE int pyq_twin_full_wait(uint64_t *fails, const int *err)
{
    if (++*fails % PYQ_TWIN_YIELD_EVERY == 0) {
        sched_yield();
        return pyq_twin_failed(err);
    }
    pyq_twin_relax();
    return 0;
}

/* The same for a call that waits for room inside its library: it already
 * waited, so no relax and no yield, and the other side's failure is seen at
 * the first retry rather than PYQ_TWIN_YIELD_EVERY waits later. */
PYQ_TWIN_INLINE int pyq_twin_full_waited(uint64_t *fails, const int *err)
{
    ++*fails;
    return pyq_twin_failed(err);
}

static inline int pyq_twin_discard(void *ctx, const void *msg, uint32_t len)
{
    (void)ctx;
    (void)msg;
    (void)len;
    return 0;
}

/* Fill the queue once and drain it, on the calling thread, through the adapter
 * table (untimed): every page of its storage is touched before a run starts.
 * 0 or the first error. */
static inline int pyq_twin_warm(const pyq_adapter_t *a, void *q)
{
    pyq_twin_msg_t m;
    int64_t k;
    int rc;

    memset(&m, 0x5A, sizeof m);
    for (m.seq = 0; (rc = a->try_write(q, &m, sizeof m)) == 0; m.seq++)
        ;
    if (rc != PYQ_EAGAIN)
        return rc;
    a->flush(q);
    while ((k = a->poll(q, UINT64_MAX, pyq_twin_discard, NULL)) > 0)
        ;
    return k < 0 ? (int)k : 0;
}

#endif /* PYQ_TWIN_BASE_PVT_H */
