/*
 * bench.c - measured loops of the core benchmark (see pyq_bench.h): pyqueue
 * through its own API -- the pyqueue_direct rows and the C reader of the
 * Python rows -- and the ping-pong floor.  The throughput loops are the
 * twins' (adapters/twin_pvt.h), instantiated with pyqueue's calls as constant
 * pointers exactly as pyqueue_direct's twin (bench/twins.c) instantiates
 * them: the row and its twin run one body.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "adapters/twin_pvt.h"
#include "bench/pq_calls_pvt.h"
#include "runtime/runtime_pvt.h"
#include "bench/bench_pvt.h"
#include "bench/pyq_bench.h"

#define WARMUP_TRIPS PYQ_BENCH_WARMUP_TRIPS

/* ---- queue throughput ---------------------------------------------------- */


/* The loops' threads (named *_twin_* as the twins' are: tests/lab/test_twins.py
 * checks that no call to the queue is left indirect in them). */
PYQ_TWIN_FLAT static void *direct_twin_writer(void *arg)
{
    struct pyq_twin_run *r = arg;

    pyq_twin_writer_as(r, pq_write, NULL, NULL, pq_flush, r->len, 1);
    return NULL;
}

PYQ_TWIN_FLAT static void *direct_twin_reader(void *arg)
{
    pyq_twin_reader(arg, pq_poll, NULL, NULL);
    return NULL;
}

static int queue_run(pyq_queue_t *q, uint64_t n, uint32_t msg_size, uint64_t gap_ticks,
                     uint64_t backlog, pyq_twin_episode_t *episodes, uint32_t max_episodes,
                     int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *res)
{
    pyq_twin_params_t p;
    pyq_twin_result_t tr;

    memset(res, 0, sizeof(*res));
    if (!q || msg_size < 8 || msg_size > PYQ_TWIN_MSG_MAX || msg_size > pyq_queue_max_message(q))
        return res->error = PYQ_EINVAL;
    memset(&p, 0, sizeof(p));
    p.queue.msg_size = msg_size;
    p.messages = n;
    p.gap_ticks = gap_ticks;
    p.writer_cpu = writer_cpu;
    p.reader_cpu = reader_cpu;
    p.backlog = backlog;
    p.episodes = episodes;
    p.max_episodes = max_episodes;
    /* No adapter table (the threads call pyqueue), no burst, no windows. */
    pyq_twin_run_go(NULL, q, 0, &p, NULL, 0, &tr, direct_twin_writer, direct_twin_reader);
    return pyq_bench_result_of(res, &tr);
}

int pyq_bench_queue_throughput(pyq_queue_t *q, uint64_t n, uint32_t msg_size,
                               int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *res)
{
    return queue_run(q, n, msg_size, 0, 0, NULL, 0, writer_cpu, reader_cpu, res);
}

int pyq_bench_queue_paced(pyq_queue_t *q, uint64_t n, uint32_t msg_size, uint64_t gap_ticks,
                          int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *res)
{
    return queue_run(q, n, msg_size, gap_ticks, 0, NULL, 0, writer_cpu, reader_cpu, res);
}

int pyq_bench_queue_stream(pyq_queue_t *q, uint64_t n, uint32_t msg_size, uint64_t backlog,
                           pyq_twin_episode_t *episodes, uint32_t max_episodes,
                           int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *res)
{
    if (!backlog) { /* 0 would be a plain run; the rest pyq_twin_params_bad refuses */
        memset(res, 0, sizeof(*res));
        return res->error = PYQ_EINVAL;
    }
    return queue_run(q, n, msg_size, 0, backlog, episodes, max_episodes, writer_cpu,
                     reader_cpu, res);
}

/* ---- C reader for a Python writer ---------------------------------------- */

struct pyq_bench_reader {
    struct pyq_twin_run r; /* the reader's half: no windows, no episodes */
    pthread_t t;
};

/* The same reader loop, started by the first message rather than a barrier:
 * the writer is Python.  pyq_bench_reader_stop flags PYQ_EINTR in r->err. */
PYQ_TWIN_FLAT static void *py_twin_reader(void *arg)
{
    struct pyq_twin_run *r = arg;
    struct pyq_twin_seq s = {0};
    int64_t k = 0;
    int rc = pyq_twin_pin(r->rcpu);

    if (rc) {
        pyq_twin_fail(&r->err, rc);
        return NULL;
    }
    while (r->n && (k = pq_poll(r->q, 1, pyq_twin_next, &s)) == 0 && !pyq_twin_failed(&r->err))
        pyq_twin_relax();
    if (k < 0)
        pyq_twin_fail(&r->err, (int)k);
    if (k <= 0)
        return NULL;
    r->t0 = pyq_twin_now_ns();
    pyq_twin_read_loop(r, pq_poll, NULL, NULL, 0, 0, 1);
    return NULL;
}

int pyq_bench_reader_start(pyq_queue_t *q, uint64_t n, uint32_t msg_size, int32_t cpu,
                           pyq_bench_reader_t **out)
{
    pyq_bench_reader_t *h;
    int rc;

    *out = NULL;
    if (msg_size < 8)
        return PYQ_EINVAL;
    if (posix_memalign((void **)&h, PYQ_CACHELINE, sizeof(*h)) != 0)
        return PYQ_ENOMEM;
    memset(h, 0, sizeof(*h));
    h->r.q = q;
    h->r.n = n;
    h->r.window = UINT64_MAX; /* no window records: each poll asks for all that is left */
    h->r.rcpu = cpu;
    if ((rc = pthread_create(&h->t, NULL, py_twin_reader, &h->r)) != 0) {
        free(h);
        return -rc;
    }
    *out = h;
    return 0;
}

void pyq_bench_reader_stop(pyq_bench_reader_t *h)
{
    pyq_twin_fail(&h->r.err, PYQ_EINTR);
}

int pyq_bench_reader_join(pyq_bench_reader_t *h, pyq_bench_result_t *res)
{
    pthread_join(h->t, NULL);
    memset(res, 0, sizeof(*res));
    res->messages = h->r.got;
    res->elapsed_ns = h->r.t_end - h->r.t0;
    res->end_ns = h->r.t_end;
    res->polls = h->r.polls; /* the regime of a Python writer's run too */
    res->empty_polls = h->r.empty;
    res->empty_runs = h->r.empty_runs;
    res->error = pyq_twin_failed(&h->r.err);
    if (!res->error && h->r.got < h->r.n)
        res->error = PYQ_EINTR;
    free(h);
    return res->error;
}

/* ---- ping-pong floor ------------------------------------------------------ */

struct pp {
    PYQ_ALIGNED_LINE _Atomic uint64_t ping; /* written by A */
    PYQ_ALIGNED_LINE _Atomic uint64_t pong; /* written by B */
    PYQ_ALIGNED_LINE uint64_t trips;
    int32_t cpu_b;
    pyq_start_t start; /* B's pinning result reaches A through it */
};

static void *pp_echo(void *arg)
{
    struct pp *p = arg;

    if (pyq_start_meet(&p->start, 2, pyq_cpu_pin_opt(p->cpu_b)) != 0)
        return NULL;
    for (uint64_t i = 1; i <= p->trips; i++) {
        /* Acquire/release pair with A: each trip is one line each way. */
        while (atomic_load_explicit(&p->ping, memory_order_acquire) != i)
            ;
        atomic_store_explicit(&p->pong, i, memory_order_release);
    }
    return NULL;
}

int pyq_bench_pingpong(int32_t cpu_a, int32_t cpu_b, uint32_t round_trips, uint64_t *samples_ns)
{
    struct pp *p;
    pthread_t t;
    int cyc = pyq_bench_timer_cycles();
    int rc;

    p = aligned_alloc(PYQ_CACHELINE, sizeof(*p));
    if (!p)
        return PYQ_ENOMEM;
    memset(p, 0, sizeof(*p));
    p->trips = (uint64_t)round_trips + WARMUP_TRIPS;
    p->cpu_b = cpu_b;
    if ((rc = pthread_create(&t, NULL, pp_echo, p)) != 0) {
        free(p);
        return -rc;
    }
    /* A pins itself only once B exists: B inherits A's affinity, and a B stuck on
     * A's CPU behind a spinning SCHED_FIFO A (bench --fifo) would never run. */
    if ((rc = pyq_start_meet(&p->start, 2, pyq_cpu_pin_opt(cpu_a))) == 0) {
        for (uint64_t i = 1; i <= p->trips; i++) {
            uint64_t t0 = pyq_bench_stamp(cyc);
            atomic_store_explicit(&p->ping, i, memory_order_release);
            while (atomic_load_explicit(&p->pong, memory_order_acquire) != i)
                ;
            if (i > WARMUP_TRIPS)
                samples_ns[i - WARMUP_TRIPS - 1] = pyq_bench_stamp(cyc) - t0;
        }
        pyq_bench_to_ns(cyc, samples_ns, round_trips);
    }
    pthread_join(t, NULL);
    free(p);
    return rc;
}
