/*
 * writer_fill.c - the writer alone (or, --reader, the reader alone), per
 * message: how fast one thread writes 16,384 32-byte messages (512 KiB) into
 * a queue whose reader waits, episode after episode (the reader drains
 * everything, checked, between two fills; --reader times those drains),
 * for pyqueue's inline per-message path and the yardstick ring beside it, in
 * one process, taking turns.  No Python, no driver: the loops are the ones
 * below, the library's calls inlined (docs/BENCHMARKS.md, "The writer alone").
 *
 *     make lib
 *     cc -O2 -std=gnu11 -fno-strict-aliasing -Icsrc/include \
 *         benchmarks/peers/writer_fill.c build/clib/libpyqueue.a -pthread -o writer_fill
 *     chrt -f 50 ./writer_fill [--reader] ROUNDS SPEC [SPEC ...]
 *
 * SPEC is queue,stamp,hot,prefetch,block:
 *   queue     pyqueue             pyq_writer_try_write_inline (pyqueue.h)
 *             pyqueue_move16      the same inline path with the copy as one
 *                                 memcpy (16-byte loads) instead of
 *                                 pyq__move16x2's 8-byte loads -- an experiment
 *             yardstick           a rigtorp-style ring of 32,768 32-byte slots
 *                                 (1 MiB), head and tail published per message
 *             yardstick_shuffled  the same ring with its 256 pages of 4 KiB
 *                                 visited in a fixed shuffled order: the pages
 *                                 no longer follow each other in memory, as a
 *                                 pyqueue writer's blocks need not
 *             yardstick_unread    the ring whose reader takes each fill without
 *                                 reading a slot (its head set to the tail: the
 *                                 count checked, not the messages), so the
 *                                 writer finds every line still in its own
 *                                 cache: the writer with no line to take back
 *                                 from the reader's -- what the others pay for
 *   stamp     batch   the writer stamps 32 sequence numbers into its array,
 *                     then writes the 32 (as the bench's drivers and twins do)
 *             each    it stamps each message the moment before writing it
 *   hot, prefetch, block   pyqueue's hot tier (hot of 256 4 KiB blocks' worth:
 *                     the rest spill), prefetch (0/1), block_size (a power of
 *                     two from 4 KiB that divides hot * 4 KiB); checked, and
 *                     ignored, for the rings
 * e.g.  ./writer_fill 8 yardstick,batch,4,1,4096 pyqueue,batch,4,1,4096
 *
 * Writer on CPU 0, reader on CPU 1.  Per round and spec: the median over
 * episodes 10..59 of the fill rate, M msg/s (the first 10 warm the pages) --
 * with --reader, of the drain rate instead: the reader alone, from the fill's
 * end to its last message, pyq_reader_poll_inline (pyqueue.h) or the ring's
 * own loop, each message's sequence number checked;
 * the last line, per spec, the median over rounds of its ratio to the first
 * spec of the same round.  Every message's sequence number is checked by the
 * reader (yardstick_unread's reader checks the fill's count instead); a wrong
 * one exits 1.
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

#include "pyqueue.h"

#define FILL 16384  /* messages a fill: 512 KiB, half the queues' 1 MiB */
#define EPISODES 60
#define WARM 10
#define SLOTS 32768 /* the rings' slots: 1 MiB */
#define MAX_SPECS 16
#define MAX_ROUNDS 64

typedef struct {
    uint64_t seq;
    uint8_t rest[24];
} msg_t;

enum { Q_PYQUEUE, Q_MOVE16, Q_RING, Q_RING_SHUFFLED, Q_RING_UNREAD };

struct spec {
    int queue, stamp_each, hot, prefetch, block;
    const char *text;
};

struct ring {
    _Alignas(64) _Atomic uint64_t tail;
    uint64_t head_cache;
    _Alignas(64) _Atomic uint64_t head;
    _Alignas(64) msg_t slots[SLOTS];
};

static struct spec cur;
static pyq_queue_t *q;
static struct ring *ring;
static _Atomic int phase; /* 0: the writer fills; 1: the reader drains */
static double fill_ns[EPISODES];
static double drain_ns[EPISODES]; /* --reader: the reader's drains */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0) {
        fprintf(stderr, "writer_fill: cannot pin to CPU %d\n", cpu);
        exit(2);
    }
}

static void die(const char *what)
{
    fprintf(stderr, "writer_fill: %s\n", what);
    exit(1);
}

/* The ring's slot of message t: in order, or with its 4 KiB pages (128 slots
 * each) visited in the order p * 97 mod 256 (97 is odd: every page once). */
static inline uint64_t ring_slot(uint64_t t)
{
    if (cur.queue == Q_RING_SHUFFLED) {
        uint64_t page = (t >> 7) & 255;
        return ((page * 97) & 255) << 7 | (t & 127);
    }
    return t & (SLOTS - 1);
}

static inline int ring_write(const msg_t *m)
{
    uint64_t t = atomic_load_explicit(&ring->tail, memory_order_relaxed);

    if (t - ring->head_cache >= SLOTS) {
        ring->head_cache = atomic_load_explicit(&ring->head, memory_order_acquire);
        if (t - ring->head_cache >= SLOTS)
            return PYQ_EAGAIN;
    }
    memcpy(&ring->slots[ring_slot(t)], m, sizeof *m);
    atomic_store_explicit(&ring->tail, t + 1, memory_order_release);
    return 0;
}

/* pyq_writer_try_write_inline with the copy as a memcpy of 32 bytes. */
static inline int move16_write(const msg_t *m)
{
    struct pyq_writer_view *w = PYQ__VIEW(q, PYQ_WRITER_VIEW_OFFSET, struct pyq_writer_view);
    uint64_t pos_run = pyq__pos_run_load(&w->pos_run), after = pos_run + (PYQ__RUN_MEMBER | 32);

    if (__builtin_expect(pyq__run_member(&w->run_key, 32) && (uint32_t)after < w->run_limit, 1)) {
        memcpy(w->blk + (uint32_t)pos_run, m, 32);
        pyq__pos_run_store(&w->pos_run, after);
        return 0;
    }
    return pyq_writer_try_write(q, m, 32);
}

static inline int write_one(const msg_t *m)
{
    switch (cur.queue) {
    case Q_RING:
    case Q_RING_SHUFFLED:
    case Q_RING_UNREAD:
        return ring_write(m);
    case Q_MOVE16:
        return move16_write(m);
    default:
        return pyq_writer_try_write_inline(q, m, 32);
    }
}

static void *writer(void *arg)
{
    msg_t buf[32];
    uint64_t seq = 0;

    (void)arg;
    pin(0);
    memset(buf, 0x5A, sizeof buf);
    for (int e = 0; e < EPISODES; e++) {
        uint64_t t0, end = seq + FILL;

        while (atomic_load(&phase) != 0)
            ;
        t0 = now_ns();
        for (; seq < end; seq += 32) {
            if (!cur.stamp_each)
                for (int k = 0; k < 32; k++)
                    buf[k].seq = seq + k;
            for (int k = 0; k < 32; k++) {
                if (cur.stamp_each)
                    buf[k].seq = seq + k;
                if (write_one(&buf[k]) != 0)
                    die("a write failed with room in the queue");
            }
        }
        if (q)
            pyq_writer_flush(q);
        fill_ns[e] = (double)(now_ns() - t0);
        atomic_store(&phase, 1);
    }
    return NULL;
}

static int check(void *ctx, const void *msg, uint32_t len)
{
    uint64_t *want = ctx, seq;

    memcpy(&seq, msg, 8);
    if (len != 32 || seq != *want)
        return PYQ_EBADMSG;
    ++*want;
    return 0;
}

static void *reader(void *arg)
{
    uint64_t got = 0;

    (void)arg;
    pin(1);
    for (int e = 0; e < EPISODES; e++) {
        uint64_t end = (uint64_t)(e + 1) * FILL, t0;

        while (atomic_load(&phase) != 1)
            ;
        t0 = now_ns();
        while (got < end) {
            if (cur.queue >= Q_RING) {
                uint64_t h = atomic_load_explicit(&ring->head, memory_order_relaxed);
                uint64_t t = atomic_load_explicit(&ring->tail, memory_order_acquire);
                if (cur.queue == Q_RING_UNREAD) { /* the fill taken unread */
                    if (t > end)
                        die("the ring holds more than its fill");
                    h = t;
                    atomic_store_explicit(&ring->head, h, memory_order_release);
                }
                for (; h < t; h++) {
                    msg_t m = ring->slots[ring_slot(h)];
                    if (m.seq != h)
                        die("the ring delivered a wrong message");
                    atomic_store_explicit(&ring->head, h + 1, memory_order_release);
                }
                got = h;
            } else if (pyq_reader_poll_inline(q, UINT64_MAX, check, &got) < 0) {
                die("pyqueue delivered a wrong message");
            }
        }
        drain_ns[e] = (double)(now_ns() - t0);
        atomic_store(&phase, 0);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run(const struct spec *s, int drains)
{
    double *t = drains ? drain_ns : fill_ns;
    pthread_t w, r;

    cur = *s;
    q = NULL;
    if (s->queue <= Q_MOVE16) {
        pyq_config_t c;
        pyq_config_init(&c);
        c.block_size = (uint32_t)s->block;
        c.hot_blocks = (uint32_t)((uint64_t)s->hot * 4096 / (uint64_t)s->block);
        c.spill_blocks = (uint32_t)((uint64_t)(256 - s->hot) * 4096 / (uint64_t)s->block);
        c.prefetch = s->prefetch;
        if (pyq_queue_create(&c, &q) != 0)
            die("pyq_queue_create refused the spec's configuration");
    } else {
        memset(ring, 0, sizeof *ring);
    }
    atomic_store(&phase, 0);
    if (pthread_create(&w, NULL, writer, NULL) || pthread_create(&r, NULL, reader, NULL))
        die("pthread_create");
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    if (q)
        pyq_queue_destroy(q);
    qsort(t + WARM, EPISODES - WARM, sizeof(double), cmp_double);
    return FILL / t[WARM + (EPISODES - WARM) / 2] * 1e3;
}

static int parse(const char *text, struct spec *s)
{
    static const char *names[] = {"pyqueue", "pyqueue_move16", "yardstick", "yardstick_shuffled",
                                  "yardstick_unread"};
    char queue[32], stamp[8];

    if (sscanf(text, "%31[^,],%7[^,],%d,%d,%d", queue, stamp, &s->hot, &s->prefetch, &s->block) != 5)
        return -1;
    s->queue = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(queue, names[i]) == 0)
            s->queue = i;
    s->stamp_each = strcmp(stamp, "each") == 0;
    s->text = text;
    if (s->queue < 0 || (!s->stamp_each && strcmp(stamp, "batch") != 0) || s->hot < 1 ||
        s->hot > 256 || (s->prefetch != 0 && s->prefetch != 1) || s->block < 4096 ||
        (1 << 20) % s->block != 0 || ((uint64_t)s->hot * 4096) % (uint64_t)s->block != 0)
        return -1; /* the block divides the 1 MiB and the hot tier's share */
    return 0;
}

int main(int argc, char **argv)
{
    static double res[MAX_ROUNDS][MAX_SPECS];
    struct spec specs[MAX_SPECS];
    int drains = argc > 1 && strcmp(argv[1], "--reader") == 0;
    int rounds, n;

    argc -= drains;
    argv += drains;
    rounds = argc > 1 ? atoi(argv[1]) : 0;
    n = argc - 2;
    if (rounds < 1 || rounds > MAX_ROUNDS || n < 1 || n > MAX_SPECS) {
        fprintf(stderr, "usage: writer_fill [--reader] ROUNDS(1-%d) SPEC [SPEC ...] (at most %d; "
                "see the file's header)\n", MAX_ROUNDS, MAX_SPECS);
        return 2;
    }
    for (int i = 0; i < n; i++)
        if (parse(argv[2 + i], &specs[i]) != 0) {
            fprintf(stderr, "writer_fill: bad SPEC '%s' (queue,stamp,hot,prefetch,block)\n",
                    argv[2 + i]);
            return 2;
        }
    if (!(ring = aligned_alloc(64, sizeof *ring)))
        die("out of memory");
    for (int r = 0; r < rounds; r++) {
        printf("round %2d:", r);
        for (int j = 0; j < n; j++) { /* every other round in reverse order */
            int i = (r & 1) ? n - 1 - j : j;
            res[r][i] = run(&specs[i], drains);
        }
        for (int i = 0; i < n; i++)
            printf(" %s=%.0f", specs[i].text, res[r][i]);
        printf("\n");
        fflush(stdout);
    }
    printf("ratio to the first, median over rounds:");
    for (int i = 0; i < n; i++) {
        double c[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++)
            c[r] = res[r][i] / res[r][0];
        qsort(c, (size_t)rounds, sizeof(double), cmp_double);
        printf(" %s=%.3f", specs[i].text, c[rounds / 2]);
    }
    printf("\n");
    free(ring);
    return 0;
}
