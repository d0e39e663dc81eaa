/*
 * pyq_pipeline.h - the producer -> stage -> consumer pipeline, over any queue
 * behind the adapter interface (adapters/pyq_adapter.h): pyqueue, the mutex +
 * condition-variable queue it is compared with, or a peer.
 *
 * The producer sends fixed-size messages on a token-bucket schedule (open
 * loop: each message carries its *scheduled* send time, so a late producer or a
 * stalled stage shows up as latency, never as a missing sample).  The stage
 * forwards every message to the second queue; the consumer records
 * latency = delivery time - scheduled time (CLOCK_MONOTONIC ns).  Stage and
 * consumer check every sequence number: a pipeline run that loses, duplicates
 * or reorders a message ends with PYQ_EBADMSG.  With `combine` the stage's thread
 * also plays the consumer (two threads, both hops still through a queue).
 *
 * Receivers poll; when a poll finds nothing, a queue with a blocking wait
 * (wait_readable: the mutex queue's condition variable) puts the receiver to
 * sleep until a writer signals, so the kernel wakes it; any other queue is
 * polled again after the idle strategy (spin, yield, backoff).  What each way
 * costs (context switches, CPU time) is in the result.  A sender that finds its
 * hop full retries the same way for every queue (see hop_send in pipeline.c).
 *
 * Plain declarations only: this header is also the cffi cdef.
 */
#ifndef PYQ_PIPELINE_H
#define PYQ_PIPELINE_H

#include <stdint.h>

#include "pyqueue.h"
#include "adapters/pyq_adapter.h"

/* ---- pipeline.c, pipeline_run.c: the three threads and the run ---------- */

#define PYQ_PIPE_PRODUCER 0 /* index of each thread in cpu[] and thread[] */
#define PYQ_PIPE_STAGE 1
#define PYQ_PIPE_CONSUMER 2
#define PYQ_PIPE_THREADS 3
#define PYQ_PIPE_MIN_MSG 32 /* seq, scheduled ns, send ns, check word */
#define PYQ_PIPE_MAX_MSG 4096

typedef struct pyq_pipeline_config {
    const pyq_adapter_t *queue; /* both hops' queue, from pyq_adapter_get(): "pyqueue"
                              * (publish each), "mutex", a peer ("ck", "dpdk", ...) */
    int32_t cpu[3];          /* producer, stage, consumer: CPU or -1 (not pinned) */
    int32_t fifo_priority;   /* stage and consumer: 0 = SCHED_OTHER, 1..99 = SCHED_FIFO */
    int32_t producer_fifo_priority; /* producer: 0 = SCHED_OTHER, 1..99 = SCHED_FIFO */
    int32_t pad0;
    int32_t idle_strategy;   /* PYQ_IDLE_* of stage and consumer (queues without
                              * wait_readable) */
    uint32_t idle_spins;     /* BACKOFF: relaxed polls before the first sleep */
    uint32_t idle_yield_every; /* YIELD: empty polls per sched_yield() */
    uint64_t idle_sleep_min_ns; /* BACKOFF: first sleep */
    uint64_t idle_sleep_cap_ns; /* BACKOFF: longest sleep */
    double rate;             /* offered messages per second (> 0) */
    uint64_t count;          /* messages (>= 1) */
    uint32_t msg_size;       /* bytes, PYQ_PIPE_MIN_MSG..PYQ_PIPE_MAX_MSG */
    uint32_t slots;          /* every queue but pyqueue: messages per hop (its
                              * capacity_bytes = slots * msg_size) */
    uint32_t queue_spill_blocks; /* pyqueue: tier-2 blocks per hop (backlog room) */
    int32_t producer_slack_ns; /* producer's PR_SET_TIMERSLACK (0: leave the default) */
    uint64_t pacer_spin_ns;  /* producer spins (not sleeps) this close to a send time */
    double rest_share;       /* polling receivers: when an empty poll finds the thread's own
                              * CPU time above (1 - rest_share) of the current 10 ms, it
                              * sleeps rest_ns first (0: never), so a SCHED_FIFO poller
                              * stays inside the RT budget (sched_rt_runtime_us); [0, 1) */
    uint64_t rest_ns;        /* length asked for one rest, 1..1e9 ns when rest_share > 0 */
    int32_t receiver_slack_ns; /* stage and consumer: PR_SET_TIMERSLACK (0: leave the default) */
    int32_t combine;         /* no wait_readable: 1 = one thread (the stage's, on cpu[STAGE])
                              * runs stage and consumer, polling hop 0 then hop 1; no
                              * consumer thread, its result row has messages only */
    uint64_t stage_work_ns;  /* stage spins this long per message (0: forward only) */
    uint64_t start_delay_ns; /* schedule starts this long after all threads are ready */
    uint64_t timeout_ns;     /* whole run; then the threads are stopped: PYQ_EAGAIN */
    uint64_t *latency_ns;    /* count entries: delivery - scheduled, per message */
    uint64_t *lateness_ns;   /* optional, count entries: producer send - scheduled */
} pyq_pipeline_config_t;

/* What one thread used over the run. */
typedef struct pyq_pipeline_thread {
    int32_t cpu_start;       /* sched_getcpu() at start and end */
    int32_t cpu_end;
    int32_t policy;          /* SCHED_* while running */
    int32_t perf_status;     /* 0: perf_* are counts; else why the counters are missing */
    uint64_t messages;       /* handled */
    uint64_t cpu_ns;         /* CLOCK_THREAD_CPUTIME_ID over the run */
    uint64_t voluntary_cs;   /* getrusage(RUSAGE_THREAD) ru_nvcsw over the run */
    uint64_t involuntary_cs; /* ... ru_nivcsw */
    uint64_t perf_cs;        /* software perf counter context-switches */
    uint64_t perf_migrations; /* software perf counter cpu-migrations */
    uint64_t waits;          /* receivers: yields + sleeps of the idle strategy, or
                              * wait_readable calls (a queue that blocks) */
    uint64_t rests;          /* sleeps forced by rest_share (not in waits) */
    uint64_t rest_ns;        /* wall time they took */
} pyq_pipeline_thread_t;

typedef struct pyq_pipeline_result {
    int32_t error;           /* 0 or the first PYQ_E* code (also returned) */
    int32_t failed_thread;   /* PYQ_PIPE_* index of the thread that failed, or -1 */
    int32_t failed_step;     /* PYQ_STEP_* of pyq_runtime.h */
    int32_t pad;
    uint64_t error_seq;      /* seq where a check failed, or PYQ_SEQ_NONE */
    uint64_t delivered;      /* messages the consumer received in order */
    uint64_t start_ns;       /* scheduled time of message 0 */
    uint64_t end_ns;         /* the consumer's last delivery */
    pyq_pipeline_thread_t thread[3];
} pyq_pipeline_result_t;

/* Any thread.  Defaults: the pyqueue adapter, unpinned, SCHED_OTHER, idle BACKOFF
 * with the runtime's default stages, 10,000 msg/s, 10,000 messages of 32 B,
 * 65,536 slots, 1,024 spill blocks, producer timer slack 1 ns, pacer spin 20 µs,
 * no rests, receivers' timer slack left alone, three threads (combine 0),
 * start 2 ms after ready, timeout 60 s. */
void pyq_pipeline_config_init(pyq_pipeline_config_t *cfg);

/* Any thread (not pinned itself: it starts three pinned threads and joins
 * them).  Run the whole pipeline once.
 * @return 0 (every message delivered in order, latency_ns filled); PYQ_EINVAL
 *         (bad config, msg_size or slots the queue does not take, or a CPU not
 *         allowed: failed_step PIN); another code of the queue's create; PYQ_EPERM
 *         (SCHED_FIFO refused); PYQ_ENOMEM; PYQ_EBADMSG (a sequence check
 *         failed: error_seq); PYQ_EAGAIN (timeout). */
int pyq_pipeline_run(const pyq_pipeline_config_t *cfg, pyq_pipeline_result_t *res);

#endif /* PYQ_PIPELINE_H */
