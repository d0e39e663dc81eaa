/*
 * selftest.c - two-thread verification harness (see pyq_selftest.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/atomic.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"
#include "common/pyq_pattern.h"
#include "stress/pyq_selftest.h"

struct stress {
    pyq_queue_t *q;
    const pyq_stress_params_t *p;
    pyq_stress_result_t res;
    _Atomic int failed;  /* either side saw an error: the other stops */
    pyq_start_t start;   /* MEET-S1/MEET-S2: both pinned before either moves a message */
    uint64_t t0, t1;
};

/* The largest message a block holds: the harness's lengths stay in the block
 * framing (the large region has its own tests, tests/python/test_frames.py). */
static uint32_t block_max(pyq_queue_t *q)
{
    pyq_config_t cfg;
    pyq_queue_config(q, &cfg);
    return cfg.block_size - PYQ_RECORD_HEADER;
}

static void fail(struct stress *s, int side, int err, uint64_t seq)
{
    int expected = 0;
    /* First error wins; relaxed is enough: join() orders the result for the caller. */
    if (atomic_compare_exchange_strong_explicit(&s->failed, &expected, 1,
                                                memory_order_relaxed, memory_order_relaxed)) {
        s->res.error = err;
        s->res.error_side = side;
        s->res.error_seq = seq;
    }
}

static int stop_requested(struct stress *s)
{
    return atomic_load_explicit(&s->failed, memory_order_relaxed);
}

static void write_all(struct stress *s, uint8_t *buf, uint32_t cap)
{
    const pyq_stress_params_t *p = s->p;
    int rc;

    for (uint64_t seq = 0; seq < p->messages; seq++) {
        uint32_t len = pyq_pattern_len(seq, p->min_len, p->max_len, p->salt);
        int aborted = 0;
        for (;;) {
            if (stop_requested(s))
                return;
            if (p->use_claim) {
                void *ptr;
                rc = pyq_writer_claim(s->q, len, p->write_timeout_ns, &ptr);
                if (rc == 0) {
                    if (!aborted && seq % 7 == 3) {
                        /* An aborted claim must leave no trace in the stream. */
                        memset(ptr, 0xAB, len);
                        pyq_writer_abort(s->q);
                        aborted = 1;
                        continue;
                    }
                    pyq_pattern_fill(ptr, len, seq);
                    rc = pyq_writer_commit(s->q);
                }
            } else {
                if (len > cap) {
                    fail(s, 1, PYQ_EINVAL, seq);
                    return;
                }
                pyq_pattern_fill(buf, len, seq);
                rc = pyq_writer_write(s->q, buf, len, p->write_timeout_ns);
            }
            if (rc == PYQ_EAGAIN) {
                s->res.timeouts++;
                continue;
            }
            break;
        }
        if (rc != 0) {
            fail(s, 1, rc, seq);
            return;
        }
        s->res.written = seq + 1;
        if (p->flush_every && (seq + 1) % p->flush_every == 0)
            pyq_writer_flush(s->q);
    }
    pyq_writer_flush(s->q);
}

static void *writer_main(void *arg)
{
    struct stress *s = arg;
    const pyq_stress_params_t *p = s->p;
    /* The plain writes' source, on the heap: a _Thread_local array of
     * PYQ_MAX_BLOCK_SIZE would be static TLS in every program linking this
     * file, taken from every thread's stack. */
    uint32_t cap = p->max_len < PYQ_MAX_BLOCK_SIZE ? p->max_len : PYQ_MAX_BLOCK_SIZE;
    uint8_t *buf = malloc(cap ? cap : 1);
    int rc = buf ? pyq_cpu_pin_opt(p->writer_cpu) : PYQ_ENOMEM;

    if (rc)
        fail(s, 1, rc, 0);
    if (pyq_start_meet(&s->start, 2, rc) == 0)
        write_all(s, buf, cap);
    free(buf);
    return NULL;
}

struct reader_ctx {
    struct stress *s;
    uint64_t next;
};

static int check_message(void *ctx, const void *msg, uint32_t len)
{
    struct reader_ctx *c = ctx;
    const pyq_stress_params_t *p = c->s->p;
    uint64_t seq = c->next;

    if (seq >= p->messages || len != pyq_pattern_len(seq, p->min_len, p->max_len, p->salt) ||
        pyq_pattern_check(msg, len, seq) != 0)
        return PYQ_EBADMSG;
    c->next = seq + 1;
    return 0;
}

static void *reader_main(void *arg)
{
    struct stress *s = arg;
    const pyq_stress_params_t *p = s->p;
    struct reader_ctx c = { s, 0 };
    uint64_t next_pause = p->reader_pause_every ? p->reader_pause_every : UINT64_MAX;
    uint64_t batch = p->reader_batch ? p->reader_batch : UINT64_MAX;
    int rc = pyq_cpu_pin_opt(p->reader_cpu);

    if (rc)
        fail(s, 2, rc, 0);
    if (pyq_start_meet(&s->start, 2, rc) != 0)
        return NULL;
    while (c.next < p->messages) {
        int64_t n = pyq_reader_poll(s->q, batch, check_message, &c);
        if (n < 0) {
            fail(s, 2, (int)n, c.next);
            /* Wake a writer waiting for space without a timeout. */
            pyq_queue_close(s->q);
            break;
        }
        if (n == 0) {
            if (stop_requested(s))
                break;
            pyq_cpu_relax();
        }
        if (c.next >= next_pause) {
            struct timespec ts = { 0, (long)p->reader_pause_us * 1000 };
            nanosleep(&ts, NULL);
            next_pause += p->reader_pause_every;
        }
    }
    s->t1 = pyq_now_ns();
    s->res.read = c.next;
    /* Nothing may follow the last message. */
    if (!stop_requested(s) && pyq_reader_next_len(s->q) != PYQ_EAGAIN)
        fail(s, 2, PYQ_EBADMSG, c.next);
    return NULL;
}

int pyq_stress_run(pyq_queue_t *q, const pyq_stress_params_t *p, pyq_stress_result_t *r)
{
    struct stress s;
    pthread_t wt, rt;
    int rc;

    memset(r, 0, sizeof(*r));
    if (!q || !p || p->min_len > p->max_len || p->max_len > block_max(q))
        return PYQ_EINVAL;
    memset(&s, 0, sizeof(s));
    s.q = q;
    s.p = p;
    atomic_init(&s.failed, 0);
    s.t0 = pyq_now_ns();
    if ((rc = pthread_create(&rt, NULL, reader_main, &s)) != 0)
        return -rc;
    if ((rc = pthread_create(&wt, NULL, writer_main, &s)) != 0) {
        fail(&s, 1, -rc, 0);
        pyq_start_arrive(&s.start, -rc); /* for the writer: the reader gives up */
        pthread_join(rt, NULL);
        return -rc;
    }
    pthread_join(wt, NULL);
    pthread_join(rt, NULL);
    s.res.elapsed_ns = s.t1 > s.t0 ? s.t1 - s.t0 : 0; /* t1 is 0 if the reader never ran */
    *r = s.res;
    return r->error;
}
