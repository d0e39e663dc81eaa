/*
 * twin_define_pvt.h - the macros that instantiate the loops in a queue's own
 * translation unit: its twins (PYQ_TWIN_DEFINE, PYQ_TWIN_DEFINE_EACH,
 * PYQ_TWIN_DEFINE_WAITING), the adapter operations compiled around its own
 * calls (PYQ_TWIN_WRITE_EACH, PYQ_TWIN_READ_SPIN, pyqueue's read_each) and a
 * peer library's table of twins (PYQ_TWIN_PEER_TABLE).  Never installed.
 */
#ifndef PYQ_TWIN_DEFINE_PVT_H
#define PYQ_TWIN_DEFINE_PVT_H

#include <stdint.h>
#include <string.h>

#include "adapters/twin_base_pvt.h"
#include "adapters/twin_throughput_pvt.h"
#include "adapters/twin_roundtrip_pvt.h"

/* Define prefix_write_each(), an adapter's write_each (pyq_adapter.h): its own
 * try_write over up to n messages stored back to back, in a loop compiled in the
 * adapter's translation unit with try_write inlined.  The count written (0 when
 * full), or try_write's error when it fails before any message went in. */
#define PYQ_TWIN_WRITE_EACH(prefix, try_write)                                                  \
    static inline __attribute__((always_inline)) int64_t prefix##_write_each_len(                \
        void *h, const unsigned char *m, uint32_t n, uint32_t len)                              \
    {                                                                                           \
        uint32_t k = 0;                                                                         \
        int rc = 0;                                                                             \
                                                                                                \
        while (k < n && (rc = try_write(h, m + (size_t)k * len, len)) == 0)                     \
            k++;                                                                                \
        return k == 0 && rc != PYQ_EAGAIN ? (int64_t)rc : (int64_t)k;                           \
    }                                                                                           \
    PYQ_TWIN_FLAT static int64_t prefix##_write_each(void *h, const void *msgs, uint32_t n,     \
                                                     uint32_t len)                              \
    {                                                                                           \
        const unsigned char *m = (const unsigned char *)msgs;                                   \
                                                                                                \
        /* The rows' messages are PYQ_ADAPTER_MSG_SIZE bytes: that loop with the                \
         * size a constant, as a writer of a fixed-size struct passes sizeof and a              \
         * slot queue copies its slot's size (every peer's loop is this one). */                \
        if (len == PYQ_ADAPTER_MSG_SIZE)                                                        \
            return prefix##_write_each_len(h, m, n, PYQ_ADAPTER_MSG_SIZE);                      \
        return prefix##_write_each_len(h, m, n, len);                                           \
    }

/* pyqueue's per-message reader (an adapter's read_each, pyq_adapter.h):
 * pyq_reader_poll_inline (pyqueue_inline.h) with a copy of each message into
 * the caller's array as its callback, compiled in -- message by message, runs
 * too, as a C reader taking one message at a time at its fastest would (the
 * burst rows' pyq_reader_poll_fixed copies a run whole instead).  The count
 * copied; a message of another length than len ends the call with PYQ_ERANGE,
 * consumed, as are those the call copied before it (a callback cannot hand a
 * message back): for the bench's rows only, whose messages are all
 * PYQ_ADAPTER_MSG_SIZE bytes and whose run fails on the error. */
struct pyq_twin_each_out {
    pyq_twin_msg_t *next; /* where the next message goes */
};

static inline int pyq_twin_each_copy(void *ctx, const void *msg, uint32_t len)
{
    struct pyq_twin_each_out *o = (struct pyq_twin_each_out *)ctx;

    if (__builtin_expect(len != PYQ_ADAPTER_MSG_SIZE, 0))
        return PYQ_ERANGE;
    memcpy(o->next++, msg, PYQ_ADAPTER_MSG_SIZE);
    return 0;
}

static inline __attribute__((always_inline)) int64_t pyq_twin_pq_read_each(pyq_queue_t *q,
                                                                           void *out,
                                                                           uint32_t max,
                                                                           uint32_t len)
{
    struct pyq_twin_each_out o = {(pyq_twin_msg_t *)out};

    if (len != PYQ_ADAPTER_MSG_SIZE)
        return PYQ_EINVAL;
    return pyq_reader_poll_inline(q, max, pyq_twin_each_copy, &o);
}

/* Define prefix_read_spin(), an adapter's read_spin (pyq_adapter.h):
 * pyq_twin_spin over its own poll, compiled in the adapter's translation unit
 * with poll and the check inlined -- the twins' receive, the same loop.  The
 * message is checked in the callback, not copied out to be checked after the
 * loop: the copy is work the twin's loop does not do (docs/BENCHMARKS.md,
 * "What the driver got wrong"). */
#define PYQ_TWIN_READ_SPIN(prefix, poll)                                                        \
    PYQ_TWIN_FLAT static int64_t prefix##_read_spin(void *h, uint64_t seq, const int *stop)    \
    {                                                                                           \
        return pyq_twin_spin(h, seq, stop, poll);                                               \
    }

/* Define prefix_twin_throughput() and prefix_twin_roundtrip() for the queue of
 * adapter table `adapter`, its operations (static functions of the same file;
 * try_write_burst may be NULL) inlined into each loop. */
#define PYQ_TWIN_DEFINE(prefix, adapter, try_write, try_write_burst, poll, flush)               \
    PYQ_TWIN_DEFINE_EACH(prefix, adapter, try_write, try_write_burst, (pyq_twin_burst_fn)NULL,  \
                         poll, (pyq_twin_read_fn)NULL, (pyq_twin_read_fn)NULL, flush)

/* The same for a queue with the adapter's write_each and read_each (its
 * per-message rows' streaming writer and its reader use them) and read_burst
 * (its burst rows read with it), as the driver does; each may be NULL.  The
 * receive spins on poll here (no read_spin: that is this very loop). */
#define PYQ_TWIN_DEFINE_EACH(prefix, adapter, try_write, try_write_burst, write_each, poll,     \
                             read_burst, read_each, flush)                                      \
    PYQ_TWIN_DEFINE_AS_(prefix, adapter, try_write, try_write_burst, write_each, poll,          \
                        read_burst, read_each, flush, 0)

/* The twins of a queue whose write waits for room inside its library, for up to
 * PYQ_TWIN_WAIT_NS, then returns PYQ_EAGAIN (pyq_twin_write_each's `inside`):
 * pyqueue_direct's pyq_writer_write, as bench.c's rows of it. */
#define PYQ_TWIN_DEFINE_WAITING(prefix, adapter, write, poll, flush)                            \
    PYQ_TWIN_DEFINE_AS_(prefix, adapter, write, (pyq_twin_burst_fn)NULL,                        \
                        (pyq_twin_burst_fn)NULL, poll, (pyq_twin_read_fn)NULL,                  \
                        (pyq_twin_read_fn)NULL, flush, 1)

/* The one expansion of the three above; inside: pyq_twin_writer_as's. */
#define PYQ_TWIN_DEFINE_AS_(prefix, adapter, try_write, try_write_burst, write_each, poll,      \
                            read_burst, read_each, flush, inside)                               \
    PYQ_TWIN_FLAT static void *prefix##_twin_writer(void *arg)                                  \
    {                                                                                           \
        pyq_twin_writer_as((struct pyq_twin_run *)arg, try_write, try_write_burst, write_each,  \
                           flush, PYQ_ADAPTER_MSG_SIZE, inside);                                \
        return NULL;                                                                            \
    }                                                                                           \
    PYQ_TWIN_FLAT static void *prefix##_twin_reader(void *arg)                                  \
    {                                                                                           \
        pyq_twin_reader((struct pyq_twin_run *)arg, poll, read_burst, read_each);               \
        return NULL;                                                                            \
    }                                                                                           \
    PYQ_TWIN_FLAT static void *prefix##_twin_echo(void *arg)                                    \
    {                                                                                           \
        pyq_twin_echo((struct pyq_twin_rt *)arg, try_write, poll, (pyq_twin_spin_fn)NULL,       \
                      flush);                                                                   \
        return NULL;                                                                            \
    }                                                                                           \
    PYQ_TWIN_FLAT static int prefix##_twin_timed(struct pyq_twin_rt *t, uint64_t *samples)      \
    {                                                                                           \
        return pyq_twin_timed(t, samples, try_write, poll, (pyq_twin_spin_fn)NULL, flush,       \
                              PYQ_TWIN_TICKS);                                                  \
    }                                                                                           \
    static int prefix##_twin_throughput(const pyq_twin_params_t *p, pyq_twin_window_t *w,       \
                                        uint32_t max_w, pyq_twin_result_t *r)                   \
    {                                                                                           \
        return pyq_twin_throughput_run(&(adapter), pyq_twin_has(try_write_burst), p, w,         \
                                       max_w, r, prefix##_twin_writer, prefix##_twin_reader);   \
    }                                                                                           \
    static int prefix##_twin_roundtrip(const pyq_twin_params_t *p, uint64_t *samples,           \
                                       pyq_twin_result_t *r)                                    \
    {                                                                                           \
        return pyq_twin_roundtrip_run(&(adapter), p, samples, r, prefix##_twin_echo,            \
                                      prefix##_twin_timed);                                     \
    }

#ifdef __cplusplus
#define PYQ_TWIN_EXTERN_C extern "C"
#else
#define PYQ_TWIN_EXTERN_C
#endif

/* Define the table of a peer library's twins (an array of pyq_twin_t) and the
 * pyq_peer_twin() it exports; at file scope, outside any namespace. */
#define PYQ_TWIN_PEER_TABLE(twins)                                                              \
    static const pyq_twin_table_t pyq_twin_table_ = {                                          \
        PYQ_TWIN_ABI, (uint32_t)(sizeof(twins) / sizeof((twins)[0])), twins};                  \
    PYQ_TWIN_EXTERN_C PYQ_TWIN_EXPORT const pyq_twin_table_t *pyq_peer_twin(void)               \
    {                                                                                          \
        return &pyq_twin_table_;                                                               \
    }

#endif /* PYQ_TWIN_DEFINE_PVT_H */
