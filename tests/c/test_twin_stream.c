/* test_twin_stream.c - the streaming episodes' protocol (adapters/twin_pvt.h)
 * when the writer fills the queue before it sees the reader's hold.
 *
 * The writer looks for the hold every PYQ_TWIN_STREAM_LOOK (64) messages.  A
 * queue that holds fewer, or a reader that loses its CPU between its empty poll
 * and its hold, lets the writer fill the queue first; it must then find the
 * hold while it waits for room, or each side waits for the other for ever.
 * Each case runs every loop that takes part -- the inline twin's writer, the
 * adapter driver's (bench/bench_adapter.c), bench.c's pyqueue_direct loop and
 * its twin, which wait inside pyq_writer_write -- on such a queue, with an
 * alarm as the hang's verdict, and checks every message arrived in order and
 * every episode was recorded. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "adapters/twin_pvt.h"
#include "bench/pyq_bench.h"
#include "bench/pyq_twins.h"

#define CAP 32       /* the stalling ring's slots: fewer than PYQ_TWIN_STREAM_LOOK */
#define N 6000       /* messages a run */
#define EPISODES 8   /* records a run: held catch-ups (the rest read freely) */
#define STALLS 6     /* empty polls that stall, a run */

/* ---- a ring whose reader stalls after an empty look --------------------------- */

struct sring {
    PYQ_TWIN_LINE uint64_t head;  /* reader: slots consumed */
    PYQ_TWIN_LINE uint64_t tail;  /* writer: slots written */
    PYQ_TWIN_LINE int stalls;     /* reader: empty polls left that stall */
    pyq_twin_msg_t slot[CAP];
};

static int sr_create(const pyq_adapter_params_t *p, void **h)
{
    struct sring *r;

    if (p->msg_size != PYQ_ADAPTER_MSG_SIZE || posix_memalign((void **)&r, 64, sizeof *r))
        return PYQ_EINVAL;
    memset(r, 0, sizeof *r);
    r->stalls = -1; /* none while the warm-up fills and drains it */
    *h = r;
    return 0;
}

static void sr_destroy(void *h)
{
    free(h);
}

static uint64_t sr_capacity(void *h)
{
    (void)h;
    return CAP;
}

static int sr_try_write(void *h, const void *msg, uint32_t len)
{
    struct sring *r = h;
    uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);

    if (t - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == CAP)
        return PYQ_EAGAIN;
    memcpy(&r->slot[t % CAP], msg, len);
    __atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
    return 0;
}

static void sr_flush(void *h)
{
    (void)h;
}

/* An empty look stalls 5 ms before it says so while stalls > 0: as a reader
 * that lost its CPU between its load and its hold. */
static int64_t sr_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct sring *r = h;
    uint64_t hd = r->head, t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE), k = 0;

    if (hd == t) {
        if (r->stalls > 0) {
            struct timespec ts = {0, 5000000};
            r->stalls--;
            nanosleep(&ts, NULL);
        } else if (r->stalls < 0) { /* the warm-up drained it: the run's stalls */
            r->stalls = STALLS;
        }
        return 0;
    }
    for (; hd + k < t && k < max; k++) {
        int rc = fn(ctx, &r->slot[(hd + k) % CAP], PYQ_ADAPTER_MSG_SIZE);
        if (rc) {
            __atomic_store_n(&r->head, hd + k + 1, __ATOMIC_RELEASE);
            return rc < 0 ? rc : (int64_t)(k + 1);
        }
    }
    __atomic_store_n(&r->head, hd + k, __ATOMIC_RELEASE);
    return (int64_t)k;
}

static const pyq_adapter_t sring = {
    .abi = PYQ_ADAPTER_ABI, .name = "stalling_ring", .create = sr_create,
    .destroy = sr_destroy, .capacity = sr_capacity, .try_write = sr_try_write,
    .flush = sr_flush, .poll = sr_poll,
};

PYQ_TWIN_DEFINE(sr, sring, sr_try_write, NULL, sr_poll, sr_flush)

/* ---- the runs ------------------------------------------------------------------- */

static pyq_twin_episode_t eps[EPISODES];

/* A run's verdict: all messages, every record, and at least one episode
 * released with the queue full (outstanding = what the queue holds). */
static void check_run(int rc, uint64_t got, uint32_t episodes, uint64_t full_at)
{
    uint32_t full = 0;

    CHECK_EQ(rc, 0);
    CHECK_EQ(got, N);
    CHECK_EQ(episodes, EPISODES);
    for (uint32_t k = 1; k < episodes && k < EPISODES; k++) {
        CHECK(eps[k].go_written >= eps[k - 1].end_read);
        full += eps[k].go_written - eps[k - 1].end_read >= full_at;
    }
    CHECK(full > 0);
}

static void twin_on_ring(uint64_t backlog)
{
    pyq_twin_params_t p;
    pyq_twin_result_t res;
    int rc;

    memset(&p, 0, sizeof p);
    memset(eps, 0, sizeof eps);
    p.queue.msg_size = PYQ_ADAPTER_MSG_SIZE;
    p.messages = N;
    p.writer_cpu = p.reader_cpu = -1;
    p.backlog = backlog;
    p.episodes = eps;
    p.max_episodes = EPISODES;
    fprintf(stderr, "  the twin's writer, the reader stalling after its empty polls\n");
    rc = sr_twin_throughput(&p, NULL, 0, &res);
    check_run(rc, res.messages, res.episodes, CAP);
}

static void driver_on_ring(uint64_t backlog)
{
    pyq_adapter_params_t p;
    pyq_bench_result_t res;
    void *h;
    int rc;

    memset(&p, 0, sizeof p);
    memset(eps, 0, sizeof eps);
    p.msg_size = PYQ_ADAPTER_MSG_SIZE;
    CHECK_EQ(sring.create(&p, &h), 0);
    CHECK_EQ(pyq_bench_warm(&sring, h), 0); /* as the bench's rows: and it arms the stalls */
    fprintf(stderr, "  the adapter driver, the reader stalling after its empty polls\n");
    rc = pyq_bench_adapter_stream(&sring, h, N, 0, backlog, eps, EPISODES, -1, -1, &res);
    check_run(rc, res.messages, res.episodes, CAP);
    sring.destroy(h);
}

/* A pyqueue queue of two 256-byte blocks: 14 messages of 32 bytes in all
 * (runs: one 8-byte header and seven messages a block). */
static void tiny_config(pyq_config_t *c)
{
    pyq_config_init(c);
    c->block_size = 256;
    c->hot_blocks = 2;
    c->spill_blocks = 0;
    c->publish = PYQ_PUBLISH_MAX;
}

static void direct_driver(void)
{
    pyq_config_t c;
    pyq_queue_t *q;
    pyq_bench_result_t res;
    int rc;

    tiny_config(&c);
    memset(eps, 0, sizeof eps);
    CHECK_EQ(pyq_queue_create(&c, &q), 0);
    fprintf(stderr, "  bench.c's pyqueue_direct loop (waits inside), room for 14 messages\n");
    rc = pyq_bench_queue_stream(q, N, 32, 4, eps, EPISODES, -1, -1, &res);
    /* The block the writer holds is not visible: full is the other one's 7. */
    check_run(rc, res.messages, res.episodes, 7);
    pyq_queue_destroy(q);
}

static void direct_twin(void)
{
    const pyq_twin_table_t *t = pyq_twin_bench();
    const pyq_twin_t *tw = NULL;
    pyq_twin_params_t p;
    pyq_twin_result_t res;
    int rc;

    for (uint32_t i = 0; i < t->count; i++)
        if (strcmp(t->twins[i].name, "pyqueue_direct") == 0)
            tw = &t->twins[i];
    CHECK(tw != NULL);
    if (!tw)
        return;
    memset(&p, 0, sizeof p);
    memset(eps, 0, sizeof eps);
    p.queue.msg_size = PYQ_ADAPTER_MSG_SIZE;
    tiny_config(&p.queue.queue);
    p.messages = N;
    p.writer_cpu = p.reader_cpu = -1;
    p.backlog = 4;
    p.episodes = eps;
    p.max_episodes = EPISODES;
    fprintf(stderr, "  the pyqueue_direct twin (waits inside), room for 14 messages\n");
    rc = tw->throughput(&p, NULL, 0, &res);
    check_run(rc, res.messages, res.episodes, 7);
}

int main(void)
{
    /* The hang this file is about is the failure: the alarm ends it (the last
     * case printed is the one that hung). */
    alarm(60);
    (void)sr_twin_roundtrip; /* PYQ_TWIN_DEFINE's, not a case here */
    twin_on_ring(16);
    driver_on_ring(16);
    direct_driver();
    direct_twin();
    CHECK_DONE("test_twin_stream");
}
