/*
 * pq_calls_pvt.h - pyqueue_direct's calls, for its rows (bench.c) and its twin
 * (twins.c) alike, so the two run the same code: the queue waits for room
 * itself, PYQ_TWIN_WAIT_NS at a time (then PYQ_EAGAIN: the loop looks at its
 * episodes' hold and retries).  Never installed.
 */
#ifndef PYQ_PQ_CALLS_PVT_H
#define PYQ_PQ_CALLS_PVT_H

#include "pyqueue.h"
#include "adapters/twin_pvt.h"

PYQ_TWIN_INLINE int pq_write(void *q, const void *msg, uint32_t len)
{
    return pyq_writer_write(q, msg, len, PYQ_TWIN_WAIT_NS);
}

PYQ_TWIN_INLINE void pq_flush(void *q)
{
    pyq_writer_flush(q);
}

PYQ_TWIN_INLINE int64_t pq_poll(void *q, uint64_t max, pyq_message_fn fn, void *ctx)
{
    return pyq_reader_poll(q, max, fn, ctx);
}

#endif /* PYQ_PQ_CALLS_PVT_H */
