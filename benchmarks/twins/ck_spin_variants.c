/* ck_spin_variants.c - where ck_ring's round trip spends the time the bench's
 * driver added (docs/BENCHMARKS.md, "What the driver got wrong").
 *
 * x86-64 (rdtsc).  One 32-byte message A -> B -> A through two ck_rings built as csrc/peers/ck.c
 * builds them (typed by-value msg32 interface, 32,768 slots, warmed), writer on
 * CPU 0 and echo on CPU 1, 20,000 timed trips a run after 1,000 untimed.  Each
 * variant changes one thing against the all-inline loop:
 *
 *   inline          enqueue and dequeue inlined (the twin's shape)
 *   send-ptr        the enqueue called through a pointer
 *   poll-ptr        the dequeue (with its callback) called through a pointer
 *                   on every spin iteration (the old driver's shape)
 *   spin-ptr        the whole spin loop out of line, one call per message
 *                   (the driver's shape with the adapter's read_spin)
 *   inline-chead    inline, re-reading ck's c_head every spin iteration
 *
 * Variants run interleaved, the order reversed every round; the p50 of each
 * run, then min / median / max over the rounds.
 *
 *   cc -O2 -o /tmp/ck_spin benchmarks/twins/ck_spin_variants.c -lck -lpthread
 *   chrt -f 50 /tmp/ck_spin 40
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <x86intrin.h>

#include <ck_ring.h>

#define SLOTS 32768u
#define WARMUP 1000u
#define TRIPS 20000u

struct msg32 {
    unsigned char b[32];
};

CK_RING_PROTOTYPE(msg32, msg32)

struct ring {
    ck_ring_t ring;
    struct msg32 *slots;
};

typedef int (*take_fn)(void *, const struct msg32 *);

static struct ring *ring_new(void)
{
    struct ring *c;
    struct msg32 m = {{0}};

    if (posix_memalign((void **)&c, 64, sizeof *c) != 0)
        abort();
    memset(c, 0, sizeof *c);
    c->slots = mmap(NULL, SLOTS * sizeof m, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->slots == MAP_FAILED)
        abort();
    ck_ring_init(&c->ring, SLOTS);
    while (ck_ring_enqueue_spsc_msg32(&c->ring, c->slots, &m)) /* touch every page */
        ;
    while (ck_ring_dequeue_spsc_msg32(&c->ring, c->slots, &m))
        ;
    return c;
}

static inline __attribute__((always_inline)) int send_inl(struct ring *c, struct msg32 *m)
{
    return ck_ring_enqueue_spsc_msg32(&c->ring, c->slots, m);
}

static inline __attribute__((always_inline)) int poll_inl(struct ring *c, take_fn fn, void *ctx)
{
    struct msg32 m;

    if (!ck_ring_dequeue_spsc_msg32(&c->ring, c->slots, &m))
        return 0;
    fn(ctx, &m);
    return 1;
}

struct seq {
    uint64_t want;
    int ok;
};

static inline int take(void *ctx, const struct msg32 *m)
{
    struct seq *s = ctx;
    uint64_t v;

    memcpy(&v, m->b, 8);
    s->ok = v == s->want;
    return 0;
}

__attribute__((noinline)) static int send_out(struct ring *c, struct msg32 *m)
{
    return send_inl(c, m);
}

__attribute__((noinline)) static int poll_out(struct ring *c, take_fn fn, void *ctx)
{
    return poll_inl(c, fn, ctx);
}

__attribute__((noinline)) static void spin_out(struct ring *c, struct seq *s)
{
    while (!poll_inl(c, take, s))
        ;
}

/* Pointers the compiler cannot see through. */
static int (*volatile send_ptr)(struct ring *, struct msg32 *) = send_out;
static int (*volatile poll_ptr)(struct ring *, take_fn, void *) = poll_out;
static void (*volatile spin_ptr)(struct ring *, struct seq *) = spin_out;

enum { INLINE, SEND_PTR, POLL_PTR, SPIN_PTR, INLINE_CHEAD, NVARIANTS };
static const char *const names[NVARIANTS] = {"inline", "send-ptr", "poll-ptr", "spin-ptr",
                                             "inline-chead"};

static inline __attribute__((always_inline)) void send(int v, struct ring *c, struct msg32 *m,
                                                       uint64_t seq)
{
    memcpy(m->b, &seq, 8);
    if (v == SEND_PTR)
        while (!send_ptr(c, m))
            _mm_pause();
    else
        while (!send_inl(c, m))
            _mm_pause();
}

static inline __attribute__((always_inline)) void recv(int v, struct ring *c, uint64_t seq)
{
    struct seq s = {seq, 0};

    if (v == POLL_PTR)
        while (!poll_ptr(c, take, &s))
            ;
    else if (v == SPIN_PTR)
        spin_ptr(c, &s);
    else if (v == INLINE_CHEAD)
        for (;;) {
            (void)*(volatile unsigned *)&c->ring.c_head;
            if (poll_inl(c, take, &s))
                break;
        }
    else
        while (!poll_inl(c, take, &s))
            ;
    if (!s.ok)
        abort();
}

struct rt {
    struct ring *ab, *ba;
    int ready __attribute__((aligned(64)));
};

#define VARIANT(v)                                                                   \
    static void *echo_##v(void *arg)                                                 \
    {                                                                                \
        struct rt *r = arg;                                                          \
        struct msg32 m = {{0}};                                                      \
                                                                                     \
        __atomic_fetch_add(&r->ready, 1, __ATOMIC_ACQ_REL);                          \
        while (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) < 2)                     \
            ;                                                                        \
        for (uint64_t i = 0; i < WARMUP + TRIPS; i++) {                              \
            recv(v, r->ab, i);                                                       \
            send(v, r->ba, &m, i);                                                   \
        }                                                                            \
        return NULL;                                                                 \
    }                                                                                \
    static void timed_##v(struct rt *r, uint64_t *ticks)                             \
    {                                                                                \
        struct msg32 m = {{0}};                                                      \
                                                                                     \
        for (uint64_t i = 0; i < WARMUP + TRIPS; i++) {                              \
            uint64_t t0 = __rdtsc();                                                 \
            send(v, r->ab, &m, i);                                                   \
            recv(v, r->ba, i);                                                       \
            ticks[i] = __rdtsc() - t0;                                               \
        }                                                                            \
    }
VARIANT(INLINE)
VARIANT(SEND_PTR)
VARIANT(POLL_PTR)
VARIANT(SPIN_PTR)
VARIANT(INLINE_CHEAD)

static void *(*const echos[NVARIANTS])(void *) = {echo_INLINE, echo_SEND_PTR, echo_POLL_PTR,
                                                  echo_SPIN_PTR, echo_INLINE_CHEAD};
static void (*const timeds[NVARIANTS])(struct rt *, uint64_t *) = {
    timed_INLINE, timed_SEND_PTR, timed_POLL_PTR, timed_SPIN_PTR, timed_INLINE_CHEAD};

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int by_tick(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double ticks_per_ns(void)
{
    struct timespec a, b;
    uint64_t t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &a);
    t0 = __rdtsc();
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 50000000L);
    t1 = __rdtsc();
    return (double)(t1 - t0) / ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec));
}

/* One run of variant v: the p50 of its timed trips, in ns. */
static double run(int v, double tpn)
{
    static uint64_t ticks[WARMUP + TRIPS];
    struct rt *r;
    pthread_t th;
    pthread_attr_t at;
    cpu_set_t cpus;
    double p50;

    if (posix_memalign((void **)&r, 64, sizeof *r) != 0)
        abort();
    memset(r, 0, sizeof *r);
    r->ab = ring_new();
    r->ba = ring_new();
    /* The echo starts on CPU 1 (created elsewhere behind a spinning SCHED_FIFO
     * A, it would never run). */
    pthread_attr_init(&at);
    CPU_ZERO(&cpus);
    CPU_SET(1, &cpus);
    pthread_attr_setaffinity_np(&at, sizeof cpus, &cpus);
    if (pthread_create(&th, &at, echos[v], r) != 0)
        abort();
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
    __atomic_fetch_add(&r->ready, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) < 2)
        ;
    timeds[v](r, ticks);
    pthread_join(th, NULL);
    qsort(ticks + WARMUP, TRIPS, sizeof ticks[0], by_tick);
    p50 = ticks[WARMUP + (TRIPS + 1) / 2 - 1] / tpn; /* nearest rank */
    munmap(r->ab->slots, SLOTS * sizeof(struct msg32));
    munmap(r->ba->slots, SLOTS * sizeof(struct msg32));
    free(r->ab);
    free(r->ba);
    free(r);
    return p50;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    double tpn = ticks_per_ns();
    double *p50 = calloc((size_t)rounds * NVARIANTS, sizeof *p50);

    if (rounds < 1 || !p50)
        return 2;
    for (int k = 0; k < rounds; k++)
        for (int j = 0; j < NVARIANTS; j++) {
            int v = k & 1 ? NVARIANTS - 1 - j : j;
            p50[v * rounds + k] = run(v, tpn);
        }
    printf("ck round trip p50, ns (%d rounds of %u trips; min / median / max over rounds)\n",
           rounds, TRIPS);
    for (int v = 0; v < NVARIANTS; v++) {
        double *x = p50 + v * rounds;

        qsort(x, rounds, sizeof *x, by_value);
        printf("  %-13s %6.0f / %6.0f / %6.0f\n", names[v], x[0], x[rounds / 2],
               x[rounds - 1]);
    }
    free(p50);
    return 0;
}
