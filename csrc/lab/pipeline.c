/*
 * pipeline.c - producer -> stage -> consumer at a set rate:
 * the threads' loops; pipeline_run.c configures, starts and stops them.
 * See pyq_pipeline.h.
 *
 * Each of the three threads pins itself (when asked), opens its software perf
 * counters and reads its rusage and thread CPU clock before its loop and after
 * it, so the result says what each thread cost, not only how fast messages
 * went.  The loops allocate nothing; their system calls are the ones under
 * study: nanosleep / sched_yield of the idle strategy, futex waits of the mutex
 * queue, the producer's timed sleep between sends, and the receivers' CPU-budget
 * rests (their CPU clock read once per idle period).  Both hops are one queue
 * kind, reached only through its adapter (cfg.queue).
 *
 * Ordering: messages travel through the queues (each queue's own edges, e.g.
 * pyqueue's W2/A2, or the mutex); the flags of struct pipe (pipeline_pvt.h)
 * carry no data and are relaxed, except the start barrier (MEET-S1/MEET-S2,
 * runtime/start_pvt.h) and the failure slot (PIPE-F1, a CAS).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include "common/atomic.h"
#include "lab/pipeline_pvt.h"
#include "runtime/runtime_pvt.h"

#define PIPE_SLICE_NS 10000000   /* wait_readable waits at most this long, then look at stop */
#define PIPE_YIELD_EVERY 1024    /* a sender on a full hop: sched_yield() per this many retries */
#define PIPE_POLL_BATCH 64
#define PIPE_CHECK UINT64_C(0x9e3779b97f4a7c15)
#define PIPE_REST_WINDOW_NS 10000000 /* rest_share: the CPU budget is kept per 10 ms window */
#define PIPE_REST_IDLE_NS 50000      /* ... and checked this often while no work comes */

/* Relaxed: a stop request carries no data (as THREAD-S1 of thread_pvt.h). */
static int stopping(struct pipe *p)
{
    return atomic_load_explicit(&p->stop, memory_order_relaxed);
}

static void fail(struct pipe_thread *t, int step, int rc, uint64_t seq)
{
    struct pipe *p = t->p;
    int none = -1;

    t->err = rc;
    /* PIPE-F1: the first failure names the thread, step and seq. */
    if (atomic_compare_exchange_strong_explicit(&p->failed, &none, t->index,
                                                memory_order_acq_rel, memory_order_relaxed)) {
        p->res->failed_step = step;
        p->res->error_seq = seq;
    }
    atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- message content --------------------------------------------------- */

static void msg_build(uint8_t *m, uint64_t seq, uint64_t sched, uint64_t sent)
{
    uint64_t check = (seq ^ sched) * PIPE_CHECK;

    memcpy(m, &seq, 8);
    memcpy(m + 8, &sched, 8);
    memcpy(m + 16, &sent, 8);
    memcpy(m + 24, &check, 8);
}

/* 0 when m is message `want`; its scheduled time in *sched. */
static int msg_check(const void *msg, uint32_t len, uint32_t size, uint64_t want, uint64_t *sched)
{
    const uint8_t *m = msg;
    uint64_t seq, check;

    if (len != size)
        return PYQ_EBADMSG;
    memcpy(&seq, m, 8);
    memcpy(sched, m + 8, 8);
    memcpy(&check, m + 24, 8);
    return seq == want && check == ((seq ^ *sched) * PIPE_CHECK) ? 0 : PYQ_EBADMSG;
}

/* ---- sending into a hop, with the stop checks -------------------------- */

/* Write one message and make it visible at once, whatever the queue's publish
 * rule.  A full hop (the run is then far behind its schedule) is retried the
 * way every driver retries (relax, a sched_yield() every PIPE_YIELD_EVERY),
 * for every queue alike, the mutex queue included: the experiment compares
 * how receivers wait for work, so the adapter interface needs no wait for
 * room (the wait for work is its optional wait_readable).
 * @return 0, PYQ_EINTR (stopped), or the queue's error. */
static int hop_send(struct pipe_thread *t, int hop, const void *msg)
{
    struct pipe *p = t->p;
    const pyq_adapter_t *a = p->cfg.queue;
    uint64_t fails = 0;
    int rc;

    while ((rc = a->try_write(p->hop[hop], msg, p->cfg.msg_size)) == PYQ_EAGAIN) {
        if (++fails % PIPE_YIELD_EVERY != 0) {
            pyq_cpu_relax();
            continue;
        }
        if (stopping(p))
            return PYQ_EINTR;
        sched_yield();
    }
    if (rc == 0)
        a->flush(p->hop[hop]);
    return rc;
}

/* ---- the three loops ---------------------------------------------------- */

static void producer_loop(struct pipe_thread *t)
{
    struct pipe *p = t->p;
    const pyq_pipeline_config_t *cfg = &p->cfg;
    pyq_pacer_t pacer;
    uint64_t start;
    int rc;

    pyq_pacer_init(&pacer, cfg->rate, 1, cfg->pacer_spin_ns);
    /* MEET-S2.  Sleep, not pyq_start_meet()'s sched_yield(): a SCHED_FIFO producer
     * yields only to its own priority, so it would starve a receiver that shares
     * its CPU and has not counted itself in yet, until RT throttling stops it
     * (up to 0.95 s, and the rest of that RT period's budget gone). */
    while (!pyq_start_ready(&p->start, PYQ_PIPE_THREADS)) {
        struct timespec nap = {.tv_sec = 0, .tv_nsec = 50000};

        if (stopping(p))
            return;
        nanosleep(&nap, NULL);
    }
    start = pyq_now_ns() + cfg->start_delay_ns;
    p->res->start_ns = start;
    for (uint64_t i = 0; i < cfg->count; i++) {
        /* Open loop: every message is ready at `start`; the bucket alone spaces them. */
        uint64_t sched = pyq_pacer_next(&pacer, start);
        uint64_t sent = pyq_pacer_wait_until(&pacer, sched, &p->stop);

        if (stopping(p))
            return;
        msg_build(t->msg, i, sched, sent);
        if ((rc = hop_send(t, 0, t->msg)) != 0) {
            if (rc != PYQ_EINTR)
                fail(t, PYQ_STEP_RUN, rc, i);
            return;
        }
        if (cfg->lateness_ns)
            cfg->lateness_ns[i] = sent - sched;
        t->sent = i + 1;
    }
}

static int stage_msg(void *ctx, const void *msg, uint32_t len)
{
    struct pipe_thread *t = ctx;
    uint64_t sched;
    int rc;

    if (msg_check(msg, len, t->p->cfg.msg_size, t->expect, &sched) != 0) {
        fail(t, PYQ_STEP_RUN, PYQ_EBADMSG, t->expect);
        return PYQ_EBADMSG;
    }
    pyq_spin_ticks(t->work_ticks, t->p->cfg.stage_work_ns);
    if ((rc = hop_send(t, 1, msg)) != 0) {
        if (rc != PYQ_EINTR)
            fail(t, PYQ_STEP_RUN, rc, t->expect);
        return rc;
    }
    t->expect++;
    return 0;
}

static int consumer_msg(void *ctx, const void *msg, uint32_t len)
{
    struct pipe_thread *t = ctx;
    uint64_t sched, now = pyq_now_ns();

    if (msg_check(msg, len, t->p->cfg.msg_size, t->expect, &sched) != 0) {
        fail(t, PYQ_STEP_RUN, PYQ_EBADMSG, t->expect);
        return PYQ_EBADMSG;
    }
    t->p->cfg.latency_ns[t->expect] = now - sched;
    t->last_ns = now;
    t->expect++;
    return 0;
}

/* An empty poll of a receiver: the idle strategy, except that a thread over
 * its CPU budget rests (nanosleep rest_ns) first.  A SCHED_FIFO thread that
 * leaves ordinary threads less than (period - sched_rt_runtime_us) of its CPU is
 * stopped for that long at once (50 ms of every second by default).  The budget
 * is counted on the thread's own CPU clock, not on the time asked to sleep: in
 * a VM part of each short sleep is still charged to the sleeper.  The check runs at the first empty poll after work, so a paced
 * stream rests between its messages, and every PIPE_REST_IDLE_NS of a long
 * idle spell. */
static void receiver_idle(struct pipe_thread *t)
{
    const pyq_pipeline_config_t *cfg = &t->p->cfg;

    if (cfg->rest_share > 0) {
        uint64_t now = pyq_now_ns();

        if (t->idle.run == 0 || now - t->checked_ns >= PIPE_REST_IDLE_NS) {
            uint64_t cpu = thread_cpu_ns();

            t->checked_ns = now;
            if (now - t->mark_ns >= PIPE_REST_WINDOW_NS) {
                t->mark_ns = now;  /* a new budget window */
                t->mark_cpu = cpu;
            } else if ((double)(cpu - t->mark_cpu) >
                       (1 - cfg->rest_share) * (double)(now - t->mark_ns)) {
                struct timespec req = {.tv_sec = (time_t)(cfg->rest_ns / 1000000000u),
                                       .tv_nsec = (long)(cfg->rest_ns % 1000000000u)};

                nanosleep(&req, NULL);
                t->rests++;
                t->rest_total_ns += pyq_now_ns() - now;
                /* still idle: idle.run stays > 0 until work is found */
                t->idle.run++;
                return;
            }
        }
    }
    pyq_idle_wait(&t->idle);
}

/* A receiver's empty poll of handle h.  A queue that can block (wait_readable:
 * the mutex queue's condition variable) puts the thread to sleep until a writer
 * signals, so the kernel wakes it: the textbook consumer this experiment
 * compares with polling.  Any other queue is polled again after receiver_idle(). */
static void receiver_wait(struct pipe_thread *t, void *h)
{
    const pyq_adapter_t *a = t->p->cfg.queue;

    if (a->wait_readable) {
        a->wait_readable(h, PIPE_SLICE_NS); /* then the loop looks at stop */
        t->waits++;
    } else {
        receiver_idle(t);
    }
}

/* combine: the stage's thread also consumes hop 1 (state kept in the consumer's
 * pipe_thread), so two busy pollers never share one CPU.  Both hops still go
 * through the queue; hop 1 is written and read by the same thread. */
static void combined_loop(struct pipe_thread *t)
{
    struct pipe *p = t->p;
    const pyq_adapter_t *a = p->cfg.queue;
    struct pipe_thread *c = &p->t[PYQ_PIPE_CONSUMER];
    int64_t n0, n1;

    while (c->expect < p->cfg.count && !stopping(p)) {
        n0 = a->poll(p->hop[0], PIPE_POLL_BATCH, stage_msg, t);
        n1 = n0 < 0 ? 0 : a->poll(p->hop[1], PIPE_POLL_BATCH, consumer_msg, c);
        if (n0 < 0 || n1 < 0) {
            if (!t->err && !c->err && (n0 < 0 ? n0 : n1) != PYQ_EINTR)
                fail(n0 < 0 ? t : c, PYQ_STEP_RUN, (int)(n0 < 0 ? n0 : n1),
                     n0 < 0 ? t->expect : c->expect);
            break;
        }
        if (n0 + n1 == 0)
            receiver_idle(t);
        else
            pyq_idle_reset(&t->idle);
    }
}

/* Stage (hop 0 -> hop 1) or consumer (hop 1 -> latency samples). */
static void receiver_loop(struct pipe_thread *t)
{
    struct pipe *p = t->p;
    const pyq_pipeline_config_t *cfg = &p->cfg;
    int hop = t->index == PYQ_PIPE_STAGE ? 0 : 1;
    pyq_message_fn fn = t->index == PYQ_PIPE_STAGE ? stage_msg : consumer_msg;
    int64_t n;

    if (cfg->combine) {
        combined_loop(t);
        return;
    }
    while (t->expect < cfg->count && !stopping(p)) {
        n = cfg->queue->poll(p->hop[hop], PIPE_POLL_BATCH, fn, t);
        if (n < 0) {
            if (!t->err && n != PYQ_EINTR)
                fail(t, PYQ_STEP_RUN, (int)n, t->expect);
            break;
        }
        if (n == 0)
            receiver_wait(t, p->hop[hop]);
        else
            pyq_idle_reset(&t->idle);
    }
}

/* ---- thread body: setup, accounting, loop ------------------------------- */

static int setup(struct pipe_thread *t)
{
    const pyq_pipeline_config_t *cfg = &t->p->cfg;
    int cpu = cfg->cpu[t->index], rc, prio;

    if ((rc = pyq_cpu_pin_opt(cpu)) != 0) {
        fail(t, PYQ_STEP_PIN, rc, PYQ_SEQ_NONE);
        return rc;
    }
    prio = t->index == PYQ_PIPE_PRODUCER ? cfg->producer_fifo_priority : cfg->fifo_priority;
    if (prio > 0 && (rc = pyq_cpu_set_fifo_self(prio)) != 0) {
        fail(t, PYQ_STEP_SCHED, rc, PYQ_SEQ_NONE);
        return rc;
    }
    /* The load generator should wake on time: its lateness is recorded anyway. */
    if (t->index == PYQ_PIPE_PRODUCER && cfg->producer_slack_ns > 0)
        prctl(PR_SET_TIMERSLACK, (unsigned long)cfg->producer_slack_ns, 0, 0, 0);
    /* Receivers' nanosleeps otherwise end up to 50 µs late (the default slack);
     * the kernel ignores slack for SCHED_FIFO threads. */
    if (t->index != PYQ_PIPE_PRODUCER && cfg->receiver_slack_ns > 0)
        prctl(PR_SET_TIMERSLACK, (unsigned long)cfg->receiver_slack_ns, 0, 0, 0);
    if (t->index != PYQ_PIPE_PRODUCER && !cfg->queue->wait_readable) {
        pyq_idle_config_t ic;

        pyq_idle_config_init(&ic, cfg->idle_strategy);
        ic.spins = cfg->idle_spins;
        ic.yield_every = cfg->idle_yield_every;
        ic.sleep_min_ns = cfg->idle_sleep_min_ns;
        ic.sleep_cap_ns = cfg->idle_sleep_cap_ns;
        if ((rc = pyq_idle_init(&t->idle, &ic)) != 0) {
            fail(t, PYQ_STEP_RUN, rc, PYQ_SEQ_NONE);
            return rc;
        }
    }
    t->work_ticks = (uint64_t)((double)cfg->stage_work_ns * pyq_clock_ticks_per_ns());
    return 0;
}

void *pyq_pipe_thread_main(void *arg)
{
    struct pipe_thread *t = arg;
    struct pipe *p = t->p;
    pyq_pipeline_thread_t *st = &p->res->thread[t->index];
    struct rusage ru0, ru1;
    pyq_perf_t perf;
    uint64_t pv[PYQ_PERF_NEVENTS], cpu0;
    int rc = setup(t);

    st->cpu_start = pyq_cpu_current();
    st->policy = pyq_cpu_policy_self(NULL);
    /* MEET-S1: count this thread in even when it failed, so nobody waits for it;
     * receivers do not wait (they poll until the producer sends). */
    pyq_start_arrive(&p->start, rc);
    if (rc)
        return NULL;
    pyq_perf_open(&perf, PYQ_PERF_SOFTWARE);
    st->perf_status = perf.status[PYQ_PERF_CONTEXT_SWITCHES];
    getrusage(RUSAGE_THREAD, &ru0);
    cpu0 = thread_cpu_ns();

    if (t->index == PYQ_PIPE_PRODUCER)
        producer_loop(t);
    else
        receiver_loop(t);

    st->cpu_ns = thread_cpu_ns() - cpu0;
    st->messages = t->index == PYQ_PIPE_PRODUCER ? t->sent : t->expect;
    if (t->index == PYQ_PIPE_CONSUMER)
        p->res->end_ns = t->last_ns;
    if (t->index == PYQ_PIPE_STAGE && p->cfg.combine) {
        /* The consumer's row: its messages; its CPU time is in this row. */
        pyq_pipeline_thread_t *ct = &p->res->thread[PYQ_PIPE_CONSUMER];

        ct->messages = p->t[PYQ_PIPE_CONSUMER].expect;
        ct->cpu_start = st->cpu_start;
        ct->cpu_end = pyq_cpu_current();
        ct->policy = st->policy;
        ct->perf_status = st->perf_status;
        p->res->end_ns = p->t[PYQ_PIPE_CONSUMER].last_ns;
    }
    getrusage(RUSAGE_THREAD, &ru1);
    st->voluntary_cs = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
    st->involuntary_cs = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
    if (pyq_perf_read(&perf, pv) >= 0 && st->perf_status == 0) {
        st->perf_cs = pv[PYQ_PERF_CONTEXT_SWITCHES];
        st->perf_migrations = pv[PYQ_PERF_CPU_MIGRATIONS];
    }
    pyq_perf_close(&perf);
    if (t->index != PYQ_PIPE_PRODUCER)
        st->waits = p->cfg.queue->wait_readable ? t->waits
                                                : t->idle.stats.yields + t->idle.stats.sleeps;
    st->rests = t->rests;
    st->rest_ns = t->rest_total_ns;
    st->cpu_end = pyq_cpu_current();
    return NULL;
}
