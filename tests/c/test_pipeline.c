/* test_pipeline.c - the pipeline's queues through the adapter interface, under
 * the sanitizers: the mutex queue on one thread (FIFO, full, wrap-around, a
 * wait_readable that times out), its blocking reader (poll, then wait_readable)
 * against a writer thread (pyq_adapter_verify), then whole pipeline runs over
 * the mutex queue and over pyqueue (three threads, every sequence checked). */
#include <stdlib.h>

#include "check.h"
#include "adapters/pyq_adapter.h"
#include "common/pyq_pattern.h"
#include "lab/pyq_pipeline.h"
#include "runtime/pyq_runtime.h"

/* Messages carry pyq_pattern content of their sequence number. */
static int in_order(void *ctx, const void *msg, uint32_t len)
{
    uint64_t *next = ctx;

    CHECK(len == PYQ_ADAPTER_MSG_SIZE && pyq_pattern_check(msg, len, (*next)++) == 0);
    return 0;
}

static void mutex_one_thread(const pyq_adapter_t *a)
{
    pyq_adapter_params_t p;
    uint8_t msg[PYQ_ADAPTER_MSG_SIZE];
    uint64_t sent = 0, next = 0;
    void *h;

    pyq_adapter_params_init(&p);
    p.capacity_bytes = 3 * PYQ_ADAPTER_MSG_SIZE; /* 3 slots: several laps below */
    CHECK_EQ(a->create(&p, &h), 0);
    CHECK_EQ(a->capacity(h), 3);
    CHECK_EQ(a->wait_readable(h, 1000000), PYQ_EAGAIN); /* empty: times out after 1 ms */
    for (int lap = 0; lap < 4; lap++) {
        for (int i = 0; i < 3; i++, sent++) {
            pyq_pattern_fill(msg, sizeof msg, sent);
            CHECK_EQ(a->try_write(h, msg, sizeof msg), 0);
        }
        CHECK_EQ(a->try_write(h, msg, sizeof msg), PYQ_EAGAIN);
        CHECK_EQ(a->wait_readable(h, -1), 0); /* readable: returns at once */
        CHECK_EQ(a->poll(h, 1, in_order, &next), 1);
        CHECK_EQ(a->poll(h, UINT64_MAX, in_order, &next), 2);
        CHECK_EQ(a->poll(h, UINT64_MAX, in_order, &next), 0);
    }
    CHECK_EQ(next, sent);
    a->destroy(h);
}

static void pipeline_run(const pyq_adapter_t *a, int32_t idle, uint64_t n)
{
    pyq_pipeline_config_t cfg;
    pyq_pipeline_result_t res;
    uint64_t *latency = calloc(n, sizeof *latency);

    CHECK(latency != NULL);
    pyq_pipeline_config_init(&cfg);
    cfg.queue = a;
    cfg.idle_strategy = idle;
    cfg.rate = 20000;
    cfg.count = n;
    cfg.slots = 64;
    cfg.latency_ns = latency;
    CHECK_EQ(pyq_pipeline_run(&cfg, &res), 0);
    CHECK_EQ(res.delivered, n);
    for (int t = 0; t < PYQ_PIPE_THREADS; t++)
        CHECK_EQ(res.thread[t].messages, n);
    if (a->wait_readable) /* the blocking reader slept on the condvar */
        CHECK(res.thread[PYQ_PIPE_STAGE].waits > 0);
    free(latency);
}

int main(int argc, char **argv)
{
    const pyq_adapter_t *mutex, *pyqueue;
    pyq_adapter_params_t p;
    pyq_adapter_verify_result_t r;
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;

    CHECK_EQ(pyq_adapter_get("mutex", NULL, &mutex), 0);
    CHECK_EQ(pyq_adapter_get("pyqueue", NULL, &pyqueue), 0);
    CHECK(mutex->wait_readable != NULL && pyqueue->wait_readable == NULL);
    mutex_one_thread(mutex);

    pyq_adapter_params_init(&p);
    p.capacity_bytes = 256 * PYQ_ADAPTER_MSG_SIZE; /* small: the writer meets a full queue */
    CHECK_EQ(pyq_adapter_verify(mutex, &p, n, 0, -1, -1, &r), 0);
    CHECK_EQ(r.verified, n);

    pipeline_run(mutex, PYQ_IDLE_BACKOFF, 2000);
    pipeline_run(pyqueue, PYQ_IDLE_YIELD, 2000);
    CHECK_DONE("test_pipeline");
}
