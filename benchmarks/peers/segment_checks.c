/*
 * segment_checks.c - what the reader's checks of a shared segment cost (DESIGN
 * §3.9, "Checks of the dynamic state"), A/B in one binary: the same shared
 * queue's reader with its checks (the default) and without them
 * (pyq_shm_set_checks, a private switch only this benchmark uses), in
 * alternating rounds.  Two figures, writer on CPU 0 and reader on CPU 1:
 *   flat-out   32-byte messages, publish max (runs), both sides unpaced from
 *              an empty queue until N messages are read: M msg/s;
 *   round trip one 32-byte message there and back over two queues, publish
 *              each: ns per round trip, the mean of the round's middle half of
 *              samples (robust to preemption, and finer than a median, which
 *              this VM's 10 ns clock steps would round).
 * The cost is the median over rounds of each round's ratio, A and B side by
 * side within a round, the order turning each round.
 * An in-process queue's rows are printed beside them (its reader never
 * checks: it runs the unchecked loops whatever the switch).
 *
 *   cd csrc && cc -std=gnu11 -O2 -Iinclude -I. -pthread \
 *       ../benchmarks/peers/segment_checks.c common/pattern.c core/[a-z]*.c \
 *       runtime/[a-z]*.c -o /tmp/segck -ldl -lm
 *   /tmp/segck 9          # 9 rounds of each (A and B alternate within a round)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/shared_pvt.h"
#include "runtime/pyq_runtime.h"

#define N_FLAT 20000000ull
#define N_RT 200000u

static void pin(int cpu)
{
    pyq_cpu_pin_self(cpu);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pyq_queue_t *make(int shared, int publish, int checks)
{
    pyq_config_t c;
    pyq_queue_t *q;
    int fd = -1;

    pyq_config_init(&c);
    c.block_size = 4096;
    c.hot_blocks = 4;
    c.spill_blocks = 252;
    c.publish = publish;
    if (shared) {
        if (pyq_queue_create_shared(NULL, &c, &q, &fd) != 0 ||
            pyq_queue_take(q, PYQ_SIDE_WRITER, 0) || pyq_queue_take(q, PYQ_SIDE_READER, 0))
            exit(2);
        close(fd);
        pyq_shm_set_checks((struct pyq_queue *)q, checks);
    } else if (pyq_queue_create(&c, &q) != 0) {
        exit(2);
    }
    return q;
}

/* --- flat-out --------------------------------------------------------------- */

static pthread_barrier_t start;
static pyq_queue_t *fq;

static int count(void *ctx, const void *msg, uint32_t len)
{
    (void)msg;
    (void)len;
    ++*(uint64_t *)ctx;
    return 0;
}

static void *flat_writer(void *arg)
{
    uint8_t m[32] = { 0 };
    (void)arg;
    pin(0);
    pthread_barrier_wait(&start);
    for (uint64_t i = 0; i < N_FLAT; i++) {
        memcpy(m, &i, 8);
        while (pyq_writer_try_write(fq, m, 32) != 0)
            pyq_cpu_relax();
    }
    pyq_writer_flush(fq);
    return NULL;
}

static double flat(int shared, int checks)
{
    pthread_t w;
    uint64_t got = 0, t0;

    fq = make(shared, PYQ_PUBLISH_MAX, checks);
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&w, NULL, flat_writer, NULL);
    pin(1);
    pthread_barrier_wait(&start);
    t0 = now_ns();
    while (got < N_FLAT)
        pyq_reader_poll(fq, 256, count, &got);
    t0 = now_ns() - t0;
    pthread_join(w, NULL);
    pyq_queue_destroy(fq);
    return N_FLAT / (t0 / 1e3); /* M msg/s */
}

/* --- round trip --------------------------------------------------------------- */

static pyq_queue_t *ping, *pong;

static int keep(void *ctx, const void *msg, uint32_t len)
{
    memcpy(ctx, msg, len);
    return 0;
}

static void *echo(void *arg)
{
    uint8_t m[32];
    (void)arg;
    pin(0);
    pthread_barrier_wait(&start);
    for (uint32_t i = 0; i < N_RT; i++) {
        while (pyq_reader_poll(ping, 1, keep, m) != 1)
            pyq_cpu_relax();
        while (pyq_writer_try_write(pong, m, 32) != 0)
            pyq_cpu_relax();
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double round_trip(int shared, int checks)
{
    static uint64_t ns[N_RT];
    uint8_t m[32] = { 0 };
    double sum = 0;
    pthread_t e;

    ping = make(shared, PYQ_PUBLISH_EACH, checks);
    pong = make(shared, PYQ_PUBLISH_EACH, checks);
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&e, NULL, echo, NULL);
    pin(1);
    pthread_barrier_wait(&start);
    for (uint32_t i = 0; i < N_RT; i++) {
        uint64_t t0 = now_ns();
        memcpy(m, &i, 4);
        while (pyq_writer_try_write(ping, m, 32) != 0)
            pyq_cpu_relax();
        while (pyq_reader_poll(pong, 1, keep, m) != 1)
            pyq_cpu_relax();
        ns[i] = now_ns() - t0;
    }
    pthread_join(e, NULL);
    pyq_queue_destroy(ping);
    pyq_queue_destroy(pong);
    qsort(ns, N_RT, sizeof ns[0], cmp);
    for (uint32_t i = N_RT / 4; i < 3 * N_RT / 4; i++)
        sum += (double)ns[i];
    return sum / (N_RT / 2);
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    double fa[64], fb[64], fl[64], ra[64], rb[64], rl[64];

    if (rounds < 1 || rounds > 64)
        rounds = 9;
    for (int r = 0; r < rounds; r++) {
        /* The order turns each round, so that neither side always runs first. */
        if (r & 1) {
            fb[r] = flat(1, 0), fa[r] = flat(1, 1);
            rb[r] = round_trip(1, 0), ra[r] = round_trip(1, 1);
        } else {
            fa[r] = flat(1, 1), fb[r] = flat(1, 0);
            ra[r] = round_trip(1, 1), rb[r] = round_trip(1, 0);
        }
        fl[r] = flat(0, 1);
        rl[r] = round_trip(0, 1);
        fprintf(stderr, "round %d: flat-out %.1f / %.1f M msg/s, round trip %.1f / %.1f ns "
                        "(checked / unchecked; in-process %.1f, %.1f)\n",
                r + 1, fa[r], fb[r], ra[r], rb[r], fl[r], rl[r]);
    }
    double fr[64], rr[64];
    for (int r = 0; r < rounds; r++) {
        fr[r] = fb[r] / fa[r]; /* > 1: the checked side is slower */
        rr[r] = ra[r] / rb[r];
    }
    double mfa = median(fa, rounds), mfb = median(fb, rounds), mra = median(ra, rounds),
           mrb = median(rb, rounds);
    printf("shared, checked    flat-out %7.1f M msg/s   round trip %6.1f ns\n", mfa, mra);
    printf("shared, unchecked  flat-out %7.1f M msg/s   round trip %6.1f ns\n", mfb, mrb);
    printf("in-process         flat-out %7.1f M msg/s   round trip %6.1f ns\n",
           median(fl, rounds), median(rl, rounds));
    printf("checks cost: flat-out %+.1f %%, round trip %+.1f %% (median of %d rounds' "
           "paired ratios)\n", (median(fr, rounds) - 1) * 100, (median(rr, rounds) - 1) * 100,
           rounds);
    printf("command: %s %d\n", argv[0], rounds);
    return 0;
}
