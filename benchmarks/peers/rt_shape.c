/*
 * rt_shape.c - how much the shape of a round trip's receive loop moves the
 * round trip itself: the same library calls, spun on inline, in a function of
 * their own, through a pointer, or with a copy of the message out, side by side
 * in one process, taking turns (docs/BENCHMARKS.md, "What the driver got
 * wrong": round trips on an Intel guest).
 * No Python, no driver: the loops are the ones below.
 *
 *     make lib
 *     cc -O2 -std=gnu11 -fno-strict-aliasing -Icsrc/include \
 *         benchmarks/peers/rt_shape.c build/clib/libpyqueue.a -pthread -o rt_shape
 *     chrt -f 50 ./rt_shape ROUNDS SHAPE [SHAPE ...]
 *
 * SHAPE is one of
 *   pp_spin    two-line ping-pong (the bench's floor): each side spins on the
 *              other's line, no relax
 *   pp_pause   the same with a PAUSE in each spin
 *   pq_inline  one 32-byte message each way over two pyqueue queues (publish
 *              each), its receive pyq_reader_poll(max 1) spun on in the
 *              caller's loop, the sequence number checked in the callback
 *              (the twins' receive)
 *   pq_call    the same loop in a function of its own, called once a message
 *              (what an adapter's read_spin is)
 *   pq_ptr     pyq_reader_poll called through a function pointer each spin
 *   pq_copy    pq_inline with the message copied out (32 bytes) in the
 *              callback and checked after the loop
 *   pq_pause   pq_inline with a PAUSE after each empty poll (pp_pause's spin)
 *   pq_wait    pyq_reader_wait() (the library's own wait: a relaxed spin,
 *              then sleeps; never reached here) before each poll
 *   pq_scan    pq_inline's loop on queues with scan_current under publish max
 *              (the send's flush publishes): every record starts a line (the
 *              bench's pyqueue_scan)
 *   pq_scan_each  the same with publish each
 *   fl_ring    no queue: a fresh line a message, as pyqueue's scan_current
 *              records take (line seq % 4096 of a 256 KiB ring a direction,
 *              the payload then the sequence number stored with release, the
 *              receiver spinning on that line's number) -- what handing a
 *              message over in a new line costs against reusing one (pp_spin)
 *   fl_ring_pfw  fl_ring with a PREFETCHW of the line two ahead after each send
 *              (as pyqueue's zeroing ahead owns the next lines before the
 *              receiver spins on them)
 * e.g.  ./rt_shape 4 pp_spin pq_inline pq_call
 *
 * A on CPU 0 times each round trip with rdtsc; the echo runs on CPU 1.  Per
 * round and shape: p10 / p50 / p90 of 20,000 round trips (after 1,000 not
 * kept), in ns at the TSC rate measured against CLOCK_MONOTONIC; the last line,
 * per shape, the median over rounds of its p50.  Every message's sequence
 * number is checked; a wrong one exits 1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "pyqueue.h"

#define TRIPS 20000
#define WARM 1000
#define MAX_SHAPES 12
#define RING_LINES 4096
#define MAX_ROUNDS 64

enum shape {
    PP_SPIN, PP_PAUSE, PQ_INLINE, PQ_CALL, PQ_PTR, PQ_COPY, PQ_PAUSE, PQ_WAIT, PQ_SCAN,
    PQ_SCAN_EACH, FL_RING, FL_RING_PFW, N_SHAPES
};
static const char *const names[N_SHAPES] = {"pp_spin", "pp_pause", "pq_inline", "pq_call",
                                            "pq_ptr",  "pq_copy",  "pq_pause",  "pq_wait",
                                            "pq_scan", "pq_scan_each", "fl_ring",
                                            "fl_ring_pfw"};

static struct {
    _Alignas(64) _Atomic uint64_t v;
} line_ab, line_ba;

/* fl_ring's lines, one ring a direction: a message's sequence number in the
 * first word, its 32-byte payload after it. */
struct rline {
    _Alignas(64) _Atomic uint64_t seq;
    uint8_t pay[56];
};
static struct rline ring_ab[RING_LINES], ring_ba[RING_LINES];

struct run {
    enum shape shape;
    pyq_queue_t *ab, *ba;
    _Atomic int ready;
    _Atomic int bad;
};

struct expect {
    uint64_t seq;
};

static int check_seq(void *ctx, const void *msg, uint32_t len)
{
    struct expect *e = ctx;
    uint64_t v;

    memcpy(&v, msg, 8);
    if (len != 32 || v != e->seq)
        return PYQ_EBADMSG;
    return 0;
}

static int copy_out(void *ctx, const void *msg, uint32_t len)
{
    if (len != 32)
        return PYQ_EBADMSG;
    memcpy(ctx, msg, 32);
    return 0;
}

static int64_t (*volatile poll_ptr)(pyq_queue_t *, uint64_t, pyq_message_fn, void *) =
    pyq_reader_poll;

/* The spin of pq_inline, in a function of its own. */
static __attribute__((noinline)) int64_t spin_call(pyq_queue_t *q, uint64_t seq)
{
    struct expect e = {seq};
    int64_t k;

    while ((k = pyq_reader_poll(q, 1, check_seq, &e)) == 0)
        ;
    return k;
}

/* Send seq on q (or the ping-pong line), then take seq back from the other. */
static inline __attribute__((always_inline)) int send(struct run *r, pyq_queue_t *q,
                                                      _Atomic uint64_t *line, uint64_t seq)
{
    uint8_t m[32];

    if (r->shape == PP_SPIN || r->shape == PP_PAUSE) {
        atomic_store_explicit(line, seq, memory_order_release);
        return 0;
    }
    memset(m, 0x5a, sizeof m);
    memcpy(m, &seq, 8);
    if (r->shape == FL_RING || r->shape == FL_RING_PFW) {
        struct rline *ring = line == &line_ab.v ? ring_ab : ring_ba;
        struct rline *l = &ring[seq % RING_LINES];
        memcpy(l->pay, m, sizeof m);
        atomic_store_explicit(&l->seq, seq, memory_order_release);
        if (r->shape == FL_RING_PFW)
            __asm__ __volatile__("prefetchw %0" : : "m"(ring[(seq + 2) % RING_LINES]));
        return 0;
    }
    while (pyq_writer_try_write(q, m, 32) == PYQ_EAGAIN)
        ;
    return pyq_writer_flush(q);
}

static inline __attribute__((always_inline)) int recv(struct run *r, pyq_queue_t *q,
                                                      _Atomic uint64_t *line, uint64_t seq)
{
    struct expect e = {seq};
    uint8_t m[32];
    int64_t k = 0;
    uint64_t v;

    switch (r->shape) {
    case PP_SPIN:
        while (atomic_load_explicit(line, memory_order_acquire) != seq)
            ;
        return 0;
    case PP_PAUSE:
        while (atomic_load_explicit(line, memory_order_acquire) != seq)
            _mm_pause();
        return 0;
    case FL_RING:
    case FL_RING_PFW: {
        struct rline *l = &(line == &line_ab.v ? ring_ab : ring_ba)[seq % RING_LINES];
        while (atomic_load_explicit(&l->seq, memory_order_acquire) != seq)
            ;
        memcpy(&v, l->pay, 8);
        return v != seq;
    }
    case PQ_INLINE:
    case PQ_SCAN:
    case PQ_SCAN_EACH:
        while ((k = pyq_reader_poll(q, 1, check_seq, &e)) == 0)
            ;
        break;
    case PQ_CALL:
        k = spin_call(q, seq);
        break;
    case PQ_PTR:
        while ((k = poll_ptr(q, 1, check_seq, &e)) == 0)
            ;
        break;
    case PQ_PAUSE:
        while ((k = pyq_reader_poll(q, 1, check_seq, &e)) == 0)
            _mm_pause();
        break;
    case PQ_WAIT:
        while ((k = pyq_reader_wait(q, PYQ_WAIT_FOREVER)) == 1 &&
               (k = pyq_reader_poll(q, 1, check_seq, &e)) == 0)
            ;
        break;
    default: /* PQ_COPY */
        while ((k = pyq_reader_poll(q, 1, copy_out, m)) == 0)
            ;
        memcpy(&v, m, 8);
        if (k == 1 && v != seq)
            k = PYQ_EBADMSG;
        break;
    }
    return k == 1 ? 0 : 1;
}

static void pin(int cpu)
{
    cpu_set_t s;

    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0) {
        fprintf(stderr, "rt_shape: cannot pin to CPU %d\n", cpu);
        exit(2);
    }
}

static void *echo(void *arg)
{
    struct run *r = arg;

    atomic_store(&r->ready, 1);
    for (uint64_t i = 1; i <= TRIPS + WARM; i++) {
        if (recv(r, r->ab, &line_ab.v, i) || send(r, r->ba, &line_ba.v, i)) {
            atomic_store(&r->bad, 1);
            break;
        }
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* One round of shape s; p10 / p50 / p90 in ticks into out. */
static int one_round(enum shape s, uint64_t *samples, uint64_t out[3])
{
    struct run r = {.shape = s};
    pyq_config_t cfg;
    pthread_attr_t at;
    cpu_set_t cpus;
    pthread_t t;
    int bad = 0;

    pyq_config_init(&cfg);
    cfg.publish = s == PQ_SCAN ? PYQ_PUBLISH_MAX : PYQ_PUBLISH_EACH;
    cfg.scan_current = s == PQ_SCAN || s == PQ_SCAN_EACH;
    if (pyq_queue_create(&cfg, &r.ab) != 0 || pyq_queue_create(&cfg, &r.ba) != 0) {
        fprintf(stderr, "rt_shape: cannot create the queues\n");
        exit(2);
    }
    atomic_store(&line_ab.v, 0);
    atomic_store(&line_ba.v, 0);
    memset(ring_ab, 0, sizeof ring_ab);
    memset(ring_ba, 0, sizeof ring_ba);
    /* The echo starts on its own CPU: behind a spinning SCHED_FIFO A on A's
     * CPU it would never run. */
    pthread_attr_init(&at);
    CPU_ZERO(&cpus);
    CPU_SET(1, &cpus);
    pthread_attr_setaffinity_np(&at, sizeof cpus, &cpus);
    if (pthread_create(&t, &at, echo, &r) != 0) {
        fprintf(stderr, "rt_shape: cannot start the echo on CPU 1\n");
        exit(2);
    }
    while (!atomic_load(&r.ready))
        sched_yield();
    for (uint64_t i = 1; i <= TRIPS + WARM && !bad; i++) {
        uint64_t t0 = __rdtsc();
        bad = send(&r, r.ab, &line_ab.v, i) || recv(&r, r.ba, &line_ba.v, i);
        if (i > WARM)
            samples[i - WARM - 1] = __rdtsc() - t0;
    }
    if (bad) { /* the echo may be spinning on a message that never comes */
        fprintf(stderr, "rt_shape: %s: a wrong sequence number\n", names[s]);
        exit(1);
    }
    pthread_join(t, NULL);
    pthread_attr_destroy(&at);
    pyq_queue_destroy(r.ab);
    pyq_queue_destroy(r.ba);
    if (atomic_load(&r.bad))
        return 1;
    qsort(samples, TRIPS, sizeof *samples, cmp_u64);
    out[0] = samples[TRIPS / 10];
    out[1] = samples[TRIPS / 2];
    out[2] = samples[TRIPS - TRIPS / 10];
    return 0;
}

int main(int argc, char **argv)
{
    static uint64_t samples[TRIPS];
    static double p50[MAX_SHAPES][MAX_ROUNDS];
    enum shape shapes[MAX_SHAPES];
    int rounds = argc > 1 ? atoi(argv[1]) : 0, n = argc - 2;
    double t0, c0, per_ns;

    if (rounds < 1 || rounds > MAX_ROUNDS || n < 1 || n > MAX_SHAPES) {
        fprintf(stderr, "rt_shape: usage: rt_shape ROUNDS(1-%d) SHAPE... (1-%d shapes)\n",
                MAX_ROUNDS, MAX_SHAPES);
        return 2;
    }
    for (int k = 0; k < n; k++) {
        int s = 0;
        while (s < N_SHAPES && strcmp(argv[k + 2], names[s]) != 0)
            s++;
        if (s == N_SHAPES) {
            fprintf(stderr, "rt_shape: unknown shape '%s'\n", argv[k + 2]);
            return 2;
        }
        shapes[k] = (enum shape)s;
    }
    pin(0);
    t0 = now_ns();
    c0 = (double)__rdtsc();
    for (int i = 0; i < rounds; i++) {
        printf("round %d:", i + 1);
        for (int k = 0; k < n; k++) {
            uint64_t q[3];
            if (one_round(shapes[k], samples, q) != 0) {
                fprintf(stderr, "rt_shape: %s: a wrong sequence number\n", names[shapes[k]]);
                return 1;
            }
            per_ns = ((double)__rdtsc() - c0) / (now_ns() - t0);
            printf(" %s=%.0f/%.0f/%.0f", names[shapes[k]], q[0] / per_ns, q[1] / per_ns,
                   q[2] / per_ns);
            p50[k][i] = q[1] / per_ns;
        }
        printf("\n");
        fflush(stdout);
    }
    printf("median p50 over rounds, ns:");
    for (int k = 0; k < n; k++) {
        qsort(p50[k], rounds, sizeof(double), cmp_dbl);
        printf(" %s=%.0f", names[shapes[k]], p50[k][rounds / 2]);
    }
    printf("\n");
    return 0;
}
