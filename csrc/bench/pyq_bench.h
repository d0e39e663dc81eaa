/*
 * pyq_bench.h - measured loops of the core benchmark (benchmarks/core), run in C
 * with two pinned threads: queue throughput, a C reader for a Python writer and
 * the two-line ping-pong floor (the yardstick ring is an adapter of its own,
 * pyq_bench_yardstick() in bench/pyq_twins.h); queue round trips are
 * pyq_bench_adapter_roundtrip() and pyq_bench_queue_roundtrip() below.
 * Every throughput and round-trip loop is the inline twins' (adapters/
 * twin_pvt.h), in bench.c with pyqueue's calls direct and in bench_adapter.c
 * through any adapter (pyq_adapter.h) for the peer comparison (DESIGN §6.6):
 * a row and its twin run one body.  Every reader checks sequence numbers, so
 * nothing can be optimised away.  Latency samples are taken with the cycle
 * counter (CLOCK_MONOTONIC without one), converted to ns.
 */
#ifndef PYQ_BENCH_H
#define PYQ_BENCH_H

#include <stdint.h>

#include "pyqueue.h"
#include "adapters/pyq_adapter.h"
#include "adapters/pyq_twin.h"

typedef struct pyq_bench_result {
    uint64_t messages;    /* delivered and verified in order */
    uint64_t elapsed_ns;  /* writer start (after both threads are ready) to last delivery */
    int32_t error;        /* 0, PYQ_EBADMSG on a sequence error, or a pinning error */
    uint64_t end_ns;      /* CLOCK_MONOTONIC at the last delivery (Python's time.monotonic_ns) */
    uint64_t writer_ns;   /* writer start to its last write returned (0 if not measured):
                             beside elapsed_ns it tells which side limited the run */
    uint64_t full_retries; /* writer attempts that found the queue full */
    uint64_t polls;       /* reader polls, and those that found nothing: with
                             full_retries, the run's throughput regime */
    uint64_t empty_polls;
    uint64_t empty_runs;  /* the reader's catch-ups: empty polls right after a poll
                             that delivered (a wait of any length counts once) */
    uint64_t full_runs;   /* the writer's waits for room: writes (bursts) that
                             found the queue full at least once (0 if not measured) */
    uint32_t episodes;    /* streaming episode records filled (backlog runs only) */
    uint32_t reserved;
} pyq_bench_result_t;

typedef struct pyq_bench_reader pyq_bench_reader_t;

/* Any thread.  Write n messages of msg_size (8..256, at most the queue's
 * largest) bytes from a C writer pinned to writer_cpu to a C reader pinned to
 * reader_cpu through q (fresh or drained): pyqueue_direct's twin's loops
 * (pyq_writer_write waiting PYQ_TWIN_WAIT_NS at a time -- its timeouts are
 * full_retries -- and pyq_reader_poll).
 * @return 0, PYQ_EINVAL, or the queue's, pinning's or pthread's error (also
 * in r->error). */
int pyq_bench_queue_throughput(pyq_queue_t *q, uint64_t n, uint32_t msg_size,
                               int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *r);

/* Any thread.  The same with the writer paced to one message per gap_ticks
 * cycle-counter ticks on a schedule, the twins' pace (adapters/pyq_twin.h), to put the
 * reader in the chasing regime; gap_ticks 0 is pyq_bench_queue_throughput().
 * @return as pyq_bench_queue_throughput(). */
int pyq_bench_queue_paced(pyq_queue_t *q, uint64_t n, uint32_t msg_size, uint64_t gap_ticks,
                          int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *res);

/* Any thread.  The same in streaming episodes of `backlog` messages, as
 * pyq_bench_adapter_stream() (up to max_episodes records into episodes).
 * @return as pyq_bench_queue_throughput(); PYQ_EINVAL for backlog 0 or no room. */
int pyq_bench_queue_stream(pyq_queue_t *q, uint64_t n, uint32_t msg_size, uint64_t backlog,
                           pyq_twin_episode_t *episodes, uint32_t max_episodes,
                           int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *r);

/* Any thread.  Start a C reader thread (pinned to cpu) that consumes and checks
 * n messages of msg_size bytes from q, for a writer in another thread (Python).
 * elapsed_ns runs from the first message; end_ns lets the caller time from its
 * own start instead. */
int pyq_bench_reader_start(pyq_queue_t *q, uint64_t n, uint32_t msg_size, int32_t cpu,
                           pyq_bench_reader_t **out);

/* The thread that started it.  Wait for the reader, free it, fill *r.
 * Returns after the reader has seen n messages or stop was requested.
 * @return 0, PYQ_EINTR (stopped), PYQ_EBADMSG, or the queue's or pinning's
 * error (also in r->error). */
int pyq_bench_reader_join(pyq_bench_reader_t *h, pyq_bench_result_t *r);

/* Any thread.  Ask a reader to stop early (e.g. the Python writer failed). */
void pyq_bench_reader_stop(pyq_bench_reader_t *h);

/* Any thread.  Two-line ping-pong between threads pinned to cpu_a and cpu_b:
 * A writes line 1 and waits for B's echo on line 2.  samples_ns[i] = round trip
 * i in ns (one-way = half) after 1,000 untimed warm-up trips. */
int pyq_bench_pingpong(int32_t cpu_a, int32_t cpu_b, uint32_t round_trips, uint64_t *samples_ns);


/* Any thread.  Throughput through adapter a over its queue h (from a->create,
 * empty; reused across calls): a writer pinned to writer_cpu sends n 32-byte
 * messages (seq in the first 8 bytes) with try_write, or try_write_burst of
 * `burst` messages when burst > 0 (<= 1024, the adapter must have it), and on a
 * full queue spins with relax, sched_yield() every 1024 failures; a reader
 * pinned to reader_cpu polls for all that is left and checks every sequence
 * number -- or, where the adapter has read_each (burst 0) or read_burst
 * (burst > 0), reads up to 32 (`burst`) messages at a time into its own array
 * and checks them there.  The loops are the twins' (adapters/twin_pvt.h).
 * elapsed_ns runs from the writer's start to the last delivery.
 * @return 0, PYQ_EINVAL, PYQ_ENOMEM, PYQ_EBADMSG, or the adapter's or pinning's
 * code (also in r->error). */
int pyq_bench_adapter_throughput(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                                 int32_t writer_cpu, int32_t reader_cpu, pyq_bench_result_t *r);

/* Any thread.  The same with the writer paced to one message per gap_ticks
 * cycle-counter ticks on a schedule (a burst of k per k * gap_ticks) --
 * exactly the twins' pace (adapters/pyq_twin.h), to put the reader in the
 * chasing regime; gap_ticks 0 is pyq_bench_adapter_throughput().
 * @return as pyq_bench_adapter_throughput(). */
int pyq_bench_adapter_paced(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                            uint64_t gap_ticks, int32_t writer_cpu, int32_t reader_cpu,
                            pyq_bench_result_t *r);

/* Any thread.  The same flat out in streaming episodes (pyq_twin_episode_t, the
 * twins' protocol): the reader is held while the writer writes `backlog`
 * messages ahead of it (fewer when the queue fills first), then both run until
 * the reader finds the queue empty, and again; up to max_episodes records go
 * into episodes, after which the run goes on without holds.
 * @return as pyq_bench_adapter_throughput(); PYQ_EINVAL also for backlog 0 or
 * no room for episodes. */
int pyq_bench_adapter_stream(const pyq_adapter_t *a, void *h, uint64_t n, uint32_t burst,
                             uint64_t backlog, pyq_twin_episode_t *episodes,
                             uint32_t max_episodes, int32_t writer_cpu, int32_t reader_cpu,
                             pyq_bench_result_t *r);

/* Any thread (it becomes side A: pinned to cpu_a until re-pinned).  One 32-byte
 * message A -> B through queue ab (try_write + flush) and back through ba, both
 * adapter a's, each side spinning in the adapter's read_spin (on poll(max 1)
 * where it has none); samples_ns[i] = round trip i in ns after 1,000 untimed
 * trips, on the same timer as pyq_bench_pingpong.
 * @return 0, PYQ_EINVAL, PYQ_ENOMEM, PYQ_EBADMSG, or an adapter/pinning code. */
int pyq_bench_adapter_roundtrip(const pyq_adapter_t *a, void *ab, void *ba, int32_t cpu_a,
                                int32_t cpu_b, uint32_t round_trips, uint64_t *samples_ns);

/* Any thread (it becomes side A, as above).  The same round trip through two
 * pyqueue queues with pyqueue's own API -- pyq_writer_try_write + flush,
 * pyq_reader_poll(max 1) -- instead of the adapter vtable: what a C program
 * using pyqueue runs.  ab and ba: empty, distinct, reused across calls.
 * @return as pyq_bench_adapter_roundtrip(). */
int pyq_bench_queue_roundtrip(pyq_queue_t *ab, pyq_queue_t *ba, int32_t cpu_a, int32_t cpu_b,
                              uint32_t round_trips, uint64_t *samples_ns);

#endif /* PYQ_BENCH_H */
