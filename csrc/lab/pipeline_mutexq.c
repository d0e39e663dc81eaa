/*
 * pipeline_mutexq.c - a bounded queue of fixed-size slots under one mutex,
 * with "not empty" / "not full" condition variables (see pyq_pipeline.h).
 *
 * This is the baseline of seed 003 §2-3: every push and pop takes the lock; a
 * side that finds nothing to do sleeps in the kernel (futex) until the other
 * signals.  The mutex provides all ordering, so nothing here is atomic except
 * the wait counter read by other threads.  Waits use CLOCK_MONOTONIC deadlines.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/pyq_pipeline.h"

struct pyq_mutexq {
    pthread_mutex_t lock;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
    uint64_t head;   /* next slot to pop (under lock) */
    uint64_t tail;   /* next slot to push (under lock) */
    uint32_t slots;
    uint32_t msg_size;
    int closed;      /* under lock */
    _Atomic uint64_t waits; /* relaxed: a statistic read after the run */
    uint8_t *buf;
};

int pyq_mutexq_create(uint32_t slots, uint32_t msg_size, pyq_mutexq_t **out)
{
    pthread_condattr_t ca;
    pyq_mutexq_t *q;

    if (slots == 0 || msg_size == 0 || msg_size > 65536 || !out)
        return PYQ_EINVAL;
    q = calloc(1, sizeof *q);
    if (!q)
        return PYQ_ENOMEM;
    q->buf = malloc((size_t)slots * msg_size);
    if (!q->buf) {
        free(q);
        return PYQ_ENOMEM;
    }
    q->slots = slots;
    q->msg_size = msg_size;
    pthread_mutex_init(&q->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->not_empty, &ca);
    pthread_cond_init(&q->not_full, &ca);
    pthread_condattr_destroy(&ca);
    *out = q;
    return 0;
}

void pyq_mutexq_destroy(pyq_mutexq_t *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->lock);
    free(q->buf);
    free(q);
}

static struct timespec deadline(int64_t timeout_ns)
{
    struct timespec ts;
    uint64_t ns;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns = (uint64_t)ts.tv_nsec + (uint64_t)timeout_ns;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    return ts;
}

/* Sleep on cond (lock held) until ready() or the deadline: 0 or PYQ_EAGAIN. */
static int wait_on(pyq_mutexq_t *q, pthread_cond_t *cond, int64_t timeout_ns,
                   int (*ready)(const pyq_mutexq_t *))
{
    struct timespec until;

    if (timeout_ns == 0)
        return PYQ_EAGAIN;
    if (timeout_ns > 0)
        until = deadline(timeout_ns);
    atomic_fetch_add_explicit(&q->waits, 1, memory_order_relaxed);
    while (!ready(q)) {
        int rc = timeout_ns < 0 ? pthread_cond_wait(cond, &q->lock)
                                : pthread_cond_timedwait(cond, &q->lock, &until);
        if (rc && !ready(q))
            return PYQ_EAGAIN;
    }
    return 0;
}

static int can_push(const pyq_mutexq_t *q)
{
    return q->closed || q->tail - q->head < q->slots;
}

static int can_pop(const pyq_mutexq_t *q)
{
    return q->closed || q->tail != q->head;
}

int pyq_mutexq_push(pyq_mutexq_t *q, const void *msg, int64_t timeout_ns)
{
    int rc = 0;

    pthread_mutex_lock(&q->lock);
    if (!can_push(q))
        rc = wait_on(q, &q->not_full, timeout_ns, can_push);
    if (rc == 0 && q->closed)
        rc = PYQ_ECLOSED;
    if (rc == 0) {
        memcpy(q->buf + (q->tail % q->slots) * q->msg_size, msg, q->msg_size);
        q->tail++;
        /* Signal under the lock: the waiter cannot miss it (no lost wake-up). */
        pthread_cond_signal(&q->not_empty);
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

int pyq_mutexq_pop(pyq_mutexq_t *q, void *out, int64_t timeout_ns)
{
    int rc = 0;

    pthread_mutex_lock(&q->lock);
    if (!can_pop(q))
        rc = wait_on(q, &q->not_empty, timeout_ns, can_pop);
    if (rc == 0 && q->tail == q->head)
        rc = PYQ_ECLOSED; /* closed and drained */
    if (rc == 0) {
        memcpy(out, q->buf + (q->head % q->slots) * q->msg_size, q->msg_size);
        q->head++;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

void pyq_mutexq_close(pyq_mutexq_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->lock);
}

uint64_t pyq_mutexq_waits(const pyq_mutexq_t *q)
{
    return atomic_load_explicit(&q->waits, memory_order_relaxed);
}
