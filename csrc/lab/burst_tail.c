/*
 * burst_tail.c - the burst-tail study's measured loop (see pyq_burst_tail.h).
 *
 * Threads: the writer is whoever calls pyq_burst_windows() (the business
 * thread); the consumer is a pthread started per call.  Shared words:
 *   BURST-B1 `verified` release (consumer, after each poll batch) -> BURST-B2 acquire (writer:
 *      backlog = sent - verified; drain)
 *   BURST-B3 `stop` release (writer)  -> BURST-B4 acquire (consumer loop)
 *   MEET-S1/MEET-S2 `start`: the consumer pinned (or failed to) before the writer goes on
 *      (the start barrier, runtime/start_pvt.h)
 *   `hold` relaxed both ways: it carries no data; the writer reads the backlog
 *      through BURST-B2 as always, and a consumer that is slow to see it only
 *      consumes a little longer.
 *
 * The backlog protocol: before each window, untimed, the writer waits while the
 * backlog is above the target and tops it up, with the consumer held, while it
 * is below.  Without the top-up a class whose consumer outruns its writer (ck's
 * enqueue reads the consumer's index on every call) drains below the target and
 * runs a different experiment from the others.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "lab/burst_twin_pvt.h"
#include "lab/pyq_burst_tail.h"
#include "lab/pyq_business.h"
#include "common/pyq_pattern.h"
#include "runtime/pyq_runtime.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"

_Static_assert(PYQ_BURST_MAX_MSG <= PYQ_BURST_TWIN_MAX_MSG, "a twin's message buffer holds the largest message");

struct pyq_burst {
    const pyq_adapter_t *a;
    const pyq_burst_twin_t *twin;  /* the peer's inline twin, or NULL: the adapter */
    void *h;
    pyq_burst_config_t c;
    pyq_business_t biz;
    pyq_business_state_t st;
    uint64_t capacity;

    /* Writer-owned: snd.seq is the count sent, snd.retries / snd.yields its waits. */
    PYQ_ALIGNED_LINE pyq_burst_send_t snd;
    uint64_t max_backlog, checksum;

    /* Consumer-owned; `verified` is its published progress (BURST-B1). */
    PYQ_ALIGNED_LINE _Atomic uint64_t verified;
    PYQ_ALIGNED_LINE pyq_burst_take_t take;  /* consumer's private expected seq, sink */

    /* Control words, read-mostly. */
    PYQ_ALIGNED_LINE _Atomic int stop;
    _Atomic int hold;      /* 1: the consumer polls nothing (the writer tops up) */
    pyq_start_t start;     /* MEET-S1/MEET-S2: writer and consumer, once per call */
    int error;             /* first error of either side (__atomic, relaxed: a flag the
                              twins' loops poll too, adapters/burst_twin_pvt.h) */
    pthread_t thread;
    int running;
    int touched;           /* pretouch: steps done (fill, drain, fill, drain) */
    int perf_opened;       /* bit i: counter i was open in the last PMU call */
    double perf_read_ns;
};

void pyq_burst_config_init(pyq_burst_config_t *c)
{
    memset(c, 0, sizeof(*c));
    c->send_messages = (1u << 20) / 32;
    c->warmup_queries = 512;
    c->groups = 4;
    c->group_queries = 16;
    c->consumer_loop = 1;
    c->retry_yield_every = 1024;
    c->data_bytes = 48 * 1024;
    c->writer_cpu = -1;
    c->consumer_cpu = -1;
    c->seed = 0x5EED000;
}

static void set_error(struct pyq_burst *b, int err)
{
    int none = 0;
    /* Relaxed: the flag carries no data; join() orders error_seq for the reader. */
    __atomic_compare_exchange_n(&b->error, &none, err, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static int get_error(struct pyq_burst *b)
{
    return __atomic_load_n(&b->error, __ATOMIC_RELAXED);
}

/* ---- the driver's loops: the adapter's operations through its table ------- */

static int64_t take_adapter(struct pyq_burst *b, uint64_t max)
{
    return pyq_burst_take_loop(b->h, max, &b->take, b->a->poll);
}

static int send_adapter(struct pyq_burst *b, uint32_t n)
{
    return pyq_burst_send_loop(b->h, n, &b->snd, b->a->try_write);
}

/* ---- consumer ------------------------------------------------------------ */

static void *consumer_main(void *arg)
{
    struct pyq_burst *b = arg;

    if (pyq_start_meet(&b->start, 2, pyq_cpu_pin_opt(b->c.consumer_cpu)) != 0)
        return NULL;
    while (!pyq_load_acquire(&b->stop)) { /* BURST-B4: pairs with BURST-B3 */
        int64_t n;

        if (atomic_load_explicit(&b->hold, memory_order_relaxed)) {
            pyq_cpu_relax();
            continue;
        }
        n = b->twin ? b->twin->take(b->h, 1024, &b->take) : take_adapter(b, 1024);
        if (n < 0) {
            set_error(b, (int)n);
            break;
        }
        if (n > 0)
            pyq_store_release(&b->verified, b->take.next); /* BURST-B1: pairs with BURST-B2 */
        else
            pyq_cpu_relax();
    }
    pyq_store_release(&b->verified, b->take.next);
    return NULL;
}

static int consumer_start(struct pyq_burst *b)
{
    int rc;

    atomic_store_explicit(&b->stop, 0, memory_order_relaxed);
    pyq_start_reset(&b->start);
    if ((rc = pthread_create(&b->thread, NULL, consumer_main, b)) != 0)
        return -rc;
    if (pyq_start_meet(&b->start, 2, 0) != 0) {
        pthread_join(b->thread, NULL);
        return PYQ_EINVAL; /* the consumer CPU is not available */
    }
    b->running = 1;
    return 0;
}

static void consumer_stop(struct pyq_burst *b)
{
    if (!b->running)
        return;
    pyq_store_release(&b->stop, 1); /* BURST-B3: pairs with BURST-B4 */
    pthread_join(b->thread, NULL);
    b->running = 0;
}

static inline uint64_t backlog(struct pyq_burst *b)
{
    /* BURST-B2: pairs with BURST-B1; relaxed would do for an estimate, acquire keeps drain exact. */
    uint64_t v = pyq_load_acquire(&b->verified);
    return b->snd.seq > v ? b->snd.seq - v : 0;
}

/* ---- writer -------------------------------------------------------------- */

/* The burst: through the twin when the class has one, else the adapter. */
static int send_burst(struct pyq_burst *b, uint64_t *retries_out)
{
    uint64_t r0 = b->snd.retries;
    int rc;

    b->snd.since = 0;
    rc = b->twin ? b->twin->send(b->h, b->c.send_messages, &b->snd)
                     : send_adapter(b, b->c.send_messages);

    *retries_out = b->snd.retries - r0;
    return rc;
}

/* Untimed: write single messages until the backlog reaches the target, the
 * consumer held so that the backlog only grows; stop early at a full queue (a
 * target the queue cannot hold), or -- returning 1 -- once the clock passes
 * deadline (ns; checked every 1,024 messages).  *topped: messages written;
 * *bl (if not NULL): the backlog as the consumer is let go, the window's start
 * -- read after the release, a consumer that drains a batch before the writer
 * gets there (a preempted vCPU) would make a window that started on target
 * look as if it started below. */
static int top_up(struct pyq_burst *b, uint64_t *topped, uint64_t deadline, uint64_t *bl)
{
    const uint32_t size = b->snd.msg_size;
    uint64_t n = 0, now;
    int rc = 0;

    if ((now = backlog(b)) >= b->c.backlog_target) {
        *topped = 0;
        if (bl)
            *bl = now;
        return 0;
    }
    atomic_store_explicit(&b->hold, 1, memory_order_relaxed);
    while (backlog(b) < b->c.backlog_target) {
        pyq_burst_make(&b->snd);
        if ((rc = b->a->try_write(b->h, b->snd.msg, size)) != 0)
            break;
        b->snd.seq++;
        if (PYQ_UNLIKELY((++n & 1023) == 0) && pyq_now_ns() > deadline) {
            rc = 1;
            break;
        }
    }
    b->a->flush(b->h);
    if (bl)
        *bl = backlog(b);
    atomic_store_explicit(&b->hold, 0, memory_order_relaxed);
    *topped = n;
    return rc == PYQ_EAGAIN ? 0 : rc;
}

/* The no-send classes' stand-in for the send: read the clock until ns passed,
 * no stores and no pause (a pause loop may make a hypervisor deschedule the
 * vCPU: PAUSE-loop exiting), so only the time passes. */
static void idle_gap(uint64_t ns)
{
    const uint64_t end = pyq_now_ns() + ns;

    while (pyq_now_ns() < end)
        __asm__ __volatile__("" ::: "memory");
}

/* The calling thread's page faults so far (minor + major). */
static uint64_t thread_faults(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

static uint64_t deadline_of(int64_t slice_ns)
{
    return slice_ns > 0 ? pyq_now_ns() + (uint64_t)slice_ns : UINT64_MAX;
}

/* Untimed: wait while the backlog is above the target; 1 once the clock passes
 * deadline first (checked every 1,024 waits: a consumer held off its CPU must
 * not keep the call from returning). */
static int wait_backlog(struct pyq_burst *b, uint64_t deadline)
{
    uint32_t n = 0;
    int rc;

    b->snd.since = 0;
    while (backlog(b) > b->c.backlog_target) {
        if ((rc = pyq_burst_wait(&b->snd)) != 0)
            return rc;
        if (PYQ_UNLIKELY((++n & 1023) == 0) && pyq_now_ns() > deadline)
            return 1;
    }
    return 0;
}

/* Pin the calling thread for one call, and put its affinity back after. */
struct pin_save {
    cpu_set_t old;
    int pinned;
};

static int writer_pin(struct pyq_burst *b, struct pin_save *s)
{
    s->pinned = 0;
    if (b->c.writer_cpu < 0)
        return 0;
    if (pthread_getaffinity_np(pthread_self(), sizeof(s->old), &s->old) != 0)
        return PYQ_ENOTSUP;
    if (pyq_cpu_pin_self(b->c.writer_cpu) != 0)
        return PYQ_EINVAL;
    s->pinned = 1;
    return 0;
}

static void writer_unpin(struct pin_save *s)
{
    if (s->pinned)
        pthread_setaffinity_np(pthread_self(), sizeof(s->old), &s->old);
}

/* ---- API ----------------------------------------------------------------- */

int pyq_burst_open(const pyq_adapter_t *a, const pyq_adapter_params_t *ap,
                   const pyq_burst_config_t *c, pyq_burst_t **out)
{
    struct pyq_burst *b;
    int rc;

    *out = NULL;
    if (!a || !ap || !c || ap->msg_size < PYQ_BURST_MIN_MSG || ap->msg_size > PYQ_BURST_MAX_MSG ||
        c->groups == 0 ||
        c->groups > PYQ_BURST_MAX_GROUPS || c->group_queries == 0 || c->data_bytes < 4096)
        return PYQ_EINVAL;
    b = aligned_alloc(PYQ_CACHELINE, sizeof(*b));
    if (!b)
        return PYQ_ENOMEM;
    memset(b, 0, sizeof(*b));
    b->a = a;
    b->c = *c;
    b->perf_read_ns = -1;
    b->snd.msg_size = b->take.msg_size = ap->msg_size;   /* the message size: the adapter's */
    b->snd.yield_every = c->retry_yield_every;
    b->snd.fault_seq = c->fault_seq;
    b->snd.error = &b->error;
    b->take.loop = c->consumer_loop;
    if (c->twin && (rc = pyq_burst_twin_find(a, &b->twin)) != 0) {
        free(b);
        return rc;
    }
    if ((rc = a->create(ap, &b->h)) != 0) {
        free(b);
        return rc;
    }
    b->capacity = a->capacity(b->h);
    if ((rc = pyq_business_init(&b->biz, NULL, c->data_bytes, c->seed)) != 0) {
        a->destroy(b->h);
        free(b);
        return rc;
    }
    pyq_business_warm(&b->biz, c->seed);
    pyq_business_state_init(&b->st, c->seed ^ 0x9E3779B97F4A7C15ull);
    *out = b;
    return 0;
}

void pyq_burst_set_backlog_target(pyq_burst_t *b, uint64_t messages)
{
    b->c.backlog_target = messages;
}

void pyq_burst_set_pmu(pyq_burst_t *b, uint32_t mask)
{
    b->c.pmu_mask = mask;
}

void pyq_burst_restart_business(pyq_burst_t *b)
{
    pyq_business_warm(&b->biz, b->c.seed);
    pyq_business_state_init(&b->st, b->c.seed ^ 0x9E3779B97F4A7C15ull);
    b->checksum = 0;
}

int pyq_burst_set_gap(pyq_burst_t *b, uint64_t gap_ns)
{
    if (b->c.send_messages)
        return PYQ_EINVAL;
    b->c.gap_ns = gap_ns;
    return 0;
}

/* Pretouch, untimed: twice, write until the queue is full (consumer held),
 * then let the consumer (verify-only: its work loop is no part of this) drain it
 * to empty.  Two passes, because the queue's rings are larger than its blocks
 * (pyqueue's full ring has next_pow2(blocks) slots): one pass leaves ring pages
 * that the first windows' sends would fault in, and a page the reader faults
 * in can cost the writer a TLB shootdown mid-window.  For every class
 * that sends alike; afterwards the fill tops the backlog up to the target.  0 done, 1 the
 * deadline passed first (call again), or an error. */
#define PRETOUCH_STEPS 4

static int pretouch(struct pyq_burst *b, uint64_t deadline)
{
    const uint64_t target = b->c.backlog_target, yields = b->snd.yields;
    uint64_t topped;
    int rc = 0;

    while (rc == 0 && b->touched < PRETOUCH_STEPS) {
        if (b->touched % 2 == 0) {
            b->c.backlog_target = UINT64_MAX; /* top_up stops at the full queue */
            rc = top_up(b, &topped, deadline, NULL);
        } else {
            b->c.backlog_target = 0;
            b->take.loop = 0;
            if ((rc = consumer_start(b)) == 0) {
                rc = wait_backlog(b, deadline);
                consumer_stop(b);
                rc = rc ? rc : get_error(b);
            }
            b->take.loop = b->c.consumer_loop;
        }
        b->c.backlog_target = target;
        if (rc == 0)
            b->touched++;
    }
    b->snd.yields = yields; /* the study's counts start after the pretouch */
    return rc;
}

int pyq_burst_fill(pyq_burst_t *b, int64_t slice_ns)
{
    const uint64_t deadline = deadline_of(slice_ns);
    struct pin_save ps;
    uint64_t topped;
    int rc = 0;

    if ((rc = writer_pin(b, &ps)) != 0)
        return rc;
    if (b->c.pretouch)
        rc = pretouch(b, deadline);
    /* No consumer runs between calls, so the backlog only grows: top-ups reach
     * the target (or a full queue, for a target it cannot hold). */
    if (rc == 0)
        rc = top_up(b, &topped, deadline, NULL);
    writer_unpin(&ps);
    return rc ? rc : get_error(b);
}

int64_t pyq_burst_windows(pyq_burst_t *b, uint32_t n, const pyq_burst_records_t *rec,
                          int64_t slice_ns)
{
    const uint64_t deadline = deadline_of(slice_ns);
    const pyq_burst_config_t *c = &b->c;
    struct pin_save ps;
    pyq_perf_t perf;
    uint64_t before[8], after[8];
    uint64_t t[PYQ_BURST_MAX_GROUPS + 1];
    uint32_t w;
    int rc;

    if ((rc = writer_pin(b, &ps)) != 0)
        return rc;
    if ((rc = consumer_start(b)) != 0) {
        writer_unpin(&ps);
        return rc;
    }
    if (c->pmu_mask) {
        pyq_perf_open(&perf, c->pmu_mask);
        b->perf_opened = (int)perf.opened;
        b->perf_read_ns = pyq_perf_read_cost_ns(&perf, 64);
    }
    for (w = 0; w < n && rc == 0;) {
        uint64_t t0 = pyq_cycles_fenced(), retries = 0, y0 = b->snd.yields, bl, f0;

        if ((rc = wait_backlog(b, deadline)) != 0 ||
            (rc = top_up(b, &rec->topup[w], UINT64_MAX, &bl)) != 0) {
            if (rc == 1) /* the slice ended in the wait: window w did not start */
                rc = 0;
            break;
        }
        rec->wait_ticks[w] = pyq_cycles_fenced() - t0;
        f0 = thread_faults();
        rec->backlog[w] = bl;
        if (bl > b->max_backlog)
            b->max_backlog = bl;
        rec->cpu_start[w] = sched_getcpu();

        b->checksum += pyq_business_queries(&b->biz, &b->st, c->warmup_queries);
        rec->cpu_warm[w] = sched_getcpu();

        t0 = pyq_cycles_fenced();
        if (c->gap_ns && !c->send_messages)
            idle_gap(c->gap_ns);
        else if ((rc = send_burst(b, &retries)) != 0)
            break;
        rec->send_ticks[w] = pyq_cycles_fenced() - t0;
        rec->retries[w] = retries;
        rec->cpu_send[w] = sched_getcpu();

        if (c->pmu_mask)
            pyq_perf_read(&perf, before);
        /* The timed part: only business queries between the stamps. */
        t[0] = pyq_cycles_fenced();
        for (uint32_t g = 0; g < c->groups; g++) {
            for (uint32_t q = 0; q < c->group_queries; q++)
                b->checksum += pyq_business_query(&b->biz, &b->st);
            t[g + 1] = pyq_cycles_fenced();
        }
        if (c->pmu_mask) {
            pyq_perf_read(&perf, after);
            if (rec->pmu)
                for (int k = 0; k < 8; k++)
                    rec->pmu[(uint64_t)w * 8 + k] = after[k] - before[k];
        }
        rec->cpu_end[w] = sched_getcpu();
        rec->faults[w] = thread_faults() - f0;
        for (uint32_t g = 0; g < c->groups; g++)
            rec->group_ticks[(uint64_t)w * c->groups + g] = t[g + 1] - t[g];
        rec->yields[w] = b->snd.yields - y0;
        rc = get_error(b);
        w++;
        if (pyq_now_ns() > deadline)
            break;
    }
    if (c->pmu_mask)
        pyq_perf_close(&perf);
    consumer_stop(b);
    writer_unpin(&ps);
    if (!rc)
        rc = get_error(b);
    return rc ? rc : (int64_t)w;
}

int pyq_burst_drain(pyq_burst_t *b, int64_t timeout_ns)
{
    uint64_t deadline = timeout_ns >= 0 ? pyq_now_ns() + (uint64_t)timeout_ns : UINT64_MAX;
    int rc;

    b->a->flush(b->h);
    if ((rc = consumer_start(b)) != 0)
        return rc;
    while (backlog(b) > 0 && !get_error(b)) {
        if (pyq_now_ns() > deadline) {
            rc = PYQ_EAGAIN;
            break;
        }
        pyq_cpu_relax();
    }
    consumer_stop(b);
    return rc ? rc : get_error(b);
}

void pyq_burst_totals(const pyq_burst_t *cb, pyq_burst_totals_t *t)
{
    struct pyq_burst *b = (struct pyq_burst *)cb;

    memset(t, 0, sizeof(*t));
    t->sent = b->snd.seq;
    t->verified = pyq_load_acquire(&b->verified);
    t->retries = b->snd.retries;
    t->yields = b->snd.yields;
    t->max_backlog = b->max_backlog;
    t->capacity = b->capacity;
    t->checksum = b->checksum;
    t->error = get_error(b);
    t->error_seq = b->take.error_seq;
    t->perf_opened = b->perf_opened;
    t->perf_read_ns = b->perf_read_ns;
}

void pyq_burst_close(pyq_burst_t *b)
{
    if (!b)
        return;
    consumer_stop(b);
    b->a->destroy(b->h);
    pyq_business_destroy(&b->biz);
    free(b);
}

const char *pyq_burst_driver(const pyq_burst_t *b)
{
    return b->twin ? b->twin->calls : "adapter";
}
