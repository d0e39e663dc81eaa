/*
 * instr_count.c - instructions per message of each queue's write and read path,
 * one thread, for valgrind --tool=callgrind (no hardware counters on this VM).
 *
 * The same loops as csrc/bench/bench_adapter.c, minus the second thread: write K
 * messages (try_write, or try_write_burst of 32), then poll them back with the
 * sequence-checking callback; repeat.  Writing and reading are separate
 * functions so callgrind attributes them apart (run_writes / run_polls,
 * inclusive cost).  See benchmarks/peers/instr_count.sh.
 *
 * The adapter "pyqueue_inline" is pyqueue without the adapter: the same loops
 * over pyqueue_inline.h's pyq_writer_try_write_inline() and
 * pyq_reader_poll_inline() (check inlined into the poll loop), on the
 * adapter's configuration (default tiers over the same 1 MiB budget), in
 * run_writes_inline / run_polls_inline.  There the queue's instructions and
 * the loop's cannot be told apart: only the whole loop is counted.
 *
 *   instr_count <adapter> <peer_dir> [burst] [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/pyq_adapter.h"
#include "pyqueue.h"

#define K 512

struct ctx { uint64_t expected; };

static int check(void *c, const void *msg, uint32_t len)
{
    struct ctx *x = c;
    uint64_t s;

    memcpy(&s, msg, 8);
    if (s != x->expected)
        return PYQ_EBADMSG;
    x->expected++;
    return 0;
}

/* The loops keep the sequence number in a register (stored back once) and
 * write it into the same 32-byte buffer each message, as the minimal ring's
 * benchmark does: the loop's own instructions are the store of the number,
 * the call and its test (instr_count.sh reports them apart, "loop"). */
__attribute__((noinline)) int run_writes(const pyq_adapter_t *a, void *h, uint64_t *seq,
                                         uint32_t burst, uint8_t *buf)
{
    uint64_t s = *seq;
    int rc = 0;

    if (!burst) {
        for (int i = 0; i < K; i++, s++) {
            memcpy(buf, &s, 8);
            if (a->try_write(h, buf, 32)) {
                rc = -1;
                break;
            }
        }
    } else {
        for (int i = 0; i < K; i += burst) {
            for (uint32_t j = 0; j < burst; j++, s++)
                memcpy(buf + 32 * j, &s, 8);
            if (a->try_write_burst(h, buf, burst, 32) != burst) {
                rc = -1;
                break;
            }
        }
    }
    *seq = s;
    a->flush(h);
    return rc;
}

__attribute__((noinline)) int64_t run_polls(const pyq_adapter_t *a, void *h, struct ctx *c)
{
    int64_t n = 0, k;

    while ((k = a->poll(h, UINT64_MAX, check, c)) > 0)
        n += k;
    return k < 0 ? k : n;
}

/* PYQ_INSTR_PUBLISH=each: pyqueue's queues under publish each (else max). */
static int32_t instr_publish(void)
{
    const char *p = getenv("PYQ_INSTR_PUBLISH");
    return p && strcmp(p, "each") == 0 ? PYQ_PUBLISH_EACH : PYQ_PUBLISH_MAX;
}

/* PYQ_INSTR_NT_BACKLOG_KIB=N: pyqueue's nontemporal_backlog_kib (0: every
 * spill block streamed, as before that field; else the default, under which
 * this loop's 16 KiB backlog never streams). */
static void instr_nt_backlog(pyq_config_t *cfg)
{
#ifdef PYQ_NT_BACKLOG_KIB /* a tree that has the field */
    const char *p = getenv("PYQ_INSTR_NT_BACKLOG_KIB");
    if (p && *p)
        cfg->nontemporal_backlog_kib = (uint32_t)strtoul(p, NULL, 10);
#else
    (void)cfg;
#endif
}

/* The loops over the exported functions themselves (no adapter: "pyqueue_c"),
 * and, where the tree has it, over pyqueue_inline.h.  WRITE is the call that
 * writes one message, BATCH the call that writes a burst. */
#define WRITE_LOOP(name, WRITE)                                                      \
    __attribute__((noinline)) int name(pyq_queue_t *q, uint64_t *seq, uint32_t burst, \
                                       uint8_t *buf)                                 \
    {                                                                                \
        uint64_t s = *seq;                                                           \
        int rc = 0, err;                                                             \
                                                                                     \
        if (!burst) {                                                                \
            for (int i = 0; i < K; i++, s++) {                                       \
                memcpy(buf, &s, 8);                                                  \
                if (WRITE(q, buf, 32)) {                                             \
                    rc = -1;                                                         \
                    break;                                                           \
                }                                                                    \
            }                                                                        \
        } else {                                                                     \
            for (int i = 0; i < K; i += burst) {                                     \
                for (uint32_t j = 0; j < burst; j++, s++)                            \
                    memcpy(buf + 32 * j, &s, 8);                                     \
                if (pyq_writer_write_batch(q, buf, burst, 32, 0, &err) != burst) {   \
                    rc = -1;                                                         \
                    break;                                                           \
                }                                                                    \
            }                                                                        \
        }                                                                            \
        *seq = s;                                                                    \
        pyq_writer_flush(q);                                                         \
        return rc;                                                                   \
    }
#define POLL_LOOP(name, POLL)                                                        \
    __attribute__((noinline)) int64_t name(pyq_queue_t *q, struct ctx *c)            \
    {                                                                                \
        int64_t n = 0, k;                                                            \
                                                                                     \
        while ((k = POLL(q, UINT64_MAX, check, c)) > 0)                              \
            n += k;                                                                  \
        return k < 0 ? k : n;                                                        \
    }

WRITE_LOOP(run_writes_c, pyq_writer_try_write)
POLL_LOOP(run_polls_c, pyq_reader_poll)
#ifdef PYQUEUE_INLINE_H /* built from a tree that has pyqueue_inline.h */
WRITE_LOOP(run_writes_inline, pyq_writer_try_write_inline)
POLL_LOOP(run_polls_inline, pyq_reader_poll_inline)
#endif

/* pyqueue_c and pyqueue_inline: the adapter's configuration (default tiers
 * over the same 1 MiB budget), the loops above. */
static int main_direct(int inl, uint32_t burst, int rounds)
{
    pyq_config_t cfg;
    pyq_queue_t *q;
    uint8_t buf[32 * 32] = {0};
    uint64_t seq = 0;
    struct ctx c = {0};
    const char *name = inl ? "pyqueue_inline" : "pyqueue_c";

#ifndef PYQUEUE_INLINE_H
    if (inl) {
        fprintf(stderr, "pyqueue_inline: this tree has no pyqueue_inline.h\n");
        return 1;
    }
#endif
    pyq_config_init(&cfg);
    cfg.spill_blocks = (1 << 20) / 4096 - cfg.hot_blocks; /* the adapter's budget */
    cfg.publish = instr_publish();
    instr_nt_backlog(&cfg);
    if (pyq_queue_create(&cfg, &q) != 0)
        return 1;
    for (int r = 0; r < rounds; r++) {
        int bad;
#ifdef PYQUEUE_INLINE_H
        if (inl)
            bad = run_writes_inline(q, &seq, burst, buf) || run_polls_inline(q, &c) != K;
        else
#endif
            bad = run_writes_c(q, &seq, burst, buf) || run_polls_c(q, &c) != K;
        if (bad) {
            fprintf(stderr, "%s: failed in round %d\n", name, r);
            return 1;
        }
    }
    printf("%s burst=%u: %llu messages\n", name, burst, (unsigned long long)seq);
    pyq_queue_destroy(q);
    return 0;
}

int main(int argc, char **argv)
{
    const pyq_adapter_t *a;
    pyq_adapter_params_t p;
    void *h;
    uint8_t buf[32 * 32] = {0};
    uint64_t seq = 0;
    struct ctx c = {0};
    uint32_t burst = argc > 3 ? (uint32_t)atoi(argv[3]) : 0;
    int rounds = argc > 4 ? atoi(argv[4]) : 200;

    if (argc >= 3 && (strcmp(argv[1], "pyqueue_inline") == 0 || strcmp(argv[1], "pyqueue_c") == 0))
        return main_direct(strcmp(argv[1], "pyqueue_inline") == 0, burst, rounds);
    if (argc < 3 || pyq_adapter_get(argv[1], argv[2], &a) != 0) {
        fprintf(stderr, "usage: instr_count <adapter> <peer_dir> [burst] [rounds]: %s\n",
                pyq_adapter_error());
        return 2;
    }
    pyq_adapter_params_init(&p);
    p.capacity_bytes = 1 << 20;              /* the bench's budget */
    p.queue.spill_blocks = (1 << 20) / 4096 - p.queue.hot_blocks;
    p.queue.publish = instr_publish();
    instr_nt_backlog(&p.queue);
    if (a->create(&p, &h) != 0)
        return 1;
    for (int r = 0; r < rounds; r++) {
        if (run_writes(a, h, &seq, burst, buf) || run_polls(a, h, &c) != K) {
            fprintf(stderr, "%s: failed in round %d\n", argv[1], r);
            return 1;
        }
    }
    printf("%s burst=%u: %llu messages\n", argv[1], burst, (unsigned long long)seq);
    a->destroy(h);
    return 0;
}
