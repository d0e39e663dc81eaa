/*
 * pyq_selftest.h - test-only entry points: a C writer thread and a C reader
 * thread drive one queue with verifiable messages (pyq_pattern.h), so tests can
 * check FIFO and every byte for tens of millions of messages without Python in
 * the loop.  Not part of the product API.
 */
#ifndef PYQ_SELFTEST_H
#define PYQ_SELFTEST_H

#include <stdint.h>

#include "pyqueue.h"

typedef struct pyq_stress_params {
    uint64_t messages;        /* how many messages the writer sends */
    uint32_t min_len;         /* message lengths drawn per seq in [min_len, max_len] */
    uint32_t max_len;
    uint64_t salt;            /* seeds the length sequence */
    int32_t writer_cpu;       /* -1: not pinned */
    int32_t reader_cpu;
    uint64_t reader_pause_every; /* reader sleeps after this many messages (0: never)... */
    uint32_t reader_pause_us;    /* ...for this long, to build backlog into tier 2 */
    uint32_t use_claim;       /* writer uses claim/commit (and aborts every 7th claim once) */
    uint64_t flush_every;     /* writer flushes after this many messages (0: never) */
    uint64_t reader_batch;    /* max messages per poll call (0: unlimited) */
    int64_t write_timeout_ns; /* per-write timeout; PYQ_WAIT_FOREVER to wait */
} pyq_stress_params_t;

typedef struct pyq_stress_result {
    uint64_t written;
    uint64_t read;
    int32_t error;            /* 0, or the first error (PYQ_EBADMSG: wrong message) */
    int32_t error_side;       /* 1 writer, 2 reader */
    uint64_t error_seq;       /* seq at which the error happened */
    uint64_t elapsed_ns;      /* from both threads started to the reader's last message */
    uint64_t timeouts;        /* writes that timed out and were retried */
} pyq_stress_result_t;

/* Any thread (starts and joins two threads).  Run one writer and one reader on
 * q until params->messages have been written and read back and verified.
 * @return 0, or the first error (also in result->error); PYQ_EINVAL for bad
 *         params; PYQ_EPERM / PYQ_EINVAL if a CPU cannot be used. */
int pyq_stress_run(pyq_queue_t *q, const pyq_stress_params_t *params,
                   pyq_stress_result_t *result);

#endif /* PYQ_SELFTEST_H */
