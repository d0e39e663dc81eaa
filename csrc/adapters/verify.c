/* verify.c - the functional proof for any adapter: a writer pthread and a
 * reader pthread move n pattern messages and the reader checks length, FIFO order
 * and every byte (see pyq_adapter_verify() in pyq_adapter.h).  This is a
 * validation program, not a benchmark: both sides generate/check every byte. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/atomic.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"
#include "adapters/pyq_adapter.h"
#include "common/pyq_pattern.h"

#define VERIFY_YIELD_EVERY 1024    /* the drivers' default full-queue policy (DESIGN §3.6) */
#define VERIFY_POLL_MAX 4096       /* messages per poll call */
#define VERIFY_WAIT_NS 1000000     /* wait_readable slice, so stop/done are seen */
#define VERIFY_BURST_MAX 65536

struct verify_run {
    const pyq_adapter_t *a;
    void *h;
    uint64_t n;
    uint32_t msg_size;
    uint32_t burst;
    int writer_cpu, reader_cpu;
    pyq_start_t start;        /* MEET-S1/MEET-S2: both pinned before the writer starts */
    _Atomic int stop;         /* either side failed: the other gives up (relaxed:
                                 the error itself is read after pthread_join) */
    _Atomic int writer_done;  /* VERIFY-D1: release after the last write and flush */
    int writer_error, reader_error; /* each side's own; combined after the joins */
    uint64_t t_start, t_end;
    pyq_adapter_verify_result_t res;
};

struct check_ctx {
    uint64_t expected;  /* sequence number of the next message */
    uint32_t msg_size;
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int check_message(void *ctx, const void *msg, uint32_t len)
{
    struct check_ctx *c = ctx;

    if (len != c->msg_size || pyq_pattern_check(msg, len, c->expected) != 0)
        return PYQ_EBADMSG;
    c->expected++;
    return 0;
}

/* Full queue: spin with relax, sched_yield() every VERIFY_YIELD_EVERY failures.
 * Returns nonzero when the reader asked to stop. */
static int writer_backoff(struct verify_run *v, uint64_t *fails)
{
    v->res.write_retries++;
    if (atomic_load_explicit(&v->stop, memory_order_relaxed))
        return 1;
    if (++*fails % VERIFY_YIELD_EVERY == 0)
        sched_yield();
    else
        pyq_cpu_relax();
    return 0;
}

static int write_all(struct verify_run *v, uint8_t *buf)
{
    const pyq_adapter_t *a = v->a;
    uint32_t ms = v->msg_size;
    uint64_t fails = 0;
    uint64_t seq = 0;

    while (seq < v->n) {
        if (v->burst > 0 && a->try_write_burst) {
            uint32_t k = (uint32_t)(v->n - seq < v->burst ? v->n - seq : v->burst);
            uint32_t off = 0;

            for (uint32_t i = 0; i < k; i++)
                pyq_pattern_fill(buf + (size_t)i * ms, ms, seq + i);
            while (off < k) {
                int64_t r = a->try_write_burst(v->h, buf + (size_t)off * ms, k - off, ms);
                if (r < 0 || r > k - off)
                    return r < 0 ? (int)r : PYQ_EINVAL;
                off += (uint32_t)r;
                if (r == 0 && writer_backoff(v, &fails))
                    return 0;
            }
            seq += k;
        } else {
            int rc;

            pyq_pattern_fill(buf, ms, seq);
            while ((rc = a->try_write(v->h, buf, ms)) == PYQ_EAGAIN)
                if (writer_backoff(v, &fails))
                    return 0;
            if (rc != 0)
                return rc;
            seq++;
        }
        v->res.written = seq;
    }
    a->flush(v->h);
    return 0;
}

static void *writer_main(void *arg)
{
    struct verify_run *v = arg;
    size_t nbuf = v->burst > 0 ? v->burst : 1;
    uint8_t *buf = malloc(nbuf * v->msg_size);
    int rc = buf ? pyq_cpu_pin_opt(v->writer_cpu) : PYQ_ENOMEM;

    /* Either side's setup failure: the first one is the run's error. */
    rc = pyq_start_meet(&v->start, 2, rc);
    v->t_start = now_ns();
    if (rc == 0)
        rc = write_all(v, buf);
    if (rc != 0) {
        v->writer_error = rc;
        atomic_store_explicit(&v->stop, 1, memory_order_relaxed);
    }
    v->res.writer_cpu_seen = sched_getcpu();
    /* VERIFY-D1: every write and the flush above happen before; pairs with VERIFY-D2. */
    atomic_store_explicit(&v->writer_done, 1, memory_order_release);
    free(buf);
    return NULL;
}

static void *reader_main(void *arg)
{
    struct verify_run *v = arg;
    const pyq_adapter_t *a = v->a;
    struct check_ctx c = {.expected = 0, .msg_size = v->msg_size};
    uint64_t idle = 0;
    int rc = pyq_start_meet(&v->start, 2, pyq_cpu_pin_opt(v->reader_cpu));

    while (rc == 0 && c.expected < v->n) {
        uint64_t want = v->n - c.expected;
        int64_t k = a->poll(v->h, want < VERIFY_POLL_MAX ? want : VERIFY_POLL_MAX, check_message, &c);

        if (k < 0) {
            rc = (int)k;
            break;
        }
        if (k > 0) {
            idle = 0;
            continue;
        }
        if (atomic_load_explicit(&v->stop, memory_order_relaxed))
            break;
        /* VERIFY-D2: pairs with VERIFY-D1; a poll after this sees everything the writer wrote,
         * so an empty poll now means messages were lost. */
        if (atomic_load_explicit(&v->writer_done, memory_order_acquire)) {
            k = a->poll(v->h, want < VERIFY_POLL_MAX ? want : VERIFY_POLL_MAX, check_message, &c);
            if (k < 0)
                rc = (int)k;
            else if (k == 0 && v->writer_error == 0) /* ordered by VERIFY-D1/VERIFY-D2 */
                rc = PYQ_EBADMSG; /* lost: c.expected never arrived */
            continue;
        }
        if (a->wait_readable)
            a->wait_readable(v->h, VERIFY_WAIT_NS);
        else if (++idle % VERIFY_YIELD_EVERY == 0)
            sched_yield();
        else
            pyq_cpu_relax();
    }
    v->t_end = now_ns();
    v->res.verified = c.expected;
    if (rc != 0) {
        v->res.first_bad = c.expected;
        atomic_store_explicit(&v->stop, 1, memory_order_relaxed);
    }
    v->res.reader_cpu_seen = sched_getcpu();
    v->reader_error = rc;
    return NULL;
}

int pyq_adapter_verify(const pyq_adapter_t *a, const pyq_adapter_params_t *p, uint64_t n,
                       uint32_t burst, int writer_cpu, int reader_cpu,
                       pyq_adapter_verify_result_t *out)
{
    struct verify_run *v;
    pthread_t wt, rt;
    int rc;

    if (!a || !p || !out || burst > VERIFY_BURST_MAX || p->msg_size == 0 ||
        writer_cpu >= CPU_SETSIZE || reader_cpu >= CPU_SETSIZE)
        return PYQ_EINVAL;
    memset(out, 0, sizeof *out);
    v = calloc(1, sizeof *v);
    if (!v)
        return PYQ_ENOMEM;
    v->a = a;
    v->n = n;
    v->msg_size = p->msg_size;
    v->burst = burst;
    v->writer_cpu = writer_cpu;
    v->reader_cpu = reader_cpu;
    v->res.writer_cpu_seen = v->res.reader_cpu_seen = -1;
    rc = a->create(p, &v->h);
    if (rc != 0) {
        free(v);
        return rc;
    }
    rc = pthread_create(&rt, NULL, reader_main, v);
    if (rc == 0) {
        rc = pthread_create(&wt, NULL, writer_main, v);
        if (rc != 0) {
            v->writer_error = -rc;
            pyq_start_arrive(&v->start, -rc); /* for the writer: the reader gives up */
            atomic_store_explicit(&v->writer_done, 1, memory_order_release);
            atomic_store_explicit(&v->stop, 1, memory_order_relaxed);
        } else {
            pthread_join(wt, NULL);
        }
        pthread_join(rt, NULL);
        rc = 0;
    }
    a->destroy(v->h);
    if (rc != 0) {
        free(v);
        return -rc;
    }
    v->res.elapsed_ns = v->t_end > v->t_start ? v->t_end - v->t_start : 0;
    /* The first failure is the cause: a writer error stops the reader quietly. */
    v->res.error = v->writer_error ? v->writer_error : v->reader_error;
    *out = v->res;
    rc = out->error;
    free(v);
    return rc;
}
