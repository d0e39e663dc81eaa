/*
 * pipeline_pvt.h - what pipeline.c (the thread loops) and pipeline_run.c
 * (configuration, queues, run and teardown) share.  Private, never installed.
 */
#ifndef PYQ_PIPELINE_PVT_H
#define PYQ_PIPELINE_PVT_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/atomic.h"
#include "common/private.h"
#include "lab/pyq_pipeline.h"
#include "runtime/pyq_runtime.h"
#include "runtime/start_pvt.h"

struct pipe;

struct pipe_thread {
    /* Owned by this thread during the run; results are copied out at the end. */
    PYQ_ALIGNED_LINE struct pipe *p;
    int index;                 /* PYQ_PIPE_PRODUCER / STAGE / CONSUMER */
    uint64_t expect;           /* next seq this thread must see (stage, consumer) */
    uint64_t sent;             /* producer: messages sent */
    uint64_t last_ns;          /* consumer: time of the last delivery */
    uint8_t msg[PYQ_PIPE_MAX_MSG]; /* the message being built or forwarded */
    pyq_idle_t idle;
    uint64_t work_ticks;
    uint64_t mark_ns;          /* receiver (rest_share): start of the budget window */
    uint64_t mark_cpu;         /* ... and the thread's CPU clock then */
    uint64_t checked_ns;       /* ... last budget check */
    uint64_t rests;
    uint64_t rest_total_ns;
    uint64_t waits;            /* receiver: wait_readable calls (a queue that blocks) */
    int err;
};

struct pipe {
    /* MEET-S1/MEET-S2: every thread set up (or failed); the producer then starts the schedule. */
    PYQ_ALIGNED_LINE pyq_start_t start;
    /* Set by the main thread (timeout) or a failing thread; read by all loops. */
    PYQ_ALIGNED_LINE _Atomic int stop;
    /* PIPE-F1: index of the first thread that failed, -1 while none did. */
    PYQ_ALIGNED_LINE _Atomic int failed;
    PYQ_ALIGNED_LINE pyq_pipeline_config_t cfg;
    void *hop[2];              /* cfg.queue handles; 0: producer -> stage, 1: stage -> consumer */
    pyq_pipeline_result_t *res;
    struct pipe_thread t[PYQ_PIPE_THREADS];
};

/* pipeline.c: the body of every pipeline thread; arg is its struct pipe_thread. */
PYQ_PRIVATE void *pyq_pipe_thread_main(void *arg);

#endif /* PYQ_PIPELINE_PVT_H */
