/*
 * pipeline_run.c - the pipeline's configuration, its two queues, and the run:
 * start the threads (pipeline.c), wait for the last receiver within the
 * timeout, stop and join everyone, tear down.  See pyq_pipeline.h.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/atomic.h"
#include "lab/pipeline_pvt.h"
#include "runtime/runtime_pvt.h"

void pyq_pipeline_config_init(pyq_pipeline_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    (void)pyq_adapter_get("pyqueue", NULL, &cfg->queue); /* built in: never fails */
    for (int i = 0; i < PYQ_PIPE_THREADS; i++)
        cfg->cpu[i] = -1;
    cfg->idle_strategy = PYQ_IDLE_BACKOFF;
    cfg->idle_spins = PYQ_IDLE_DEFAULT_SPINS;
    cfg->idle_yield_every = PYQ_IDLE_DEFAULT_YIELD_EVERY;
    cfg->idle_sleep_min_ns = PYQ_IDLE_DEFAULT_SLEEP_MIN_NS;
    cfg->idle_sleep_cap_ns = PYQ_IDLE_DEFAULT_SLEEP_CAP_NS;
    cfg->rate = 10000;
    cfg->count = 10000;
    cfg->msg_size = PYQ_PIPE_MIN_MSG;
    cfg->slots = 65536;
    cfg->queue_spill_blocks = 1024;
    cfg->producer_slack_ns = 1;
    cfg->pacer_spin_ns = 20000;
    cfg->start_delay_ns = 2000000;
    cfg->timeout_ns = 60000000000ull;
}

static int check_config(const pyq_pipeline_config_t *cfg)
{
    if (!cfg->queue)
        return PYQ_EINVAL;
    if (!(cfg->rate > 0) || cfg->rate > 1e9 || cfg->count == 0 || !cfg->latency_ns)
        return PYQ_EINVAL;
    if (cfg->msg_size < PYQ_PIPE_MIN_MSG || cfg->msg_size > PYQ_PIPE_MAX_MSG || cfg->slots == 0)
        return PYQ_EINVAL;
    if (cfg->fifo_priority < 0 || cfg->fifo_priority > 99 || cfg->timeout_ns == 0 ||
        cfg->producer_fifo_priority < 0 || cfg->producer_fifo_priority > 99)
        return PYQ_EINVAL;
    if (!(cfg->rest_share >= 0 && cfg->rest_share < 1) || cfg->receiver_slack_ns < 0 ||
        (cfg->rest_share > 0 && (cfg->rest_ns == 0 || cfg->rest_ns > 1000000000u)))
        return PYQ_EINVAL;
    /* One thread cannot sleep on hop 0 while it owes hop 1 a poll. */
    if (cfg->combine != 0 && (cfg->combine != 1 || cfg->queue->wait_readable))
        return PYQ_EINVAL;
    return 0;
}

/* Both hops: cfg.slots messages for a slot queue; pyqueue takes its own
 * configuration (publish each: every message visible at once). */
static int make_queues(struct pipe *p)
{
    pyq_adapter_params_t ap;
    int rc;

    pyq_adapter_params_init(&ap);
    ap.msg_size = p->cfg.msg_size;
    ap.capacity_bytes = (uint64_t)p->cfg.slots * p->cfg.msg_size;
    ap.queue.publish = PYQ_PUBLISH_EACH;
    ap.queue.spill_blocks = p->cfg.queue_spill_blocks;
    for (int hop = 0; hop < 2; hop++)
        if ((rc = p->cfg.queue->create(&ap, &p->hop[hop])) != 0)
            return rc;
    return 0;
}

int pyq_pipeline_run(const pyq_pipeline_config_t *cfg, pyq_pipeline_result_t *res)
{
    struct pipe *p;
    pthread_t tid[PYQ_PIPE_THREADS];
    struct timespec until;
    int made = 0, last, rc, f;

    memset(res, 0, sizeof *res);
    res->failed_thread = -1;
    res->error_seq = PYQ_SEQ_NONE;
    if ((rc = check_config(cfg)) != 0)
        return res->error = rc;
    (void)pyq_clock_ticks_per_ns(); /* calibrate outside the run */
    p = aligned_alloc(PYQ_CACHELINE, (sizeof *p + PYQ_CACHELINE - 1) & ~(size_t)(PYQ_CACHELINE - 1));
    if (!p)
        return res->error = PYQ_ENOMEM;
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    p->res = res;
    atomic_init(&p->failed, -1);
    if ((rc = make_queues(p)) != 0)
        goto out;
    for (int i = 0; i < PYQ_PIPE_THREADS; i++) {
        p->t[i].p = p;
        p->t[i].index = i;
    }
    last = cfg->combine ? PYQ_PIPE_STAGE : PYQ_PIPE_CONSUMER;
    if (cfg->combine) /* MEET-S1: for the consumer thread that is not started */
        pyq_start_arrive(&p->start, 0);
    for (int k = last; k >= 0; k--) {
        /* consumer first, producer last: receivers are polling before data flows */
        if ((rc = -pthread_create(&tid[k], NULL, pyq_pipe_thread_main, &p->t[k])) != 0) {
            res->failed_step = PYQ_STEP_CREATE;
            atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
            break;
        }
        made++;
    }
    /* Wait for the last receiver within the timeout, then stop everyone. */
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(cfg->timeout_ns / 1000000000u);
    until.tv_nsec += (long)(cfg->timeout_ns % 1000000000u);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (made == last + 1 && pthread_timedjoin_np(tid[last], NULL, &until) != 0) {
        atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
        pthread_join(tid[last], NULL);
        if (!rc && atomic_load_explicit(&p->failed, memory_order_acquire) < 0)
            rc = PYQ_EAGAIN;
    }
    /* The last receiver is done (or stopped): nothing else can make progress. */
    atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
    for (int i = 0; i < made; i++) {
        int k = last - i;
        if (k != last || made < last + 1)
            pthread_join(tid[k], NULL);
    }
    /* PIPE-F1: acquire pairs with the failing thread's CAS (its result fields). */
    f = atomic_load_explicit(&p->failed, memory_order_acquire);
    if (f >= 0) {
        res->failed_thread = f;
        if (!rc)
            rc = p->t[f].err;
    }
    res->delivered = p->t[PYQ_PIPE_CONSUMER].expect;
    if (!rc && res->delivered != cfg->count)
        rc = PYQ_EAGAIN;
out:
    for (int hop = 0; hop < 2; hop++)
        if (p->hop[hop])
            cfg->queue->destroy(p->hop[hop]);
    free(p);
    return res->error = rc;
}
