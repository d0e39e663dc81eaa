// atomic_queue.cpp - max0x7ba atomic_queue behind the adapter interface, and its
// inline twins.
//
// At its best for 32-byte messages, as its own benchmark (src/benchmarks.cc)
// configures it for one producer and one consumer: "SPSC=true,
// MINIMIZE_CONTENTION=false, MAXIMIZE_THROUGHPUT=false" (its comment: the best
// SPSC parameters it measured), TOTAL_ORDER=false, and the "2" variants, which
// carry non-atomic elements (a state byte beside each 32-byte slot):
// - compile-time capacity, AtomicQueue2<Msg32, kPeerFixedSlots, ...>, when the
//   budget is the benchmark's (1 MiB of 32-byte messages); otherwise the
//   run-time-sized AtomicQueueB2, which always spreads consecutive slots over
//   cache lines and has at least 4096 slots (the library's minimum); the choice
//   is one predictable branch per call;
// - try_push / try_pop, by value: the adapter's calls must never wait, and these
//   are what its benchmark's "AtomicQueue2" rows use (RetryDecorator spins on
//   them).  atomic_queue has no burst calls.
// Its fastest rows ("OptimistAtomicQueue2") use push / pop, which claim a slot
// and then spin inside the library until it is free / filled; no adapter may do
// that, so they are a second twin, atomic_queue_optimist, with no adapter row
// (and no empty / full counts: the waiting happens inside the library).
// Orderings are the library's own.
#ifndef NDEBUG
#define NDEBUG 1 // a release build of the library, as its benchmarks are compiled
#endif
#include <cstdint>
#include <cstring>
#include <memory>

#include <atomic_queue/atomic_queue.h>

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

constexpr unsigned kMinSlots = 4096; // AtomicQueueB2's own minimum for 1-byte states

// AtomicQueue2<T, SIZE, MINIMIZE_CONTENTION, MAXIMIZE_THROUGHPUT, TOTAL_ORDER, SPSC>
using Fixed = atomic_queue::AtomicQueue2<Msg32, kPeerFixedSlots, false, false, false, true>;
// AtomicQueueB2<T, allocator, MAXIMIZE_THROUGHPUT, TOTAL_ORDER, SPSC>
using Sized = atomic_queue::AtomicQueueB2<Msg32, std::allocator<Msg32>, false, false, true>;

struct Handle {
    Either<Fixed, Sized> q;
};

int aq_create(const pyq_adapter_params_t *p, void **handle)
{
    uint64_t want = p->capacity_bytes / sizeof(Msg32);
    unsigned slots = kMinSlots;

    if (p->msg_size != sizeof(Msg32) || want < 1)
        return PYQ_EINVAL;
    // A power of two (the run-time queue rounds up; round down to stay within
    // the budget), capped where the library's unsigned indices stop.
    while (static_cast<uint64_t>(slots) * 2 <= want && slots < (1u << 30))
        slots *= 2;
    return pyq_peer_make<Handle>(want == kPeerFixedSlots, slots, handle);
}

void aq_destroy(void *h)
{
    delete static_cast<Handle *>(h);
}

uint64_t aq_capacity(void *h)
{
    return static_cast<Handle *>(h)->q.apply([](auto &q) { return q.capacity(); });
}

PYQ_PEER_OP int aq_try_write(void *p, const void *msg, uint32_t)
{
    Handle *h = static_cast<Handle *>(p);
    Msg32 m;

    std::memcpy(&m, msg, sizeof m);
    return h->q.apply([&](auto &q) { return q.try_push(m); }) ? 0 : PYQ_EAGAIN;
}

void aq_flush(void *)
{
    // each push is visible when it returns
}

PYQ_PEER_OP int64_t aq_poll(void *p, uint64_t max, pyq_message_fn fn, void *ctx)
{
    Handle *h = static_cast<Handle *>(p);

    return pyq_peer_deliver<Msg32>(max, fn, ctx, [&](Msg32 &m) PYQ_PEER_INLINE {
        return h->q.apply([&](auto &q) { return q.try_pop(m); });
    });
}

// The per-message rows' reader: one try_pop per message, as aq_poll, straight
// into the reader's array (no callback per message).
PYQ_PEER_OP int64_t aq_read_each(void *p, void *out, uint32_t max, uint32_t)
{
    Handle *h = static_cast<Handle *>(p);
    Msg32 *m = static_cast<Msg32 *>(out);

    return h->q.apply([&](auto &q) PYQ_PEER_INLINE {
        uint32_t n = 0;

        while (n < max && q.try_pop(m[n]))
            n++;
        return static_cast<int64_t>(n);
    });
}

// The per-message rows' streaming writer: aq_try_write in a loop (write_each).
PYQ_TWIN_WRITE_EACH(aq, aq_try_write)

// The round trip's receive: aq_poll(max 1) spun on in this file (read_spin).
PYQ_TWIN_READ_SPIN(aq, aq_poll)

const pyq_adapter_t adapter = {
    PYQ_ADAPTER_ABI, 0, "atomic_queue",
    aq_create, aq_destroy, aq_capacity, aq_try_write,
    nullptr, // try_write_burst: the library has none
    aq_flush, aq_poll,
    nullptr, // wait_readable
    nullptr, // read_burst: the library has no bulk pop
    aq_read_each,
    aq_write_each,
    aq_read_spin,
};

// The optimist calls of the second twin: they wait inside the library.  poll
// takes exactly max messages (the twin loops never ask for more than are
// still to come).
inline __attribute__((always_inline)) int aq_push_wait(void *p, const void *msg, uint32_t)
{
    Handle *h = static_cast<Handle *>(p);
    Msg32 m;

    std::memcpy(&m, msg, sizeof m);
    h->q.apply([&](auto &q) { q.push(m); });
    return 0;
}

inline __attribute__((always_inline)) int64_t aq_pop_wait(void *p, uint64_t max, pyq_message_fn fn,
                                                        void *ctx)
{
    Handle *h = static_cast<Handle *>(p);

    for (uint64_t n = 0; n < max; n++) {
        Msg32 m = h->q.apply([](auto &q) { return q.pop(); });
        int rc = fn(ctx, &m, sizeof m);
        if (rc != 0)
            return rc < 0 ? rc : static_cast<int64_t>(n + 1);
    }
    return static_cast<int64_t>(max);
}

// The twins: the operations above called directly, inlined (adapters/twin_pvt.h).
PYQ_TWIN_DEFINE_EACH(aq, adapter, aq_try_write, nullptr, aq_write_each, aq_poll, nullptr,
                     aq_read_each, aq_flush)
PYQ_TWIN_DEFINE(aqo, adapter, aq_push_wait, nullptr, aq_pop_wait, aq_flush)

const pyq_twin_t twins[] = {
    {"atomic_queue", "AtomicQueue2<Msg32, 32768, MINIMIZE_CONTENTION=false, "
     "MAXIMIZE_THROUGHPUT=false, TOTAL_ORDER=false, SPSC=true> (AtomicQueueB2 for other "
     "budgets): try_push / try_pop by value", 0, 0, aq_twin_throughput, aq_twin_roundtrip},
    {"atomic_queue_optimist", "the same queue with push / pop, which wait inside the library "
     "(its benchmark's OptimistAtomicQueue2 rows); no adapter can", PYQ_TWIN_NO_ADAPTER |
     PYQ_TWIN_BLOCKING, 0, aqo_twin_throughput, aqo_twin_roundtrip},
};

} // namespace

extern "C" __attribute__((visibility("default"))) const pyq_adapter_t *pyq_peer_adapter(void)
{
    return &adapter;
}

PYQ_TWIN_PEER_TABLE(twins)
