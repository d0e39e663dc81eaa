/*
 * pyq_xproc.h - the C halves of bench-xproc (DESIGN §3.9): a writer loop, a
 * reader loop, a round-trip pair and the futex wake-up pair, each run by the
 * side that owns it -- in two processes over a shared queue, or in two threads
 * of one process over the same code and an in-process queue, so that the two
 * placements differ by the process boundary only.  The caller pins each side
 * and starts it (a forked child, a thread); nothing here starts a thread.
 * Plain declarations only: this header is also the cffi cdef.
 */
#ifndef PYQ_XPROC_H
#define PYQ_XPROC_H

#include <stdint.h>

#include "pyqueue.h"

/* What the reader loop counted; the writer's waits come from pyq_queue_stats(). */
typedef struct pyq_xproc_read {
    uint64_t messages;      /* delivered, each of msg_size bytes */
    uint64_t ns;            /* first message to last (CLOCK_MONOTONIC) */
    uint64_t empty_polls;   /* polls that found nothing ... */
    uint64_t empty_runs;    /* ... and the catch-ups among them (the first of a run) */
} pyq_xproc_read_t;

/* Writer side.  Write n messages of msg_size bytes (a pattern): one
 * pyq_writer_write() each when batch is 0, else pyq_writer_write_batch() of
 * batch messages at a time (1..4096); then flush.  Waits as the queue's writer
 * does (DESIGN §3.6; a shared queue sleeps on its futex), for at most timeout_ns
 * a write.
 * @return 0, or the first PYQ_E* code of a write (PYQ_EINVAL for bad sizes:
 *         msg_size 0, or msg_size * batch over 64 KiB). */
int pyq_xproc_write(pyq_queue_t *q, uint32_t msg_size, uint64_t n, uint32_t batch,
                    int64_t timeout_ns);

/* Reader side.  Take n messages of msg_size bytes, spinning (CPU relax) on an
 * empty queue: pyq_reader_read_one() each when batch is 0, else
 * pyq_reader_poll_fixed() of up to batch messages at a time (1..4096).
 * Gives up after timeout_ns without a message.
 * @return 0 with *out filled, PYQ_EAGAIN (timed out: *out says how far it got),
 *         PYQ_EBADMSG (a message of another size), PYQ_EINVAL (as for the writer). */
int pyq_xproc_read(pyq_queue_t *q, uint32_t msg_size, uint64_t n, uint32_t batch,
                   int64_t timeout_ns, pyq_xproc_read_t *out);

/* The timing side of a round trip: n times, write one msg_size message to `to`
 * and spin until one comes back from `from`; rt_ns[i] is trip i (CLOCK_MONOTONIC
 * around the write and the read).  Both queues should publish "each".
 * @return 0, PYQ_EAGAIN (no answer within timeout_ns), PYQ_EBADMSG, or a write code. */
int pyq_xproc_ping(pyq_queue_t *to, pyq_queue_t *from, uint32_t msg_size, uint64_t n,
                   int64_t timeout_ns, uint64_t *rt_ns);

/* The echo side: n times, spin until a message comes from `from` and write it
 * back to `to`.  @return 0, PYQ_EAGAIN (nothing within timeout_ns), or a code. */
int pyq_xproc_echo(pyq_queue_t *from, pyq_queue_t *to, uint32_t msg_size, uint64_t n,
                   int64_t timeout_ns);

/* Futex wake-up latency, one side asleep (PYQ_SIDE_READER: on an empty queue in
 * pyq_reader_wait(); PYQ_SIDE_WRITER: on a full queue in pyq_writer_write()),
 * the other side waking it.  The two calls run at once, one per side, over the
 * same arrays (shared memory between processes), each of n + 1 entries, zeroed:
 *   ack[0]      the sleeper is armed (the writer has filled the queue first);
 *   ack[i + 1]  sample i returned;
 *   t_pub[i]    the waker's clock just before the hand-over that wakes (the
 *               reader's block return, the writer's publish) -- after gap_ns
 *               asleep itself, so that the sleeper has stopped spinning;
 *   t_ret[i]    the sleeper's clock when its call returned;
 *   slept[i]    the sleeper's voluntary context switches during sample i (0:
 *               it never slept, the sample measured a spin).
 * The queue: the reader-asleep case publishes "each"; the writer-asleep case
 * has messages that fill a block (the largest message), so that each message
 * read returns one block.
 * @return 0, PYQ_EAGAIN (the other side gave no sign within timeout_ns), or a code. */
int pyq_xproc_wake_sleeper(pyq_queue_t *q, int side, uint64_t n, int64_t timeout_ns,
                           uint64_t *ack, uint64_t *t_ret, uint64_t *slept);
int pyq_xproc_wake_waker(pyq_queue_t *q, int sleeper, uint64_t n, uint64_t gap_ns,
                         int64_t timeout_ns, uint64_t *ack, uint64_t *t_pub);

#endif /* PYQ_XPROC_H */
