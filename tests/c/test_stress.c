/* test_stress.c - two-thread FIFO/byte verification (built with TSan, and ASan),
 * and a reader waiting with pyq_reader_wait() until the writer detaches. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stress/pyq_selftest.h"
#include "queue_make.h"

static void run(int publish, uint32_t pb, int scan, int claim, uint64_t n, uint32_t bs, int nt)
{
    pyq_config_t cfg;
    pyq_queue_t *q;
    pyq_stress_params_t p;
    pyq_stress_result_t r;
    pyq_stats_t st;

    pyq_config_init(&cfg);
    cfg.block_size = bs;
    cfg.hot_blocks = 4;
    cfg.spill_blocks = 64;
    cfg.publish = publish;
    cfg.publish_bytes = pb;
    cfg.scan_current = scan;
    cfg.retry_yield_every = 16;
#if defined(__x86_64__)
    cfg.spill_nontemporal = nt;
    cfg.nontemporal_backlog_kib = 0; /* every spill block streamed */
#else
    (void)nt;
#endif
    CHECK_EQ(pyq_queue_create(&cfg, &q), 0);
    memset(&p, 0, sizeof(p));
    p.messages = n;
    p.min_len = 0;
    p.max_len = pyq_queue_max_message(q);
    p.salt = 42;
    p.writer_cpu = p.reader_cpu = -1;
    p.reader_pause_every = n / 4;
    p.reader_pause_us = 2000;
    p.use_claim = (uint32_t)claim;
    p.flush_every = claim ? 5 : 0;
    p.write_timeout_ns = PYQ_WAIT_FOREVER;
    CHECK_EQ(pyq_stress_run(q, &p, &r), 0);
    CHECK_EQ(r.written, n);
    CHECK_EQ(r.read, n);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_read, n);
    CHECK(st.takes_spill > 0); /* the pauses built a backlog into tier 2 */
    CHECK(st.returns_spill + 1 >= st.takes_spill);
    pyq_queue_destroy(q);
}

/* pyq_reader_wait(): a writer thread writes n messages and detaches; the
 * reader waits, polls, and must end with every message, in order (TSan checks
 * the detach edge).  Then the timeout: nothing visible, no detach.  With
 * inline set, both sides go through pyqueue_inline.h, and the reader reads the
 * counters while the writer's runs are open (TSan checks the run word; W5/A6:
 * what was read was counted as written). */
struct wait_writer {
    pyq_queue_t *q;
    uint64_t n;
    int inline_paths;
};

static void *wait_writer_main(void *arg)
{
    struct wait_writer *w = arg;

    for (uint64_t i = 0; i < w->n; i++) {
        int rc;
        if (!w->inline_paths)
            rc = pyq_writer_write(w->q, &i, sizeof i, PYQ_WAIT_FOREVER);
        else
            while ((rc = pyq_writer_try_write_inline(w->q, &i, sizeof i)) == PYQ_EAGAIN)
                sched_yield();
        if (rc != 0)
            break;
    }
    pyq_writer_detach(w->q);
    return NULL;
}

static int wait_expect(void *ctx, const void *msg, uint32_t len)
{
    uint64_t *next = ctx, v;

    memcpy(&v, msg, sizeof v);
    if (len != sizeof v || v != *next)
        return PYQ_EBADMSG;
    ++*next;
    return 0;
}

static void reader_wait(int publish, int inline_paths)
{
    pyq_queue_t *q = NULL;
    struct wait_writer w = { NULL, 30000, inline_paths };
    pthread_t t;
    uint64_t next = 0;
    pyq_stats_t st;
    uint64_t lag;
    int rc;

    q = make(256, 2, 4, publish, 0, 0);
    w.q = q;
    CHECK_EQ(pyq_reader_wait(q, 0), PYQ_EAGAIN);       /* empty, look once */
    CHECK_EQ(pyq_reader_wait(q, 200000), PYQ_EAGAIN);  /* empty for 0.2 ms */
    CHECK_EQ(pthread_create(&t, NULL, wait_writer_main, &w), 0);
    while ((rc = pyq_reader_wait(q, PYQ_WAIT_FOREVER)) == 1) {
        int64_t got = inline_paths ? pyq_reader_poll_inline(q, 1000, wait_expect, &next)
                                   : pyq_reader_poll(q, 1000, wait_expect, &next);
        if (got < 0) {
            pyq_queue_close(q); /* a wrong message: the writer must not wait forever */
            break;
        }
        /* Under max what was read was published, and a publish counts the run
         * first; a scanning reader (each) may take a record at its header
         * store, just before the writer counts it: one behind at most. */
        pyq_queue_stats(q, &st);
        lag = publish == PYQ_PUBLISH_MAX ? 0 : 1;
        CHECK(st.messages_read == next && st.messages_written + lag >= next &&
              st.messages_written <= w.n);
        CHECK(st.bytes_written + 8 * lag >= 8 * next && st.bytes_written <= 8 * w.n);
    }
    pthread_join(t, NULL);
    CHECK_EQ(rc, 0);                /* ended by the detach... */
    CHECK_EQ(next, w.n);            /* ...with every message read, in order */
    CHECK_EQ(pyq_reader_wait(q, 0), 0);
    pyq_queue_destroy(q);
}

/* stats() from another thread while the writer writes runs of two lengths
 * (8 and 64 bytes, 1-13 members each): never more messages or bytes than the
 * writer had begun to write, so a run's count is never taken with another
 * run's length (queue_pvt.h, W6/A7); exact once the writer is done. */
struct runs_writer {
    pyq_queue_t *q;
    uint64_t n;
    uint64_t begun_m, begun_b;   /* atomic: stored before each write */
};

/* The length of the next message: runs of 1-13, lengths alternating. */
static uint32_t runs_len(uint64_t *run_left, uint64_t *run)
{
    if (*run_left == 0)
        *run_left = 1 + ++*run % 13;
    --*run_left;
    return *run % 2 ? 64 : 8;
}

static void *runs_writer_main(void *arg)
{
    struct runs_writer *w = arg;
    uint64_t run = 0, left = 0, b = 0, msg[8] = { 0 };

    for (uint64_t i = 0; i < w->n; i++) {
        uint32_t len = runs_len(&left, &run);
        int rc;

        msg[0] = i;
        b += len;
        __atomic_store_n(&w->begun_b, b, __ATOMIC_RELEASE);
        __atomic_store_n(&w->begun_m, i + 1, __ATOMIC_RELEASE);
        while ((rc = pyq_writer_try_write_inline(w->q, msg, len)) == PYQ_EAGAIN)
            sched_yield();
        if (rc != 0)
            break;
        if (i % 997 == 0)
            pyq_writer_flush(w->q);
    }
    pyq_writer_detach(w->q);
    return NULL;
}

static int runs_expect(void *ctx, const void *msg, uint32_t len)
{
    uint64_t *next = ctx, v;

    memcpy(&v, msg, sizeof v);
    if ((len != 8 && len != 64) || v != *next)
        return PYQ_EBADMSG;
    ++*next;
    return 0;
}

static void stats_while_writing(uint64_t n)
{
    pyq_queue_t *q = NULL;
    struct runs_writer w = { NULL, n, 0, 0 };
    pthread_t t;
    pyq_stats_t st;
    uint64_t next = 0, bad = 0, total = 0, run = 0, left = 0;
    int rc;

    for (uint64_t i = 0; i < n; i++)
        total += runs_len(&left, &run);
    q = make(1024, 2, 14, PYQ_PUBLISH_MAX, 0, 0);
    w.q = q;
    CHECK_EQ(pthread_create(&t, NULL, runs_writer_main, &w), 0);
    while ((rc = pyq_reader_wait(q, PYQ_WAIT_FOREVER)) == 1) {
        for (int k = 0; k < 16; k++) { /* several snapshots while runs grow */
            pyq_queue_stats(q, &st);
            uint64_t m = __atomic_load_n(&w.begun_m, __ATOMIC_ACQUIRE),
                     b = __atomic_load_n(&w.begun_b, __ATOMIC_ACQUIRE);
            bad += st.messages_written > m || st.bytes_written > b;
        }
        if (pyq_reader_poll(q, 1000, runs_expect, &next) < 0) {
            pyq_queue_close(q);
            break;
        }
    }
    pthread_join(t, NULL);
    CHECK_EQ(bad, 0);
    CHECK_EQ(rc, 0);
    CHECK_EQ(next, n);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_written, n);
    CHECK_EQ(st.bytes_written, total);
    pyq_queue_destroy(q);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;

    for (int scan = 0; scan <= 1; scan++) {
        for (int nt = 0; nt <= 1; nt++) { /* spill blocks cached / streamed */
            run(PYQ_PUBLISH_MAX, 0, scan, 0, n, 512, nt);
            run(PYQ_PUBLISH_EACH, 0, scan, 0, n, 512, nt);
            run(PYQ_PUBLISH_BYTES, 300, scan, 0, n, 512, nt);
        }
        run(PYQ_PUBLISH_MAX, 0, scan, 1, n, 512, 1);
    }
    for (int inline_paths = 0; inline_paths <= 1; inline_paths++) {
        reader_wait(PYQ_PUBLISH_MAX, inline_paths);
        reader_wait(PYQ_PUBLISH_EACH, inline_paths);
    }
    stats_while_writing(n / 4 + 1000);
    CHECK_DONE("test_stress");
}
