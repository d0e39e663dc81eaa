/*
 * pyq_twin.h - inline twins of the benchmark's adapter rows.
 *
 * A benchmark row that goes through the shared driver (bench/bench_adapter.c:
 * every push and pop an indirect call through pyq_adapter_t, every message a
 * callback) is only as good as that driver.  Its twin does the same work as a
 * minimal two-thread loop compiled in the queue's own translation unit, the
 * library's push / pop inlined into it: the same 32-byte message by value with
 * its sequence number in the first 8 bytes, the same check of every sequence
 * number by the reader, the same pinning, the same queue (built by the
 * adapter's own create(), so capacity and memory are identical), the same
 * full-queue policy (relax, sched_yield() every 1024 failures) and the same
 * empty-queue policy (relax).  A ratio adapter / twin far from 1 in the same
 * placement is a driver defect.
 *
 * Each run also records which throughput regime it was in: the reader counts
 * its polls, those that found the queue empty and its catch-ups (runs of empty
 * polls), the writer the attempts that found it full and its waits (runs of
 * them), and both stamp a window record every `window` messages
 * (pyqueue/lab/common/regime.py classifies them).  gap_ticks > 0 paces the writer
 * (to one message per gap, on a schedule: pyq_twin_pace) to put the reader in the chasing regime on
 * purpose; backlog > 0 builds the streaming regime on purpose (episodes: the
 * writer fills a backlog while the reader is held, then both run until the
 * reader first finds the queue empty; pyq_twin_episode_t).  Burst rows read in
 * bursts too where the adapter has read_burst.
 *
 * Where the twins live: a peer library exports, beside pyq_peer_adapter(),
 *
 *     const pyq_twin_table_t *pyq_peer_twin(void);
 *
 * the built-in adapters ring_floor and mutex carry theirs in their own files,
 * and pyqueue's and the yardstick's are in bench/twins.c (bench/pyq_twins.h).
 * The loops themselves are adapters/twin_pvt.h, the very loops the driver
 * runs with the adapter table's pointers; header-only so that a peer library
 * needs nothing of ours at link time.
 *
 * Also the cffi cdef (see pyqueue.h): plain declarations only.
 */
#ifndef PYQ_TWIN_H
#define PYQ_TWIN_H

#include <stdint.h>

#include "pyqueue.h"
#include "adapters/pyq_adapter.h"

/* Bumped when a struct below changes; pyq_twin_get() refuses another. */
#define PYQ_TWIN_ABI 3

/* Largest writer burst a twin accepts (the adapter driver's limit too). */
#define PYQ_TWIN_BURST_MAX 1024

/* Untimed round trips before the timed ones (as the adapter driver). */
#define PYQ_TWIN_WARMUP_TRIPS 1000

/* pyq_twin_t.flags.  HAS_BURST: throughput takes burst > 0, through the
 * library's own burst call.  NO_ADAPTER: no adapter row to pair with (the
 * yardstick; a library's blocking calls, which the adapter contract forbids).
 * BLOCKING: its calls wait inside the library, so full_retries and empty_polls
 * stay 0 and say nothing of the regime. */
#define PYQ_TWIN_HAS_BURST 1
#define PYQ_TWIN_NO_ADAPTER 2
#define PYQ_TWIN_BLOCKING 4

/* One streaming episode (DESIGN §8.4).  The reader is held while the writer
 * writes `backlog` messages beyond what the reader has read (fewer if the queue
 * fills first), then released; both run flat out until the reader's first
 * empty poll (it caught up), and the reader is held again.  Over
 * [go_ns, end_ns] the reader never found the queue empty: both sides streamed,
 * the writer ahead.  Writer fields are the writer's, reader fields the reader's
 * (CLOCK_MONOTONIC ns); pyqueue/lab/common/regime.py turns them into rates. */
typedef struct pyq_twin_episode {
    uint64_t go_ns;      /* writer: when it released the reader */
    uint64_t go_written; /* writer: messages written by then */
    uint64_t start_ns;   /* reader: when it saw the release */
    uint64_t start_read; /* reader: messages read by then */
    uint64_t end_ns;     /* reader: its first empty poll after the release, or its
                            last message when the run ended first */
    uint64_t end_read;   /* reader: messages read by then (when caught_up, all
                            the writer had made visible) */
    uint32_t caught_up;  /* 1: ended by an empty poll; 0: the run ended first */
    uint32_t reserved;
} pyq_twin_episode_t;

/* One run of a twin. */
typedef struct pyq_twin_params {
    pyq_adapter_params_t queue; /* what the adapter row's create() gets: the same queue */
    uint64_t messages;          /* throughput: messages to send, seq 0..n-1 */
    uint64_t gap_ticks;         /* throughput: the writer's pace, one message per this
                                   many cycle-counter ticks on a schedule (a burst of k
                                   per k * gap; pyq_twin_pace); 0 = flat out (streaming) */
    uint32_t burst;             /* throughput: 0 one message per call, else bursts of this
                                   many through the library's burst call (<= BURST_MAX) */
    uint32_t window;            /* messages per window record, a power of two; 0 = none */
    uint32_t round_trips;       /* round trip: timed trips (after the warm-up ones) */
    int32_t writer_cpu;         /* throughput writer / round-trip side A; -1 not pinned */
    int32_t reader_cpu;         /* throughput reader / round-trip side B; -1 not pinned */
    uint32_t max_episodes;      /* throughput: room in episodes (0: no episodes) */
    uint64_t backlog;           /* throughput: > 0 runs streaming episodes of this
                                   backlog (gap_ticks must be 0); 0 = one plain run */
    pyq_twin_episode_t *episodes; /* throughput: filled with up to max_episodes records */
} pyq_twin_params_t;

/* What the writer and the reader saw by the end of one window of messages. */
typedef struct pyq_twin_window {
    uint64_t reader_ns;    /* CLOCK_MONOTONIC when the reader had verified the window */
    uint64_t empty_polls;  /* reader's empty polls so far */
    uint64_t writer_ns;    /* CLOCK_MONOTONIC when the writer had written the window */
    uint64_t full_retries; /* writer's full-queue retries so far */
    uint64_t empty_runs;   /* reader's catch-ups so far: empty polls right after a
                              poll that delivered (a wait of any length counts once) */
    uint64_t full_runs;    /* writer's messages that found the queue full at least
                              once so far (a wait of any length counts once) */
} pyq_twin_window_t;

typedef struct pyq_twin_result {
    uint64_t messages;     /* delivered and verified in order */
    uint64_t elapsed_ns;   /* writer start (both threads ready) to the last delivery */
    uint64_t writer_ns;    /* writer start to its last write returned */
    uint64_t full_retries; /* writer attempts that found the queue full */
    uint64_t polls;        /* reader attempts to take messages (drains) */
    uint64_t empty_polls;  /* ... that found none */
    uint64_t capacity;     /* messages the queue holds (the adapter's capacity()) */
    uint64_t first_bad;    /* sequence number expected where the check failed */
    uint64_t start_ns;     /* CLOCK_MONOTONIC at the writer's start: the first
                              window's start */
    uint64_t empty_runs;   /* reader catch-ups (see pyq_twin_window_t) */
    uint64_t full_runs;    /* writer waits for room (see pyq_twin_window_t) */
    uint32_t windows;      /* window records filled */
    int32_t error;         /* 0, PYQ_EBADMSG (see first_bad), or a create/pinning code */
    int32_t samples_in_ticks; /* round trip: 1 when samples are cycle-counter ticks
                                 (convert with pyq_clock_cycles_to_ns), 0 when ns */
    uint32_t episodes;     /* episode records filled (params backlog > 0) */
} pyq_twin_result_t;

typedef struct pyq_twin {
    const char *name;      /* the adapter it twins ("ck", "pyqueue", ...) or its own row */
    const char *calls;     /* the library calls in the loop, and why these, for reports */
    uint32_t flags;        /* PYQ_TWIN_* */
    uint32_t reserved;

    /* Any thread (starts and joins the writer and the reader).  Build a queue as
     * the adapter does, send p->messages messages, check each, destroy it.
     * windows: room for max_windows records (NULL / 0: none kept).
     * @return 0, PYQ_EINVAL (burst unsupported or too large, window not a power
     *         of two, backlog with gap_ticks), PYQ_EBADMSG, or the create / pinning / pthread code (also
     *         in r->error).  NULL when the twin has no throughput loop. */
    int (*throughput)(const pyq_twin_params_t *p, pyq_twin_window_t *windows,
                      uint32_t max_windows, pyq_twin_result_t *r);

    /* Any thread (it becomes side A: pinned to p->writer_cpu until re-pinned).
     * One message A -> B and back through two queues, spinning on each side;
     * samples[i] = round trip i after PYQ_TWIN_WARMUP_TRIPS untimed ones, in
     * the unit r->samples_in_ticks says.  @return as throughput.  NULL when the
     * twin has no round-trip loop. */
    int (*roundtrip)(const pyq_twin_params_t *p, uint64_t *samples, pyq_twin_result_t *r);
} pyq_twin_t;

typedef struct pyq_twin_table {
    uint32_t abi;          /* PYQ_TWIN_ABI */
    uint32_t count;
    const pyq_twin_t *twins;
} pyq_twin_table_t;

/* The function a peer library exports beside pyq_peer_adapter(). */
typedef const pyq_twin_table_t *(*pyq_peer_twin_fn)(void);

/* Any thread.  The twins of adapter `name`: built in for "ring_floor" and
 * "mutex"; for a peer, the pyq_peer_twin() table of the very library
 * pyq_adapter_get(name, peer_dir) loaded (pyqueue's own twins and the
 * yardstick's are pyq_twin_bench(), bench/pyq_twins.h).
 * @return 0 and *out, PYQ_EINVAL (not an adapter name), PYQ_ENOTSUP (the peer is
 *         missing, or its library has no twin table or another ABI: "pyqueue"
 *         has none here either); pyq_twin_error() says why. */
int pyq_twin_get(const char *name, const char *peer_dir, const pyq_twin_table_t **out);

/* Calling thread's last pyq_twin_get() failure as text ("" if none); valid
 * until that thread's next pyq_twin_get(). */
const char *pyq_twin_error(void);

#endif /* PYQ_TWIN_H */
