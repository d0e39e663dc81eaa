/*
 * burst_twin_pvt.h - the burst-tail study's send loop and consumer poll
 * (DESIGN §6.1), written once, header-only, so that two builds of them exist:
 *
 *   - the driver's, in lab/burst_tail.c: every try_write and poll an indirect
 *     call through the class's pyq_adapter_t, every message a callback;
 *   - a peer's inline twin (DESIGN §8.3), in csrc/peers/<peer>_burst.*: the same
 *     loops compiled in the adapter's own translation unit with its static
 *     operations as constant pointers, so the library's calls and the
 *     consumer's check are inlined (flatten) and no indirect call is left per
 *     message.  The peer's shared object exports the result as
 *
 *         const pyq_burst_twin_t *pyq_peer_burst_twin(void);
 *
 * Both send the same messages (pyq_pattern content), retry a full queue the same
 * way (relax, sched_yield() every N failures) and check every message the same
 * way (the 64-iteration work, then length, content and FIFO).  So a class and its
 * twin differ only in the driver: the vtable, the callback, the loop's layout.
 *
 * At the adapters' level, as twin_pvt.h, so the peers include it without
 * reaching up into the lab; the lab finds the twin in the library its adapter
 * came from (lab/burst_twin_pvt.h, lab/burst_twin.c).
 * Never installed, not a cdef.  C and C++ (the C++ peers include it).
 */
#ifndef PYQ_BURST_TWIN_PVT_H
#define PYQ_BURST_TWIN_PVT_H

#include <sched.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "pyqueue.h"
#include "adapters/pyq_adapter.h"
#include "common/pyq_pattern.h"
#ifdef __cplusplus
}
#endif

/* Bumped when a struct below changes; lab/burst_twin.c refuses another. */
#define PYQ_BURST_TWIN_ABI 1
#define PYQ_BURST_TWIN_MAX_MSG 256
#define PYQ_BURST_INLINE static inline __attribute__((always_inline))

/* The writer's side of one send: what it sends and what it counts. */
typedef struct pyq_burst_send {
    uint64_t seq;           /* in/out: sequence number of the next message */
    uint64_t retries;       /* out: failed try_writes, added to */
    uint64_t yields;        /* out: sched_yield() calls, added to */
    uint64_t fault_seq;     /* tests only: corrupt message fault_seq - 1 (0: never) */
    const int *error;       /* the class's first-error flag: give up a wait when set */
    uint32_t msg_size;
    uint32_t yield_every;   /* sched_yield() every N failed try_writes; 0: never */
    uint32_t since;         /* failures since the last yield (kept across calls) */
    uint32_t reserved;
    uint8_t msg[PYQ_BURST_TWIN_MAX_MSG];
} pyq_burst_send_t;

/* The consumer's state: the next expected message and its work's sink. */
typedef struct pyq_burst_take {
    uint64_t next;          /* sequence number expected next */
    uint64_t sink;          /* keeps the 64-iteration work observable */
    uint64_t error_seq;     /* where a check failed */
    uint32_t msg_size;
    uint32_t loop;          /* 1: the study's 64-iteration work per message */
} pyq_burst_take_t;

typedef struct pyq_burst_twin {
    uint32_t abi;           /* PYQ_BURST_TWIN_ABI */
    uint32_t reserved;
    const char *name;       /* the adapter it twins */
    const char *calls;      /* the library calls inlined, for reports */
    /* Writer thread.  Send n messages (seq s->seq ...), each try_write retried on a
     * full queue.  @return 0, the adapter's code, or the error flag's value. */
    int (*send)(void *h, uint32_t n, pyq_burst_send_t *s);
    /* Reader thread.  One poll of up to max messages, each checked.
     * @return the count, or PYQ_EBADMSG (t->error_seq says where). */
    int64_t (*take)(void *h, uint64_t max, pyq_burst_take_t *t);
} pyq_burst_twin_t;

/* The adapter operations the loops call (pyq_adapter.h has their contracts). */
typedef int (*pyq_burst_write_fn)(void *h, const void *msg, uint32_t len);
typedef int64_t (*pyq_burst_poll_fn)(void *h, uint64_t max, pyq_message_fn fn, void *ctx);

/* The function a peer library exports beside pyq_peer_adapter(). */
typedef const pyq_burst_twin_t *(*pyq_peer_burst_twin_fn)(void);

#ifdef __cplusplus
/* runtime/runtime_pvt.h is C only: the same 64 dependent multiply-adds. */
static inline uint64_t pyq_work_loop64(uint64_t x)
{
    for (int i = 0; i < 64; i++) {
        x = x * 6364136223846793005ull + (uint64_t)i;
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}
#else
#include "runtime/runtime_pvt.h"
#endif

PYQ_BURST_INLINE void pyq_burst_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* The next message, s->seq, into s->msg (and the tests' fault). */
PYQ_BURST_INLINE void pyq_burst_make(pyq_burst_send_t *s)
{
    pyq_pattern_fill(s->msg, s->msg_size, s->seq);
    if (__builtin_expect(s->fault_seq && s->seq + 1 == s->fault_seq, 0))
        s->msg[s->msg_size - 1] ^= 0xFF; /* injected fault: the consumer must catch it */
}

/* The full-queue policy: spin with relax, sched_yield() every N failures.
 * Relaxed: the flag carries no data. */
PYQ_BURST_INLINE int pyq_burst_wait(pyq_burst_send_t *s)
{
    if (s->yield_every && ++s->since >= s->yield_every) {
        s->since = 0;
        s->yields++;
        sched_yield();
    } else {
        pyq_burst_relax();
    }
    return __atomic_load_n(s->error, __ATOMIC_RELAXED);
}

PYQ_BURST_INLINE int pyq_burst_send_loop(void *h, uint32_t n, pyq_burst_send_t *s,
                                         pyq_burst_write_fn try_write)
{
    int rc;

    for (uint32_t i = 0; i < n; i++) {
        pyq_burst_make(s);
        while ((rc = try_write(h, s->msg, s->msg_size)) != 0) {
            if (rc != PYQ_EAGAIN)
                return rc;
            s->retries++;
            if ((rc = pyq_burst_wait(s)) != 0)
                return rc;
        }
        s->seq++;
    }
    return 0;
}

/* poll's callback: the study's work, then length, content and FIFO. */
static inline int pyq_burst_check(void *ctx, const void *msg, uint32_t len)
{
    pyq_burst_take_t *t = (pyq_burst_take_t *)ctx;
    uint64_t seq = t->next;

    if (t->loop)
        t->sink += pyq_work_loop64(seq ^ len);
    if (len != t->msg_size || pyq_pattern_check(msg, len, seq) != 0) {
        t->error_seq = seq;
        return PYQ_EBADMSG;
    }
    t->next = seq + 1;
    return 0;
}

PYQ_BURST_INLINE int64_t pyq_burst_take_loop(void *h, uint64_t max, pyq_burst_take_t *t,
                                             pyq_burst_poll_fn poll)
{
    return poll(h, max, pyq_burst_check, t);
}

#ifdef __cplusplus
#define PYQ_BURST_EXTERN_C extern "C"
#else
#define PYQ_BURST_EXTERN_C
#endif

/* In a peer's file, at file scope outside any namespace: its twin, the adapter's
 * static try_write and poll inlined into the two loops, and the exported entry. */
#define PYQ_BURST_TWIN_DEFINE(prefix, name, try_write, poll, calls)                        \
    __attribute__((flatten)) static int prefix##_burst_send(void *h, uint32_t n,            \
                                                            pyq_burst_send_t *s)            \
    {                                                                                       \
        return pyq_burst_send_loop(h, n, s, try_write);                                     \
    }                                                                                       \
    __attribute__((flatten)) static int64_t prefix##_burst_take(void *h, uint64_t max,      \
                                                                pyq_burst_take_t *t)        \
    {                                                                                       \
        return pyq_burst_take_loop(h, max, t, poll);                                        \
    }                                                                                       \
    static const pyq_burst_twin_t prefix##_burst_twin = {                                   \
        PYQ_BURST_TWIN_ABI, 0, name, calls, prefix##_burst_send,                           \
        prefix##_burst_take};                                                               \
    PYQ_BURST_EXTERN_C __attribute__((visibility("default"))) const pyq_burst_twin_t *      \
    pyq_peer_burst_twin(void)                                                               \
    {                                                                                       \
        return &prefix##_burst_twin;                                                        \
    }

#endif /* PYQ_BURST_TWIN_PVT_H */
