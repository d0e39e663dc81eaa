/*
 * twin_pvt.h - the measured loops of the bench's adapter driver and of every
 * inline twin (pyq_twin.h), written once.  Header-only so that a peer library
 * (C or C++) compiles them around its own calls and needs nothing of ours at
 * link time.  Never installed, not a cdef.
 *
 * The loop bodies (writer, reader, round-trip echo and timed side, streaming
 * episodes) are always_inline and take the queue's operations as function
 * pointers.  Each body is instantiated twice:
 *
 *   - by the driver (bench/bench_adapter.c), with the pointers of an adapter
 *     table: every operation an indirect call, as for any queue behind
 *     pyq_adapter_t;
 *   - by a twin, in its queue's own translation unit, with the queue's static
 *     functions as constant pointers, through twin_define_pvt.h's macros:
 *
 *         PYQ_TWIN_DEFINE(prefix, adapter, try_write, try_write_burst, poll, flush)
 *         PYQ_TWIN_DEFINE_EACH(prefix, adapter, try_write, try_write_burst,
 *                              write_each, poll, read_burst, read_each, flush)
 *         PYQ_TWIN_DEFINE_WAITING(prefix, adapter, write, poll, flush)
 *
 *     define prefix_twin_throughput() and prefix_twin_roundtrip() for its
 *     pyq_twin_t (a NULL operation: that side takes the path the driver takes
 *     for an adapter without it).  The instantiations are flatten, so the
 *     queue's calls and the reader's check are inlined: no indirect call is
 *     left in a twin's hot loop (tests/lab/test_twins.py reads objdump -d).
 *
 * pyqueue_direct's rows have no adapter table: bench/bench.c instantiates the
 * throughput bodies with the same constant pointers as its twin (its message
 * size the one run-time difference), so there the row is the twin's loop.
 *
 * So adapter row / twin prices exactly the driver -- the table and the
 * callback -- and the two cannot drift.  Two parameters differ, neither on
 * the per-message path: the window (pyq_twin_params_t.window) -- a twin may
 * stamp a record every `window` messages, and then a poll asks for at most one
 * window so each gets its own stamp, where the driver keeps none (window
 * UINT64_MAX) and its polls ask for all that is left; and the round trip's
 * stamp (pyq_twin_rt.ticks), the cycle counter in a twin, the bench's
 * calibrated timer in the driver.  A twin builds and warms its queue through
 * the adapter table (create, pyq_twin_warm), outside the timed part, as the
 * bench does for a row's queue (pyq_bench_warm).
 *
 * One concept a header, each self-contained:
 *
 *   twin_base_pvt.h        the message, the operations' types, clocks, pace,
 *                          pinning, start barrier, error word, warm-up
 *   twin_episode_pvt.h     the streaming episodes' protocol
 *   twin_throughput_pvt.h  the writer and reader loops and their run
 *   twin_roundtrip_pvt.h   the echo and timed loops and their run
 *   twin_define_pvt.h      the instantiation macros
 */
#ifndef PYQ_TWIN_PVT_H
#define PYQ_TWIN_PVT_H

#include "adapters/twin_base_pvt.h"
#include "adapters/twin_episode_pvt.h"
#include "adapters/twin_throughput_pvt.h"
#include "adapters/twin_roundtrip_pvt.h"
#include "adapters/twin_define_pvt.h"

#endif /* PYQ_TWIN_PVT_H */
