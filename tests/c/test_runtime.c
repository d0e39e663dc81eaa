/* test_runtime.c - the C runtime (threads.c, producer.c, consumer.c, idle.c,
 * pacer.c, clock.c, cpu.c, perf.c) under ASan+UBSan and TSan: verified delivery
 * with every idle strategy and work kind, random sizes spilling into tier 2,
 * paced bursts, stop, close while the producer waits on a full queue, a
 * corrupted and a skipped message, a CPU outside the allowed set, and the
 * clock / pacer / perf helpers.  Behaviour only, never timings. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "runtime/pyq_runtime.h"
#include "queue_make.h"

static pyq_queue_t *make_queue(uint32_t bs, uint32_t hot, uint32_t spill, int publish, int scan)
{
    pyq_config_t cfg;

    pyq_config_init(&cfg);
    cfg.retry_yield_every = 8;
    return make_with(&cfg, bs, hot, spill, publish, publish == PYQ_PUBLISH_BYTES ? 500 : 0, scan);
}

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

/* A producer and a consumer over n messages of sizes [lo, hi]; both must end
 * DONE with the same counts. */
static void pair(int strategy, int work, int publish, int scan, uint64_t n, uint32_t lo,
                 uint32_t hi, uint64_t burst_bytes, double rate)
{
    pyq_queue_t *q = make_queue(512, 2, 32, publish, scan);
    pyq_consumer_config_t cc;
    pyq_producer_config_t pc;
    pyq_thread_t *c = NULL, *p = NULL;
    pyq_thread_result_t cr, pr;
    int step = -1;

    pyq_consumer_config_init(&cc);
    pyq_idle_config_init(&cc.idle, strategy);
    cc.idle.spins = 16;
    cc.idle.yield_every = 4;
    cc.idle.sleep_min_ns = 1000;
    cc.idle.sleep_cap_ns = 20000;
    cc.count = n;
    cc.work = work;
    cc.work_ns = 200;
    cc.size_lo = lo ? lo : 0;
    cc.size_hi = hi;
    cc.size_salt = 99;
    cc.poll_batch = 7;
    cc.perf_mask = PYQ_PERF_SOFTWARE;
    pyq_producer_config_init(&pc);
    pc.count = n;
    pc.size_lo = lo;
    pc.size_hi = hi;
    pc.size_salt = 99;
    pc.burst_bytes = burst_bytes;
    pc.gap_ns = burst_bytes ? 50000 : 0;
    pc.rate = rate;
    pc.pacer_burst = 8;
    pc.flush_each_burst = 1;
    CHECK_EQ(pyq_consumer_start(q, &cc, &c, &step), 0);
    CHECK_EQ(step, PYQ_STEP_NONE);
    CHECK_EQ(pyq_producer_start(q, &pc, &p, &step), 0);
    CHECK_EQ(pyq_thread_wait(p, PYQ_WAIT_FOREVER), 0);
    CHECK(pyq_thread_done(p));
    CHECK_EQ(pyq_thread_join(p, 0, &pr), 0);
    CHECK_EQ(pyq_thread_join(c, 0, &cr), 0);
    CHECK_EQ(pr.end, PYQ_END_DONE);
    CHECK_EQ(cr.end, PYQ_END_DONE);
    CHECK_EQ(pr.messages, n);
    CHECK_EQ(cr.messages, n);
    CHECK_EQ(cr.bytes, pr.bytes);
    CHECK_EQ(pyq_thread_messages(c), n);
    CHECK_EQ(pyq_queue_backlog(q), 0);
    pyq_thread_destroy(p);
    pyq_thread_destroy(c);
    pyq_queue_destroy(q);
}

/* A fault in the producer ends the verifying consumer with PYQ_EBADMSG at that
 * seq; the producer, now facing a consumer that stopped consuming, is stopped. */
static void fault(int kind, uint64_t at)
{
    pyq_queue_t *q = make_queue(256, 1, 4, PYQ_PUBLISH_EACH, 0);
    pyq_consumer_config_t cc;
    pyq_producer_config_t pc;
    pyq_thread_t *c, *p;
    pyq_thread_result_t cr, pr;

    pyq_consumer_config_init(&cc);
    pyq_producer_config_init(&pc);
    pc.count = 1000000;
    pc.fault = kind;
    pc.fault_seq = at;
    CHECK_EQ(pyq_consumer_start(q, &cc, &c, NULL), 0);
    CHECK_EQ(pyq_producer_start(q, &pc, &p, NULL), 0);
    CHECK_EQ(pyq_thread_join(c, 0, &cr), PYQ_EBADMSG);
    CHECK_EQ(cr.end, PYQ_END_ERROR);
    CHECK_EQ(cr.failed_step, PYQ_STEP_RUN);
    CHECK_EQ(cr.error_seq, at);
    CHECK_EQ(cr.messages, at);
    /* The producer fills the queue and waits; it must not end by itself... */
    CHECK_EQ(pyq_thread_wait(p, 20 * 1000000), PYQ_EAGAIN);
    /* ...but a stop request ends it within one write slice. */
    CHECK_EQ(pyq_thread_join(p, 1, &pr), 0);
    CHECK_EQ(pr.end, PYQ_END_STOPPED);
    CHECK(pr.full_waits > 0);
    pyq_thread_destroy(c);
    pyq_thread_destroy(p);
    pyq_queue_destroy(q);
}

/* Closing the queue wakes a producer waiting on a full queue (END_CLOSED), and
 * once the writer side detaches, a consumer started afterwards drains every
 * message then ends CLOSED. */
static void close_while_full(void)
{
    pyq_queue_t *q = make_queue(256, 1, 3, PYQ_PUBLISH_MAX, 0);
    pyq_consumer_config_t cc;
    pyq_producer_config_t pc;
    pyq_thread_t *c, *p;
    pyq_thread_result_t cr, pr;

    pyq_producer_config_init(&pc);
    pc.count = 100000;
    CHECK_EQ(pyq_producer_start(q, &pc, &p, NULL), 0);
    while (pyq_queue_backlog(q) < 3 * 200)
        sleep_us(100);
    CHECK_EQ(pyq_thread_wait(p, 5 * 1000000), PYQ_EAGAIN);
    pyq_queue_close(q);
    CHECK_EQ(pyq_thread_join(p, 0, &pr), PYQ_ECLOSED);
    CHECK_EQ(pr.end, PYQ_END_CLOSED);
    /* The writer side is free again: declare that nothing more will be written,
     * so the consumer may end once it has drained the queue. */
    pyq_writer_detach(q);
    pyq_consumer_config_init(&cc);
    CHECK_EQ(pyq_consumer_start(q, &cc, &c, NULL), 0);
    CHECK_EQ(pyq_thread_join(c, 0, &cr), 0);
    CHECK_EQ(cr.end, PYQ_END_CLOSED);
    /* Every committed message was delivered; the one that met the close was not
     * written, so the counts agree exactly. */
    CHECK_EQ(cr.messages, pr.messages);
    pyq_thread_destroy(c);
    pyq_thread_destroy(p);
    pyq_queue_destroy(q);
}

/* A consumer with count 0 idles until stopped. */
static void stop_idle_consumer(void)
{
    pyq_queue_t *q = make_queue(256, 1, 1, PYQ_PUBLISH_EACH, 0);
    pyq_consumer_config_t cc;
    pyq_thread_t *c;
    pyq_thread_result_t cr;

    pyq_consumer_config_init(&cc);
    CHECK_EQ(pyq_consumer_start(q, &cc, &c, NULL), 0);
    sleep_us(2000);
    CHECK(!pyq_thread_done(c));
    CHECK_EQ(pyq_thread_join(c, 1, &cr), 0);
    CHECK_EQ(cr.end, PYQ_END_STOPPED);
    CHECK(cr.idle.empty_polls > 0);
    pyq_thread_destroy(c);
    pyq_queue_destroy(q);
}

/* A CPU outside the allowed set is refused at start, naming the pin step. */
static void refused_cpu(void)
{
    pyq_queue_t *q = make_queue(256, 1, 1, PYQ_PUBLISH_EACH, 0);
    pyq_consumer_config_t cc;
    pyq_producer_config_t pc;
    pyq_thread_t *t = NULL;
    int step = -1, bad = -1;
    cpu_set_t set;

    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    for (int i = CPU_SETSIZE - 1; i >= 0; i--)
        if (!CPU_ISSET(i, &set)) {
            bad = i;
            break;
        }
    CHECK(bad >= 0);
    CHECK(!pyq_cpu_allowed(bad));
    pyq_consumer_config_init(&cc);
    cc.cpu = bad;
    CHECK_EQ(pyq_consumer_start(q, &cc, &t, &step), PYQ_EINVAL);
    CHECK_EQ(step, PYQ_STEP_PIN);
    pyq_producer_config_init(&pc);
    pc.cpu = bad;
    CHECK_EQ(pyq_producer_start(q, &pc, &t, &step), PYQ_EINVAL);
    CHECK_EQ(step, PYQ_STEP_PIN);
    pc.cpu = -1;
    pc.size_lo = pc.size_hi = 10000;
    CHECK_EQ(pyq_producer_start(q, &pc, &t, &step), PYQ_ETOOBIG);
    CHECK_EQ(pyq_cpu_pin_self(bad), PYQ_EINVAL);
    pyq_queue_destroy(q);
}

static void helpers(void)
{
    pyq_clock_info_t info;
    pyq_pacer_t pc;
    pyq_perf_t perf;
    uint64_t vals[PYQ_PERF_NEVENTS];
    double ns;
    uint64_t t0, s0, s1;

    int rc = pyq_clock_calibrate(2000000, 1, &info);
    CHECK(rc == 0 || rc == PYQ_ENOTSUP);
    for (int w = 0; w < PYQ_CLOCK_COUNT; w++) {
        rc = pyq_clock_cost_ns(w, 100, &ns);
        CHECK(rc == 0 || rc == PYQ_ENOTSUP);
        CHECK(pyq_clock_name(w) != NULL);
    }
    CHECK_EQ(pyq_clock_cost_ns(PYQ_CLOCK_COUNT, 1, &ns), PYQ_EINVAL);
    CHECK(pyq_cpu_current() >= 0);
    CHECK(pyq_cpu_sample_cost_ns(100) >= 0);

    CHECK_EQ(pyq_pacer_init(&pc, 1e6, 4, 0), 0);
    t0 = pyq_clock_now_ns();
    s0 = pyq_pacer_next(&pc, t0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pyq_pacer_next(&pc, t0), s0); /* the bucket's tokens go back to back */
    s1 = pyq_pacer_next(&pc, t0);
    CHECK(s1 > s0);
    CHECK(pyq_pacer_wait(&pc, s1) >= s1);
    CHECK_EQ(pyq_pacer_init(&pc, -1.0, 1, 0), PYQ_EINVAL);

    pyq_perf_simulate_failure(EACCES);
    CHECK_EQ(pyq_perf_open(&perf, PYQ_PERF_ALL), 0);
    CHECK_EQ(perf.status[PYQ_PERF_CONTEXT_SWITCHES], -EACCES);
    pyq_perf_close(&perf);
    pyq_perf_simulate_failure(0);
    rc = pyq_perf_open(&perf, PYQ_PERF_SOFTWARE);
    CHECK(rc >= 0);
    CHECK(pyq_perf_read(&perf, vals) >= 0);
    pyq_perf_close(&perf);
}

int main(void)
{
    static const int strategies[] = { PYQ_IDLE_SPIN, PYQ_IDLE_RELAX, PYQ_IDLE_YIELD, PYQ_IDLE_BACKOFF };

    helpers();
    for (int i = 0; i < 4; i++)
        pair(strategies[i], PYQ_WORK_NONE, PYQ_PUBLISH_MAX, i & 1, 20000, 0, 504, 4096, 0);
    pair(PYQ_IDLE_BACKOFF, PYQ_WORK_LOOP64, PYQ_PUBLISH_EACH, 0, 20000, 1, 200, 0, 0);
    pair(PYQ_IDLE_YIELD, PYQ_WORK_SPIN_NS, PYQ_PUBLISH_BYTES, 1, 5000, 8, 64, 2048, 2e6);
    fault(PYQ_FAULT_CORRUPT, 777);
    fault(PYQ_FAULT_SKIP, 1234);
    close_while_full();
    stop_idle_consumer();
    refused_cpu();
    CHECK_DONE("test_runtime");
}
