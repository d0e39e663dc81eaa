/*
 * threads.c - start, stop, wait for and join the consumer / producer pthreads.
 * The new thread pins and schedules itself and reports how that
 * went before pyq_*_start() returns, so a refused CPU or policy is an error of
 * the start call (naming the step), not a silent unpinned run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/thread_pvt.h"

static void set_started(struct pyq_thread *t, int rc, int step)
{
    pthread_mutex_lock(&t->lock);
    t->started = 1;
    t->start_rc = rc;
    t->start_step = step;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void *thread_main(void *arg)
{
    struct pyq_thread *t = arg;
    int cpu = t->kind == PYQ_KIND_CONSUMER ? t->cfg.c.cpu : t->cfg.p.cpu;
    int prio = t->kind == PYQ_KIND_CONSUMER ? t->cfg.c.fifo_priority : t->cfg.p.fifo_priority;
    uint32_t perf_mask = t->kind == PYQ_KIND_CONSUMER ? t->cfg.c.perf_mask : t->cfg.p.perf_mask;
    pyq_perf_t perf;
    int rc;

    /* The new thread inherited the starter's mask: a CPU outside it was not
     * given to this process, even when the cpuset would allow it. */
    if (cpu >= 0 && !pyq_cpu_allowed(cpu)) {
        set_started(t, PYQ_EINVAL, PYQ_STEP_PIN);
        return NULL;
    }
    if ((rc = pyq_cpu_pin_opt(cpu)) != 0) {
        set_started(t, rc, PYQ_STEP_PIN);
        return NULL;
    }
    if (prio > 0 && (rc = pyq_cpu_set_fifo_self(prio)) != 0) {
        set_started(t, rc, PYQ_STEP_SCHED);
        return NULL;
    }
    t->res.policy = pyq_cpu_policy_self(NULL);
    /* Calibrate before the loop so a WORK_SPIN_NS consumer never does it inside. */
    pyq_clock_ticks_per_ns();
    /* Counters open before start returns: opening them is slow (in a VM most),
     * and it must not delay the loop. */
    pyq_perf_open(&perf, perf_mask);
    set_started(t, 0, PYQ_STEP_NONE);

    t->res.cpu_start = t->last_cpu = pyq_cpu_current();
    t->res.start_ns = pyq_now_ns();
    if (t->kind == PYQ_KIND_CONSUMER)
        pyq_consumer_run(t);
    else
        pyq_producer_run(t);
    t->res.end_ns = pyq_now_ns();
    t->res.cpu_end = pyq_thread_sample_cpu(t);
    pyq_perf_read(&perf, t->res.perf_values);
    memcpy(t->res.perf_status, perf.status, sizeof t->res.perf_status);
    pyq_perf_close(&perf);
    if (t->res.first_error && t->res.failed_step == PYQ_STEP_NONE)
        t->res.failed_step = PYQ_STEP_RUN;

    pthread_mutex_lock(&t->lock);
    /* THREAD-D1: res is complete; pairs with THREAD-D2 (lock-free readers of done).  Readers
     * under the lock are ordered by the mutex itself. */
    atomic_store_explicit(&t->done, 1, memory_order_release);
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static int thread_start(pyq_queue_t *q, int kind, const void *cfg, size_t cfg_size,
                        pyq_thread_t **out, int *failed_step)
{
    struct pyq_thread *t;
    pthread_condattr_t ca;
    int rc;

    if (failed_step)
        *failed_step = PYQ_STEP_NONE;
    if (posix_memalign((void **)&t, PYQ_CACHELINE, sizeof *t) != 0) {
        if (failed_step)
            *failed_step = PYQ_STEP_CREATE;
        return PYQ_ENOMEM;
    }
    memset(t, 0, sizeof *t);
    t->q = q;
    t->kind = kind;
    memcpy(&t->cfg, cfg, cfg_size);
    t->res.error_seq = PYQ_SEQ_NONE;
    t->res.cpu_start = t->res.cpu_end = -1;
    atomic_init(&t->stop, 0);
    atomic_init(&t->messages, 0);
    atomic_init(&t->done, 0);
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);

    rc = pthread_create(&t->tid, NULL, thread_main, t);
    if (rc != 0) {
        if (failed_step)
            *failed_step = PYQ_STEP_CREATE;
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return rc == ENOMEM ? PYQ_ENOMEM : PYQ_EAGAIN;
    }
    pthread_mutex_lock(&t->lock);
    while (!t->started)
        pthread_cond_wait(&t->cond, &t->lock);
    rc = t->start_rc;
    pthread_mutex_unlock(&t->lock);
    if (rc != 0) {
        if (failed_step)
            *failed_step = t->start_step;
        pthread_join(t->tid, NULL);
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

static int check_sched(int cpu, int prio)
{
    return cpu >= -1 && prio >= 0 && prio <= 99 ? 0 : PYQ_EINVAL;
}

int pyq_consumer_start(pyq_queue_t *q, const pyq_consumer_config_t *cfg,
                       pyq_thread_t **out, int *failed_step)
{
    pyq_idle_t idle;

    if (!q || !cfg || !out || check_sched(cfg->cpu, cfg->fifo_priority) ||
        cfg->work < PYQ_WORK_NONE || cfg->work > PYQ_WORK_SPIN_NS ||
        (cfg->size_lo && cfg->size_hi && cfg->size_hi < cfg->size_lo) ||
        pyq_idle_init(&idle, &cfg->idle) != 0) {
        if (failed_step)
            *failed_step = PYQ_STEP_NONE;
        return PYQ_EINVAL;
    }
    return thread_start(q, PYQ_KIND_CONSUMER, cfg, sizeof *cfg, out, failed_step);
}

int pyq_producer_start(pyq_queue_t *q, const pyq_producer_config_t *cfg,
                       pyq_thread_t **out, int *failed_step)
{
    pyq_pacer_t pacer;
    uint32_t hi;

    if (!q || !cfg || !out || check_sched(cfg->cpu, cfg->fifo_priority) || cfg->count == 0 ||
        cfg->fault < PYQ_FAULT_NONE || cfg->fault > PYQ_FAULT_SKIP ||
        pyq_pacer_init(&pacer, cfg->rate, cfg->pacer_burst, 0) != 0) {
        if (failed_step)
            *failed_step = PYQ_STEP_NONE;
        return PYQ_EINVAL;
    }
    hi = cfg->size_hi > cfg->size_lo ? cfg->size_hi : cfg->size_lo;
    if (hi > pyq_queue_max_message(q)) {
        if (failed_step)
            *failed_step = PYQ_STEP_NONE;
        return PYQ_ETOOBIG;
    }
    return thread_start(q, PYQ_KIND_PRODUCER, cfg, sizeof *cfg, out, failed_step);
}

void pyq_thread_stop(pyq_thread_t *t)
{
    /* THREAD-S1: see thread_pvt.h; relaxed, the request carries no data. */
    atomic_store_explicit(&t->stop, 1, memory_order_relaxed);
}

int pyq_thread_done(const pyq_thread_t *t)
{
    /* THREAD-D2: pairs with THREAD-D1: a 1 here makes t->res readable. */
    return atomic_load_explicit(&t->done, memory_order_acquire);
}

uint64_t pyq_thread_messages(const pyq_thread_t *t)
{
    return atomic_load_explicit(&t->messages, memory_order_relaxed);
}

int pyq_thread_wait(pyq_thread_t *t, int64_t timeout_ns)
{
    struct timespec dl;
    int rc = 0;

    if (pyq_thread_done(t))
        return 0;
    if (timeout_ns == 0)
        return PYQ_EAGAIN;
    if (timeout_ns > 0) {
        uint64_t d = pyq_now_ns() + (uint64_t)timeout_ns;
        dl.tv_sec = (time_t)(d / 1000000000u);
        dl.tv_nsec = (long)(d % 1000000000u);
    }
    pthread_mutex_lock(&t->lock);
    while (!atomic_load_explicit(&t->done, memory_order_relaxed) && rc != ETIMEDOUT) {
        if (timeout_ns < 0)
            pthread_cond_wait(&t->cond, &t->lock);
        else
            rc = pthread_cond_timedwait(&t->cond, &t->lock, &dl);
    }
    /* Relaxed under the lock: the mutex orders res (written before THREAD-D1 under it). */
    rc = atomic_load_explicit(&t->done, memory_order_relaxed) ? 0 : PYQ_EAGAIN;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int pyq_thread_join(pyq_thread_t *t, int stop, pyq_thread_result_t *out)
{
    if (stop)
        pyq_thread_stop(t);
    if (!t->joined) {
        pthread_join(t->tid, NULL);
        t->joined = 1;
    }
    if (out)
        *out = t->res;
    return t->res.first_error;
}

void pyq_thread_destroy(pyq_thread_t *t)
{
    if (!t)
        return;
    if (!t->joined)
        pyq_thread_join(t, 1, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void pyq_consumer_config_init(pyq_consumer_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->cpu = -1;
    cfg->verify = 1;
    cfg->work = PYQ_WORK_NONE;
    cfg->poll_batch = 256;
    pyq_idle_config_init(&cfg->idle, PYQ_IDLE_BACKOFF);
}

void pyq_producer_config_init(pyq_producer_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->cpu = -1;
    cfg->count = 1;
    cfg->size_lo = cfg->size_hi = 32;
    cfg->pacer_burst = 1;
    cfg->flush_each_burst = 1;
}
