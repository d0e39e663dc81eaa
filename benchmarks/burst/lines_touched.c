/*
 * lines_touched.c - what one 1 MiB send touches besides its payload, and which
 * lines the consumer then reads that the writer wrote (DESIGN §6.1, "What the
 * send does to the writer core").  Not a benchmark: a program to run under
 * valgrind's lackey (lines_touched.sh), which traces every load and store; the
 * parser classifies each address by the regions this program prints.
 *
 * One thread plays both sides, in phases the trace can tell apart (a store to
 * `phase_marker` starts each): the backlog (64 KiB written, none read: the hot
 * tier is held, as under the study's backlog), then the send (1 MiB of 32-byte
 * try_writes, the study's queue: 4 x 4 KiB hot, spill tier, publish max, touch
 * after write on, the configuration's spill stores), then the reader draining
 * everything.  The PMU is not needed and not used: the counts are exact, the
 * cache behaviour is the parser's model (a line is "the writer's" from its store
 * until the reader loads it).
 *
 *   cc -O2 -Icsrc -Icsrc/include benchmarks/burst/lines_touched.c build/clib/libpyqueue.a -pthread
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyqueue.h"
#include "core/queue_pvt.h"

volatile uint64_t phase_marker;

static void phase(const char *name)
{
    phase_marker = (uintptr_t)name; /* the store the parser splits the trace at */
    fprintf(stderr, "phase %s\n", name);
}

static int drop(void *ctx, const void *msg, uint32_t len)
{
    (void)msg;
    *(uint64_t *)ctx += len;
    return 0;
}

static void region(const char *name, const void *p, size_t bytes)
{
    printf("region %s %#lx %#lx\n", name, (unsigned long)(uintptr_t)p,
           (unsigned long)((uintptr_t)p + bytes));
}

int main(int argc, char **argv)
{
    uint32_t spill = argc > 1 ? (uint32_t)atoi(argv[1]) : 1024;
    int nontemporal = argc > 2 ? atoi(argv[2]) : -1;
    pyq_config_t cfg;
    pyq_queue_t *pq;
    struct pyq_queue *q;
    uint8_t msg[32];
    uint64_t got = 0;
    char stack_here;

    pyq_config_init(&cfg);
    cfg.spill_blocks = spill;
    cfg.touch_after_write = 1; /* the study's queue */
    if (nontemporal >= 0)
        cfg.spill_nontemporal = (uint8_t)nontemporal;
    if (pyq_queue_create(&cfg, &pq) != 0)
        return 1;
    q = (struct pyq_queue *)pq;
    memset(msg, 0x5A, sizeof msg);

    printf("marker %#lx\n", (unsigned long)(uintptr_t)&phase_marker);
    region("pool.hot", q->base, (size_t)cfg.hot_blocks * cfg.block_size);
    region("pool.spill", q->base + (size_t)cfg.hot_blocks * cfg.block_size,
           (size_t)cfg.spill_blocks * cfg.block_size);
    region("ctl.full_ring", q->ring, (q->ring_mask + 1) * sizeof(uint32_t));
    region("ctl.free_ring.hot", q->free_slots[0], (q->free_mask[0] + 1) * sizeof(uint32_t));
    region("ctl.free_ring.spill", q->free_slots[1], (q->free_mask[1] + 1) * sizeof(uint32_t));
    region("queue.config", &q->cfg, (size_t)((uint8_t *)&q->ring_tail - (uint8_t *)&q->cfg));
    region("queue.ring_tail+pub_pos", &q->ring_tail, 64);
    region("queue.writer_state", &q->w, sizeof q->w);
    region("queue.writer_stats", &q->ws, sizeof q->ws);
    region("queue.free_tail", &q->free_tail, 64);
    region("queue.reader_state", &q->r, sizeof q->r);
    region("queue.reader_stats", &q->rs, sizeof q->rs);
    region("queue.closed+detached", &q->closed, 64);
    region("program.message", msg, sizeof msg);
    region("stack", &stack_here - (1 << 16), 1 << 17);
    fflush(stdout);

    phase("backlog");
    for (int i = 0; i < (64 << 10) / 32; i++)
        if (pyq_writer_try_write(pq, msg, sizeof msg) != 0)
            return 2;
    pyq_writer_flush(pq);
    phase("send");
    for (int i = 0; i < (1 << 20) / 32; i++)
        if (pyq_writer_try_write(pq, msg, sizeof msg) != 0)
            return 3;
    phase("flush");
    pyq_writer_flush(pq);
    phase("read");
    while (pyq_reader_poll(pq, 1024, drop, &got) > 0)
        ;
    phase("end");
    pyq_queue_close(pq);
    pyq_queue_destroy(pq);
    return got == (64 << 10) + (1 << 20) ? 0 : 4;
}
