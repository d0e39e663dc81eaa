/*
 * atomic.h - private ordering and cache-layout helpers (never installed).
 *
 * Ordering is always spelled out at the call site with C11 <stdatomic.h>; these
 * helpers only name the two idioms the queue uses everywhere (Aeron's
 * get-volatile / put-ordered) and the CPU relax hint of the retry loops.
 *
 * Ordering labels: each end of an edge carries one and names the other's
 * ("RF-P1: ...; pairs with RF-C1"), so grepping a label finds its partner and
 * the comments that cite that edge, nothing else.  The queue core's edges are
 * the only bare labels -- W<n> the writer's releases, R<n> the reader's, A<n>
 * their acquires, tabled in core/queue_pvt.h -- and no other label uses those
 * letters.  Every other label is PREFIX-L<n>: the prefix names the file or
 * shared piece that owns the edge (RF ring_floor.c, C2C c2c.c, MEET pyq_meet2,
 * THREAD threads.c, ...), the letter and number are that owner's own.
 */
#ifndef PYQ_ATOMIC_H
#define PYQ_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>

#define PYQ_CACHELINE 64
#define PYQ_ALIGNED_LINE _Alignas(PYQ_CACHELINE)

/* Load with acquire: everything the partner wrote before its release is visible. */
#define pyq_load_acquire(p) atomic_load_explicit((p), memory_order_acquire)
/* Store with release: everything written before is visible to an acquiring reader. */
#define pyq_store_release(p, v) atomic_store_explicit((p), (v), memory_order_release)
/* Relaxed access: counters read by stats() and own-side state. */
#define pyq_load_relaxed(p) atomic_load_explicit((p), memory_order_relaxed)
#define pyq_store_relaxed(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)

/* Single-writer counter bump: a relaxed load + store, no locked RMW, because only
 * the owning thread ever writes it; readers may see any recent value. */
#define pyq_counter_add(p, v) \
    pyq_store_relaxed((p), pyq_load_relaxed(p) + (v))
/* The same bump as a release store (the caller names the edge). */
#define pyq_counter_add_release(p, v) \
    pyq_store_release((p), pyq_load_relaxed(p) + (v))

static inline void pyq_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* Fetch the line at p in exclusive state, ready for stores.  Spelled out on
 * x86-64: without -mprfchw, __builtin_prefetch(p, 1, 3) emits a read prefetch
 * (prefetcht0), which brings a line the reader still shares in Shared state,
 * and the store then waits for an upgrade anyway.  CPUs without PREFETCHW run
 * it as a NOP (0F 0D). */
static inline void pyq_prefetch_write(const void *p)
{
#if defined(__x86_64__)
    __asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

/* Prefetch every line of [p, p + bytes) (bytes a multiple of the line), for
 * writing (exclusive state) or reading, four lines a loop step: the loop's own
 * instructions are paid once for four requests. */
static inline __attribute__((always_inline)) void pyq_prefetch_span(const void *p, uint32_t bytes,
                                                                    int for_write)
{
    const char *c = (const char *)p;
    uint32_t off = 0;

    for (; off + 4 * PYQ_CACHELINE <= bytes; off += 4 * PYQ_CACHELINE) {
        for (int k = 0; k < 4; k++) {
            if (for_write)
                pyq_prefetch_write(c + off + k * PYQ_CACHELINE);
            else
                __builtin_prefetch(c + off + k * PYQ_CACHELINE, 0, 3);
        }
    }
    for (; off < bytes; off += PYQ_CACHELINE) {
        if (for_write)
            pyq_prefetch_write(c + off);
        else
            __builtin_prefetch(c + off, 0, 3);
    }
}

/* Prefetch for writing the 4 KiB at p, one PREFETCHW a line and nothing else:
 * fully unrolled, the fewest instructions that touch every line (no loop, as
 * pyq_prefetch_span's has). */
static inline __attribute__((always_inline)) void pyq_prefetch_write_4k(const void *p)
{
    const char *c = (const char *)p;

#pragma GCC unroll 64
    for (int k = 0; k < 4096 / PYQ_CACHELINE; k++)
        pyq_prefetch_write(c + k * PYQ_CACHELINE);
}

#define PYQ_LIKELY(x) __builtin_expect(!!(x), 1)
#define PYQ_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif /* PYQ_ATOMIC_H */
