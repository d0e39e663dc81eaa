/*
 * false_sharing.c - the false-sharing demo: two pinned
 * threads increment their own counter, on one cache line or on lines 128 B
 * apart.  See pyq_c2c.h.  The calling thread only joins them.
 *
 * Ordering: MEET-S1/MEET-S2 start barrier (runtime/start_pvt.h); the counters are
 * single-writer and read after the joins.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "lab/pyq_c2c.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"

struct fs {
    /* counters[0] at byte 0; counters[1] at byte 8 (shared) or 128 (padded:
     * two lines apart, clear of the adjacent-line prefetcher's pair). */
    PYQ_ALIGNED_LINE _Atomic uint64_t counters[32];
    PYQ_ALIGNED_LINE pyq_start_t start;
    PYQ_ALIGNED_LINE uint64_t increments;
    int32_t cpu[2];
    int32_t rmw;
    uint32_t slot[2];
    int err[2];
    uint64_t ticks[2], end_ns[2];
};

struct fs_arg {
    struct fs *f;
    int side;
};

static void *fs_thread(void *arg)
{
    struct fs_arg *a = arg;
    struct fs *f = a->f;
    _Atomic uint64_t *ctr = &f->counters[f->slot[a->side]];
    uint64_t t0;
    int rc = pyq_cpu_pin_self(f->cpu[a->side]);

    f->err[a->side] = rc;
    if (pyq_start_meet(&f->start, 2, rc) != 0)
        return NULL;
    t0 = pyq_cycles_now();
    if (f->rmw) {
        for (uint64_t i = 0; i < f->increments; i++)
            /* Relaxed: a counter; only its line's ownership matters here. */
            atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed);
    } else {
        for (uint64_t i = 0; i < f->increments; i++)
            /* Single writer: relaxed load + store, no locked instruction. */
            atomic_store_explicit(ctr, atomic_load_explicit(ctr, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
    }
    f->ticks[a->side] = pyq_cycles_now() - t0;
    f->end_ns[a->side] = pyq_now_ns();
    return NULL;
}

int pyq_false_sharing_run(int32_t cpu_a, int32_t cpu_b, uint64_t increments, int32_t shared,
                          int32_t rmw, pyq_false_sharing_result_t *res)
{
    struct fs *f;
    struct fs_arg args[2];
    pthread_t t[2];
    uint64_t start;
    int rc = 0, made = 0;

    memset(res, 0, sizeof *res);
    if (cpu_a < 0 || cpu_b < 0 || increments == 0)
        return res->error = PYQ_EINVAL;
    if (!PYQ_HAVE_CYCLES)
        return res->error = PYQ_ENOTSUP;
    (void)pyq_clock_ticks_per_ns();
    f = aligned_alloc(PYQ_CACHELINE, sizeof *f);
    if (!f)
        return res->error = PYQ_ENOMEM;
    memset(f, 0, sizeof *f);
    f->increments = increments;
    f->cpu[0] = cpu_a;
    f->cpu[1] = cpu_b;
    f->rmw = rmw;
    f->slot[0] = 0;
    f->slot[1] = shared ? 1 : 16;
    start = pyq_now_ns();
    for (int i = 0; i < 2; i++) {
        args[i].f = f;
        args[i].side = i;
        if ((rc = -pthread_create(&t[i], NULL, fs_thread, &args[i])) != 0) {
            res->failed_step = PYQ_STEP_CREATE;
            pyq_start_arrive(&f->start, rc); /* for this one: the other gives up */
            break;
        }
        made++;
    }
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    if (!rc && (f->err[0] || f->err[1])) {
        rc = f->err[0] ? f->err[0] : f->err[1];
        res->failed_step = PYQ_STEP_PIN;
    }
    if (!rc) {
        for (int i = 0; i < 2; i++) {
            res->ticks[i] = f->ticks[i];
            res->counts[i] = atomic_load_explicit(&f->counters[f->slot[i]], memory_order_relaxed);
        }
        res->elapsed_ns = (f->end_ns[0] > f->end_ns[1] ? f->end_ns[0] : f->end_ns[1]) - start;
    }
    free(f);
    return res->error = rc;
}
