/*
 * two_threads.c - pyqueue from a C program: one writer thread, one reader
 * thread, every message checked on arrival.  Build and run it with
 *
 *     make example            (or: make lib, then
 *     cc -O2 -Icsrc/include examples/c/two_threads.c build/clib/libpyqueue.a -pthread)
 *     build/clib/two_threads [messages]
 *
 * The writer sends 32-byte messages -- a sequence number and a pattern derived
 * from it -- mostly with pyq_writer_write(), every 64th through claim/commit
 * (the zero-copy path), then publishes the rest and detaches.  The reader
 * waits with pyq_reader_wait() (spin, then short sleeps) and polls in batches
 * until the wait reports the end: the writer has detached and every message
 * has arrived.  Exit status 0 when all arrived in order.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyqueue.h"

#define MSG 32

struct run {
    pyq_queue_t *q;
    uint64_t n;
    int err;              /* the writer's first error, 0 if none */
};

struct check {
    uint64_t expected;    /* next sequence number */
    int bad;
};

static void fill(uint8_t *m, uint64_t seq)
{
    memcpy(m, &seq, 8);
    for (int i = 8; i < MSG; i++)
        m[i] = (uint8_t)(seq * 31 + (uint64_t)i);
}

static void *writer(void *arg)
{
    struct run *r = arg;
    uint8_t m[MSG];

    for (uint64_t seq = 0; seq < r->n; seq++) {
        int rc;
        if (seq % 64 == 0) {
            void *p;
            rc = pyq_writer_claim(r->q, MSG, PYQ_WAIT_FOREVER, &p);
            if (rc == 0) {
                fill(p, seq);                   /* written in place, in the block */
                rc = pyq_writer_commit(r->q);
            }
        } else {
            fill(m, seq);
            rc = pyq_writer_write(r->q, m, MSG, PYQ_WAIT_FOREVER); /* waits while full */
        }
        if (rc != 0) {
            r->err = rc;
            break;
        }
    }
    pyq_writer_detach(r->q); /* publishes the last, partly filled block */
    return NULL;
}

static int on_message(void *ctx, const void *msg, uint32_t len)
{
    struct check *c = ctx;
    uint8_t want[MSG];

    fill(want, c->expected);
    if (len != MSG || memcmp(msg, want, MSG) != 0) {
        c->bad = 1;
        return PYQ_EBADMSG; /* stops the poll */
    }
    c->expected++;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    struct run r = { .n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000 };
    struct check c = { 0 };
    pyq_config_t cfg;
    pyq_stats_t st;
    pthread_t w;
    double t0;
    int rc;

    pyq_config_init(&cfg);  /* 4 KiB blocks, 4 hot + 65 536 spill, publish max */
    cfg.spill_blocks = 1024;
    rc = pyq_queue_create(&cfg, &r.q);
    if (rc != 0) {
        fprintf(stderr, "two_threads: pyq_queue_create: %s\n", pyq_strerror(rc));
        return 1;
    }
    t0 = now_s();
    if (pthread_create(&w, NULL, writer, &r) != 0) {
        fprintf(stderr, "two_threads: pthread_create failed\n");
        pyq_queue_destroy(r.q);
        return 1;
    }
    /* 1: messages to read; 0: the writer detached and all were read. */
    while (pyq_reader_wait(r.q, PYQ_WAIT_FOREVER) == 1)
        if (pyq_reader_poll(r.q, 4096, on_message, &c) < 0)
            break;           /* a wrong message: c.bad says so */
    if (c.bad)
        pyq_queue_close(r.q); /* a writer waiting for room returns PYQ_ECLOSED */
    pthread_join(w, NULL);
    t0 = now_s() - t0;
    pyq_queue_stats(r.q, &st);
    pyq_queue_destroy(r.q);

    if (c.bad || (!r.err && c.expected != r.n)) {
        fprintf(stderr, "two_threads: message %" PRIu64 " of %" PRIu64 " is wrong or missing\n",
                c.expected, r.n);
        return 1;
    }
    if (r.err) {
        fprintf(stderr, "two_threads: writer: %s\n", pyq_strerror(r.err));
        return 1;
    }
    printf("two_threads: %" PRIu64 " messages of %d bytes arrived in order, %.1f M msg/s; "
           "blocks taken: %" PRIu64 " hot, %" PRIu64 " spill (pyqueue %s)\n",
           r.n, MSG, r.n / t0 / 1e6, st.takes_hot, st.takes_spill, pyq_version());
    return 0;
}
