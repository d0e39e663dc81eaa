/*
 * pyq_soak.h - one slice of the soak test (python -m pyqueue soak): a C writer
 * thread and a C reader thread drive one queue for a bounded time with random
 * message sizes, random pauses on both sides (the reader's build backlog into
 * tier 2), random flushes, claim / commit / abort, try_write and writes with
 * short timeouts; the reader checks every message (length, seq, every byte)
 * and that nothing follows the last one.  Neither side can hang: every wait is
 * bounded, and a side that makes no progress for stall_ns reports it.
 *
 * Like every public header this is also the cffi cdef: plain declarations only.
 */
#ifndef PYQ_SOAK_H
#define PYQ_SOAK_H

#include <stdint.h>

#include "pyqueue.h"

#define PYQ_SOAK_BATCH_MAX 64

typedef struct pyq_soak_params {
    uint64_t seed;              /* seeds both sides' random choices */
    uint64_t first_seq;         /* seq of this slice's first message (slices continue a stream) */
    uint64_t duration_ns;       /* the writer starts no message after this long */
    uint64_t max_messages;      /* ... nor after this many (0: no limit) */
    uint32_t min_len;           /* message k has length pyq_pattern_len(k, min_len, */
    uint32_t max_len;           /*   max_len, size_salt) */
    uint64_t size_salt;
    uint32_t writer_pause_every; /* on average one writer pause per this many messages (0: none) */
    uint32_t writer_pause_max_us; /* each pause sleeps a random 0..max us */
    uint32_t reader_pause_every;
    uint32_t reader_pause_max_us;
    uint32_t flush_every;       /* on average one flush per this many messages (0: none) */
    uint32_t claim_every;       /* one message in this many goes through claim/commit, 1 in 4
                                   of those is aborted first and claimed again (0: none) */
    uint32_t try_every;         /* one in this many uses try_write (retried when full) */
    uint32_t batch_every;       /* with fixed-size messages (min_len == max_len): one in this
                                   many starts a write_batch of 1..PYQ_SOAK_BATCH_MAX (0: none) */
    uint32_t timeout_every;     /* one in this many writes uses a timeout of 1..timeout_max_ns */
    uint32_t timeout_max_ns;
    uint32_t max_poll;          /* each poll takes at most 1..max_poll messages (0: 256) */
    uint64_t stall_ns;          /* a side without progress this long fails (0: 10 s) */
    int32_t writer_cpu;         /* -1: not pinned */
    int32_t reader_cpu;
} pyq_soak_params_t;

typedef struct pyq_soak_result {
    uint64_t written;           /* messages written (and committed) */
    uint64_t read;              /* messages read and verified */
    uint64_t bytes;             /* payload bytes read and verified */
    uint64_t writer_pauses;
    uint64_t reader_pauses;
    uint64_t flushes;
    uint64_t claims;
    uint64_t aborts;
    uint64_t try_full;          /* try_write calls that found the queue full */
    uint64_t batches;           /* write_batch calls, and the messages they wrote */
    uint64_t batched;
    uint64_t timeouts;          /* timed writes that expired (PYQ_EAGAIN) and were retried */
    uint64_t polls;
    uint64_t empty_polls;
    int32_t error;              /* 0, or the first error: PYQ_EBADMSG (wrong, lost or extra
                                   message), PYQ_EAGAIN (a side stalled), a write's code */
    int32_t error_side;         /* 1 writer, 2 reader */
    uint64_t error_seq;         /* seq the failing side was at */
    uint64_t elapsed_ns;
} pyq_soak_result_t;

/* Any thread (starts and joins two threads; the queue's writer and reader must
 * be idle).  Run one slice on q.  After it the queue is drained: a new slice
 * may continue the stream with first_seq = first_seq + result->written.
 * @return 0, or the first error (also in result->error); PYQ_EINVAL for bad
 *         params; PYQ_EINVAL / PYQ_EPERM when a CPU cannot be used. */
int pyq_soak_run(pyq_queue_t *q, const pyq_soak_params_t *params, pyq_soak_result_t *result);

#endif /* PYQ_SOAK_H */
