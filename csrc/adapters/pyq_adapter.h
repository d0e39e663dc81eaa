/*
 * pyq_adapter.h - one small interface in front of every queue the lab compares
 * (DESIGN §7): pyqueue itself, a mutex + condition-variable ring, and the peers
 * (ck_ring, DPDK rte_ring, moodycamel ReaderWriterQueue, boost spsc_queue).
 *
 * An adapter is a table of operations over an opaque handle.  Built-ins live in
 * the core library; each peer is a separate shared object
 * pyqueue/peers/libpyq_peer_<name>.so exporting
 *
 *     const pyq_adapter_t *pyq_peer_adapter(void);
 *
 * which pyq_adapter_get() dlopen()s.  Waiting is not an adapter's job: try_write
 * never waits and poll never blocks, so every driver retries with its own policy
 * (spin + relax, yield every N) and all contenders wait the same way.  The one
 * exception is optional: a queue whose reader is meant to sleep (the mutex
 * queue's condition variable) offers wait_readable, so a driver that measures
 * how a reader waits (the pipeline) can use it; lock-free queues leave it NULL.
 *
 * Also built in, and NOT a peer: "ring_floor", the round-trip yardstick
 * (adapters/ring_floor.c) -- a minimal ring of 64-byte slots, the sequence word
 * and the 32-byte payload in one line, each message in a fresh line.  It prices
 * a plain ring's line per message, between the ping-pong floor and pyqueue.
 *
 * Messages have one fixed size per queue (params.msg_size); poll hands each one to
 * a pyq_message_fn with that length.  Return codes follow pyqueue.h: 0 / a count,
 * or a negative PYQ_E* code.
 *
 * Also the cffi cdef (see pyqueue.h): plain declarations only.
 */
#ifndef PYQ_ADAPTER_H
#define PYQ_ADAPTER_H

#include <stdint.h>

#include "pyqueue.h"

/* Bumped when pyq_adapter_t or pyq_adapter_params_t change; a peer built against
 * another version is refused by pyq_adapter_get(). */
#define PYQ_ADAPTER_ABI 5

/* The message size every adapter supports; ck, rwq and boost carry exactly this
 * (a 32-byte struct by value), the others any size (dpdk: a multiple of 4). */
#define PYQ_ADAPTER_MSG_SIZE 32

/* Slots of the ring_floor yardstick: 256 x 64 B = 16 KiB, the size of pyqueue's
 * default hot tier; halved until it fits capacity_bytes (at least 2 slots).  It
 * carries exactly PYQ_ADAPTER_MSG_SIZE-byte messages. */
#define PYQ_RING_FLOOR_SLOTS 256

/* Longest adapter name (a peer name is [a-z0-9_], at most this long). */
#define PYQ_ADAPTER_NAME_MAX 32

/* How to build one queue.  pyq_adapter_params_init() fills the defaults (DESIGN §7.1). */
typedef struct pyq_adapter_params {
    uint32_t msg_size;       /* bytes per message; default 32 */
    uint32_t reserved;
    uint64_t capacity_bytes; /* memory budget of the storage, the same for every
                                contender; default 4 x 4 KiB + 65,536 x 4 KiB.
                                Slot rings hold capacity_bytes / msg_size messages,
                                rounded DOWN to a power of two where the ring
                                requires one (ck, dpdk).  The pyqueue adapter
                                ignores it and uses `queue` (whose blocks are the
                                budget). */
    pyq_config_t queue;      /* the pyqueue adapter's full configuration */
} pyq_adapter_params_t;

typedef struct pyq_adapter {
    uint32_t abi;        /* PYQ_ADAPTER_ABI */
    uint32_t flags;      /* reserved, 0 */
    const char *name;    /* what pyq_adapter_get() finds it by: [a-z0-9_], at most
                            PYQ_ADAPTER_NAME_MAX bytes */

    /* Any thread.  Build a queue; all storage is allocated here.
     * @return 0 and *handle, PYQ_EINVAL (msg_size or capacity unsupported),
     *         PYQ_ENOMEM, or another pyqueue.h code. */
    int (*create)(const pyq_adapter_params_t *p, void **handle);

    /* Any thread, once neither side uses the queue.  Free everything. NULL is ok. */
    void (*destroy)(void *h);

    /* Any thread.  Messages the queue can hold at once (for pyqueue: an estimate
     * from its blocks and framing). */
    uint64_t (*capacity)(void *h);

    /* Writer thread only.  Copy one message of params.msg_size bytes in.
     * @return 0, or PYQ_EAGAIN when full (nothing written).  Never waits. */
    int (*try_write)(void *h, const void *msg, uint32_t len);

    /* Writer thread only; NULL when the queue has no native burst.  Copy up to n
     * messages of len bytes stored back to back at msgs.
     * @return the count written, 0..n (0 when full).  Never waits. */
    int64_t (*try_write_burst)(void *h, const void *msgs, uint32_t n, uint32_t len);

    /* Writer thread only.  Make every message written so far visible (a no-op for
     * queues where each write is visible on return).  Never waits. */
    void (*flush)(void *h);

    /* Reader thread only.  Deliver up to max visible messages, FIFO, to fn; a
     * nonzero return from fn stops after that message (it counts as consumed).
     * @return the count delivered, or the negative value fn returned.
     * Never blocks. */
    int64_t (*poll)(void *h, uint64_t max, pyq_message_fn fn, void *ctx);

    /* Reader thread only; NULL when the queue has no blocking wait.  Sleep until a
     * message may be visible or timeout_ns passes (the mutex queue's condvar).
     * timeout_ns < 0 waits without limit.
     * @return 0 (woken: poll to see), or PYQ_EAGAIN (timed out). */
    int (*wait_readable)(void *h, int64_t timeout_ns);

    /* Reader thread only; NULL when the library hands out one message at a
     * time.  Copy up to max visible messages of len bytes, FIFO, back to back
     * into out, through the library's own bulk read (boost pop(T *, n),
     * rte_ring_sc_dequeue_burst_elem, pyq_reader_poll_fixed): the reader's
     * counterpart of try_write_burst, with no callback per message.
     * @return the count copied, 0..max (0 when empty), or a negative code.
     * Never blocks. */
    int64_t (*read_burst)(void *h, void *out, uint32_t max, uint32_t len);

    /* Reader thread only; NULL where the library has nothing better than
     * poll (pyqueue's: pyq_reader_poll_inline, its callback a copy inlined).
     * The per-message rows' reader: copy up to max visible messages of len
     * bytes, FIFO, back to back into out, each taken the way the library's
     * per-message row takes it (ck_ring_dequeue_spsc, try_dequeue, try_pop; boost
     * and rte_ring: their bulk pop, as their poll does) -- poll without a
     * callback per message, so a driver's reader pays one indirect call per
     * call, not per message.  May be read_burst itself.
     * @return the count copied, 0..max (0 when empty), or a negative code.
     * Never blocks. */
    int64_t (*read_each)(void *h, void *out, uint32_t max, uint32_t len);

    /* Writer thread only; NULL where read_each is NULL (pyqueue's: its
     * inline fast path, pyq_writer_try_write_inline, in the loop).  The
     * per-message rows' streaming writer: up to n messages of len bytes stored
     * back to back at msgs, each by the library's one-message call (the one
     * try_write makes), in a loop compiled with that call inlined -- so a
     * driver's writer pays one indirect call per n messages, as its twin.
     * @return the count written, 0..n (0 when full).  Never waits. */
    int64_t (*write_each)(void *h, const void *msgs, uint32_t n, uint32_t len);
    /* Reader thread only; NULL: the driver spins on poll itself.  The round
     * trip's receive: spin, without relax, on the library's one-message read
     * (what poll(max 1) takes) in a loop compiled with that read inlined, until
     * one message arrives or *stop (read relaxed: a flag, nothing is published
     * through it) is nonzero; the message's first 8 bytes must be seq (the
     * check made in the read's callback, as the twins' receive makes it).  So
     * a driver pays one indirect call per message received, not one per empty
     * poll, which the library's own loop does not pay (DESIGN §8.3); and
     * nothing is copied out to be checked after the loop (docs/BENCHMARKS.md,
     * "What the driver got wrong").
     * @return 1, 0 (stopped, nothing taken), PYQ_EBADMSG (another sequence
     * number, consumed) or the read's negative code. */
    int64_t (*read_spin)(void *h, uint64_t seq, const int *stop);
} pyq_adapter_t;

/* The function each peer shared object exports. */
typedef const pyq_adapter_t *(*pyq_peer_entry_fn)(void);

/* Any thread.  Fill *p with the defaults: 32-byte messages, the budget of the
 * default pool (4 x 4 KiB + 65,536 x 4 KiB), pyq_config_init() for the queue. */
void pyq_adapter_params_init(pyq_adapter_params_t *p);

/* Any thread.  Find an adapter by name: a built-in (pyq_adapter_builtin()), or
 * else <peer_dir>/libpyq_peer_<name>.so, loaded once (handles stay open).
 * @return 0 and *out, PYQ_EINVAL (not a valid adapter name, or peer_dir NULL),
 *         PYQ_ENOTSUP (the peer library is missing, fails to load, lacks the
 *         entry point or has another ABI: pyq_adapter_error() says which). */
int pyq_adapter_get(const char *name, const char *peer_dir, const pyq_adapter_t **out);

/* Any thread.  The name of built-in adapter i (0, 1, ...), or NULL past the last.
 * *yardstick (if not NULL) is set to 1 for a yardstick -- measured beside the
 * peers, never one of them ("ring_floor") -- and to 0 for a contender.  Wait-free. */
const char *pyq_adapter_builtin(int i, int *yardstick);

/* Calling thread's last pyq_adapter_get() failure as text ("" if none); valid
 * until that thread's next pyq_adapter_get(). */
const char *pyq_adapter_error(void);

/* Outcome of pyq_adapter_verify(). */
typedef struct pyq_adapter_verify_result {
    uint64_t written;       /* messages the writer put in */
    uint64_t verified;      /* messages the reader checked, in order, every byte */
    uint64_t first_bad;     /* sequence number expected where the check failed */
    uint64_t write_retries; /* try_write / try_write_burst calls that found it full */
    uint64_t elapsed_ns;    /* writer start to reader end (not a benchmark: both
                               sides also generate and check every byte) */
    int32_t error;          /* 0, or PYQ_EBADMSG (wrong, lost, reordered message:
                               see first_bad), or the code an adapter op returned */
    int32_t writer_cpu_seen; /* sched_getcpu() of each thread at its end, -1 unknown */
    int32_t reader_cpu_seen;
} pyq_adapter_verify_result_t;

/* Any thread (starts and joins its own).  Run a writer pthread and a reader
 * pthread over a new queue of adapter a: the writer sends n messages of
 * pyq_pattern content (seq 0..n-1), with try_write_burst of `burst` messages
 * when burst > 0 (and the adapter has it), retrying with spin + relax and a
 * sched_yield() every 1024 failures; the reader checks length, FIFO order and
 * every byte.  writer_cpu / reader_cpu pin each thread (-1: not pinned).
 * @return 0 when every message arrived intact (out->error 0), PYQ_EBADMSG, the
 *         code create/poll/try_write returned, PYQ_EINVAL (bad CPU or burst >
 *         65536), PYQ_ENOTSUP (pinning unsupported), PYQ_ENOMEM. */
int pyq_adapter_verify(const pyq_adapter_t *a, const pyq_adapter_params_t *p, uint64_t n,
                       uint32_t burst, int writer_cpu, int reader_cpu,
                       pyq_adapter_verify_result_t *out);

#endif /* PYQ_ADAPTER_H */
