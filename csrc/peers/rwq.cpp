// rwq.cpp - moodycamel::ReaderWriterQueue behind the adapter interface,
// and its inline twin.
//
// try_enqueue / try_dequeue only: enqueue() would allocate a new block when
// full, and the lab compares bounded queues of one memory budget.  All blocks
// are allocated by the constructor.  Orderings are the library's own.
//
// At its best for 32-byte messages: by value, one element per call, with the
// default MAX_BLOCK_SIZE of 512, as moodycamel's own benchmark
// (benchmarks/bench.cpp: ReaderWriterQueue<int>, enqueue / try_dequeue in
// loops) runs it.  ReaderWriterQueue has no bulk calls (try_enqueue_bulk is
// ConcurrentQueue's) and no compile-time capacity.
// A release build of the library, as its benchmarks are compiled: without
// NDEBUG, moodycamel's queue keeps re-entrancy flags for the producer and the
// consumer side by side in one cache line and writes them on every call: the
// writer and the reader then share a line on every message.
#ifndef NDEBUG
#define NDEBUG 1
#endif
#include <cstdint>
#include <cstring>
#include <new>

#include <readerwriterqueue/readerwriterqueue.h>

extern "C" {
#include "adapters/pyq_adapter.h"
#include "adapters/pyq_twin.h"
}
#include "adapters/twin_pvt.h"
#include "peers/peer.hpp"

namespace {

struct Msg32 {
    unsigned char b[PYQ_ADAPTER_MSG_SIZE];
};

using Queue = moodycamel::ReaderWriterQueue<Msg32>;

int rwq_create(const pyq_adapter_params_t *p, void **handle)
{
    if (p->msg_size != sizeof(Msg32) || p->capacity_bytes / sizeof(Msg32) < 1)
        return PYQ_EINVAL;
    try {
        *handle = new Queue(p->capacity_bytes / sizeof(Msg32));
    } catch (const std::bad_alloc &) {
        return PYQ_ENOMEM;
    }
    return 0;
}

void rwq_destroy(void *h)
{
    delete static_cast<Queue *>(h);
}

uint64_t rwq_capacity(void *h)
{
    return static_cast<Queue *>(h)->max_capacity();
}

PYQ_PEER_OP int rwq_try_write(void *h, const void *msg, uint32_t)
{
    Msg32 m;

    std::memcpy(&m, msg, sizeof m);
    return static_cast<Queue *>(h)->try_enqueue(m) ? 0 : PYQ_EAGAIN;
}

void rwq_flush(void *)
{
    // each enqueue is visible when it returns
}

PYQ_PEER_OP int64_t rwq_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    Queue *q = static_cast<Queue *>(h);

    return pyq_peer_deliver<Msg32>(max, fn, ctx,
                                   [q](Msg32 &m) PYQ_PEER_INLINE { return q->try_dequeue(m); });
}

// The per-message rows' reader: one try_dequeue per message, as rwq_poll,
// straight into the reader's array (no callback per message).
PYQ_PEER_OP int64_t rwq_read_each(void *h, void *out, uint32_t max, uint32_t)
{
    Queue *q = static_cast<Queue *>(h);
    Msg32 *m = static_cast<Msg32 *>(out);
    uint32_t n = 0;

    while (n < max && q->try_dequeue(m[n]))
        n++;
    return n;
}

// The per-message rows' streaming writer: rwq_try_write in a loop (write_each).
PYQ_TWIN_WRITE_EACH(rwq, rwq_try_write)

// The round trip's receive: rwq_poll(max 1) spun on in this file (read_spin).
PYQ_TWIN_READ_SPIN(rwq, rwq_poll)

const pyq_adapter_t adapter = {
    PYQ_ADAPTER_ABI, 0, "rwq",
    rwq_create, rwq_destroy, rwq_capacity, rwq_try_write,
    nullptr, // try_write_burst
    rwq_flush, rwq_poll,
    nullptr, // wait_readable
    nullptr, // read_burst: the library has no bulk pop
    rwq_read_each,
    rwq_write_each,
    rwq_read_spin,
};

// The twin: the operations above called directly, inlined (adapters/twin_pvt.h).
PYQ_TWIN_DEFINE_EACH(rwq, adapter, rwq_try_write, nullptr, rwq_write_each, rwq_poll, nullptr,
                     rwq_read_each, rwq_flush)

const pyq_twin_t twins[] = {
    {"rwq", "ReaderWriterQueue<Msg32> try_enqueue / try_dequeue, by value, one element per "
     "call (no bulk calls)", 0, 0, rwq_twin_throughput, rwq_twin_roundtrip},
};

} // namespace

extern "C" __attribute__((visibility("default"))) const pyq_adapter_t *pyq_peer_adapter(void)
{
    return &adapter;
}

PYQ_TWIN_PEER_TABLE(twins)
