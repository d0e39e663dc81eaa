/*
 * bench_adapter.c - one writer loop and one reader loop for every queue behind
 * the adapter interface (pyq_adapter.h), so pyqueue and each peer are measured
 * by exactly the same code (DESIGN §6.6): throughput and single-message round trip.
 *
 * Writer: put the sequence number in the first 8 bytes of a 32-byte message,
 * try_write (or try_write_burst), and on a full queue spin with the relax
 * instruction, sched_yield() every PYQ_BENCH_YIELD_EVERY failures; paced, the
 * twins' pace after each message (pyq_twin_pace); streaming, where the
 * adapter has write_each, PYQ_BENCH_EACH_MAX messages per call.  Reader: read_each of up
 * to PYQ_BENCH_EACH_MAX messages into its own array, every sequence number
 * checked there (burst rows: read_burst of up to `burst`), where the adapter has
 * it; else poll with a callback that checks each one; relax when empty.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/twin_pvt.h"
#include "bench/bench_pvt.h"
#include "runtime/runtime_pvt.h"
#include "bench/pyq_bench.h"

#define BURST_MAX 1024
/* Messages a per-message row's write_each / read_each call takes: the twins' number. */
#define PYQ_BENCH_EACH_MAX PYQ_TWIN_EACH_MAX
#define A_INLINE static inline __attribute__((always_inline))

/* Reader-owned, bumped per message: its own line, away from anything the
 * writer touches (an earlier false-sharing bug here halved a figure). */
struct seq_ctx {
    PYQ_ALIGNED_LINE uint64_t expected;
    uint64_t t_end;
    uint64_t polls, empty_polls, empty_runs; /* the regime (reader-local) */
};

struct arun {
    const pyq_adapter_t *a;
    void *h;
    uint64_t n, gap;
    uint32_t len, burst;
    int32_t wcpu, rcpu;
    pyq_start_t start;
    PYQ_ALIGNED_LINE uint64_t t0;     /* writer's line */
    uint64_t t_wend;
    uint64_t full_retries, full_runs;
    PYQ_ALIGNED_LINE _Atomic int err; /* read-mostly, polled by both */
    struct seq_ctx rd;                /* reader's line(s) */
    struct pyq_twin_stream st;        /* streaming episodes, as the twins' (backlog 0: off) */
};

/* The twins' protocol helpers take the error flag as a plain int (they are
 * shared with C++ peers and use __atomic builtins on it). */
static inline const int *err_word(_Atomic int *err)
{
    return (const int *)err;
}

static int seq_next(void *ctx, const void *msg, uint32_t len)
{
    struct seq_ctx *c = ctx;
    uint64_t seq;

    memcpy(&seq, msg, 8);
    if (seq != c->expected)
        return PYQ_EBADMSG;
    c->expected++;
    return 0;
}

/* A full queue: the common retry policy.  Returns nonzero to give up. */
static inline int full_wait(uint64_t *fails, _Atomic int *err)
{
    if (++*fails % PYQ_BENCH_YIELD_EVERY == 0) {
        sched_yield();
        return atomic_load_explicit(err, memory_order_relaxed);
    }
    pyq_cpu_relax();
    return 0;
}

/* The writer's loops, one per (burst, paced) pair as the twins' (adapters/
 * twin_pvt.h), so the flat-out loops test nothing extra; the pace is the twins'
 * schedule (pyq_twin_pace).  0, an adapter code, or GAVE_UP (the reader
 * failed: its code stays in err). */
#define GAVE_UP 1

A_INLINE int write_each(struct arun *r, uint8_t *buf, struct pyq_twin_stream_w *sw,
                        const int paced)
{
    const pyq_adapter_t *a = r->a;
    uint64_t fails = 0, waits = 0, due = paced ? pyq_twin_stamp() : 0;
    int rc = 0;

    for (uint64_t i = 0; i < r->n; i++) {
        memcpy(buf, &i, 8);
        if ((rc = a->try_write(r->h, buf, r->len)) == PYQ_EAGAIN) {
            waits++; /* one wait for room, however many retries it takes */
            do {
                if (!paced) /* at every retry: pyq_twin_stream_full */
                    pyq_twin_stream_full(&r->st, sw, i);
                if (full_wait(&fails, &r->err)) {
                    rc = GAVE_UP;
                    goto out;
                }
            } while ((rc = a->try_write(r->h, buf, r->len)) == PYQ_EAGAIN);
        }
        if (rc)
            break;
        if (paced)
            pyq_twin_pace(&due, r->gap);
        else
            pyq_twin_stream_wrote(&r->st, sw, i + 1);
    }
out:
    r->full_retries = fails;
    r->full_runs = waits;
    return rc;
}

/* burst: try_write_burst (size r->burst), or write_each (the per-message rows'
 * streaming writer, size PYQ_BENCH_EACH_MAX). */
A_INLINE int write_bursts(struct arun *r, uint8_t *buf, struct pyq_twin_stream_w *sw,
                          pyq_twin_burst_fn burst, uint32_t size, const int paced)
{
    uint64_t fails = 0, waits = 0, due = paced ? pyq_twin_stamp() : 0;
    int rc = 0;

    for (uint64_t i = 0; i < r->n && !rc;) {
        uint32_t k = (uint32_t)(r->n - i < size ? r->n - i : size);
        uint32_t off = 0, waited = 0;

        for (uint32_t j = 0; j < k; j++) {
            uint64_t s = i + j;
            memcpy(buf + (size_t)j * r->len, &s, 8);
        }
        while (off < k) {
            int64_t w = burst(r->h, buf + (size_t)off * r->len, k - off, r->len);
            if (w < 0) {
                rc = (int)w;
                break;
            }
            off += (uint32_t)w;
            if (w == 0) {
                waits += !waited; /* one wait per burst, however many retries */
                if (!paced) /* at every retry: pyq_twin_stream_full */
                    pyq_twin_stream_full(&r->st, sw, i + off);
                waited = 1;
                if (full_wait(&fails, &r->err)) {
                    rc = GAVE_UP;
                    goto out;
                }
            }
        }
        i += k;
        if (paced)
            pyq_twin_pace(&due, r->gap * k);
        else
            pyq_twin_stream_wrote(&r->st, sw, i);
    }
out:
    r->full_retries = fails;
    r->full_runs = waits;
    return rc;
}

static void *a_writer(void *arg)
{
    struct arun *r = arg;
    uint8_t buf[BURST_MAX * 32] __attribute__((aligned(64)));
    struct pyq_twin_stream_w sw;
    int rc = pyq_cpu_pin_opt(r->wcpu);

    memset(buf, 0x5A, sizeof(buf));
    if ((rc = pyq_start_meet(&r->start, 2, rc)) != 0) {
        atomic_store_explicit(&r->err, rc, memory_order_relaxed);
        return NULL;
    }
    pyq_twin_stream_w_init(&r->st, &sw);
    r->t0 = pyq_now_ns();
    if (r->burst)
        rc = r->gap ? write_bursts(r, buf, &sw, r->a->try_write_burst, r->burst, 1)
                    : write_bursts(r, buf, &sw, r->a->try_write_burst, r->burst, 0);
    else if (!r->gap && r->a->write_each)
        rc = write_bursts(r, buf, &sw, r->a->write_each, PYQ_BENCH_EACH_MAX, 0);
    else
        rc = r->gap ? write_each(r, buf, &sw, 1) : write_each(r, buf, &sw, 0);
    if (rc != GAVE_UP)
        r->a->flush(r->h);
    r->t_wend = pyq_now_ns();
    pyq_twin_stream_end(&r->st, &sw, r->n);
    if (rc && rc != GAVE_UP)
        atomic_store_explicit(&r->err, rc, memory_order_relaxed);
    return NULL;
}

/* read_burst's k messages checked in place: k, or PYQ_EBADMSG. */
A_INLINE int64_t check_burst(const uint8_t *buf, int64_t k, uint32_t len, uint64_t *expected)
{
    for (int64_t j = 0; j < k; j++) {
        uint64_t seq;

        memcpy(&seq, buf + (size_t)j * len, 8);
        if (seq != *expected)
            return PYQ_EBADMSG;
        ++*expected;
    }
    return k;
}

/* bulk: read (read_burst for the burst rows, read_each for the others) of up to
 * `max` messages into buf, checked there -- no callback per message; else poll
 * with the check as its callback, one call per message. */
A_INLINE void read_loop(struct arun *r, uint8_t *buf, pyq_twin_read_fn read, uint32_t max,
                        const int bulk)
{
    const pyq_adapter_t *a = r->a;
    uint64_t polls = 0, empty = 0, runs = 0, expected = 0;
    int idle = 0;

    if (pyq_twin_stream_on(&r->st) && pyq_twin_stream_hold(&r->st, 0, err_word(&r->err)) < 0)
        goto out;
    while ((bulk ? expected : r->rd.expected) < r->n &&
           !atomic_load_explicit(&r->err, memory_order_relaxed)) {
        int64_t k;

        if (bulk) {
            uint64_t left = r->n - expected;

            k = read(r->h, buf, (uint32_t)(left < max ? left : max), r->len);
            if (k > 0)
                k = check_burst(buf, k, r->len, &expected);
        } else {
            k = a->poll(r->h, UINT64_MAX, seq_next, &r->rd);
        }
        polls++;
        if (k < 0) {
            atomic_store_explicit(&r->err, (int)k, memory_order_relaxed);
            break;
        }
        if (k == 0) {
            empty++;
            if (!idle) { /* a catch-up: the first empty poll after messages */
                runs++;
                if (r->st.open && pyq_twin_stream_caught(&r->st, bulk ? expected : r->rd.expected,
                                                         1, err_word(&r->err)) < 0)
                    break;
            }
            idle = 1;
            pyq_cpu_relax();
        } else {
            idle = 0;
        }
    }
out:
    if (bulk)
        r->rd.expected = expected;
    r->rd.polls = polls;
    r->rd.empty_polls = empty;
    r->rd.empty_runs = runs;
}

static void *a_reader(void *arg)
{
    struct arun *r = arg;
    const int burst = r->burst && r->a->read_burst, each = !r->burst && r->a->read_each;
    uint8_t buf[BURST_MAX * 32] __attribute__((aligned(64)));
    int rc = pyq_start_meet(&r->start, 2, pyq_cpu_pin_opt(r->rcpu));

    if (rc)
        atomic_store_explicit(&r->err, rc, memory_order_relaxed);
    if (burst)
        read_loop(r, buf, r->a->read_burst, r->burst, 1);
    else if (each)
        read_loop(r, buf, r->a->read_each, PYQ_BENCH_EACH_MAX, 1);
    else
        read_loop(r, buf, NULL, 0, 0);
    r->rd.t_end = pyq_now_ns();
    pyq_twin_stream_caught(&r->st, r->rd.expected, 0, err_word(&r->err));
    return NULL;
}

static int adapter_run(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                       uint64_t gap_ticks, uint64_t backlog, pyq_twin_episode_t *episodes,
                       uint32_t max_episodes, int32_t writer_cpu, int32_t reader_cpu,
                       pyq_bench_result_t *res)
{
    struct arun *r;
    uint32_t len = PYQ_ADAPTER_MSG_SIZE;
    int rc;

    memset(res, 0, sizeof(*res));
    if (!a || !h || burst > BURST_MAX || (burst && !a->try_write_burst) ||
        (backlog && (gap_ticks || !episodes || !max_episodes)))
        return PYQ_EINVAL;
    r = aligned_alloc(PYQ_CACHELINE, sizeof(*r));
    if (!r)
        return PYQ_ENOMEM;
    memset(r, 0, sizeof(*r));
    r->a = a;
    r->h = h;
    r->n = n;
    r->gap = gap_ticks;
    r->len = len;
    r->burst = burst;
    r->wcpu = writer_cpu;
    r->rcpu = reader_cpu;
    pyq_twin_stream_init(&r->st, backlog, episodes, max_episodes);
    rc = pyq_bench_join_two(a_writer, a_reader, r, &r->start);
    res->episodes = r->st.recorded;
    res->messages = r->rd.expected;
    res->elapsed_ns = r->rd.t_end - r->t0;
    res->end_ns = r->rd.t_end;
    res->writer_ns = r->t_wend - r->t0;
    res->full_retries = r->full_retries;
    res->full_runs = r->full_runs;
    res->polls = r->rd.polls;
    res->empty_polls = r->rd.empty_polls;
    res->empty_runs = r->rd.empty_runs;
    res->error = rc ? rc : atomic_load_explicit(&r->err, memory_order_relaxed);
    free(r);
    return res->error;
}

int pyq_bench_adapter_paced(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                            uint64_t gap_ticks, int32_t writer_cpu, int32_t reader_cpu,
                            pyq_bench_result_t *res)
{
    return adapter_run(a, h, n, burst, gap_ticks, 0, NULL, 0, writer_cpu, reader_cpu, res);
}

int pyq_bench_adapter_stream(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                             uint64_t backlog, pyq_twin_episode_t *episodes,
                             uint32_t max_episodes, int32_t writer_cpu, int32_t reader_cpu,
                             pyq_bench_result_t *res)
{
    if (!backlog)
        return PYQ_EINVAL;
    return adapter_run(a, h, n, burst, 0, backlog, episodes, max_episodes, writer_cpu,
                       reader_cpu, res);
}

int pyq_bench_adapter_throughput(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                                 int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *res)
{
    return pyq_bench_adapter_paced(a, h, n, burst, 0, writer_cpu, reader_cpu, res);
}

/* ---- round trip ------------------------------------------------------------ */

/* One loop for two instruments: the adapter rows (a != NULL: every call through
 * the vtable, as for the peers) and pyqueue through its own API (a == NULL,
 * handles are pyq_queue_t *: what a C program using pyqueue would run).  The
 * bodies are always_inline and `direct` is a constant in each caller, so each
 * instrument gets its own loop with no test left in it. */
#define RT_INLINE static inline __attribute__((always_inline))

struct art {
    const pyq_adapter_t *a;
    void *ab, *ba;
    uint64_t trips;
    int32_t cpu_b;
    pyq_start_t start;
    PYQ_ALIGNED_LINE _Atomic int err;
};

struct one_ctx {
    uint64_t seq;
    int ok;
};

static int take(void *ctx, const void *msg, uint32_t len)
{
    struct one_ctx *o = ctx;
    uint64_t v;

    memcpy(&v, msg, 8);
    o->ok = (v == o->seq);
    return 0;
}

/* Spin until one message arrives; check it is seq.  An adapter with read_spin
 * spins in its own translation unit (one call through the table per message:
 * a call per empty poll cost ck_ring ~160 ns a round trip, DESIGN §8.3);
 * otherwise, and for pyqueue's own API, spin on poll(max 1) here. */
RT_INLINE int recv_seq(const pyq_adapter_t *a, void *h, uint64_t seq, _Atomic int *err,
                       const int direct)
{
    struct one_ctx o = { seq, 0 };
    int64_t k;

    if (!direct && a->read_spin) {
        if ((k = a->read_spin(h, seq, err_word(err))) == 0)
            return -1;
        return k < 0 ? (int)k : 0;
    }
    while ((k = direct ? pyq_reader_poll(h, 1, take, &o) : a->poll(h, 1, take, &o)) == 0)
        if (atomic_load_explicit(err, memory_order_relaxed))
            return -1;
    if (k < 0)
        return (int)k;
    return o.ok ? 0 : PYQ_EBADMSG;
}

RT_INLINE int send_seq(const pyq_adapter_t *a, void *h, uint8_t *msg, uint64_t seq,
                       _Atomic int *err, const int direct)
{
    uint64_t fails = 0;
    int rc;

    memcpy(msg, &seq, 8);
    while ((rc = direct ? pyq_writer_try_write(h, msg, PYQ_ADAPTER_MSG_SIZE)
                        : a->try_write(h, msg, PYQ_ADAPTER_MSG_SIZE)) == PYQ_EAGAIN)
        if (full_wait(&fails, err))
            return -1;
    if (direct)
        pyq_writer_flush(h);
    else
        a->flush(h);
    return rc;
}

RT_INLINE void echo_loop(struct art *r, const int direct)
{
    uint8_t msg[PYQ_ADAPTER_MSG_SIZE] __attribute__((aligned(8)));
    int rc = pyq_start_meet(&r->start, 2, pyq_cpu_pin_opt(r->cpu_b));

    memset(msg, 0, sizeof(msg));
    for (uint64_t i = 0; i < r->trips && !rc; i++) {
        if ((rc = recv_seq(r->a, r->ab, i, &r->err, direct)) != 0)
            break;
        rc = send_seq(r->a, r->ba, msg, i, &r->err, direct);
    }
    if (rc > 0 || rc < -1)
        atomic_store_explicit(&r->err, rc, memory_order_relaxed);
}

static void *echo_adapter(void *arg)
{
    echo_loop(arg, 0);
    return NULL;
}

static void *echo_direct(void *arg)
{
    echo_loop(arg, 1);
    return NULL;
}

/* Side A's timed loop; returns the first error. */
RT_INLINE int timed_loop(struct art *r, uint64_t *samples_ns, int cyc, const int direct)
{
    uint8_t msg[PYQ_ADAPTER_MSG_SIZE] __attribute__((aligned(8)));
    int rc = 0;

    memset(msg, 0, sizeof(msg));
    for (uint64_t i = 0; i < r->trips && !rc; i++) {
        uint64_t t0 = pyq_bench_stamp(cyc);
        rc = send_seq(r->a, r->ab, msg, i, &r->err, direct);
        if (!rc)
            rc = recv_seq(r->a, r->ba, i, &r->err, direct);
        if (i >= PYQ_BENCH_WARMUP_TRIPS)
            samples_ns[i - PYQ_BENCH_WARMUP_TRIPS] = pyq_bench_stamp(cyc) - t0;
    }
    return rc;
}

static int roundtrip(const pyq_adapter_t *a, void *ab, void *ba, int32_t cpu_a, int32_t cpu_b,
                     uint32_t round_trips, uint64_t *samples_ns)
{
    struct art *r;
    pthread_t t;
    int cyc = pyq_bench_timer_cycles();
    int rc;

    r = aligned_alloc(PYQ_CACHELINE, sizeof(*r));
    if (!r)
        return PYQ_ENOMEM;
    memset(r, 0, sizeof(*r));
    r->a = a;
    r->ab = ab;
    r->ba = ba;
    r->trips = (uint64_t)round_trips + PYQ_BENCH_WARMUP_TRIPS;
    r->cpu_b = cpu_b;
    if ((rc = pthread_create(&t, NULL, a ? echo_adapter : echo_direct, r)) != 0) {
        rc = -rc;
        goto out;
    }
    /* A pins itself once the echo exists (it inherits A's affinity: stuck on A's
     * CPU behind a spinning SCHED_FIFO A it would never run).  Either side's
     * pinning failure: neither runs. */
    if ((rc = pyq_start_meet(&r->start, 2, pyq_cpu_pin_opt(cpu_a))) == 0)
        rc = a ? timed_loop(r, samples_ns, cyc, 0) : timed_loop(r, samples_ns, cyc, 1);
    /* -1: A gave up because the echo flagged an error; keep the echo's code
     * (overwriting it turned an echo-side PYQ_EBADMSG into PYQ_EINTR). */
    if (rc && rc != -1)  /* the echo may be spinning on ab: tell it to give up */
        atomic_store_explicit(&r->err, rc, memory_order_relaxed);
    pthread_join(t, NULL);
    if (!rc || rc == -1)
        rc = atomic_load_explicit(&r->err, memory_order_relaxed);
    if (!rc)
        pyq_bench_to_ns(cyc, samples_ns, round_trips);
out:
    free(r);
    return rc == -1 ? PYQ_EINTR : rc;
}

int pyq_bench_adapter_roundtrip(const pyq_adapter_t *a, void *ab, void *ba, int32_t cpu_a,
                                int32_t cpu_b, uint32_t round_trips, uint64_t *samples_ns)
{
    if (!a || !ab || !ba || ab == ba)
        return PYQ_EINVAL;
    return roundtrip(a, ab, ba, cpu_a, cpu_b, round_trips, samples_ns);
}

int pyq_bench_queue_roundtrip(pyq_queue_t *ab, pyq_queue_t *ba, int32_t cpu_a, int32_t cpu_b,
                              uint32_t round_trips, uint64_t *samples_ns)
{
    if (!ab || !ba || ab == ba)
        return PYQ_EINVAL;
    return roundtrip(NULL, ab, ba, cpu_a, cpu_b, round_trips, samples_ns);
}
