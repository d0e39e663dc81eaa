/*
 * c2c.c - core-to-core latency by ping-pong.  See
 * pyq_c2c.h; the false-sharing demo is false_sharing.c.
 *
 * Two new threads do the work, each pinned by pyq_cpu_pin_self(); the calling
 * thread only joins them, so a Python caller is never left pinned.  Nothing in
 * the timed loops allocates or makes a system call: the only extra work per
 * sample is one cycle-counter read and one store to the caller's array.
 *
 * Ordering edges (labels used below):
 *   C2C-P1 A: ping release            -> C2C-P2 B: ping acquire   (two lines)
 *   C2C-P3 B: pong release            -> C2C-P4 A: pong acquire   (two lines)
 *   C2C-X1 A: CAS 2k->2k+1 acq_rel   <-> C2C-X2 B: CAS 2k+1->2k+2 acq_rel (one line)
 *   C2C-Q: the queues' own edges (W2/A2, W3/A3 of queue_pvt.h)
 *   MEET-S1/MEET-S2 start barrier (runtime/start_pvt.h); C2C-AB abort flag relaxed (no data with it)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "lab/pyq_c2c.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"

#define C2C_DEFAULT_TIMEOUT_NS 10000000000ull
#define SLOW_CHECK_MASK 0xffffu /* check the clock / abort flag every 65,536 spins */
#define TIMER_READS 65

struct c2c {
    /* C2C-X1/C2C-X2: the one shared line of CAS mode. */
    PYQ_ALIGNED_LINE _Atomic uint64_t flag;
    /* C2C-P1/C2C-P2: written by A only. */
    PYQ_ALIGNED_LINE _Atomic uint64_t ping;
    /* C2C-P3/C2C-P4: written by B only. */
    PYQ_ALIGNED_LINE _Atomic uint64_t pong;
    /* C2C-AB: set by a side that gives up, so the other stops spinning too. */
    PYQ_ALIGNED_LINE _Atomic int abort;
    /* MEET-S1/MEET-S2: both pinned before either starts. */
    PYQ_ALIGNED_LINE pyq_start_t start;
    /* Read-only once the threads run. */
    PYQ_ALIGNED_LINE pyq_c2c_config_t cfg;
    pyq_queue_t *ab, *ba;
    uint64_t *samples;
    uint64_t limit_ticks;
    int err_a, err_b, step_a, step_b;
    int cpu_a_end, cpu_b_end;
    pyq_c2c_result_t *res;
};

void pyq_c2c_config_init(pyq_c2c_config_t *cfg, int32_t cpu_a, int32_t cpu_b)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->cpu_a = cpu_a;
    cfg->cpu_b = cpu_b;
    cfg->mode = PYQ_C2C_TWO_LINES;
    cfg->warmup = 1000;
    cfg->round_trips = 10000;
    cfg->batch = 1;
    pyq_config_init(&cfg->queue);
    cfg->queue.publish = PYQ_PUBLISH_EACH;
    cfg->queue.spill_blocks = 0; /* one message in flight: the hot tier is plenty */
    cfg->msg_size = 32;
    cfg->timeout_ns = C2C_DEFAULT_TIMEOUT_NS;
}

/* The slow path of every spin loop: 1 when this side must give up (timeout,
 * or the partner gave up).  C2C-AB: relaxed, the flag carries no data. */
static int give_up(struct c2c *c, uint64_t since)
{
    if (atomic_load_explicit(&c->abort, memory_order_relaxed))
        return 1;
    if (pyq_cycles_now() - since > c->limit_ticks) {
        atomic_store_explicit(&c->abort, 1, memory_order_relaxed);
        return 1;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double timer_ticks(void)
{
    uint64_t d[TIMER_READS];

    for (int i = 0; i < TIMER_READS; i++) {
        uint64_t t0 = pyq_cycles_now();
        d[i] = pyq_cycles_now() - t0;
    }
    qsort(d, TIMER_READS, sizeof d[0], cmp_u64);
    return (double)d[TIMER_READS / 2];
}

/* ---- one round trip per mode, A side and B side ------------------------- */

/* CAS mode, A: trip k ends when A's CAS 2k -> 2k+1 succeeds (B has answered
 * trip k-1).  Both sides hammer the same line with CAS, as the well-known
 * core-to-core tools do. */
/* One CAS hand-over: wait until the shared line holds `from`, then swing it to
 * `to` (A: 2k -> 2k+1, C2C-X1; B: 2k+1 -> 2k+2, C2C-X2).  acq_rel on success pairs with
 * the other side's step; acquire on failure sees its value. */
static int cas_step(struct c2c *c, uint64_t from, uint64_t to)
{
    uint64_t want = from, since = 0;
    uint32_t spins = 0;

    while (!atomic_compare_exchange_strong_explicit(&c->flag, &want, to,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire)) {
        want = from;
        if (PYQ_UNLIKELY((++spins & SLOW_CHECK_MASK) == 0)) {
            if (!since)
                since = pyq_cycles_now();
            else if (give_up(c, since))
                return PYQ_EAGAIN;
        }
    }
    return 0;
}

static int cas_a(struct c2c *c, uint64_t k)
{
    return cas_step(c, 2 * k, 2 * k + 1);     /* C2C-X1 */
}

static int cas_b(struct c2c *c, uint64_t k)
{
    return cas_step(c, 2 * k + 1, 2 * k + 2); /* C2C-X2 */
}

/* Spin until *word == want (acquire), with the slow-path checks. */
static int wait_for(struct c2c *c, _Atomic uint64_t *word, uint64_t want)
{
    uint64_t since = 0;
    uint32_t spins = 0;

    /* C2C-P2 / C2C-P4: acquire pairs with the partner's release store (C2C-P1 / C2C-P3). */
    while (atomic_load_explicit(word, memory_order_acquire) != want) {
        if (PYQ_UNLIKELY((++spins & SLOW_CHECK_MASK) == 0)) {
            if (!since)
                since = pyq_cycles_now();
            else if (give_up(c, since))
                return PYQ_EAGAIN;
        }
    }
    return 0;
}

struct seq_check {
    uint64_t want;
    int bad;
};

static int take_seq(void *ctx, const void *msg, uint32_t len)
{
    struct seq_check *s = ctx;
    uint64_t seq;

    memcpy(&seq, msg, 8);
    s->bad = (seq != s->want);
    return 0;
}

/* Poll q until exactly one message arrived; it must carry seq. */
static int recv_seq(struct c2c *c, pyq_queue_t *q, uint64_t seq)
{
    struct seq_check s = {seq, 0};
    uint64_t since = 0;
    uint32_t spins = 0;

    /* C2C-Q: pyq_reader_poll acquires what the writer released (A2 / A3). */
    while (pyq_reader_poll(q, 1, take_seq, &s) == 0) {
        if (PYQ_UNLIKELY((++spins & 0x3ff) == 0)) { /* a poll costs more than a load */
            if (!since)
                since = pyq_cycles_now();
            else if (give_up(c, since))
                return PYQ_EAGAIN;
        }
    }
    return s.bad ? PYQ_EBADMSG : 0;
}

static int send_seq(struct c2c *c, pyq_queue_t *q, uint8_t *msg, uint64_t seq)
{
    int rc;

    memcpy(msg, &seq, 8);
    /* One message in flight and B drains at once: the queue is never full. */
    rc = pyq_writer_write(q, msg, c->cfg.msg_size, 0);
    /* publish max without scan_current would never show the message: flush. */
    if (rc == 0 && c->cfg.queue.publish != PYQ_PUBLISH_EACH && !c->cfg.queue.scan_current)
        rc = pyq_writer_flush(q);
    return rc;
}

static int trip_a(struct c2c *c, uint64_t k, uint8_t *msg)
{
    int rc;

    switch (c->cfg.mode) {
    case PYQ_C2C_CAS:
        return cas_a(c, k);
    case PYQ_C2C_TWO_LINES:
        /* C2C-P1: release pairs with C2C-P2 (B's acquire of ping). */
        atomic_store_explicit(&c->ping, k + 1, memory_order_release);
        return wait_for(c, &c->pong, k + 1);
    default:
        if ((rc = send_seq(c, c->ab, msg, k)) != 0)
            return rc;
        return recv_seq(c, c->ba, k);
    }
}

static int trip_b(struct c2c *c, uint64_t k, uint8_t *msg)
{
    int rc;

    switch (c->cfg.mode) {
    case PYQ_C2C_CAS:
        return cas_b(c, k);
    case PYQ_C2C_TWO_LINES:
        if ((rc = wait_for(c, &c->ping, k + 1)) != 0)
            return rc;
        /* C2C-P3: release pairs with C2C-P4 (A's acquire of pong). */
        atomic_store_explicit(&c->pong, k + 1, memory_order_release);
        return 0;
    default:
        if ((rc = recv_seq(c, c->ab, k)) != 0)
            return rc;
        return send_seq(c, c->ba, msg, k);
    }
}

/* ---- the two threads ---------------------------------------------------- */

/* Round trips of one slice (CAS mode: A makes one extra CAS to open trip 0). */
static uint64_t total_trips(const struct c2c *c)
{
    return (uint64_t)c->cfg.warmup + (uint64_t)c->cfg.round_trips * c->cfg.batch;
}

static void *side_b(void *arg)
{
    struct c2c *c = arg;
    uint8_t msg[4096]; /* msg_size <= 4096: check_config() */
    uint64_t n = total_trips(c);
    int rc = pyq_cpu_pin_self(c->cfg.cpu_b);

    memset(msg, 0, sizeof msg);
    c->step_b = rc ? PYQ_STEP_PIN : PYQ_STEP_NONE;
    /* Nothing to answer when either side failed to pin or to start. */
    if (pyq_start_meet(&c->start, 2, rc) == 0)
        for (uint64_t k = 0; k < n && !rc; k++)
            rc = trip_b(c, k, msg);
    if (rc && !c->step_b)
        c->step_b = PYQ_STEP_RUN;
    c->err_b = rc;
    c->cpu_b_end = pyq_cpu_current();
    return NULL;
}

static void *side_a(void *arg)
{
    struct c2c *c = arg;
    uint8_t msg[4096];
    const pyq_c2c_config_t *cfg = &c->cfg;
    uint64_t prev, now, k = 0;
    int rc = pyq_cpu_pin_self(cfg->cpu_a);

    memset(msg, 0, sizeof msg);
    c->step_a = rc ? PYQ_STEP_PIN : PYQ_STEP_NONE;
    if (pyq_start_meet(&c->start, 2, rc) != 0)
        goto out;
    c->res->timer_ticks = timer_ticks();
    if (cfg->mode == PYQ_C2C_CAS && (rc = cas_a(c, k++)) != 0) /* open trip 0 */
        goto out;
    for (uint64_t i = 0; i < cfg->warmup && !rc; i++)
        rc = trip_a(c, cfg->mode == PYQ_C2C_CAS ? k++ : i, msg);
    if (cfg->mode != PYQ_C2C_CAS)
        k = cfg->warmup;
    c->res->start_ns = pyq_now_ns();
    prev = pyq_cycles_now();
    c->res->timed_ticks = prev;
    for (uint32_t s = 0; s < cfg->round_trips && !rc; s++) {
        for (uint32_t j = 0; j < cfg->batch && !rc; j++)
            rc = trip_a(c, k++, msg);
        now = pyq_cycles_now();
        c->samples[s] = now - prev;
        prev = now;
        if (!rc)
            c->res->round_trips += cfg->batch;
    }
    c->res->timed_ticks = prev - c->res->timed_ticks;
    c->res->end_ns = pyq_now_ns();
out:
    if (rc && !c->step_a)
        c->step_a = PYQ_STEP_RUN;
    c->err_a = rc;
    c->cpu_a_end = pyq_cpu_current();
    return NULL;
}

static int check_config(const pyq_c2c_config_t *cfg)
{
    if (cfg->cpu_a < 0 || cfg->cpu_b < 0 || cfg->cpu_a == cfg->cpu_b)
        return PYQ_EINVAL;
    if (cfg->mode < 0 || cfg->mode >= PYQ_C2C_NMODES || cfg->round_trips == 0 || cfg->batch == 0)
        return PYQ_EINVAL;
    if (cfg->mode == PYQ_C2C_QUEUE &&
        (cfg->msg_size < 8 || cfg->msg_size > 4096 ||
         cfg->msg_size + PYQ_RECORD_HEADER > cfg->queue.block_size ||
         pyq_config_check(&cfg->queue, NULL) != 0))
        return PYQ_EINVAL;
    return PYQ_HAVE_CYCLES ? 0 : PYQ_ENOTSUP;
}

int pyq_c2c_pingpong(const pyq_c2c_config_t *cfg, uint64_t *samples_ticks,
                     pyq_c2c_result_t *res)
{
    struct c2c *c;
    pthread_t ta, tb;
    double tpn;
    int rc;

    memset(res, 0, sizeof *res);
    if ((rc = check_config(cfg)) != 0 || !samples_ticks)
        return res->error = rc ? rc : PYQ_EINVAL;
    tpn = pyq_clock_ticks_per_ns(); /* calibrate before anything is timed */
    c = aligned_alloc(PYQ_CACHELINE, sizeof *c);
    if (!c)
        return res->error = PYQ_ENOMEM;
    memset(c, 0, sizeof *c);
    c->cfg = *cfg;
    c->samples = samples_ticks;
    c->res = res;
    c->limit_ticks = (uint64_t)((double)(cfg->timeout_ns ? cfg->timeout_ns
                                                         : C2C_DEFAULT_TIMEOUT_NS) * tpn);
    if (cfg->mode == PYQ_C2C_QUEUE) {
        if ((rc = pyq_queue_create(&cfg->queue, &c->ab)) != 0 ||
            (rc = pyq_queue_create(&cfg->queue, &c->ba)) != 0)
            goto out;
    }
    if ((rc = -pthread_create(&tb, NULL, side_b, c)) != 0) {
        res->failed_step = PYQ_STEP_CREATE;
        goto out;
    }
    if ((rc = -pthread_create(&ta, NULL, side_a, c)) != 0) {
        res->failed_step = PYQ_STEP_CREATE;
        pyq_start_arrive(&c->start, rc); /* for A: B gives up */
        pthread_join(tb, NULL);
        goto out;
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    /* The side that failed first names the cause; a partner's timeout follows it. */
    if (c->step_a == PYQ_STEP_PIN || c->step_b == PYQ_STEP_PIN) {
        rc = c->step_a == PYQ_STEP_PIN ? c->err_a : c->err_b;
        res->failed_step = PYQ_STEP_PIN;
    } else if (c->err_a && c->err_a != PYQ_EAGAIN) {
        rc = c->err_a;
        res->failed_step = c->step_a;
    } else if (c->err_b && c->err_b != PYQ_EAGAIN) {
        rc = c->err_b;
        res->failed_step = c->step_b;
    } else if (c->err_a || c->err_b) {
        rc = PYQ_EAGAIN;
        res->failed_step = PYQ_STEP_RUN;
    }
    res->cpu_a_end = c->cpu_a_end;
    res->cpu_b_end = c->cpu_b_end;
out:
    pyq_queue_destroy(c->ab);
    pyq_queue_destroy(c->ba);
    free(c);
    return res->error = rc;
}
