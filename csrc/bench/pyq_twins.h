/*
 * pyq_twins.h - the benchmark's own inline twins (adapters/pyq_twin.h has the
 * interface and the peers' twins): pyqueue's, calling its public C API
 * directly, and the yardstick's.  (An adapter row is paced like a twin by
 * pyq_bench_adapter_paced(), bench/pyq_bench.h.)
 *
 * Also the cffi cdef: plain declarations only.
 */
#ifndef PYQ_TWINS_H
#define PYQ_TWINS_H

#include <stdint.h>

#include "adapters/pyq_adapter.h"
#include "adapters/pyq_twin.h"

/* Any thread.  The twins of bench/twins.c:
 *   pyqueue           pyq_writer_try_write (burst: pyq_writer_write_batch, timeout
 *                     0) / pyq_reader_poll: the "pyqueue" adapter rows (the queue
 *                     from params.queue: tiers, publish policy, touch_after_write)
 *   pyqueue_direct    pyq_writer_write (waits inside, PYQ_TWIN_WAIT_NS at a time)
 *                     / pyq_reader_poll: the bench's pyqueue_direct loop (bench.c)
 *   pyqueue_read_one  pyq_writer_try_write / pyq_reader_read_one: the reader
 *                     copies each message out by value, no callback
 *   yardstick         a rigtorp-style ring of 32-byte slots with cached indices,
 *                     params.queue.capacity_bytes / 32 slots (a power of two)
 * pyqueue.h has no inline functions, so pyqueue's calls are direct calls into
 * the library, not inlined; pyq_reader_poll calls the check through its
 * callback pointer (that is its API).  Never NULL. */
const pyq_twin_table_t *pyq_twin_bench(void);

/* Any thread.  The yardstick ring above as an adapter (create from
 * params.capacity_bytes / 32 slots, try_write, poll), so that its bench row runs
 * through the same driver as every other row, beside its twin.  Never NULL. */
const pyq_adapter_t *pyq_bench_yardstick(void);

/* Any thread, while no other thread uses h.  Fill adapter a's queue h once and
 * drain it (single-threaded, untimed), as every twin does to its new queue
 * before a run: so an adapter row measured once after it runs from the same
 * state -- every page touched, the queue empty.
 * @return 0, PYQ_EINVAL (a or h NULL), or the adapter's code. */
int pyq_bench_warm(const pyq_adapter_t *a, void *h);

#endif /* PYQ_TWINS_H */
