/*
 * pyq_ownership.h - the ownership control of the burst study (its third
 * evidence).  No queue: one worker thread runs the same pyq_business_query()
 * on the same data, after either
 *   arm SELF:  the worker warmed and modified all the data itself, or
 *   arm OTHER: a helper thread on another CPU warmed and modified it and then
 *              handed it over (release/acquire),
 * and times each window of 64 queries (in groups) on the cycle counter.  The
 * warm-up and the hand-over are outside the timed window.  Each window starts
 * from data and a query state that depend only on (seed, window), so a window
 * gives the same checksums in both arms.
 *
 * Both arms run the same two threads and the same handshake; in arm SELF the
 * helper is told to do nothing, so the only difference is who owns the lines.
 * Before each window both arms also time a few no-op hand-overs: a round trip
 * between the two CPUs that tags the window with the vCPU placement of the
 * moment (a VM's host moves vCPUs, and cross-core cost moves with them).
 */
#ifndef PYQ_OWNERSHIP_H
#define PYQ_OWNERSHIP_H

#include <stdint.h>

#include "pyqueue.h"
#include "lab/pyq_business.h"

#define PYQ_OWNERSHIP_SELF 0   /* the worker warms the data itself */
#define PYQ_OWNERSHIP_OTHER 1  /* a helper on other_cpu warms it, then hands it over */
#define PYQ_OWNERSHIP_MAX_GROUPS 64
#define PYQ_OWNERSHIP_NCOUNTERS 8 /* = PYQ_PERF_NEVENTS */
#define PYQ_OWNERSHIP_PROBE_TRIPS 4 /* no-op round trips per window's placement probe */

typedef struct pyq_ownership_config {
    int32_t worker_cpu;    /* CPU of the worker (>= 0) */
    int32_t other_cpu;     /* CPU of the helper (>= 0, != worker_cpu) */
    uint64_t data_bytes;   /* business data, a multiple of 64 (48 KiB in the original study) */
    uint64_t seed;         /* data layout and every window's warm salt / query seed */
    uint32_t queries;      /* queries per timed window (64) */
    uint32_t groups;       /* timed groups per window (4: 16 queries each); divides queries */
} pyq_ownership_config_t;

/* Where one slice's results go; Python allocates every array (n = windows). */
typedef struct pyq_ownership_out {
    uint64_t *window_ns;     /* [n] ns of the whole window of `queries` queries */
    uint64_t *group_ns;      /* [n * groups] ns of each group, or NULL */
    uint64_t *checksum;      /* [n] query checksum after the window */
    uint64_t *data_checksum; /* [n] pyq_business_checksum() after the window (untimed) */
    int32_t *worker_cpu;     /* [n * 2] worker CPU before / after the window, or NULL */
    int32_t *helper_cpu;     /* [n] helper CPU after its warm-up (or no-op), or NULL */
    uint64_t *counters;      /* [n * 8] counter deltas over the window (perf_mask != 0), or NULL */
    uint64_t *probe_ns;      /* [n] placement probe: fastest of PYQ_OWNERSHIP_PROBE_TRIPS no-op
                                hand-over round trips before the window (untimed), or NULL */
} pyq_ownership_out_t;

/* What a slice did. */
typedef struct pyq_ownership_slice {
    int32_t error;           /* 0 or the PYQ_E* code the run returned */
    int32_t failed_cpu;      /* the CPU a pin failed on, else -1 */
    uint32_t windows;        /* windows completed */
    int32_t arm;
    uint64_t start_ns;       /* CLOCK_MONOTONIC when the worker began / ended the slice */
    uint64_t end_ns;
    int32_t perf_status[8];  /* as pyq_perf_t.status (PYQ_EINVAL = not asked for) */
    double perf_read_ns;     /* mean ns of one pyq_perf_read() of the open set, -1 if none */
    double ticks_per_ns;     /* cycle counter calibration used (0: CLOCK_MONOTONIC timing) */
} pyq_ownership_slice_t;

typedef struct pyq_ownership pyq_ownership_t;

/* Any thread.  Check cfg, map and lay out the business data, calibrate the
 * cycle counter.  No thread is started yet.
 * @return 0 and *out; PYQ_EINVAL (bad field: same CPUs, negative CPU, groups
 *         not dividing queries, bad data size); PYQ_ENOMEM. */
int pyq_ownership_create(const pyq_ownership_config_t *cfg, pyq_ownership_t **out);

/* Any thread, one call at a time per o.  One slice: start the worker pinned
 * to worker_cpu and the helper pinned to other_cpu, run windows
 * first_window .. first_window + n - 1 of `arm`, join both.  With perf_mask
 * != 0 the worker opens those counters (pyq_perf_open) and reads them just
 * before and just after each timed window (their deltas go to out->counters).
 * Blocks for the slice; keep slices short so a caller sees Ctrl-C between them.
 * @return 0; PYQ_EINVAL (bad arm, n == 0, missing array, or a CPU could not be
 *         pinned: slice->failed_cpu names it); PYQ_EAGAIN / PYQ_ENOMEM (no thread). */
int pyq_ownership_run(pyq_ownership_t *o, int32_t arm, uint64_t first_window, uint32_t n,
                      uint32_t perf_mask, const pyq_ownership_out_t *out,
                      pyq_ownership_slice_t *slice);

/* Any thread, not during a run.  Free o and its data.  NULL is ok. */
void pyq_ownership_destroy(pyq_ownership_t *o);

#endif /* PYQ_OWNERSHIP_H */
