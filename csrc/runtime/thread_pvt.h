/*
 * thread_pvt.h - the state shared by threads.c and the consumer / producer
 * loops (never installed).
 */
#ifndef PYQ_THREAD_PVT_H
#define PYQ_THREAD_PVT_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/atomic.h"
#include "runtime/runtime_pvt.h"

#define PYQ_KIND_CONSUMER 0
#define PYQ_KIND_PRODUCER 1

struct pyq_thread {
    pyq_queue_t *q;
    int kind;
    union {
        pyq_consumer_config_t c;
        pyq_producer_config_t p;
    } cfg;
    pthread_t tid;
    /* Startup handshake and end notice; lock/cond are off the hot path. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int started;    /* under lock: pinning/scheduling done (start_rc says how) */
    int start_rc;
    int start_step;
    int joined;
    int last_cpu;   /* the loop's latest sched_getcpu() sample */
    pyq_thread_result_t res; /* written by the thread; read by others after done */

    /* Written by other threads, polled by the loop: its own line. */
    PYQ_ALIGNED_LINE _Atomic int stop;
    /* Written by the loop only. */
    PYQ_ALIGNED_LINE _Atomic uint64_t messages;
    _Atomic int done;
};

/* The loops, run on the new thread after pinning; they fill t->res. */
PYQ_PRIVATE void pyq_consumer_run(struct pyq_thread *t);
PYQ_PRIVATE void pyq_producer_run(struct pyq_thread *t);

/* THREAD-S1: a stop request carries no data, so relaxed on both sides: the loop sees
 * it within one iteration (a relaxed load of a line nobody writes is cheap). */
static inline int pyq_thread_stopping(struct pyq_thread *t)
{
    return atomic_load_explicit(&t->stop, memory_order_relaxed);
}

/* Live progress for pyq_thread_messages(); relaxed: a counter, no data with it. */
static inline void pyq_thread_progress(struct pyq_thread *t, uint64_t n)
{
    atomic_store_explicit(&t->messages, n, memory_order_relaxed);
}

/* sched_getcpu() sample: count a change against the previous sample. */
static inline int pyq_thread_sample_cpu(struct pyq_thread *t)
{
    int cpu = pyq_cpu_current();

    if (cpu != t->last_cpu)
        t->res.cpu_changes++;
    t->last_cpu = cpu;
    return cpu;
}

#endif /* PYQ_THREAD_PVT_H */
