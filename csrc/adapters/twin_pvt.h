/*
 * twin_pvt.h - the measured loops of the bench's adapter driver and of every
 * inline twin (pyq_twin.h), written once.  Header-only so that a peer library
 * (C or C++) compiles them around its own calls and needs nothing of ours at
 * link time.  Never installed, not a cdef.
 *
 * The loop bodies (writer, reader, round-trip echo and timed side, streaming
 * episodes) are always_inline and take the queue's operations as function
 * pointers.  Each body is instantiated twice:
 *
 *   - by the driver (bench/bench_adapter.c), with the pointers of an adapter
 *     table: every operation an indirect call, as for any queue behind
 *     pyq_adapter_t;
 *   - by a twin, in its queue's own translation unit, with the queue's static
 *     functions as constant pointers, through the macros at the end:
 *
 *         PYQ_TWIN_DEFINE(prefix, adapter, try_write, try_write_burst, poll, flush)
 *         PYQ_TWIN_DEFINE_EACH(prefix, adapter, try_write, try_write_burst,
 *                              write_each, poll, read_burst, read_each, flush)
 *
 *     define prefix_twin_throughput() and prefix_twin_roundtrip() for its
 *     pyq_twin_t (a NULL operation: that side takes the path the driver takes
 *     for an adapter without it).  The instantiations are flatten, so the
 *     queue's calls and the reader's check are inlined: no indirect call is
 *     left in a twin's hot loop (tests/lab/test_twins.py reads objdump -d).
 *
 * So adapter row / twin prices exactly the driver -- the table and the
 * callback -- and the two cannot drift.  Two parameters differ, neither on
 * the per-message path: the window (pyq_twin_params_t.window) -- a twin may
 * stamp a record every `window` messages, and then a poll asks for at most one
 * window so each gets its own stamp, where the driver keeps none (window
 * UINT64_MAX) and its polls ask for all that is left; and the round trip's
 * stamp (pyq_twin_rt.ticks), the cycle counter in a twin, the bench's
 * calibrated timer in the driver.  A twin builds and warms its queue through
 * the adapter table (create, pyq_twin_warm), outside the timed part, as the
 * bench does for a row's queue (pyq_bench_warm).
 *
 * Ordering: the harness's own shared words (start barrier, error flag,
 * episodes) use the compiler's __atomic builtins, which C11 <stdatomic.h> and
 * C++ <atomic> both lower to: the one spelling a header shared by C and C++
 * peers can use.  The queues order their own data.
 */
#ifndef PYQ_TWIN_PVT_H
#define PYQ_TWIN_PVT_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "common/join2_pvt.h"
#include "adapters/pyq_twin.h"

#define PYQ_TWIN_INLINE static inline __attribute__((always_inline))
/* The loops' rare steps (a window's stamp, an episode's release or hold): out of
 * line, and called under __builtin_expect(..., 0) -- but not `cold`: GCC moves a
 * block that may reach a cold call to the function's .cold part with whatever
 * shares it, the loop's own latch included (BENCHMARKS, "The cold latch"). */
#define PYQ_TWIN_RARE static __attribute__((noinline, unused))
/* flatten: the queue's operations reach a loop as constant pointers, so they
 * become direct calls only after the early inliner ran; flatten inlines them
 * (and poll's callback) anyway. */
#define PYQ_TWIN_FLAT __attribute__((flatten))
#define PYQ_TWIN_LINE __attribute__((aligned(64)))
#define PYQ_TWIN_EXPORT __attribute__((visibility("default")))
/* The full-queue policy of every loop: sched_yield() every this many failures. */
#define PYQ_TWIN_YIELD_EVERY 1024
/* Messages a per-message row's streaming writer hands write_each at a time, and
 * its reader asks read_each for. */
#define PYQ_TWIN_EACH_MAX 32

/* The message of every row: 32 bytes by value, the sequence number first, the
 * rest 0x5A. */
typedef struct pyq_twin_msg {
    uint64_t seq;
    uint8_t rest[PYQ_ADAPTER_MSG_SIZE - 8];
} pyq_twin_msg_t;

/* The reader's expected sequence number: a local of the reader loop. */
struct pyq_twin_seq {
    uint64_t expected;
};

/* The adapter operations a loop calls (pyq_adapter.h has their contracts). */
typedef int (*pyq_twin_write_fn)(void *h, const void *msg, uint32_t len);
typedef int64_t (*pyq_twin_burst_fn)(void *h, const void *msgs, uint32_t n, uint32_t len);
typedef int64_t (*pyq_twin_poll_fn)(void *h, uint64_t max, pyq_message_fn fn, void *ctx);
typedef void (*pyq_twin_flush_fn)(void *h);
typedef int64_t (*pyq_twin_read_fn)(void *h, void *out, uint32_t max, uint32_t len);
typedef int64_t (*pyq_twin_spin_fn)(void *h, uint64_t seq, const int *stop);

/* ---- small pieces --------------------------------------------------------- */

/* Whether an instantiation has a burst call (a function, not the macro argument:
 * comparing a function's name with NULL draws -Waddress). */
PYQ_TWIN_INLINE int pyq_twin_has(pyq_twin_burst_fn f)
{
    return f != NULL;
}

PYQ_TWIN_INLINE void pyq_twin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

PYQ_TWIN_INLINE uint64_t pyq_twin_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The round-trip timer and the pace's clock: the cycle counter where there is
 * one (what runtime/runtime_pvt.h's pyq_cycles_now reads), else CLOCK_MONOTONIC. */
#if defined(__x86_64__) || defined(__i386__)
#define PYQ_TWIN_TICKS 1
PYQ_TWIN_INLINE uint64_t pyq_twin_stamp(void) { return __rdtsc(); }
#elif defined(__aarch64__)
#define PYQ_TWIN_TICKS 1
PYQ_TWIN_INLINE uint64_t pyq_twin_stamp(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#else
#define PYQ_TWIN_TICKS 0
PYQ_TWIN_INLINE uint64_t pyq_twin_stamp(void) { return pyq_twin_now_ns(); }
#endif

/* The chasing regime's pace: busy-wait (no relax: the cost must be exact)
 * until `ticks` after the last write was due, on a schedule, not `ticks`
 * after this one returned.  So the write and the clock reads fall inside the
 * gap instead of adding to it, the same for a writer of one message a call
 * and for one of k (which paces once per burst, ticks k * gap): every writer
 * that keeps up writes one message per gap, and one that does not runs as
 * fast as it can.  A writer late by more than a gap (a stall, a full queue)
 * starts the schedule again from now, so it never owes a burst of writes at
 * once that would put its reader out of the chasing regime.  *due starts at
 * pyq_twin_stamp() before the first write. */
PYQ_TWIN_INLINE void pyq_twin_pace(uint64_t *due, uint64_t ticks)
{
    uint64_t d = *due + ticks, now;

    while ((now = pyq_twin_stamp()) < d)
        ;
    *due = now - d > ticks ? now : d;
}

/* poll's callback: check the sequence number.  Its address is a constant in
 * every loop, so a twin inlines it into the queue's poll. */
static inline int pyq_twin_next(void *ctx, const void *msg, uint32_t len)
{
    struct pyq_twin_seq *s = (struct pyq_twin_seq *)ctx;
    uint64_t seq;

    (void)len;
    memcpy(&seq, msg, sizeof seq);
    if (seq != s->expected)
        return PYQ_EBADMSG;
    s->expected++;
    return 0;
}

/* Pin the calling thread to cpu (< 0: leave it unpinned), as pyq_cpu_pin_opt.
 * 0, PYQ_EINVAL (cpu past CPU_SETSIZE) or the kernel's -errno. */
static inline int pyq_twin_pin(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        return 0;
    if (cpu >= CPU_SETSIZE)
        return PYQ_EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return -pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

PYQ_TWIN_INLINE void pyq_twin_fail(int *err, int rc)
{
    int zero = 0;

    /* Keep the first error only; relaxed: it is a flag, nothing is published. */
    __atomic_compare_exchange_n(err, &zero, rc, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

PYQ_TWIN_INLINE int pyq_twin_failed(const int *err)
{
    return __atomic_load_n(err, __ATOMIC_RELAXED);
}

/* Both threads pinned (or failed, flagged in the error word), then both leave. */
static inline void pyq_twin_meet(int *ready)
{
    /* Arrive: this side's setup and error flag before the count; pairs with
     * the other side's acquire load below. */
    __atomic_fetch_add(ready, 1, __ATOMIC_ACQ_REL);
    /* Pairs with the other side's arrival: its setup and flag are visible. */
    while (__atomic_load_n(ready, __ATOMIC_ACQUIRE) < 2)
        pyq_twin_relax();
}

/* A full queue: relax, sched_yield() every PYQ_TWIN_YIELD_EVERY failures.
 * Nonzero: give up (the other side failed). */
PYQ_TWIN_INLINE int pyq_twin_full_wait(uint64_t *fails, const int *err)
{
    if (++*fails % PYQ_TWIN_YIELD_EVERY == 0) {
        sched_yield();
        return pyq_twin_failed(err);
    }
    pyq_twin_relax();
    return 0;
}

/* ---- streaming episodes (pyq_twin_episode_t, DESIGN §8.4) ------------------ */

/* The reader is held while the writer gets `backlog` messages ahead of it (or
 * fills the queue), then both run flat out until the reader's first empty
 * poll, and the reader is held again.  The writer and the reader of one run
 * meet here once per episode; per message the writer compares its count with
 * `next` only, everything else is on rare paths.  bench.c's pyqueue_direct
 * loop runs the same protocol.  ST-L1 / ST-L2: the release; ST-L3 / ST-L4:
 * the hold; ST-L5 / ST-L6: the writer's end. */
struct pyq_twin_stream {
    uint64_t backlog;              /* 0: no episodes (the protocol is off) */
    pyq_twin_episode_t *ep;
    uint32_t max_ep;
    PYQ_TWIN_LINE uint32_t go;     /* writer -> reader: episodes released */
    uint32_t done;                 /* writer -> reader: it wrote its last message */
    PYQ_TWIN_LINE uint32_t held;   /* reader -> writer: episodes the reader ended */
    uint32_t recorded;             /* reader: episodes whose records are complete */
    uint32_t open;                 /* reader: episode `recorded` is released and running */
};

/* The writer's side: a local of its loop. */
struct pyq_twin_stream_w {
    uint64_t next;      /* written count at which to look again (UINT64_MAX: never) */
    uint32_t k;         /* episodes released */
    int filling;        /* the reader is held and the backlog is being written */
};

/* How often (in messages) a writer that waits for the reader's hold looks. */
#define PYQ_TWIN_STREAM_LOOK 64

/* How long a writer that waits inside its library waits for room before it
 * comes out to look at the hold (pyq_twin_stream_full): rare, as a full queue
 * with a held reader is. */
#define PYQ_TWIN_WAIT_NS 1000000

static inline void pyq_twin_stream_init(struct pyq_twin_stream *s, uint64_t backlog,
                                        pyq_twin_episode_t *ep, uint32_t max_ep)
{
    memset(s, 0, sizeof *s);
    s->backlog = ep && max_ep ? backlog : 0;
    s->ep = ep;
    s->max_ep = max_ep;
}

PYQ_TWIN_INLINE void pyq_twin_stream_w_init(const struct pyq_twin_stream *s,
                                            struct pyq_twin_stream_w *w)
{
    w->k = 0;
    w->filling = s->backlog != 0;      /* episode 0: the reader starts held */
    w->next = s->backlog ? s->backlog : UINT64_MAX;
}

PYQ_TWIN_RARE void
pyq_twin_stream_release(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w, uint64_t written)
{
    s->ep[w->k].go_ns = pyq_twin_now_ns();
    s->ep[w->k].go_written = written;
    w->k++;
    w->filling = 0;
    /* ST-L1: the record above before the release; pairs with ST-L2. */
    __atomic_store_n(&s->go, w->k, __ATOMIC_RELEASE);
    w->next = w->k < s->max_ep ? written + PYQ_TWIN_STREAM_LOOK : UINT64_MAX;
}

/* The writer has written `written` messages and reached w->next: release the
 * reader, or look whether it is held again (then fill the next backlog). */
PYQ_TWIN_RARE void
pyq_twin_stream_step(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w, uint64_t written)
{
    if (w->filling) {
        pyq_twin_stream_release(s, w, written);
    } else if (__atomic_load_n(&s->held, __ATOMIC_ACQUIRE) == w->k) {
        /* ST-L4: pairs with ST-L3 -- the reader read all it saw and is held. */
        w->filling = 1;
        w->next = written + s->backlog;
    } else {
        w->next = written + PYQ_TWIN_STREAM_LOOK;
    }
}

/* After each write (burst): `written` messages so far. */
PYQ_TWIN_INLINE void pyq_twin_stream_wrote(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                           uint64_t written)
{
    if (__builtin_expect(written >= w->next, 0))
        pyq_twin_stream_step(s, w, written);
}

/* The queue is full.  While the reader is held, that is the backlog: release
 * it now, or the writer would wait for a reader that waits for it.  The writer
 * may not know yet that the reader is held -- it looks every
 * PYQ_TWIN_STREAM_LOOK messages, and a reader that loses its CPU between its
 * empty poll and ST-L3 for as long as the writer takes to fill the queue is
 * held only once the writer can write no more -- so it looks here too.  Not
 * once the reader's records ran out: it reads freely then (w->k == max_ep). */
PYQ_TWIN_RARE void pyq_twin_stream_room(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                        uint64_t written)
{
    /* ST-L4 (as in pyq_twin_stream_step): pairs with ST-L3. */
    if (w->filling ||
        (w->k < s->max_ep && __atomic_load_n(&s->held, __ATOMIC_ACQUIRE) == w->k))
        pyq_twin_stream_release(s, w, written);
}

/* At every failed retry of a full queue (a writer that waits inside the
 * library must come out to call it: PYQ_TWIN_WAIT_NS). */
PYQ_TWIN_INLINE void pyq_twin_stream_full(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                          uint64_t written)
{
    if (s->backlog)
        pyq_twin_stream_room(s, w, written);
}

/* The writer's last message is written (and flushed). */
PYQ_TWIN_INLINE void pyq_twin_stream_end(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                         uint64_t written)
{
    if (!s->backlog)
        return;
    if (w->filling)
        pyq_twin_stream_release(s, w, written);
    /* ST-L5: every message written and flushed; pairs with ST-L6. */
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
}

/* Reader: wait to be released (episode s->recorded), then stamp its start.
 * Returns 0 when released, 1 when the writer is done without a release (read
 * the rest freely), -1 when the run failed (err). */
PYQ_TWIN_RARE int
pyq_twin_stream_hold(struct pyq_twin_stream *s, uint64_t got, const int *err)
{
    uint32_t k = s->recorded;

    /* ST-L2: pairs with ST-L1 -- the episode's writer fields are written. */
    while (__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) <= k) {
        if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) /* ST-L6: pairs with ST-L5 */
            break;
        if (pyq_twin_failed(err))
            return -1;
        pyq_twin_relax();
    }
    /* The writer may have released episode k just before its end (ST-L2 again). */
    if (__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) <= k)
        return 1;
    s->ep[k].start_ns = pyq_twin_now_ns();
    s->ep[k].start_read = got;
    s->open = 1;
    return 0;
}

/* Reader: the protocol is on and it has not run out of records. */
PYQ_TWIN_INLINE int pyq_twin_stream_on(const struct pyq_twin_stream *s)
{
    return s->backlog && s->recorded < s->max_ep;
}

/* Reader: its first empty poll after messages (a catch-up) at `got` read, or the
 * end of the run (caught_up 0).  Ends the open episode; after a catch-up holds
 * the reader until the next release.  Returns as pyq_twin_stream_hold (0 also
 * when no episode is open: the protocol is off or out of records). */
PYQ_TWIN_RARE int
pyq_twin_stream_caught(struct pyq_twin_stream *s, uint64_t got, int caught_up, const int *err)
{
    uint32_t k = s->recorded;

    if (!s->open)
        return 0;
    s->open = 0;
    s->ep[k].end_ns = pyq_twin_now_ns();
    s->ep[k].end_read = got;
    s->ep[k].caught_up = (uint32_t)caught_up;
    s->recorded = k + 1;
    /* ST-L3: the reader is held (it read everything visible); pairs with ST-L4. */
    __atomic_store_n(&s->held, k + 1, __ATOMIC_RELEASE);
    if (!caught_up || !pyq_twin_stream_on(s))
        return 0;
    return pyq_twin_stream_hold(s, got, err);
}

/* ---- throughput ----------------------------------------------------------- */

/* One throughput run: the writer's and the reader's state on their own lines. */
struct pyq_twin_run {
    const pyq_adapter_t *a;      /* the queue's table (the driver calls through it) */
    void *q;
    uint64_t n, gap, window;     /* window: UINT64_MAX when none are kept */
    pyq_twin_window_t *win;
    uint32_t max_win, burst;
    int32_t wcpu, rcpu;
    PYQ_TWIN_LINE int ready;     /* start barrier */
    PYQ_TWIN_LINE int err;       /* first error: read-mostly, polled by both */
    PYQ_TWIN_LINE uint64_t t0;   /* the writer's line */
    uint64_t t_wend, full, full_runs;
    PYQ_TWIN_LINE uint64_t got;  /* the reader's line */
    uint64_t polls, empty, empty_runs, t_end;
    struct pyq_twin_stream st;   /* streaming episodes (backlog 0: off) */
};

/* pyq_join2's abandon hook: the writer never started, so flag the error and
 * arrive at the barrier in its place; the reader leaves it and stops. */
static inline void pyq_twin_run_abandon(void *arg, int rc)
{
    struct pyq_twin_run *r = (struct pyq_twin_run *)arg;

    pyq_twin_fail(&r->err, rc);
    /* The writer's arrival (as in pyq_twin_meet): the flag above before the
     * count; pairs with the reader's acquire load there. */
    __atomic_fetch_add(&r->ready, 1, __ATOMIC_ACQ_REL);
}

/* Window k is complete on the writer's side: message (k + 1) * window - 1 written. */
PYQ_TWIN_RARE uint64_t
pyq_twin_writer_mark(struct pyq_twin_run *r, uint64_t next, uint64_t fails, uint64_t waits)
{
    uint64_t k = next / r->window;

    if (k < r->max_win) {
        r->win[k].writer_ns = pyq_twin_now_ns();
        r->win[k].full_retries = fails;
        r->win[k].full_runs = waits;
    }
    return next + r->window;
}

PYQ_TWIN_RARE uint64_t
pyq_twin_reader_mark(struct pyq_twin_run *r, uint64_t next, uint64_t got, uint64_t empty,
                     uint64_t runs)
{
    uint64_t t = pyq_twin_now_ns();

    for (; got > next; next += r->window) {
        uint64_t k = next / r->window;
        if (k < r->max_win) {
            r->win[k].reader_ns = t;
            r->win[k].empty_polls = empty;
            r->win[k].empty_runs = runs;
        }
    }
    return next;
}

/* One message per call.  Stops at the queue's error, or when the other side
 * failed (its code stays in the error word). */
PYQ_TWIN_INLINE void pyq_twin_write_each(struct pyq_twin_run *r, pyq_twin_write_fn try_write,
                                         struct pyq_twin_stream_w *sw, const int paced)
{
    pyq_twin_msg_t m;
    uint64_t fails = 0, waits = 0, next = r->window - 1, i, due = paced ? pyq_twin_stamp() : 0;
    int rc = 0;

    memset(&m, 0x5A, sizeof m);
    for (i = 0; i < r->n; i++) {
        m.seq = i;
        if ((rc = try_write(r->q, &m, sizeof m)) == PYQ_EAGAIN) {
            waits++; /* one wait for room, however many retries it takes */
            do {
                if (!paced) /* at every retry: pyq_twin_stream_full */
                    pyq_twin_stream_full(&r->st, sw, i);
                if (pyq_twin_full_wait(&fails, &r->err))
                    goto out;
            } while ((rc = try_write(r->q, &m, sizeof m)) == PYQ_EAGAIN);
        }
        if (rc)
            break;
        if (__builtin_expect(i == next, 0))
            next = pyq_twin_writer_mark(r, next, fails, waits);
        if (paced)
            pyq_twin_pace(&due, r->gap);
        else
            pyq_twin_stream_wrote(&r->st, sw, i + 1);
    }
out:
    r->full = fails;
    r->full_runs = waits;
    if (rc && rc != PYQ_EAGAIN)
        pyq_twin_fail(&r->err, rc);
}

/* Up to `size` messages per call of `burst` (the library's burst call, or the
 * per-message rows' write_each), retried from where it stopped. */
PYQ_TWIN_INLINE void pyq_twin_write_bursts(struct pyq_twin_run *r, pyq_twin_burst_fn burst,
                                           uint32_t size, pyq_twin_msg_t *buf,
                                           struct pyq_twin_stream_w *sw, const int paced)
{
    uint64_t fails = 0, waits = 0, next = r->window - 1, due = paced ? pyq_twin_stamp() : 0;
    int64_t rc = 0;

    for (uint32_t j = 0; j < size; j++)
        memset(&buf[j], 0x5A, sizeof buf[j]);
    for (uint64_t i = 0; i < r->n;) {
        uint32_t k = (uint32_t)(r->n - i < size ? r->n - i : size);
        uint32_t off = 0, waited = 0;

        for (uint32_t j = 0; j < k; j++)
            buf[j].seq = i + j;
        while (off < k) {
            if ((rc = burst(r->q, buf + off, k - off, sizeof *buf)) < 0)
                goto out;
            off += (uint32_t)rc;
            if (rc == 0) {
                waits += !waited; /* one wait per burst, however many retries */
                if (!paced) /* at every retry: pyq_twin_stream_full */
                    pyq_twin_stream_full(&r->st, sw, i + off);
                waited = 1;
                if (pyq_twin_full_wait(&fails, &r->err))
                    goto out;
            }
        }
        rc = 0;
        i += k;
        while (__builtin_expect(i > next, 0))
            next = pyq_twin_writer_mark(r, next, fails, waits);
        if (paced)
            pyq_twin_pace(&due, r->gap * k);
        else
            pyq_twin_stream_wrote(&r->st, sw, i);
    }
out:
    r->full = fails;
    r->full_runs = waits;
    if (rc < 0)
        pyq_twin_fail(&r->err, (int)rc);
}

/* A burst's array, line-aligned: with malloc's 16 bytes half the 32-byte
 * messages would straddle two lines.  NULL when out of memory. */
static inline pyq_twin_msg_t *pyq_twin_burst_buf(uint32_t n)
{
    void *p = NULL;

    return posix_memalign(&p, 64, (size_t)n * sizeof(pyq_twin_msg_t)) == 0 ?
           (pyq_twin_msg_t *)p : NULL;
}

/* The writer thread: pin, meet the reader, write r->n messages, flush.  burst:
 * the burst rows' call (r->burst > 0); each: the per-message rows' streaming
 * writer (flat out only); either may be NULL.  One loop per (call, paced)
 * pair, each paced argument a constant: the flat-out loops test nothing extra. */
PYQ_TWIN_INLINE void pyq_twin_writer(struct pyq_twin_run *r, pyq_twin_write_fn try_write,
                                     pyq_twin_burst_fn burst, pyq_twin_burst_fn each,
                                     pyq_twin_flush_fn flush)
{
    pyq_twin_msg_t *buf = NULL;
    struct pyq_twin_stream_w sw;
    int rc = pyq_twin_pin(r->wcpu);
    const int bursts = burst && r->burst, per = each && !r->burst && !r->gap;

    if (!rc && (bursts || per) &&
        !(buf = pyq_twin_burst_buf(bursts ? r->burst : PYQ_TWIN_EACH_MAX)))
        rc = PYQ_ENOMEM;
    if (rc)
        pyq_twin_fail(&r->err, rc);
    pyq_twin_meet(&r->ready);
    if (rc || pyq_twin_failed(&r->err)) {
        free(buf);
        return;
    }
    pyq_twin_stream_w_init(&r->st, &sw);
    r->t0 = pyq_twin_now_ns();
    if (bursts) {
        if (r->gap)
            pyq_twin_write_bursts(r, burst, r->burst, buf, &sw, 1);
        else
            pyq_twin_write_bursts(r, burst, r->burst, buf, &sw, 0);
    } else if (per) { /* per: constant 0 where each is NULL (no call left) */
        pyq_twin_write_bursts(r, each, PYQ_TWIN_EACH_MAX, buf, &sw, 0);
    } else if (r->gap) {
        pyq_twin_write_each(r, try_write, &sw, 1);
    } else {
        pyq_twin_write_each(r, try_write, &sw, 0);
    }
    flush(r->q);
    r->t_wend = pyq_twin_now_ns();
    pyq_twin_stream_end(&r->st, &sw, r->n);
    free(buf);
}

/* read's messages checked in place: the count, or PYQ_EBADMSG. */
PYQ_TWIN_INLINE int64_t pyq_twin_check(const pyq_twin_msg_t *buf, int64_t k,
                                       struct pyq_twin_seq *s)
{
    for (int64_t j = 0; j < k; j++) {
        if (buf[j].seq != s->expected)
            return PYQ_EBADMSG;
        s->expected++;
    }
    return k;
}

/* bulk: read (read_burst for the burst rows, read_each for the others) of up to
 * `max` messages into buf and the check over the array; else poll with the
 * check as its callback.  Never more than is left, and never more than one
 * window, so each window gets its own stamp. */
PYQ_TWIN_INLINE void pyq_twin_read_loop(struct pyq_twin_run *r, pyq_twin_poll_fn poll,
                                        pyq_twin_read_fn read, pyq_twin_msg_t *buf,
                                        uint32_t max, const int bulk)
{
    struct pyq_twin_seq s = {0};
    uint64_t polls = 0, empty = 0, runs = 0, next = r->window - 1;
    int idle = 0;

    if (pyq_twin_stream_on(&r->st) && pyq_twin_stream_hold(&r->st, 0, &r->err) < 0)
        goto out;
    while (s.expected < r->n && !pyq_twin_failed(&r->err)) {
        uint64_t left = r->n - s.expected;
        int64_t k;

        if (bulk)
            k = pyq_twin_check(buf, read(r->q, buf, (uint32_t)(left < max ? left : max),
                                         sizeof *buf), &s);
        else
            k = poll(r->q, left < r->window ? left : r->window, pyq_twin_next, &s);
        polls++;
        if (k < 0) {
            pyq_twin_fail(&r->err, (int)k);
            break;
        }
        if (k == 0) {
            empty++;
            if (!idle) { /* a catch-up: the first empty poll after messages */
                runs++;
                if (r->st.open && pyq_twin_stream_caught(&r->st, s.expected, 1, &r->err) < 0)
                    break;
            }
            idle = 1;
            pyq_twin_relax();
        } else {
            idle = 0;
            if (__builtin_expect(s.expected > next, 0))
                next = pyq_twin_reader_mark(r, next, s.expected, empty, runs);
        }
    }
out:
    r->t_end = pyq_twin_now_ns();
    pyq_twin_stream_caught(&r->st, s.expected, 0, &r->err);
    r->got = s.expected;
    r->polls = polls;
    r->empty = empty;
    r->empty_runs = runs;
}

/* The reader thread: pin, meet the writer, read and check r->n messages.
 * read: the burst rows' bulk read (r->burst > 0); each: the per-message rows'
 * (r->burst 0); either may be NULL (then poll, with the check as callback). */
PYQ_TWIN_INLINE void pyq_twin_reader(struct pyq_twin_run *r, pyq_twin_poll_fn poll,
                                     pyq_twin_read_fn read, pyq_twin_read_fn each)
{
    pyq_twin_msg_t *buf = NULL;
    int rc = pyq_twin_pin(r->rcpu);
    const int burst = read && r->burst, per = each && !r->burst;

    if (!rc && (burst || per) && !(buf = pyq_twin_burst_buf(burst ? r->burst : PYQ_TWIN_EACH_MAX)))
        rc = PYQ_ENOMEM;
    if (rc)
        pyq_twin_fail(&r->err, rc);
    pyq_twin_meet(&r->ready);
    if (buf && burst)
        pyq_twin_read_loop(r, poll, read, buf, r->burst, 1);
    else if (buf && per) /* per: constant 0 where each is NULL (no call left) */
        pyq_twin_read_loop(r, poll, each, buf, PYQ_TWIN_EACH_MAX, 1);
    else
        pyq_twin_read_loop(r, poll, read, buf, 0, 0);
    free(buf);
}

static inline int pyq_twin_discard(void *ctx, const void *msg, uint32_t len)
{
    (void)ctx;
    (void)msg;
    (void)len;
    return 0;
}

/* Fill the queue once and drain it, on the calling thread, through the adapter
 * table (untimed): every page of its storage is touched before a run starts.
 * 0 or the first error. */
static inline int pyq_twin_warm(const pyq_adapter_t *a, void *q)
{
    pyq_twin_msg_t m;
    int64_t k;
    int rc;

    memset(&m, 0x5A, sizeof m);
    for (m.seq = 0; (rc = a->try_write(q, &m, sizeof m)) == 0; m.seq++)
        ;
    if (rc != PYQ_EAGAIN)
        return rc;
    a->flush(q);
    while ((k = a->poll(q, UINT64_MAX, pyq_twin_discard, NULL)) > 0)
        ;
    return k < 0 ? (int)k : 0;
}

/* Nonzero when a run cannot take p: burst unsupported or too large, window
 * not a power of two, no room for its records, backlog with a pace or no
 * room for episodes. */
static inline int pyq_twin_params_bad(const pyq_twin_params_t *p, int has_burst,
                                      const pyq_twin_window_t *win, uint32_t max_win)
{
    return p->burst > PYQ_TWIN_BURST_MAX || (p->burst && !has_burst) ||
           (p->window & (p->window - 1)) || (max_win && !win) ||
           (p->backlog && (p->gap_ticks || !p->episodes || !p->max_episodes));
}

/* Run writer w and reader rd (instantiations of pyq_twin_writer / _reader)
 * over adapter a's queue q, as p says; windows into win[max_win].  Fills res
 * (not res->capacity) and returns res->error: 0, PYQ_EINVAL
 * (pyq_twin_params_bad), PYQ_ENOMEM, PYQ_EBADMSG, or a pinning / pthread /
 * queue code. */
static inline int pyq_twin_run_go(const pyq_adapter_t *a, void *q, int has_burst,
                                  const pyq_twin_params_t *p, pyq_twin_window_t *win,
                                  uint32_t max_win, pyq_twin_result_t *res,
                                  void *(*w)(void *), void *(*rd)(void *))
{
    struct pyq_twin_run *r;
    int rc;

    memset(res, 0, sizeof *res);
    res->samples_in_ticks = PYQ_TWIN_TICKS;
    if (pyq_twin_params_bad(p, has_burst, win, max_win))
        return res->error = PYQ_EINVAL;
    if (posix_memalign((void **)&r, 64, sizeof *r) != 0)
        return res->error = PYQ_ENOMEM;
    memset(r, 0, sizeof *r);
    r->a = a;
    r->q = q;
    r->n = p->messages;
    r->gap = p->gap_ticks;
    r->window = p->window ? p->window : UINT64_MAX;
    r->win = win;
    r->max_win = win ? max_win : 0;
    r->burst = p->burst;
    r->wcpu = p->writer_cpu;
    r->rcpu = p->reader_cpu;
    pyq_twin_stream_init(&r->st, p->backlog, p->episodes, p->max_episodes);
    rc = pyq_join2(w, rd, r, pyq_twin_run_abandon);
    res->episodes = r->st.recorded;
    res->messages = r->got;
    res->start_ns = r->t0;
    res->elapsed_ns = r->t_end - r->t0;
    res->writer_ns = r->t_wend > r->t0 ? r->t_wend - r->t0 : 0;
    res->full_retries = r->full;
    res->full_runs = r->full_runs;
    res->polls = r->polls;
    res->empty_polls = r->empty;
    res->empty_runs = r->empty_runs;
    if (p->window) {
        uint64_t k = r->got / p->window;
        res->windows = (uint32_t)(k < r->max_win ? k : r->max_win);
    }
    res->error = rc ? rc : pyq_twin_failed(&r->err);
    if (res->error == PYQ_EBADMSG)
        res->first_bad = r->got;
    free(r);
    return res->error;
}

/* A twin's run: a new queue from the adapter's create(), warmed, run, destroyed. */
static inline int pyq_twin_throughput_run(const pyq_adapter_t *a, int has_burst,
                                          const pyq_twin_params_t *p, pyq_twin_window_t *win,
                                          uint32_t max_win, pyq_twin_result_t *res,
                                          void *(*w)(void *), void *(*rd)(void *))
{
    void *q = NULL;
    int rc;

    memset(res, 0, sizeof *res);
    res->samples_in_ticks = PYQ_TWIN_TICKS;
    if (pyq_twin_params_bad(p, has_burst, win, max_win))
        return res->error = PYQ_EINVAL;
    if ((rc = a->create(&p->queue, &q)) != 0 || (rc = pyq_twin_warm(a, q)) != 0) {
        if (q)
            a->destroy(q);
        return res->error = rc;
    }
    rc = pyq_twin_run_go(a, q, has_burst, p, win, max_win, res, w, rd);
    res->capacity = a->capacity(q);
    a->destroy(q);
    return rc;
}

/* ---- round trip ----------------------------------------------------------- */

struct pyq_twin_rt {
    const pyq_adapter_t *a;  /* the queues' table (the driver calls through it) */
    void *ab, *ba;
    uint64_t trips;          /* timed trips + PYQ_TWIN_WARMUP_TRIPS */
    int32_t cpu_b;
    int ticks;               /* samples in cycle-counter ticks (1) or ns (0) */
    PYQ_TWIN_LINE int ready;
    PYQ_TWIN_LINE int err;
};

/* Send seq (retrying when full), then flush.  0, PYQ_EINTR (the other side
 * failed), or the queue's code. */
PYQ_TWIN_INLINE int pyq_twin_send(void *q, pyq_twin_msg_t *m, uint64_t seq, const int *err,
                                  pyq_twin_write_fn try_write, pyq_twin_flush_fn flush)
{
    uint64_t fails = 0;
    int rc;

    m->seq = seq;
    while ((rc = try_write(q, m, sizeof *m)) == PYQ_EAGAIN)
        if (pyq_twin_full_wait(&fails, err))
            return PYQ_EINTR;
    flush(q);
    return rc;
}

/* Spin, without relax, on poll(max 1) until one message arrives or *stop is
 * set; its sequence number is checked in poll's callback.  An adapter's
 * read_spin (PYQ_TWIN_READ_SPIN) and a twin's receive are this loop.
 * 1, 0 (stopped, nothing taken), PYQ_EBADMSG (another number, consumed) or
 * poll's negative code. */
PYQ_TWIN_INLINE int64_t pyq_twin_spin(void *q, uint64_t seq, const int *stop,
                                      pyq_twin_poll_fn poll)
{
    struct pyq_twin_seq s = {seq};
    int64_t k;

    while ((k = poll(q, 1, pyq_twin_next, &s)) == 0)
        if (pyq_twin_failed(stop))
            return 0;
    return k;
}

/* Receive seq: through the adapter's read_spin where it has one (one call per
 * message, not one per empty poll), else pyq_twin_spin over poll.  0,
 * PYQ_EINTR (the other side failed), PYQ_EBADMSG or the queue's code. */
PYQ_TWIN_INLINE int pyq_twin_recv(void *q, uint64_t seq, const int *err, pyq_twin_poll_fn poll,
                                  pyq_twin_spin_fn spin)
{
    int64_t k = spin ? spin(q, seq, err) : pyq_twin_spin(q, seq, err, poll);

    return k == 0 ? PYQ_EINTR : k < 0 ? (int)k : 0;
}

/* Side B: pin, meet A, echo every message back. */
PYQ_TWIN_INLINE void pyq_twin_echo(struct pyq_twin_rt *t, pyq_twin_write_fn try_write,
                                   pyq_twin_poll_fn poll, pyq_twin_spin_fn spin,
                                   pyq_twin_flush_fn flush)
{
    pyq_twin_msg_t m;
    int rc = pyq_twin_pin(t->cpu_b);

    memset(&m, 0x5A, sizeof m);
    if (rc)
        pyq_twin_fail(&t->err, rc);
    pyq_twin_meet(&t->ready);
    for (uint64_t i = 0; i < t->trips && !rc; i++)
        if ((rc = pyq_twin_recv(t->ab, i, &t->err, poll, spin)) == 0)
            rc = pyq_twin_send(t->ba, &m, i, &t->err, try_write, flush);
    if (rc && rc != PYQ_EINTR)
        pyq_twin_fail(&t->err, rc);
}

/* Side A: the timed loop, stamps in ticks or ns (a constant in a twin).
 * 0 or the first error. */
PYQ_TWIN_INLINE int pyq_twin_timed(struct pyq_twin_rt *t, uint64_t *samples,
                                   pyq_twin_write_fn try_write, pyq_twin_poll_fn poll,
                                   pyq_twin_spin_fn spin, pyq_twin_flush_fn flush,
                                   const int ticks)
{
    pyq_twin_msg_t m;
    int rc = pyq_twin_failed(&t->err);

    memset(&m, 0x5A, sizeof m);
    for (uint64_t i = 0; i < t->trips && !rc; i++) {
        uint64_t t0 = ticks ? pyq_twin_stamp() : pyq_twin_now_ns();
        rc = pyq_twin_send(t->ab, &m, i, &t->err, try_write, flush);
        if (!rc)
            rc = pyq_twin_recv(t->ba, i, &t->err, poll, spin);
        if (i >= PYQ_TWIN_WARMUP_TRIPS)
            samples[i - PYQ_TWIN_WARMUP_TRIPS] =
                (ticks ? pyq_twin_stamp() : pyq_twin_now_ns()) - t0;
    }
    return rc;
}

/* Run echo (side B) on a new thread and timed (side A) on the calling one,
 * pinned to cpu_a, over t (ab, ba, trips, cpu_b, ticks set).  0 or the first
 * error: the echo's own when A gave up for it. */
static inline int pyq_twin_rt_go(struct pyq_twin_rt *t, int32_t cpu_a, uint64_t *samples,
                                 void *(*echo)(void *),
                                 int (*timed)(struct pyq_twin_rt *, uint64_t *))
{
    pthread_t th;
    int rc;

    if ((rc = pthread_create(&th, NULL, echo, t)) != 0)
        return -rc;
    /* A pins itself once the echo exists (it inherits A's affinity: stuck on A's
     * CPU behind a spinning SCHED_FIFO A it would never run). */
    if ((rc = pyq_twin_pin(cpu_a)) != 0)
        pyq_twin_fail(&t->err, rc);
    pyq_twin_meet(&t->ready);
    if (!rc)
        rc = timed(t, samples);
    if (rc && rc != PYQ_EINTR)  /* the echo may be spinning on ab: tell it */
        pyq_twin_fail(&t->err, rc);
    pthread_join(th, NULL);
    if (!rc || rc == PYQ_EINTR)  /* A gave up for the echo: keep the echo's code */
        rc = pyq_twin_failed(&t->err) ? pyq_twin_failed(&t->err) : rc;
    return rc;
}

/* A twin's round trip: two new queues from the adapter's create(), warmed,
 * run, destroyed; samples in PYQ_TWIN_TICKS's unit. */
static inline int pyq_twin_roundtrip_run(const pyq_adapter_t *a, const pyq_twin_params_t *p,
                                         uint64_t *samples, pyq_twin_result_t *res,
                                         void *(*echo)(void *),
                                         int (*timed)(struct pyq_twin_rt *, uint64_t *))
{
    struct pyq_twin_rt *t;
    void *ab = NULL, *ba = NULL;
    int rc;

    memset(res, 0, sizeof *res);
    res->samples_in_ticks = PYQ_TWIN_TICKS;
    if (!samples && p->round_trips)
        return res->error = PYQ_EINVAL;
    if (posix_memalign((void **)&t, 64, sizeof *t) != 0)
        return res->error = PYQ_ENOMEM;
    memset(t, 0, sizeof *t);
    if ((rc = a->create(&p->queue, &ab)) != 0 || (rc = a->create(&p->queue, &ba)) != 0 ||
        (rc = pyq_twin_warm(a, ab)) != 0 || (rc = pyq_twin_warm(a, ba)) != 0)
        goto out;
    t->a = a;
    t->ab = ab;
    t->ba = ba;
    t->trips = (uint64_t)p->round_trips + PYQ_TWIN_WARMUP_TRIPS;
    t->cpu_b = p->reader_cpu;
    t->ticks = PYQ_TWIN_TICKS;
    rc = pyq_twin_rt_go(t, p->writer_cpu, samples, echo, timed);
    res->messages = rc ? 0 : p->round_trips;
    res->capacity = a->capacity(ab);
out:
    if (ab)
        a->destroy(ab);
    if (ba)
        a->destroy(ba);
    free(t);
    return res->error = rc;
}

/* ---- instantiation -------------------------------------------------------- */

/* Define prefix_write_each(), an adapter's write_each (pyq_adapter.h): its own
 * try_write over up to n messages stored back to back, in a loop compiled in the
 * adapter's translation unit with try_write inlined.  The count written (0 when
 * full), or try_write's error when it fails before any message went in. */
#define PYQ_TWIN_WRITE_EACH(prefix, try_write)                                                  \
    static inline __attribute__((always_inline)) int64_t prefix##_write_each_len(                \
        void *h, const unsigned char *m, uint32_t n, uint32_t len)                              \
    {                                                                                           \
        uint32_t k = 0;                                                                         \
        int rc = 0;                                                                             \
                                                                                                \
        while (k < n && (rc = try_write(h, m + (size_t)k * len, len)) == 0)                     \
            k++;                                                                                \
        return k == 0 && rc != PYQ_EAGAIN ? (int64_t)rc : (int64_t)k;                           \
    }                                                                                           \
    PYQ_TWIN_FLAT static int64_t prefix##_write_each(void *h, const void *msgs, uint32_t n,     \
                                                     uint32_t len)                              \
    {                                                                                           \
        const unsigned char *m = (const unsigned char *)msgs;                                   \
                                                                                                \
        /* The rows' messages are PYQ_ADAPTER_MSG_SIZE bytes: that loop with the                \
         * size a constant, as a writer of a fixed-size struct passes sizeof and a              \
         * slot queue copies its slot's size (every peer's loop is this one). */                \
        if (len == PYQ_ADAPTER_MSG_SIZE)                                                        \
            return prefix##_write_each_len(h, m, n, PYQ_ADAPTER_MSG_SIZE);                      \
        return prefix##_write_each_len(h, m, n, len);                                           \
    }

/* pyqueue's per-message reader (an adapter's read_each, pyq_adapter.h):
 * pyq_reader_poll_inline (pyqueue_inline.h) with a copy of each message into
 * the caller's array as its callback, compiled in -- message by message, runs
 * too, as a C reader taking one message at a time at its fastest would (the
 * burst rows' pyq_reader_poll_fixed copies a run whole instead).  The count
 * copied; a message of another length than len ends the call with PYQ_ERANGE,
 * consumed, as are those the call copied before it (a callback cannot hand a
 * message back): for the bench's rows only, whose messages are all
 * PYQ_ADAPTER_MSG_SIZE bytes and whose run fails on the error. */
struct pyq_twin_each_out {
    pyq_twin_msg_t *next; /* where the next message goes */
};

static inline int pyq_twin_each_copy(void *ctx, const void *msg, uint32_t len)
{
    struct pyq_twin_each_out *o = (struct pyq_twin_each_out *)ctx;

    if (__builtin_expect(len != PYQ_ADAPTER_MSG_SIZE, 0))
        return PYQ_ERANGE;
    memcpy(o->next++, msg, PYQ_ADAPTER_MSG_SIZE);
    return 0;
}

static inline __attribute__((always_inline)) int64_t pyq_twin_pq_read_each(pyq_queue_t *q,
                                                                           void *out,
                                                                           uint32_t max,
                                                                           uint32_t len)
{
    struct pyq_twin_each_out o = {(pyq_twin_msg_t *)out};

    if (len != PYQ_ADAPTER_MSG_SIZE)
        return PYQ_EINVAL;
    return pyq_reader_poll_inline(q, max, pyq_twin_each_copy, &o);
}

/* Define prefix_read_spin(), an adapter's read_spin (pyq_adapter.h):
 * pyq_twin_spin over its own poll, compiled in the adapter's translation unit
 * with poll and the check inlined -- the twins' receive, the same loop.  The
 * message is checked in the callback, not copied out to be checked after the
 * loop: the copy is work the twin's loop does not do (docs/BENCHMARKS.md,
 * "What the driver got wrong"). */
#define PYQ_TWIN_READ_SPIN(prefix, poll)                                                        \
    PYQ_TWIN_FLAT static int64_t prefix##_read_spin(void *h, uint64_t seq, const int *stop)    \
    {                                                                                           \
        return pyq_twin_spin(h, seq, stop, poll);                                               \
    }

/* Define prefix_twin_throughput() and prefix_twin_roundtrip() for the queue of
 * adapter table `adapter`, its operations (static functions of the same file;
 * try_write_burst may be NULL) inlined into each loop. */
#define PYQ_TWIN_DEFINE(prefix, adapter, try_write, try_write_burst, poll, flush)               \
    PYQ_TWIN_DEFINE_EACH(prefix, adapter, try_write, try_write_burst, (pyq_twin_burst_fn)NULL,  \
                         poll, (pyq_twin_read_fn)NULL, (pyq_twin_read_fn)NULL, flush)

/* The same for a queue with the adapter's write_each and read_each (its
 * per-message rows' streaming writer and its reader use them) and read_burst
 * (its burst rows read with it), as the driver does; each may be NULL.  The
 * receive spins on poll here (no read_spin: that is this very loop). */
#define PYQ_TWIN_DEFINE_EACH(prefix, adapter, try_write, try_write_burst, write_each, poll,     \
                             read_burst, read_each, flush)                                      \
    PYQ_TWIN_FLAT static void *prefix##_twin_writer(void *arg)                                  \
    {                                                                                           \
        pyq_twin_writer((struct pyq_twin_run *)arg, try_write, try_write_burst, write_each,     \
                        flush);                                                                 \
        return NULL;                                                                            \
    }                                                                                           \
    PYQ_TWIN_FLAT static void *prefix##_twin_reader(void *arg)                                  \
    {                                                                                           \
        pyq_twin_reader((struct pyq_twin_run *)arg, poll, read_burst, read_each);               \
        return NULL;                                                                            \
    }                                                                                           \
    PYQ_TWIN_FLAT static void *prefix##_twin_echo(void *arg)                                    \
    {                                                                                           \
        pyq_twin_echo((struct pyq_twin_rt *)arg, try_write, poll, (pyq_twin_spin_fn)NULL,       \
                      flush);                                                                   \
        return NULL;                                                                            \
    }                                                                                           \
    PYQ_TWIN_FLAT static int prefix##_twin_timed(struct pyq_twin_rt *t, uint64_t *samples)      \
    {                                                                                           \
        return pyq_twin_timed(t, samples, try_write, poll, (pyq_twin_spin_fn)NULL, flush,       \
                              PYQ_TWIN_TICKS);                                                  \
    }                                                                                           \
    static int prefix##_twin_throughput(const pyq_twin_params_t *p, pyq_twin_window_t *w,       \
                                        uint32_t max_w, pyq_twin_result_t *r)                   \
    {                                                                                           \
        return pyq_twin_throughput_run(&(adapter), pyq_twin_has(try_write_burst), p, w,         \
                                       max_w, r, prefix##_twin_writer, prefix##_twin_reader);   \
    }                                                                                           \
    static int prefix##_twin_roundtrip(const pyq_twin_params_t *p, uint64_t *samples,           \
                                       pyq_twin_result_t *r)                                    \
    {                                                                                           \
        return pyq_twin_roundtrip_run(&(adapter), p, samples, r, prefix##_twin_echo,            \
                                      prefix##_twin_timed);                                     \
    }

#ifdef __cplusplus
#define PYQ_TWIN_EXTERN_C extern "C"
#else
#define PYQ_TWIN_EXTERN_C
#endif

/* Define the table of a peer library's twins (an array of pyq_twin_t) and the
 * pyq_peer_twin() it exports; at file scope, outside any namespace. */
#define PYQ_TWIN_PEER_TABLE(twins)                                                              \
    static const pyq_twin_table_t pyq_twin_table_ = {                                          \
        PYQ_TWIN_ABI, (uint32_t)(sizeof(twins) / sizeof((twins)[0])), twins};                  \
    PYQ_TWIN_EXTERN_C PYQ_TWIN_EXPORT const pyq_twin_table_t *pyq_peer_twin(void)               \
    {                                                                                          \
        return &pyq_twin_table_;                                                               \
    }

#endif /* PYQ_TWIN_PVT_H */
