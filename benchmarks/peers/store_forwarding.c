/*
 * store_forwarding.c - a per-message C writer that builds each message the
 * moment before it writes it, the way a C user's loop does (a sequence number
 * stored, then pyq_writer_try_write), against the same writer fed from a
 * prepared array of 32 messages, in one process, alternating; the reader on
 * the other CPU drains with pyq_reader_poll.  It shows what the copy's load
 * width costs such a writer (pyqueue_inline.h, pyq__move16x2; DESIGN §3.5):
 * a 16-byte load of a message whose first 8 bytes were just stored cannot be
 * forwarded from the store buffer and waits for the store to reach the cache.
 *
 *   cd csrc && cc -std=gnu11 -O2 -Iinclude -I. -pthread \
 *       ../benchmarks/peers/store_forwarding.c common/pattern.c core/[a-z]*.c \
 *       runtime/[a-z]*.c -o /tmp/sf -ldl -lm
 *   chrt -f 50 /tmp/sf 3        # 3 rounds of every loop, 20 M messages each
 *
 * For an A/B of two versions of the core, build the same file against each
 * tree (`git archive BASE csrc | tar -x -C DIR`) and run the two binaries in
 * turn.  M msg/s is the writer's rate (its loop's messages over its time); the
 * queue's spill tier holds every message, so the writer never waits.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyqueue.h"
#include "pyqueue_inline.h"
#include "runtime/pyq_runtime.h"

#define N 20000000ull

typedef struct {
    uint64_t seq;
    uint8_t pad[24];
} msg_t;

static pyq_queue_t *q;

static void pin(int cpu)
{
    if (pyq_cpu_pin_self(cpu) != 0)
        fprintf(stderr, "pinning to CPU %d failed: running unpinned\n", cpu);
}

static int count(void *ctx, const void *msg, uint32_t len)
{
    uint64_t seq, *next = ctx;

    memcpy(&seq, msg, sizeof seq);
    if (len != sizeof(msg_t) || seq != *next) {
        fprintf(stderr, "message %llu out of order or cut\n", (unsigned long long)*next);
        exit(1);
    }
    ++*next;
    return 0;
}

static void *reader(void *arg)
{
    uint64_t got = 0;

    (void)arg;
    pin(1);
    while (got < N)
        if (pyq_reader_poll(q, UINT64_MAX, count, &got) < 0)
            exit(1);
    return NULL;
}

static void write_or_die(int rc)
{
    if (rc != 0) {
        fprintf(stderr, "write: %d\n", rc);
        exit(1);
    }
}

static double run(int loop)
{
    pyq_config_t cfg;
    pthread_t t;
    msg_t m, arr[32];
    uint64_t t0, t1;

    pyq_config_init(&cfg);
    cfg.spill_blocks = 1u << 18; /* 1 GiB: every message fits */
    cfg.spill_nontemporal = 0;   /* cached copies only: the copy is what is measured */
    cfg.prefault = 1;
    if (pyq_queue_create(&cfg, &q) != 0) {
        fprintf(stderr, "pyq_queue_create failed\n");
        exit(1);
    }
    pin(0);
    if (pthread_create(&t, NULL, reader, NULL) != 0)
        exit(1);
    memset(&m, 0x5A, sizeof m);
    memset(arr, 0x5A, sizeof arr);
    t0 = pyq_clock_now_ns();
    switch (loop) {
    case 0: /* stamp, then the exported try_write */
        for (uint64_t i = 0; i < N; i++) {
            m.seq = i;
            write_or_die(pyq_writer_try_write(q, &m, sizeof m));
        }
        break;
    case 1: /* stamp, then the inline header's try_write */
        for (uint64_t i = 0; i < N; i++) {
            m.seq = i;
            write_or_die(pyq_writer_try_write_inline(q, &m, sizeof m));
        }
        break;
    case 2: /* stamp, then pyq_writer_write (waits for room itself) */
        for (uint64_t i = 0; i < N; i++) {
            m.seq = i;
            write_or_die(pyq_writer_write(q, &m, sizeof m, PYQ_WAIT_FOREVER));
        }
        break;
    default: /* 32 stamped into an array, then written: the bench's loop */
        for (uint64_t i = 0; i < N; i += 32) {
            for (int j = 0; j < 32; j++)
                arr[j].seq = i + (uint64_t)j;
            for (int j = 0; j < 32; j++)
                write_or_die(pyq_writer_try_write(q, &arr[j], sizeof arr[j]));
        }
        break;
    }
    t1 = pyq_clock_now_ns();
    pyq_writer_flush(q);
    pthread_join(t, NULL);
    pyq_queue_destroy(q);
    return (double)N * 1e3 / (double)(t1 - t0);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"stamp + try_write", "stamp + try_write_inline",
                                        "stamp + write", "array of 32 + try_write"};
    int rounds = argc > 1 ? atoi(argv[1]) : 3;

    for (int r = 0; r < rounds; r++)
        for (int loop = 0; loop < 4; loop++)
            printf("round %d  %-26s %7.1f M msg/s\n", r + 1, names[loop], run(loop));
    return 0;
}
