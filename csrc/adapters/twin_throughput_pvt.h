/*
 * twin_throughput_pvt.h - the throughput loops (writer, reader) and the run
 * that starts, joins and reports them, for the driver and every twin
 * (twin_pvt.h says how each is instantiated).  Never installed.
 */
#ifndef PYQ_TWIN_THROUGHPUT_PVT_H
#define PYQ_TWIN_THROUGHPUT_PVT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/join2_pvt.h"
#include "adapters/twin_base_pvt.h"
#include "adapters/twin_episode_pvt.h"

/* One throughput run: the writer's and the reader's state on their own lines. */
struct pyq_twin_run {
    const pyq_adapter_t *a;      /* the queue's table (the driver calls through it;
                                    NULL for bench.c's pyqueue_direct rows) */
    void *q;
    uint64_t n, gap, window;     /* window: UINT64_MAX when none are kept */
    pyq_twin_window_t *win;
    uint32_t max_win, burst;
    int32_t wcpu, rcpu;
    PYQ_TWIN_LINE int ready;     /* start barrier */
    PYQ_TWIN_LINE int err;       /* first error: read-mostly, polled by both */
    PYQ_TWIN_LINE uint64_t t0;   /* the writer's line */
    uint64_t t_wend, full, full_runs;
    uint32_t len;                /* bytes a message (p->queue.msg_size; 0: the rows') */
    PYQ_TWIN_LINE uint64_t got;  /* the reader's line */
    uint64_t polls, empty, empty_runs, t_end;
    struct pyq_twin_stream st;   /* streaming episodes (backlog 0: off) */
};

/* pyq_join2's abandon hook: the writer never started, so flag the error and
 * arrive at the barrier in its place; the reader leaves it and stops. */
static inline void pyq_twin_run_abandon(void *arg, int rc)
{
    struct pyq_twin_run *r = (struct pyq_twin_run *)arg;

    pyq_twin_fail(&r->err, rc);
    /* The writer's arrival (as in pyq_twin_meet): the flag above before the
     * count; pairs with the reader's acquire load there. */
    __atomic_fetch_add(&r->ready, 1, __ATOMIC_ACQ_REL);
}

/* Window k is complete on the writer's side: message (k + 1) * window - 1 written. */
PYQ_TWIN_RARE uint64_t
pyq_twin_writer_mark(struct pyq_twin_run *r, uint64_t next, uint64_t fails, uint64_t waits)
{
    uint64_t k = next / r->window;

    if (k < r->max_win) {
        r->win[k].writer_ns = pyq_twin_now_ns();
        r->win[k].full_retries = fails;
        r->win[k].full_runs = waits;
    }
    return next + r->window;
}

PYQ_TWIN_RARE uint64_t
pyq_twin_reader_mark(struct pyq_twin_run *r, uint64_t next, uint64_t got, uint64_t empty,
                     uint64_t runs)
{
    uint64_t t = pyq_twin_now_ns();

    for (; got > next; next += r->window) {
        uint64_t k = next / r->window;
        if (k < r->max_win) {
            r->win[k].reader_ns = t;
            r->win[k].empty_polls = empty;
            r->win[k].empty_runs = runs;
        }
    }
    return next;
}

/* One message of `len` bytes per call.  inside: try_write waits for room
 * inside its library (pyq_twin_full_waited).  Stops at the queue's error, or
 * when the other side failed (its code stays in the error word). */
PYQ_TWIN_INLINE void pyq_twin_write_each(struct pyq_twin_run *r, pyq_twin_write_fn try_write,
                                         struct pyq_twin_stream_w *sw, const int paced,
                                         uint32_t len, const int inside)
{
    pyq_twin_msg_any_t m;
    uint64_t fails = 0, waits = 0, next = r->window - 1, i, due = paced ? pyq_twin_stamp() : 0;
    int rc = 0;

    memset(&m, 0x5A, len);
    for (i = 0; i < r->n; i++) {
        m.m.seq = i;
        if ((rc = try_write(r->q, &m, len)) == PYQ_EAGAIN) {
            waits++; /* one wait for room, however many retries it takes */
            do {
                if (!paced) /* at every retry: pyq_twin_stream_full */
                    pyq_twin_stream_full(&r->st, sw, i);
                if (inside ? pyq_twin_full_waited(&fails, &r->err)
                           : pyq_twin_full_wait(&fails, &r->err))
                    goto out;
            } while ((rc = try_write(r->q, &m, len)) == PYQ_EAGAIN);
        }
        if (rc)
            break;
        if (__builtin_expect(i == next, 0))
            next = pyq_twin_writer_mark(r, next, fails, waits);
        if (paced)
            pyq_twin_pace(&due, r->gap);
        else
            pyq_twin_stream_wrote(&r->st, sw, i + 1);
    }
out:
    r->full = fails;
    r->full_runs = waits;
    if (rc && rc != PYQ_EAGAIN)
        pyq_twin_fail(&r->err, rc);
}

/* Up to `size` messages per call of `burst` (the library's burst call, or the
 * per-message rows' write_each), retried from where it stopped. */
PYQ_TWIN_INLINE void pyq_twin_write_bursts(struct pyq_twin_run *r, pyq_twin_burst_fn burst,
                                           uint32_t size, pyq_twin_msg_t *buf,
                                           struct pyq_twin_stream_w *sw, const int paced)
{
    uint64_t fails = 0, waits = 0, next = r->window - 1, due = paced ? pyq_twin_stamp() : 0;
    int64_t rc = 0;

    for (uint32_t j = 0; j < size; j++)
        memset(&buf[j], 0x5A, sizeof buf[j]);
    for (uint64_t i = 0; i < r->n;) {
        uint32_t k = (uint32_t)(r->n - i < size ? r->n - i : size);
        uint32_t off = 0, waited = 0;

        for (uint32_t j = 0; j < k; j++)
            buf[j].seq = i + j;
        while (off < k) {
            if ((rc = burst(r->q, buf + off, k - off, sizeof *buf)) < 0)
                goto out;
            off += (uint32_t)rc;
            if (rc == 0) {
                waits += !waited; /* one wait per burst, however many retries */
                if (!paced) /* at every retry: pyq_twin_stream_full */
                    pyq_twin_stream_full(&r->st, sw, i + off);
                waited = 1;
                if (pyq_twin_full_wait(&fails, &r->err))
                    goto out;
            }
        }
        rc = 0;
        i += k;
        while (__builtin_expect(i > next, 0))
            next = pyq_twin_writer_mark(r, next, fails, waits);
        if (paced)
            pyq_twin_pace(&due, r->gap * k);
        else
            pyq_twin_stream_wrote(&r->st, sw, i);
    }
out:
    r->full = fails;
    r->full_runs = waits;
    if (rc < 0)
        pyq_twin_fail(&r->err, (int)rc);
}

/* A burst's array, line-aligned: with malloc's 16 bytes half the 32-byte
 * messages would straddle two lines.  NULL when out of memory. */
static inline pyq_twin_msg_t *pyq_twin_burst_buf(uint32_t n)
{
    void *p = NULL;

    return posix_memalign(&p, 64, (size_t)n * sizeof(pyq_twin_msg_t)) == 0 ?
           (pyq_twin_msg_t *)p : NULL;
}

/* The writer thread: pin, meet the reader, write r->n messages, flush.  burst:
 * the burst rows' call (r->burst > 0); each: the per-message rows' streaming
 * writer (flat out only); either may be NULL.  One loop per (call, paced)
 * pair, each paced argument a constant: the flat-out loops test nothing extra.
 * try_write's messages are `len` bytes (the others' PYQ_ADAPTER_MSG_SIZE);
 * inside: it waits for room inside its library, as pyq_twin_write_each. */
PYQ_TWIN_INLINE void pyq_twin_writer_as(struct pyq_twin_run *r, pyq_twin_write_fn try_write,
                                        pyq_twin_burst_fn burst, pyq_twin_burst_fn each,
                                        pyq_twin_flush_fn flush, uint32_t len, const int inside)
{
    pyq_twin_msg_t *buf = NULL;
    struct pyq_twin_stream_w sw;
    int rc = pyq_twin_pin(r->wcpu);
    const int bursts = burst && r->burst, per = each && !r->burst && !r->gap;

    if (!rc && (bursts || per) &&
        !(buf = pyq_twin_burst_buf(bursts ? r->burst : PYQ_TWIN_EACH_MAX)))
        rc = PYQ_ENOMEM;
    if (rc)
        pyq_twin_fail(&r->err, rc);
    pyq_twin_meet(&r->ready);
    if (rc || pyq_twin_failed(&r->err)) {
        free(buf);
        return;
    }
    pyq_twin_stream_w_init(&r->st, &sw);
    r->t0 = pyq_twin_now_ns();
    if (bursts) {
        if (r->gap)
            pyq_twin_write_bursts(r, burst, r->burst, buf, &sw, 1);
        else
            pyq_twin_write_bursts(r, burst, r->burst, buf, &sw, 0);
    } else if (per) { /* per: constant 0 where each is NULL (no call left) */
        pyq_twin_write_bursts(r, each, PYQ_TWIN_EACH_MAX, buf, &sw, 0);
    } else if (r->gap) {
        pyq_twin_write_each(r, try_write, &sw, 1, len, inside);
    } else {
        pyq_twin_write_each(r, try_write, &sw, 0, len, inside);
    }
    flush(r->q);
    r->t_wend = pyq_twin_now_ns();
    pyq_twin_stream_end(&r->st, &sw, r->n);
    free(buf);
}

/* The rows' writer: PYQ_ADAPTER_MSG_SIZE-byte messages, a try_write that
 * never waits (pyq_adapter.h). */
PYQ_TWIN_INLINE void pyq_twin_writer(struct pyq_twin_run *r, pyq_twin_write_fn try_write,
                                     pyq_twin_burst_fn burst, pyq_twin_burst_fn each,
                                     pyq_twin_flush_fn flush)
{
    pyq_twin_writer_as(r, try_write, burst, each, flush, PYQ_ADAPTER_MSG_SIZE, 0);
}

/* read's messages checked in place: the count, or PYQ_EBADMSG. */
PYQ_TWIN_INLINE int64_t pyq_twin_check(const pyq_twin_msg_t *buf, int64_t k,
                                       struct pyq_twin_seq *s)
{
    for (int64_t j = 0; j < k; j++) {
        if (buf[j].seq != s->expected)
            return PYQ_EBADMSG;
        s->expected++;
    }
    return k;
}

/* bulk: read (read_burst for the burst rows, read_each for the others) of up to
 * `max` messages into buf and the check over the array; else poll with the
 * check as its callback.  Never more than is left, and never more than one
 * window, so each window gets its own stamp.  from: messages already read
 * (0 but for bench.c's reader of the Python rows, which takes the first one
 * before its clock starts). */
PYQ_TWIN_INLINE void pyq_twin_read_loop(struct pyq_twin_run *r, pyq_twin_poll_fn poll,
                                        pyq_twin_read_fn read, pyq_twin_msg_t *buf,
                                        uint32_t max, const int bulk, uint64_t from)
{
    struct pyq_twin_seq s = {from};
    uint64_t polls = 0, empty = 0, runs = 0, next = r->window - 1;
    int idle = 0;

    if (pyq_twin_stream_on(&r->st) && pyq_twin_stream_hold(&r->st, 0, &r->err) < 0)
        goto out;
    while (s.expected < r->n && !pyq_twin_failed(&r->err)) {
        uint64_t left = r->n - s.expected;
        int64_t k;

        if (bulk)
            k = pyq_twin_check(buf, read(r->q, buf, (uint32_t)(left < max ? left : max),
                                         sizeof *buf), &s);
        else
            k = poll(r->q, left < r->window ? left : r->window, pyq_twin_next, &s);
        polls++;
        if (k < 0) {
            pyq_twin_fail(&r->err, (int)k);
            break;
        }
        if (k == 0) {
            empty++;
            if (!idle) { /* a catch-up: the first empty poll after messages */
                runs++;
                if (r->st.open && pyq_twin_stream_caught(&r->st, s.expected, 1, &r->err) < 0)
                    break;
            }
            idle = 1;
            pyq_twin_relax();
        } else {
            idle = 0;
            if (__builtin_expect(s.expected > next, 0))
                next = pyq_twin_reader_mark(r, next, s.expected, empty, runs);
        }
    }
out:
    r->t_end = pyq_twin_now_ns();
    pyq_twin_stream_caught(&r->st, s.expected, 0, &r->err);
    r->got = s.expected;
    r->polls = polls;
    r->empty = empty;
    r->empty_runs = runs;
}

/* The reader thread: pin, meet the writer, read and check r->n messages.
 * read: the burst rows' bulk read (r->burst > 0); each: the per-message rows'
 * (r->burst 0); either may be NULL (then poll, with the check as callback). */
PYQ_TWIN_INLINE void pyq_twin_reader(struct pyq_twin_run *r, pyq_twin_poll_fn poll,
                                     pyq_twin_read_fn read, pyq_twin_read_fn each)
{
    pyq_twin_msg_t *buf = NULL;
    int rc = pyq_twin_pin(r->rcpu);
    const int burst = read && r->burst, per = each && !r->burst;

    if (!rc && (burst || per) && !(buf = pyq_twin_burst_buf(burst ? r->burst : PYQ_TWIN_EACH_MAX)))
        rc = PYQ_ENOMEM;
    if (rc)
        pyq_twin_fail(&r->err, rc);
    pyq_twin_meet(&r->ready);
    if (buf && burst)
        pyq_twin_read_loop(r, poll, read, buf, r->burst, 1, 0);
    else if (buf && per) /* per: constant 0 where each is NULL (no call left) */
        pyq_twin_read_loop(r, poll, each, buf, PYQ_TWIN_EACH_MAX, 1, 0);
    else
        pyq_twin_read_loop(r, poll, read, buf, 0, 0, 0);
    free(buf);
}

/* Nonzero when a run cannot take p: burst unsupported or too large, window
 * not a power of two, no room for its records, backlog with a pace or no
 * room for episodes, a message size (0: the rows') out of 8..PYQ_TWIN_MSG_MAX. */
static inline int pyq_twin_params_bad(const pyq_twin_params_t *p, int has_burst,
                                      const pyq_twin_window_t *win, uint32_t max_win)
{
    uint32_t len = p->queue.msg_size;

    return (len && (len < 8 || len > PYQ_TWIN_MSG_MAX)) ||
           p->burst > PYQ_TWIN_BURST_MAX || (p->burst && !has_burst) ||
           (p->window & (p->window - 1)) || (max_win && !win) ||
           (p->backlog && (p->gap_ticks || !p->episodes || !p->max_episodes));
}

/* Run writer w and reader rd (instantiations of pyq_twin_writer / _reader)
 * over queue q (r->a = a, for threads that call through it), as p says;
 * windows into win[max_win].  Fills res
 * (not res->capacity) and returns res->error: 0, PYQ_EINVAL
 * (pyq_twin_params_bad), PYQ_ENOMEM, PYQ_EBADMSG, or a pinning / pthread /
 * queue code. */
static inline int pyq_twin_run_go(const pyq_adapter_t *a, void *q, int has_burst,
                                  const pyq_twin_params_t *p, pyq_twin_window_t *win,
                                  uint32_t max_win, pyq_twin_result_t *res,
                                  void *(*w)(void *), void *(*rd)(void *))
{
    struct pyq_twin_run *r;
    int rc;

    memset(res, 0, sizeof *res);
    res->samples_in_ticks = PYQ_TWIN_TICKS;
    if (pyq_twin_params_bad(p, has_burst, win, max_win))
        return res->error = PYQ_EINVAL;
    if (posix_memalign((void **)&r, 64, sizeof *r) != 0)
        return res->error = PYQ_ENOMEM;
    memset(r, 0, sizeof *r);
    r->a = a;
    r->q = q;
    r->n = p->messages;
    r->gap = p->gap_ticks;
    r->window = p->window ? p->window : UINT64_MAX;
    r->win = win;
    r->max_win = win ? max_win : 0;
    r->burst = p->burst;
    r->len = p->queue.msg_size ? p->queue.msg_size : PYQ_ADAPTER_MSG_SIZE;
    r->wcpu = p->writer_cpu;
    r->rcpu = p->reader_cpu;
    pyq_twin_stream_init(&r->st, p->backlog, p->episodes, p->max_episodes);
    rc = pyq_join2(w, rd, r, pyq_twin_run_abandon);
    res->episodes = r->st.recorded;
    res->messages = r->got;
    res->start_ns = r->t0;
    res->elapsed_ns = r->t_end - r->t0;
    res->writer_ns = r->t_wend > r->t0 ? r->t_wend - r->t0 : 0;
    res->full_retries = r->full;
    res->full_runs = r->full_runs;
    res->polls = r->polls;
    res->empty_polls = r->empty;
    res->empty_runs = r->empty_runs;
    if (p->window) {
        uint64_t k = r->got / p->window;
        res->windows = (uint32_t)(k < r->max_win ? k : r->max_win);
    }
    res->error = rc ? rc : pyq_twin_failed(&r->err);
    if (res->error == PYQ_EBADMSG)
        res->first_bad = r->got;
    free(r);
    return res->error;
}

/* A twin's run: a new queue from the adapter's create(), warmed, run, destroyed. */
static inline int pyq_twin_throughput_run(const pyq_adapter_t *a, int has_burst,
                                          const pyq_twin_params_t *p, pyq_twin_window_t *win,
                                          uint32_t max_win, pyq_twin_result_t *res,
                                          void *(*w)(void *), void *(*rd)(void *))
{
    void *q = NULL;
    int rc;

    memset(res, 0, sizeof *res);
    res->samples_in_ticks = PYQ_TWIN_TICKS;
    if (pyq_twin_params_bad(p, has_burst, win, max_win))
        return res->error = PYQ_EINVAL;
    if ((rc = a->create(&p->queue, &q)) != 0 || (rc = pyq_twin_warm(a, q)) != 0) {
        if (q)
            a->destroy(q);
        return res->error = rc;
    }
    rc = pyq_twin_run_go(a, q, has_burst, p, win, max_win, res, w, rd);
    res->capacity = a->capacity(q);
    a->destroy(q);
    return rc;
}

#endif /* PYQ_TWIN_THROUGHPUT_PVT_H */
