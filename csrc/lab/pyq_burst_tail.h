/*
 * pyq_burst_tail.h - the measured loop of the burst-tail study (DESIGN §6.1).
 *
 * One pyq_burst_t is one class: a queue behind a pyq_adapter_t, its consumer
 * thread (the original study's 64-iteration callback that verifies every message, every
 * byte and FIFO order) and the business data of the writer.  The writer is the
 * thread that calls pyq_burst_windows(); per window it
 *   1. untimed: waits while the backlog is above the target, and tops it up
 *      (the consumer held) while it is below,
 *   2. runs the warm-up queries (512) and samples its CPU id,
 *   3. sends one burst (1 MiB of 32-byte messages) and samples its CPU id,
 *   4. runs the measured queries (4 groups of 16), one cycle-counter stamp per group.
 * The consumer runs only inside pyq_burst_windows()/pyq_burst_fill()/pyq_burst_drain(),
 * so classes interleaved in slices never compete for the CPUs.
 */
#ifndef PYQ_BURST_H
#define PYQ_BURST_H

#include <stdint.h>

#include "adapters/pyq_adapter.h"

#define PYQ_BURST_MAX_GROUPS 64
/* The message sizes the study runs (the adapter params' msg_size). */
#define PYQ_BURST_MIN_MSG 8
#define PYQ_BURST_MAX_MSG 256

typedef struct pyq_burst pyq_burst_t;

typedef struct pyq_burst_config {
    uint32_t send_messages;     /* messages per burst: 1 MiB / 32 = 32,768; 0: the
                                   no-burst baseline (the same windows, no send) */
    uint32_t warmup_queries;    /* business queries before the burst: 512 */
    uint32_t groups;            /* timed groups after the burst: 4 */
    uint32_t group_queries;     /* queries per group: 16 */
    uint32_t consumer_loop;     /* 1: the study's 64-iteration work per message; 0: verify only */
    uint32_t retry_yield_every; /* writer on a full queue: sched_yield() every N failed
                                   try_writes (0: never); also used while waiting for
                                   the backlog to fall */
    uint32_t data_bytes;        /* business data: 48 KiB */
    uint64_t backlog_target;    /* messages: before a window the writer waits while
                                   the backlog is above this */
    int32_t writer_cpu;         /* pin the calling thread during each call; -1: leave it */
    int32_t consumer_cpu;       /* pin the consumer thread; -1: leave it */
    uint64_t seed;              /* business layout and query streams */
    uint32_t pmu_mask;          /* pyq_perf counters read around the measured queries */
    uint32_t twin;              /* 1: send and consume through the peer's inline twin
                                   (its library's calls inlined) instead
                                   of the adapter's table; PYQ_ENOTSUP without one */
    uint32_t pretouch;          /* 1: the first pyq_burst_fill() calls write the queue full
                                   and let the consumer drain it, twice, so every slot of
                                   its blocks and rings has been written (every page
                                   faulted in) before the first window */
    uint32_t reserved;
    uint64_t gap_ns;            /* with send_messages 0: spin on the clock this long where the
                                   send would be (no stores): time alone, without the send */
    uint64_t fault_seq;         /* tests only: corrupt message fault_seq - 1 (0: never) */
} pyq_burst_config_t;

/* Per-window records of pyq_burst_windows(): arrays of n entries (group_ticks:
 * n * groups; pmu: n * 8 or NULL).  Times are raw cycle-counter ticks. */
typedef struct pyq_burst_records {
    uint64_t *group_ticks;  /* each timed group's duration */
    uint64_t *send_ticks;   /* the burst's duration */
    uint64_t *wait_ticks;   /* the untimed wait for the backlog, and its top-up */
    uint64_t *topup;        /* messages the untimed top-up wrote before the window */
    uint64_t *backlog;      /* messages in the queue when the window started */
    uint64_t *retries;      /* failed try_writes during the burst */
    uint64_t *yields;       /* sched_yield() calls during wait + burst */
    uint64_t *faults;       /* the writer's page faults (minor + major) from window start
                               to its end (getrusage, outside the timed groups) */
    int32_t *cpu_start;     /* writer's CPU at window start (after the wait) */
    int32_t *cpu_warm;      /* ... at the end of the warm-up */
    int32_t *cpu_send;      /* ... at the end of the burst */
    int32_t *cpu_end;       /* ... after the measured queries */
    uint64_t *pmu;          /* counter deltas over the measured queries, or NULL */
} pyq_burst_records_t;

typedef struct pyq_burst_totals {
    uint64_t sent;          /* messages written so far */
    uint64_t verified;      /* messages the consumer checked, in order, every byte */
    uint64_t retries;
    uint64_t yields;
    uint64_t max_backlog;   /* largest backlog seen at a window start, messages */
    uint64_t capacity;      /* messages the queue holds (adapter's figure) */
    uint64_t checksum;      /* business results: the same seed gives the same value */
    int32_t error;          /* first error: PYQ_EBADMSG (consumer), or an adapter code */
    int32_t perf_opened;    /* PMU mode: bit i set when counter i was open */
    uint64_t error_seq;     /* message seq where the consumer's check failed */
    double perf_read_ns;    /* cost of one counter read (PMU mode), -1 if none */
} pyq_burst_totals_t;

/* Any thread.  Fill *c with the study's defaults: the values named beside the
 * fields, consumer_loop 1, retry_yield_every 1024, both CPUs -1, a fixed seed,
 * the rest 0 (backlog_target 0: set it). */
void pyq_burst_config_init(pyq_burst_config_t *c);

/* Any thread.  Create the class: the adapter's queue, the business data.
 * @return 0 and *out, PYQ_EINVAL (bad config), PYQ_ENOMEM, or the adapter's code. */
int pyq_burst_open(const pyq_adapter_t *a, const pyq_adapter_params_t *ap,
                   const pyq_burst_config_t *c, pyq_burst_t **out);

/* Any thread, between calls.  Change the backlog target (messages) or the
 * counters read around the measured queries (0: none). */
void pyq_burst_set_backlog_target(pyq_burst_t *b, uint64_t messages);
void pyq_burst_set_pmu(pyq_burst_t *b, uint32_t mask);

/* Any thread, between calls.  The idle gap of a class that sends nothing
 * (send_messages 0): spin this long where the send would be (0: no gap).
 * @return 0, or PYQ_EINVAL for a class that sends. */
int pyq_burst_set_gap(pyq_burst_t *b, uint64_t gap_ns);

/* Any thread, between calls.  The business data, its query stream and the
 * checksum from the seed again, as pyq_burst_open() left them: windows run
 * before the rounds (the gap's measurement) leave no trace in the rounds'
 * business work, which every class repeats exactly. */
void pyq_burst_restart_business(pyq_burst_t *b);

/* The writer thread.  Untimed: write (no queries, no consumer running) until
 * the backlog reaches the target or the queue is full, for at most about
 * slice_ns (checked every 1,024 messages; <= 0: no limit).  With pretouch, the
 * first calls write the queue full and run the consumer until it is empty,
 * twice (the same slices), before topping it up.
 * @return 0 (target or full queue reached), 1 (the slice ended first: call
 *         again), or an error. */
int pyq_burst_fill(pyq_burst_t *b, int64_t slice_ns);

/* The writer thread.  Run up to n windows, filling rec[0..n); stop after the
 * window during which slice_ns passed, or in the untimed wait for the backlog
 * once it passed there (<= 0: no limit), so one call returns within slice_ns
 * plus one window's send.  Starts the consumer thread on entry and stops it on
 * return.
 * @return the windows run (0..n), or a negative error (consumer verification
 *         failure, pinning). */
int64_t pyq_burst_windows(pyq_burst_t *b, uint32_t n, const pyq_burst_records_t *rec,
                          int64_t slice_ns);

/* Any thread.  What the class sends and consumes through: "adapter", or the
 * twin's description of the library calls it inlines. */
const char *pyq_burst_driver(const pyq_burst_t *b);

/* The writer thread.  Flush and let the consumer verify everything sent, for at
 * most timeout_ns.  @return 0, PYQ_EAGAIN (timed out), or the consumer's error. */
int pyq_burst_drain(pyq_burst_t *b, int64_t timeout_ns);

/* Any thread, between calls.  Counters so far. */
void pyq_burst_totals(const pyq_burst_t *b, pyq_burst_totals_t *t);

/* Any thread, between calls.  Free the class. NULL is ok. */
void pyq_burst_close(pyq_burst_t *b);

#endif /* PYQ_BURST_H */
