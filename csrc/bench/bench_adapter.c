/*
 * bench_adapter.c - the bench's driver: throughput and single-message round
 * trip for every queue behind the adapter interface (pyq_adapter.h), so
 * pyqueue and each peer are measured by exactly the same code (DESIGN §6.6).
 *
 * The loops are the twins' (adapters/twin_pvt.h), instantiated here with the
 * adapter table's pointers: every operation an indirect call, every message
 * of poll a callback.  A row and its twin therefore run one body and differ
 * only in those calls; the driver keeps no window records.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "adapters/twin_pvt.h"
#include "bench/bench_pvt.h"
#include "bench/pyq_bench.h"

/* ---- throughput ------------------------------------------------------------ */

/* The loops get the table's pointers, read once per run. */
static void *a_writer(void *arg)
{
    struct pyq_twin_run *r = arg;
    const pyq_adapter_t *a = r->a;

    pyq_twin_writer(r, a->try_write, a->try_write_burst, a->write_each, a->flush);
    return NULL;
}

static void *a_reader(void *arg)
{
    struct pyq_twin_run *r = arg;
    const pyq_adapter_t *a = r->a;

    pyq_twin_reader(r, a->poll, a->read_burst, a->read_each);
    return NULL;
}

static int adapter_run(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                       uint64_t gap_ticks, uint64_t backlog, pyq_twin_episode_t *episodes,
                       uint32_t max_episodes, int32_t writer_cpu, int32_t reader_cpu,
                       pyq_bench_result_t *res)
{
    pyq_twin_params_t p;
    pyq_twin_result_t tr;

    memset(res, 0, sizeof(*res));
    if (!a || !h)
        return PYQ_EINVAL;
    memset(&p, 0, sizeof(p));
    p.messages = n;
    p.gap_ticks = gap_ticks;
    p.burst = burst;
    p.writer_cpu = writer_cpu;
    p.reader_cpu = reader_cpu;
    p.backlog = backlog;
    p.episodes = episodes;
    p.max_episodes = max_episodes;
    pyq_twin_run_go(a, h, a->try_write_burst != NULL, &p, NULL, 0, &tr, a_writer, a_reader);
    return pyq_bench_result_of(res, &tr);
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
    if (!backlog) {
        memset(res, 0, sizeof(*res));
        return res->error = PYQ_EINVAL;
    }
    return adapter_run(a, h, n, burst, 0, backlog, episodes, max_episodes, writer_cpu,
                       reader_cpu, res);
}

int pyq_bench_adapter_throughput(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                                 int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *res)
{
    return pyq_bench_adapter_paced(a, h, n, burst, 0, writer_cpu, reader_cpu, res);
}

/* ---- round trip ------------------------------------------------------------ */

/* Two instruments on the twins' round-trip loops: the adapter rows (every call
 * through the table, the receive through its read_spin where it has one) and
 * pyqueue through its own API (handles are pyq_queue_t *: what a C program
 * using pyqueue runs, each call a direct call into the library). */

static void *echo_adapter(void *arg)
{
    struct pyq_twin_rt *t = arg;
    const pyq_adapter_t *a = t->a;

    pyq_twin_echo(t, a->try_write, a->poll, a->read_spin, a->flush);
    return NULL;
}

static int timed_adapter(struct pyq_twin_rt *t, uint64_t *samples)
{
    const pyq_adapter_t *a = t->a;

    return pyq_twin_timed(t, samples, a->try_write, a->poll, a->read_spin, a->flush, t->ticks);
}

static inline __attribute__((always_inline)) int pq_try_write(void *q, const void *msg,
                                                              uint32_t len)
{
    return pyq_writer_try_write(q, msg, len);
}

static inline __attribute__((always_inline)) void pq_flush(void *q)
{
    pyq_writer_flush(q);
}

static inline __attribute__((always_inline)) int64_t pq_poll(void *q, uint64_t max,
                                                             pyq_message_fn fn, void *ctx)
{
    return pyq_reader_poll(q, max, fn, ctx);
}

/* flatten: the wrappers above reach the loops as constant pointers; inlined,
 * each loop calls the library directly. */
PYQ_TWIN_FLAT static void *echo_direct(void *arg)
{
    pyq_twin_echo(arg, pq_try_write, pq_poll, NULL, pq_flush);
    return NULL;
}

PYQ_TWIN_FLAT static int timed_direct(struct pyq_twin_rt *t, uint64_t *samples)
{
    return pyq_twin_timed(t, samples, pq_try_write, pq_poll, NULL, pq_flush, t->ticks);
}

/* a NULL: pyqueue's own API on ab and ba.  Samples in ns. */
static int roundtrip(const pyq_adapter_t *a, void *ab, void *ba, int32_t cpu_a, int32_t cpu_b,
                     uint32_t round_trips, uint64_t *samples_ns)
{
    struct pyq_twin_rt *t;
    int rc;

    if (posix_memalign((void **)&t, PYQ_CACHELINE, sizeof(*t)) != 0)
        return PYQ_ENOMEM;
    memset(t, 0, sizeof(*t));
    t->a = a;
    t->ab = ab;
    t->ba = ba;
    t->trips = (uint64_t)round_trips + PYQ_TWIN_WARMUP_TRIPS;
    t->cpu_b = cpu_b;
    t->ticks = pyq_bench_timer_cycles();
    rc = pyq_twin_rt_go(t, cpu_a, samples_ns, a ? echo_adapter : echo_direct,
                        a ? timed_adapter : timed_direct);
    if (!rc)
        pyq_bench_to_ns(t->ticks, samples_ns, round_trips);
    free(t);
    return rc;
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
