/*
 * soak.c - one slice of the soak test (see pyq_soak.h).  Test machinery, not
 * on any product path: the writer's staging buffer is allocated at the start.
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
#include "stress/pyq_soak.h"

#define WRITE_SLICE_NS 10000000 /* a plain write waits in slices this long */

struct soak {
    pyq_queue_t *q;
    const pyq_soak_params_t *p;
    uint64_t stall_ns;
    uint32_t max_poll;
    _Atomic int failed;        /* either side failed: the other stops */
    pyq_start_t start;         /* MEET-S1/MEET-S2: both pinned before the clock starts */
    _Atomic int writer_done;   /* SOAK-D1: written is final; pairs with SOAK-D2 in the reader */
    uint64_t written;          /* writer's; read by the reader after SOAK-D2 */
    pyq_soak_result_t res;     /* each side fills its own fields */
    int32_t error, side;
    uint64_t error_seq;
};

/* xorshift64*: each side's own stream, reproducible from the seed. */
/* The largest message a block holds: the harness's lengths stay in the block
 * framing (the large region has its own tests, tests/python/test_frames.py). */
static uint32_t block_max(pyq_queue_t *q)
{
    pyq_config_t cfg;
    pyq_queue_config(q, &cfg);
    return cfg.block_size - PYQ_RECORD_HEADER;
}

static inline uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* True one time in `every` on average (never when every is 0). */
static inline int one_in(uint64_t *s, uint32_t every)
{
    return every && rnd(s) % every == 0;
}

static void pause_us(uint64_t *s, uint32_t max_us)
{
    uint64_t us = max_us ? rnd(s) % (max_us + 1u) : 0;
    struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };
    nanosleep(&ts, NULL);
}

static void fail(struct soak *s, int side, int err, uint64_t seq)
{
    int expected = 0;
    /* First error wins; the joins order the fields for the caller. */
    if (atomic_compare_exchange_strong_explicit(&s->failed, &expected, 1,
                                                memory_order_relaxed, memory_order_relaxed)) {
        s->error = err;
        s->side = side;
        s->error_seq = seq;
    }
}

static int failed(struct soak *s)
{
    return atomic_load_explicit(&s->failed, memory_order_relaxed);
}

/* The queue was full (PYQ_EAGAIN): 0 to retry, PYQ_EINTR when the other side
 * failed, PYQ_EAGAIN once no progress came for stall_ns (since: when the
 * first failed try of this run was, 0 before it). */
static int full_retry(struct soak *s, uint64_t *since)
{
    if (failed(s))
        return PYQ_EINTR;
    if (!*since)
        *since = pyq_now_ns();
    else if (pyq_now_ns() - *since > s->stall_ns)
        return PYQ_EAGAIN;
    return 0;
}

/* Write message seq of len bytes in one of the ways the params mix; retries a
 * full queue until written, failed elsewhere, or stalled.  0 or an error. */
static int write_one(struct soak *s, uint64_t *rng, uint8_t *buf, uint32_t len, uint64_t seq)
{
    const pyq_soak_params_t *p = s->p;
    pyq_soak_result_t *r = &s->res;
    uint64_t since = 0;
    int claim = one_in(rng, p->claim_every);
    int try = !claim && one_in(rng, p->try_every);
    int timed = !claim && !try && one_in(rng, p->timeout_every);
    int aborted = 0;

    if (!claim)
        pyq_pattern_fill(buf, len, seq);
    for (;;) {
        int rc;

        if (claim) {
            void *ptr;
            rc = pyq_writer_claim(s->q, len, WRITE_SLICE_NS, &ptr);
            if (rc == 0) {
                r->claims++;
                if (!aborted && (rnd(rng) & 3) == 0) {
                    /* An aborted claim must leave no trace in the stream. */
                    memset(ptr, 0xEE, len);
                    pyq_writer_abort(s->q);
                    r->aborts++;
                    aborted = 1;
                    continue;
                }
                pyq_pattern_fill(ptr, len, seq);
                return pyq_writer_commit(s->q);
            }
        } else if (try) {
            rc = pyq_writer_try_write(s->q, buf, len);
            if (rc == PYQ_EAGAIN)
                r->try_full++;
        } else if (timed) {
            rc = pyq_writer_write(s->q, buf, len, 1 + (int64_t)(rnd(rng) % p->timeout_max_ns));
            if (rc == PYQ_EAGAIN)
                r->timeouts++;
        } else {
            rc = pyq_writer_write(s->q, buf, len, WRITE_SLICE_NS);
        }
        if (rc != PYQ_EAGAIN)
            return rc;
        /* Full: the reader is behind (or paused).  Bounded: give up on a stall. */
        if ((rc = full_retry(s, &since)) != 0)
            return rc;
        if (try)
            sched_yield();
    }
}

/* Messages seq..seq+k-1 (all len bytes) through write_batch, retried from where
 * a full queue stopped it, like write_one().  0 or an error. */
static int write_batch(struct soak *s, uint8_t *buf, uint32_t len, uint64_t seq, uint32_t k)
{
    uint64_t since = 0, done = 0;

    for (uint32_t i = 0; i < k; i++)
        pyq_pattern_fill(buf + (size_t)i * len, len, seq + i);
    s->res.batches++;
    for (;;) {
        int err = 0;
        int64_t n = pyq_writer_write_batch(s->q, buf + done * len, k - done, len,
                                           WRITE_SLICE_NS, &err);
        done += (uint64_t)n;
        s->res.batched += (uint64_t)n;
        if (done == k)
            return 0;
        if (err != PYQ_EAGAIN)
            return err;
        if (n > 0)
            since = 0; /* progress: a stall is counted from the next failed try */
        if ((err = full_retry(s, &since)) != 0)
            return err;
    }
}

static void *writer_main(void *arg)
{
    struct soak *s = arg;
    const pyq_soak_params_t *p = s->p;
    uint64_t rng = p->seed * 0x9E3779B97F4A7C15ull + p->first_seq + 1;
    uint64_t seq = p->first_seq, n = 0, t0;
    uint8_t *buf = malloc(((size_t)p->max_len + 1) * PYQ_SOAK_BATCH_MAX);
    int rc = buf ? pyq_cpu_pin_opt(p->writer_cpu) : PYQ_ENOMEM;

    if (rc)
        fail(s, 1, rc, seq);
    if (pyq_start_meet(&s->start, 2, rc) != 0)
        goto out;
    t0 = pyq_now_ns();
    while (!failed(s)) {
        uint32_t len;

        if (p->max_messages && n >= p->max_messages)
            break;
        if ((n & 15) == 0 && pyq_now_ns() - t0 >= p->duration_ns)
            break;
        len = pyq_pattern_len(seq, p->min_len, p->max_len, p->size_salt);
        if (p->min_len == p->max_len && one_in(&rng, p->batch_every)) {
            uint32_t k = 1 + (uint32_t)(rnd(&rng) % PYQ_SOAK_BATCH_MAX);
            if (p->max_messages && k > p->max_messages - n)
                k = (uint32_t)(p->max_messages - n);
            rc = write_batch(s, buf, len, seq, k);
            if (rc == 0) {
                seq += k;
                n += k;
            }
        } else {
            rc = write_one(s, &rng, buf, len, seq);
            if (rc == 0) {
                seq++;
                n++;
            }
        }
        if (rc == PYQ_EINTR)
            break;
        if (rc != 0) {
            fail(s, 1, rc, seq);
            break;
        }
        if (one_in(&rng, p->flush_every)) {
            pyq_writer_flush(s->q);
            s->res.flushes++;
        }
        if (one_in(&rng, p->writer_pause_every)) {
            pause_us(&rng, p->writer_pause_max_us);
            s->res.writer_pauses++;
        }
    }
    pyq_writer_flush(s->q);
out:
    free(buf);
    s->written = n;
    /* SOAK-D1: n and the final flush are visible to the reader; pairs with SOAK-D2. */
    atomic_store_explicit(&s->writer_done, 1, memory_order_release);
    return NULL;
}

struct reader_ctx {
    const pyq_soak_params_t *p;
    uint64_t next;
    uint64_t bytes;
};

static int check_message(void *ctx, const void *msg, uint32_t len)
{
    struct reader_ctx *c = ctx;
    const pyq_soak_params_t *p = c->p;

    if (len != pyq_pattern_len(c->next, p->min_len, p->max_len, p->size_salt) ||
        pyq_pattern_check(msg, len, c->next) != 0)
        return PYQ_EBADMSG;
    c->next++;
    c->bytes += len;
    return 0;
}

static void *reader_main(void *arg)
{
    struct soak *s = arg;
    const pyq_soak_params_t *p = s->p;
    pyq_soak_result_t *r = &s->res;
    uint64_t rng = p->seed * 0xD1B54A32D192ED03ull + p->first_seq + 2;
    struct reader_ctx c = { p, p->first_seq, 0 };
    uint64_t idle_since = 0, empty = 0;
    int rc = pyq_cpu_pin_opt(p->reader_cpu);

    if (rc)
        fail(s, 2, rc, c.next);
    if (pyq_start_meet(&s->start, 2, rc) != 0)
        return NULL;
    for (;;) {
        int64_t n = pyq_reader_poll(s->q, 1 + rnd(&rng) % s->max_poll, check_message, &c);

        r->polls++;
        if (n < 0) {
            fail(s, 2, (int)n, c.next);
            break;
        }
        if (n > 0) {
            idle_since = 0;
            if (one_in(&rng, p->reader_pause_every)) {
                pause_us(&rng, p->reader_pause_max_us);
                r->reader_pauses++;
            }
            continue;
        }
        r->empty_polls++;
        /* SOAK-D2: pairs with SOAK-D1: once done, written is final and flushed. */
        if (atomic_load_explicit(&s->writer_done, memory_order_acquire)) {
            if (c.next == p->first_seq + s->written)
                break;
            /* Written but not visible after the final flush: keep polling a
             * while (the queue owes them), then call them lost. */
        } else if (failed(s)) {
            break;
        }
        if (!idle_since) {
            idle_since = pyq_now_ns();
        } else if (pyq_now_ns() - idle_since > s->stall_ns) {
            fail(s, 2, atomic_load_explicit(&s->writer_done, memory_order_acquire)
                           ? PYQ_EBADMSG : PYQ_EAGAIN, c.next);
            break;
        }
        if ((++empty & 63) == 0)
            sched_yield(); /* both threads may share a core on a small CI machine */
        else
            pyq_cpu_relax();
    }
    r->read = c.next - p->first_seq;
    r->bytes = c.bytes;
    /* Nothing may follow the last message. */
    if (!failed(s) && pyq_reader_next_len(s->q) != PYQ_EAGAIN)
        fail(s, 2, PYQ_EBADMSG, c.next);
    return NULL;
}

int pyq_soak_run(pyq_queue_t *q, const pyq_soak_params_t *p, pyq_soak_result_t *out)
{
    struct soak *s;
    pthread_t wt, rt;
    uint64_t t0;
    int rc;

    memset(out, 0, sizeof *out);
    if (!q || !p || p->min_len > p->max_len || p->max_len > block_max(q) ||
        (p->timeout_every && !p->timeout_max_ns))
        return PYQ_EINVAL;
    s = calloc(1, sizeof *s);
    if (!s)
        return PYQ_ENOMEM;
    s->q = q;
    s->p = p;
    s->stall_ns = p->stall_ns ? p->stall_ns : 10000000000ull;
    s->max_poll = p->max_poll ? p->max_poll : 256;
    atomic_init(&s->failed, 0);
    atomic_init(&s->writer_done, 0);
    t0 = pyq_now_ns();
    if ((rc = pthread_create(&rt, NULL, reader_main, s)) != 0) {
        free(s);
        return rc == ENOMEM ? PYQ_ENOMEM : PYQ_EAGAIN;
    }
    if ((rc = pthread_create(&wt, NULL, writer_main, s)) != 0) {
        rc = rc == ENOMEM ? PYQ_ENOMEM : PYQ_EAGAIN;
        fail(s, 1, rc, p->first_seq);
        pyq_start_arrive(&s->start, rc); /* for the writer: the reader gives up */
        atomic_store_explicit(&s->writer_done, 1, memory_order_release);
    } else {
        pthread_join(wt, NULL);
    }
    pthread_join(rt, NULL);
    *out = s->res;
    out->written = s->written;
    out->error = s->error;
    out->error_side = s->side;
    out->error_seq = s->error_seq;
    out->elapsed_ns = pyq_now_ns() - t0;
    free(s);
    return out->error;
}
