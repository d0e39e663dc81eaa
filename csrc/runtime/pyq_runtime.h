/*
 * pyq_runtime.h - the runtime of DESIGN §4: CPU pinning and scheduling, clocks,
 * perf counters, consumer idle strategies, the token-bucket pacer, and the
 * producer / consumer pthreads that run a queue entirely in C.
 *
 * Conventions as in pyqueue.h: 0 or a count on success, a negative PYQ_E* code
 * on failure.  Like every public header this is also the cffi cdef, so it holds
 * plain declarations only (array sizes are literals; static asserts in the .c
 * files tie them to the PYQ_* constants).
 */
#ifndef PYQ_RUNTIME_H
#define PYQ_RUNTIME_H

#include <stdint.h>

#include "pyqueue.h"

/* ---- cpu.c: pinning, scheduling policy, CPU id sampling ---------------- */

/* Calling thread.  Pin the calling thread to one CPU (cpu >= 0); a pinned
 * thread may move to another CPU this way.
 * @return 0; PYQ_EINVAL when cpu is negative, beyond CPU_SETSIZE, offline or
 *         outside the cgroup's cpuset (the affinity is then unchanged). */
int pyq_cpu_pin_self(int cpu);

/* Calling thread.  Allow the calling thread on every CPU of cpus[0..n). @return 0 or PYQ_EINVAL. */
int pyq_cpu_unpin_self(const int *cpus, uint32_t n);

/* Any thread.  1 if cpu is in the calling thread's allowed set, else 0. */
int pyq_cpu_allowed(int cpu);

/* Calling thread.  priority 1..99: SCHED_FIFO at that priority; 0: back to SCHED_OTHER.
 * @return 0; PYQ_EINVAL (priority out of range); PYQ_EPERM (the OS refused: no
 *         CAP_SYS_NICE / RLIMIT_RTPRIO, or RT throttling forbids it). */
int pyq_cpu_set_fifo_self(int priority);

/* Calling thread.  Current scheduling policy of the calling thread (SCHED_* value)
 * and its priority in *priority (may be NULL). */
int pyq_cpu_policy_self(int *priority);

/* Calling thread.  The CPU the calling thread runs on now (sched_getcpu()), or
 * PYQ_ENOTSUP.  Wait-free: vDSO/rseq, no system call on Linux >= 4.18. */
int pyq_cpu_current(void);

/* Calling thread.  Mean cost in ns of one pyq_cpu_current() over n calls. */
double pyq_cpu_sample_cost_ns(uint32_t n);

/* ---- clock.c: CLOCK_MONOTONIC and the calibrated cycle counter --------- */

#define PYQ_CLOCK_MONOTONIC 0   /* clock_gettime(CLOCK_MONOTONIC): ns */
#define PYQ_CLOCK_CYCLES 1      /* rdtsc (x86-64) / CNTVCT_EL0 (arm64): ticks */
#define PYQ_CLOCK_CYCLES_FENCED 2 /* the same, ordered with earlier loads (lfence/isb) */
#define PYQ_CLOCK_MONOTONIC_RAW 3 /* clock_gettime(CLOCK_MONOTONIC_RAW): ns */
#define PYQ_CLOCK_COUNT 4

/* The cycle counter's calibration against CLOCK_MONOTONIC. */
typedef struct pyq_clock_info {
    int32_t has_cycles;      /* 1 when a cycle counter is readable from user space */
    int32_t calibrated;      /* 1 once pyq_clock_calibrate() has run */
    double ticks_per_ns;     /* cycle counter ticks per ns (0 without a counter) */
    double counter_hz;       /* what the hardware says its frequency is (arm64 CNTFRQ), else 0 */
    uint64_t calib_ns;       /* length of the calibration interval in ns */
    const char *cycles_name; /* "rdtsc", "cntvct_el0" or "none" */
} pyq_clock_info_t;

/* Any thread.  CLOCK_MONOTONIC in ns (vDSO: no system call with a TSC clocksource). */
uint64_t pyq_clock_now_ns(void);

/* Any thread.  The raw cycle counter, or 0 when the platform has none. */
uint64_t pyq_clock_cycles(void);

/* Any thread.  Calibrate the cycle counter against CLOCK_MONOTONIC over about
 * interval_ns (0: 20 ms).  The first call that finishes wins; later calls
 * re-measure only when force is 1.  Fills *out when not NULL.
 * @return 0 or PYQ_ENOTSUP (no cycle counter: *out says so). */
int pyq_clock_calibrate(uint64_t interval_ns, int force, pyq_clock_info_t *out);

/* Any thread.  Convert a cycle-counter difference to ns (calibrating first if
 * needed).  0 without a cycle counter. */
double pyq_clock_cycles_to_ns(uint64_t ticks);

/* Calling thread.  Mean cost in ns of one read of clock `which` (PYQ_CLOCK_*),
 * measured over n back-to-back reads.  @return 0, PYQ_EINVAL, PYQ_ENOTSUP. */
int pyq_clock_cost_ns(int which, uint32_t n, double *ns_per_read);

/* Calling thread.  Resolution of clock `which` in its own units (ns, or ticks
 * for the cycle counters): the step that 90 % of n differences between two
 * reads a random short spin apart are (within one unit) multiples of; 1 for a
 * clock that moves by single units, 0 if it hardly moved at all.
 * @return 0, PYQ_EINVAL (n outside [1, 2^24]), PYQ_ENOMEM, PYQ_ENOTSUP. */
int pyq_clock_step(int which, uint32_t n, uint64_t *step);

/* Any thread.  Static name of clock `which` ("monotonic", "rdtsc", ...). */
const char *pyq_clock_name(int which);

/* ---- perf.c: perf_event_open counters of the calling thread ----------- */

#define PYQ_PERF_CYCLES 0             /* hardware, user only */
#define PYQ_PERF_INSTRUCTIONS 1       /* hardware, user only */
#define PYQ_PERF_L1D_READ_MISSES 2    /* hardware cache event, user only */
#define PYQ_PERF_STALLED_FRONTEND 3   /* hardware, user only */
#define PYQ_PERF_STALLED_BACKEND 4    /* hardware, user only */
#define PYQ_PERF_CONTEXT_SWITCHES 5   /* software */
#define PYQ_PERF_CPU_MIGRATIONS 6     /* software */
#define PYQ_PERF_PAGE_FAULTS 7        /* software */
#define PYQ_PERF_NEVENTS 8
#define PYQ_PERF_ALL 255              /* event mask of every counter */
#define PYQ_PERF_SOFTWARE 224         /* event mask of the software counters */

/* One set of counters on the calling thread.  status[i] is 0 when counter i is
 * open, the negative errno perf_event_open gave (-ENOENT: no such event,
 * -EACCES/-EPERM: forbidden by perf_event_paranoid, ...), or PYQ_EINVAL when i
 * was not asked for. */
typedef struct pyq_perf {
    int32_t fd[8];
    int32_t status[8];
    uint32_t mask;   /* counters asked for */
    uint32_t opened; /* counters open (bit i = counter i) */
} pyq_perf_t;

/* Calling thread (the counters follow it on every CPU).  Open the counters of
 * `mask` (bit i = PYQ_PERF_i), counting from now.
 * @return the number opened (0 is fine: every status[] says why). */
int pyq_perf_open(pyq_perf_t *p, uint32_t mask);

/* The thread that opened p.  Read every open counter into values[i] (0 for
 * closed ones); values count since pyq_perf_open().  One read() per open
 * counter.  @return the number read or a negative errno. */
int pyq_perf_read(const pyq_perf_t *p, uint64_t *values);

/* Any thread.  Close every counter of p. */
void pyq_perf_close(pyq_perf_t *p);

/* Calling thread.  Mean ns of one pyq_perf_read() of p over n reads, or -1 when
 * nothing is open. */
double pyq_perf_read_cost_ns(const pyq_perf_t *p, uint32_t n);

/* Any thread.  Static name of counter i ("cycles", "context-switches", ...). */
const char *pyq_perf_name(int i);

/* Any thread, for tests.  errno_value > 0: every later perf_event_open "fails"
 * with that errno; 0: back to the real system call. */
void pyq_perf_simulate_failure(int errno_value);

/* ---- idle.c: what a consumer does when the queue is empty ------------- */

#define PYQ_IDLE_SPIN 0    /* busy spin: poll again at once */
#define PYQ_IDLE_RELAX 1   /* spin with the CPU relax instruction (pause / yield) */
#define PYQ_IDLE_YIELD 2   /* relax, and sched_yield() every yield_every empty polls */
#define PYQ_IDLE_BACKOFF 3 /* relax `spins` times, then nanosleep doubling up to the cap */
#define PYQ_IDLE_DEFAULT_SPINS 1024
#define PYQ_IDLE_DEFAULT_YIELD_EVERY 64
#define PYQ_IDLE_DEFAULT_SLEEP_MIN_NS 1000
#define PYQ_IDLE_DEFAULT_SLEEP_CAP_NS 50000

typedef struct pyq_idle_config {
    int32_t strategy;      /* PYQ_IDLE_* */
    uint32_t spins;        /* BACKOFF: relaxed polls before the first sleep */
    uint32_t yield_every;  /* YIELD: empty polls per sched_yield(), >= 1 */
    uint64_t sleep_min_ns; /* BACKOFF: first sleep, >= 1 */
    uint64_t sleep_cap_ns; /* BACKOFF: longest sleep, >= sleep_min_ns */
} pyq_idle_config_t;

/* How often each stage was reached (single writer: the idling thread). */
typedef struct pyq_idle_stats {
    uint64_t periods;   /* idle periods: runs of empty polls ended by work or stop */
    uint64_t empty_polls; /* polls that found nothing */
    uint64_t spins;     /* empty polls answered by a plain spin */
    uint64_t relaxes;   /* ... by a relax instruction */
    uint64_t yields;    /* sched_yield() calls */
    uint64_t sleeps;    /* nanosleep() calls */
    uint64_t sleeps_at_cap; /* nanosleep() calls at the cap */
    uint64_t sleep_ns;  /* ns asked for in all sleeps */
} pyq_idle_stats_t;

/* An idle strategy's state; owned by one thread. */
typedef struct pyq_idle {
    pyq_idle_config_t cfg;
    pyq_idle_stats_t stats;
    uint64_t run;      /* empty polls in the current idle period */
    uint64_t sleep_ns; /* next BACKOFF sleep */
} pyq_idle_t;

/* Any thread.  Fill *cfg with strategy and the PYQ_IDLE_DEFAULT_* values. */
void pyq_idle_config_init(pyq_idle_config_t *cfg, int strategy);

/* Owner thread.  @return 0 or PYQ_EINVAL (unknown strategy or bad field). */
int pyq_idle_init(pyq_idle_t *idle, const pyq_idle_config_t *cfg);

/* Owner thread.  The poll found nothing: wait per the strategy (spin, relax,
 * sched_yield() or nanosleep(); the only system calls of a consumer loop). */
void pyq_idle_wait(pyq_idle_t *idle);

/* Owner thread.  The poll found work: end the idle period (backoff restarts). */
void pyq_idle_reset(pyq_idle_t *idle);

/* ---- pacer.c: token bucket giving each message its scheduled send time --- */

/* A token bucket (GCRA form): at most `burst` messages back to back, then one
 * every 1/rate s.  The schedule depends only on when messages are ready, never
 * on when they were actually sent, so latency measured from the scheduled time
 * has no coordinated omission. */
typedef struct pyq_pacer {
    double rate;          /* messages per second; 0 = unpaced */
    double interval_ns;   /* 1e9 / rate */
    double tolerance_ns;  /* (burst - 1) * interval_ns */
    uint64_t anchor_ns;   /* the theoretical arrival time of the next message (TAT) */
    uint64_t steps;       /*   is anchor_ns + steps * interval_ns; 0 steps: no message yet */
    uint32_t burst;
    uint32_t pad;
    uint64_t spin_ns;     /* waits longer than this sleep first, then spin */
} pyq_pacer_t;

#define PYQ_PACER_DEFAULT_SPIN_NS 50000

/* Owner thread.  rate 0 = unpaced (scheduled time = ready time); burst >= 1.
 * spin_ns 0 = PYQ_PACER_DEFAULT_SPIN_NS.  @return 0 or PYQ_EINVAL. */
int pyq_pacer_init(pyq_pacer_t *p, double rate, uint32_t burst, uint64_t spin_ns);

/* Owner thread.  Scheduled send time (CLOCK_MONOTONIC ns) of the next message,
 * which became ready at ready_ns; advances the bucket.  Wait-free, no clock read. */
uint64_t pyq_pacer_next(pyq_pacer_t *p, uint64_t ready_ns);

/* Owner thread.  Wait until CLOCK_MONOTONIC >= when_ns: clock_nanosleep() to
 * spin_ns before it, then spin.  @return the time it returned (>= when_ns). */
uint64_t pyq_pacer_wait(const pyq_pacer_t *p, uint64_t when_ns);

/* ---- threads.c, consumer.c, producer.c: the C threads ------------------ */

typedef struct pyq_thread pyq_thread_t;

/* Consumer per-message work (pyq_consumer_config_t.work). */
#define PYQ_WORK_NONE 0   /* nothing but the optional verification */
#define PYQ_WORK_LOOP64 1 /* the burst study's 64-iteration loop per message */
#define PYQ_WORK_SPIN_NS 2 /* spin work_ns on the cycle clock per message */

/* Producer test faults (to prove a verifying consumer reports them). */
#define PYQ_FAULT_NONE 0
#define PYQ_FAULT_CORRUPT 1 /* flip one payload byte of message fault_seq */
#define PYQ_FAULT_SKIP 2    /* never send message fault_seq */

/* Where a thread failed (pyq_thread_result_t.failed_step). */
#define PYQ_STEP_NONE 0
#define PYQ_STEP_CREATE 1 /* pthread_create */
#define PYQ_STEP_PIN 2    /* pinning to cpu */
#define PYQ_STEP_SCHED 3  /* SCHED_FIFO */
#define PYQ_STEP_RUN 4    /* the loop (write, verification, ...) */

/* How a thread ended. */
#define PYQ_END_RUNNING 0
#define PYQ_END_DONE 1     /* all messages sent / received */
#define PYQ_END_STOPPED 2  /* pyq_thread_stop() */
/* PYQ_END_CLOSED: a producer met a closed queue; a consumer found the queue
 * drained after the writer detached (pyq_writer_detach). */
#define PYQ_END_CLOSED 3
#define PYQ_END_ERROR 4    /* first_error says why */

#define PYQ_SEQ_NONE 0xFFFFFFFFFFFFFFFFull

typedef struct pyq_consumer_config {
    int32_t cpu;            /* -1 = not pinned */
    int32_t fifo_priority;  /* 0 = SCHED_OTHER, 1..99 = SCHED_FIFO */
    uint64_t count;         /* stop after this many messages; 0 = until stopped/closed */
    uint64_t first_seq;     /* seq of the first message expected */
    int32_t verify;         /* pyq_pattern_check() every message against the next seq */
    int32_t work;           /* PYQ_WORK_* */
    uint64_t work_ns;       /* PYQ_WORK_SPIN_NS: cost per message */
    uint32_t size_lo;       /* verify: expected length pyq_pattern_len(seq, lo, hi, salt); */
    uint32_t size_hi;       /*   size_lo == 0 = any length */
    uint64_t size_salt;
    uint32_t poll_batch;    /* max messages per pyq_reader_poll(); 0 = 256 */
    uint32_t perf_mask;     /* perf counters of the thread over the run (PYQ_PERF_* bits) */
    pyq_idle_config_t idle;
    uint64_t *dequeue_ns;   /* optional: CLOCK_MONOTONIC at delivery of message i */
    uint64_t samples_cap;   /* entries of dequeue_ns */
} pyq_consumer_config_t;

typedef struct pyq_producer_config {
    int32_t cpu;            /* -1 = not pinned */
    int32_t fifo_priority;  /* 0 = SCHED_OTHER, 1..99 = SCHED_FIFO */
    uint64_t count;         /* messages to send (>= 1) */
    uint64_t first_seq;     /* seq of the first message */
    uint32_t size_lo;       /* message size; random sizes pyq_pattern_len(seq, lo, hi, salt) */
    uint32_t size_hi;       /*   when size_hi > size_lo */
    uint64_t size_salt;
    uint64_t burst_bytes;   /* a burst ends once it holds >= this many payload bytes; 0 = one burst */
    uint64_t gap_ns;        /* the next burst is ready gap_ns after the previous burst's last
                               scheduled send time (unpaced: after it became ready, so bursts
                               start on a fixed period however long sending took) */
    double rate;            /* pacer messages/s; 0 = unpaced */
    uint32_t pacer_burst;   /* pacer bucket size (>= 1) */
    int32_t flush_each_burst; /* pyq_writer_flush() after each burst (always at the end) */
    uint64_t start_delay_ns; /* first burst is ready this long after the thread starts */
    int32_t fault;          /* PYQ_FAULT_* (tests) */
    uint32_t perf_mask;     /* perf counters of the thread over the run */
    uint64_t fault_seq;
    uint64_t *scheduled_ns; /* optional: scheduled send time of message i */
    uint64_t *offer_ns;     /* optional: time the write of message i began */
    uint64_t *burst_cpu;    /* optional: sched_getcpu() after each burst */
    uint64_t samples_cap;   /* entries of scheduled_ns / offer_ns */
    uint64_t bursts_cap;    /* entries of burst_cpu */
} pyq_producer_config_t;

/* What a thread did; final once pyq_thread_wait() returned 0. */
typedef struct pyq_thread_result {
    int32_t end;            /* PYQ_END_* */
    int32_t first_error;    /* 0 or the first PYQ_E* code */
    int32_t failed_step;    /* PYQ_STEP_* */
    int32_t cpu_start;      /* sched_getcpu() at start / end */
    int32_t cpu_end;
    int32_t policy;         /* the thread's SCHED_* policy while running */
    uint64_t error_seq;     /* seq of the message that failed, or PYQ_SEQ_NONE */
    uint64_t messages;      /* messages sent / received */
    uint64_t bytes;         /* payload bytes */
    uint64_t bursts;        /* producer: bursts sent */
    uint64_t full_waits;    /* producer: write time slices that found the queue full */
    uint64_t cpu_changes;   /* CPU samples that differed from the previous one */
    uint64_t start_ns;      /* CLOCK_MONOTONIC when the loop began / ended */
    uint64_t end_ns;
    uint64_t sink;          /* result of the LOOP64 work, so it cannot be optimised away */
    pyq_idle_stats_t idle;  /* consumer */
    int32_t perf_status[8]; /* as pyq_perf_t.status */
    uint64_t perf_values[8];
} pyq_thread_result_t;

/* Any thread.  Fill the defaults: unpinned, SCHED_OTHER, verify on, WORK_NONE,
 * idle BACKOFF with default stages, no samples. */
void pyq_consumer_config_init(pyq_consumer_config_t *cfg);

/* Any thread.  Defaults: unpinned, 1 message of 32 B, one burst, unpaced. */
void pyq_producer_config_init(pyq_producer_config_t *cfg);

/* Any thread.  Start the queue's reader in a new pthread; the caller must not
 * use the reader side until the thread is joined.  Returns once the thread is
 * pinned and scheduled as asked (or failed to be).  cpu must be in the calling
 * thread's affinity set (the CPUs this process was given), not just the cpuset.
 * @return 0 and *out; PYQ_EINVAL (bad config, or cpu not allowed: then
 *         *failed_step = PYQ_STEP_PIN); PYQ_EPERM (SCHED_FIFO refused:
 *         PYQ_STEP_SCHED); PYQ_ENOMEM / PYQ_EAGAIN (PYQ_STEP_CREATE).
 *         failed_step may be NULL. */
int pyq_consumer_start(pyq_queue_t *q, const pyq_consumer_config_t *cfg,
                       pyq_thread_t **out, int *failed_step);

/* Any thread.  Start the queue's writer in a new pthread; as pyq_consumer_start(). */
int pyq_producer_start(pyq_queue_t *q, const pyq_producer_config_t *cfg,
                       pyq_thread_t **out, int *failed_step);

/* Any thread.  Ask the thread to stop (it sees the request within one message,
 * one idle wait or one 10 ms write slice).  Wait-free; idempotent. */
void pyq_thread_stop(pyq_thread_t *t);

/* Any thread.  Wait up to timeout_ns (PYQ_WAIT_FOREVER: no limit) for the
 * thread's loop to end.  @return 0 (ended) or PYQ_EAGAIN (still running). */
int pyq_thread_wait(pyq_thread_t *t, int64_t timeout_ns);

/* Any thread.  1 once the loop has ended, else 0.  Wait-free. */
int pyq_thread_done(const pyq_thread_t *t);

/* Any thread.  Messages handled so far (relaxed: a recent value).  Wait-free. */
uint64_t pyq_thread_messages(const pyq_thread_t *t);

/* Any thread, once.  Stop (if stop is 1), join the pthread and copy the result
 * to *out (may be NULL).  t stays valid (stop/wait/done are harmless) until
 * pyq_thread_destroy().  @return the result's first_error (0 or PYQ_E*). */
int pyq_thread_join(pyq_thread_t *t, int stop, pyq_thread_result_t *out);

/* Any thread, after pyq_thread_join().  Free t.  NULL is ok. */
void pyq_thread_destroy(pyq_thread_t *t);

#endif /* PYQ_RUNTIME_H */
