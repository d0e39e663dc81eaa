/*
 * pyq_c2c.h - core-to-core latency: cache-line ping-pong
 * between two pinned threads in two raw modes and through pyqueue itself, and
 * the false-sharing demo (two counters on one line vs on padded lines).
 *
 * The measured loops time with the cycle counter (rdtsc / CNTVCT_EL0; one read
 * per round trip, no fence) and keep every sample; pyq_clock_cycles_to_ns()
 * converts.  Each call is one short slice: the caller repeats slices to
 * interleave modes, follow a pair over time and notice Ctrl-C.
 * Plain declarations only: this header is also the cffi cdef.
 */
#ifndef PYQ_C2C_H
#define PYQ_C2C_H

#include <stdint.h>

#include "pyqueue.h"

/* Ping-pong modes. */
#define PYQ_C2C_CAS 0       /* one shared line: A CASes 2k -> 2k+1, B CASes 2k+1 -> 2k+2 */
#define PYQ_C2C_TWO_LINES 1 /* A writes line 1, B echoes on line 2 (write-then-read) */
#define PYQ_C2C_QUEUE 2     /* one 32-byte message A -> B and back through two pyqueues */
#define PYQ_C2C_NMODES 3

/* One ping-pong slice between cpu_a and cpu_b (cpu_a != cpu_b). */
typedef struct pyq_c2c_config {
    int32_t cpu_a;          /* the timing side */
    int32_t cpu_b;          /* the echo side */
    int32_t mode;           /* PYQ_C2C_* */
    uint32_t warmup;        /* untimed round trips before the samples */
    uint32_t round_trips;   /* timed round trips = entries of samples (>= 1) */
    uint32_t batch;         /* round trips per sample (>= 1); a sample is their total */
    pyq_config_t queue;     /* PYQ_C2C_QUEUE: configuration of both queues */
    uint32_t msg_size;      /* PYQ_C2C_QUEUE: message bytes, 8..block_size-8 */
    uint32_t pad;
    uint64_t timeout_ns;    /* give up (PYQ_EAGAIN) when one trip waits this long; 0 = 10 s */
} pyq_c2c_config_t;

typedef struct pyq_c2c_result {
    int32_t error;          /* 0 or the first PYQ_E* code (also returned) */
    int32_t failed_step;    /* PYQ_STEP_* of pyq_runtime.h: where it failed */
    int32_t cpu_a_end;      /* sched_getcpu() of each side after the slice */
    int32_t cpu_b_end;
    uint64_t start_ns;      /* CLOCK_MONOTONIC around the timed part */
    uint64_t end_ns;
    uint64_t timed_ticks;   /* cycle-counter ticks of the whole timed part */
    uint64_t round_trips;   /* timed round trips completed and verified */
    double timer_ticks;     /* median ticks of an empty timed interval (two reads) */
} pyq_c2c_result_t;

/* Any thread (it is not pinned: two new threads are).  Fill cfg's defaults:
 * TWO_LINES, 1,000 warm-up trips, 10,000 timed trips, batch 1, queue config
 * of pyq_config_init() with publish EACH, 32-byte messages, 10 s timeout. */
void pyq_c2c_config_init(pyq_c2c_config_t *cfg, int32_t cpu_a, int32_t cpu_b);

/* Any thread.  Run one ping-pong slice; samples_ticks[i] = cycle-counter ticks
 * of sample i (batch round trips; one-way = half a round trip).  Every queue
 * message is checked (sequence number in its first 8 bytes).
 * @return 0; PYQ_EINVAL (bad config, a CPU not allowed: failed_step PIN);
 *         PYQ_ENOTSUP (no cycle counter); PYQ_ENOMEM; PYQ_EAGAIN (timeout:
 *         the partner did not answer); PYQ_EBADMSG (wrong message). */
int pyq_c2c_pingpong(const pyq_c2c_config_t *cfg, uint64_t *samples_ticks,
                     pyq_c2c_result_t *res);

/* The false-sharing demo: each thread adds 1 to its own counter `increments`
 * times, the two counters either in one cache line or 128 bytes apart. */
typedef struct pyq_false_sharing_result {
    int32_t error;
    int32_t failed_step;
    uint64_t ticks[2];      /* cycle-counter ticks of each thread's loop */
    uint64_t elapsed_ns;    /* CLOCK_MONOTONIC from the common start to the last end */
    uint64_t counts[2];     /* final counter values (== increments) */
} pyq_false_sharing_result_t;

/* Any thread.  Threads pinned to cpu_a and cpu_b (equal is allowed) increment
 * their counter; shared = 1 puts both counters in one line, 0 on separate
 * padded lines.  rmw = 1 increments with a locked fetch_add, 0 with a relaxed
 * load + store (single writer each, as pyqueue's stats counters).
 * @return 0, PYQ_EINVAL (bad CPU: failed_step PIN), PYQ_ENOMEM. */
int pyq_false_sharing_run(int32_t cpu_a, int32_t cpu_b, uint64_t increments, int32_t shared,
                          int32_t rmw, pyq_false_sharing_result_t *res);

#endif /* PYQ_C2C_H */
