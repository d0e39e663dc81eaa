// boost.cpp - boost::lockfree::spsc_queue behind the adapter interface,
// and its inline twin.
//
// At its best for 32-byte messages, as boost's own example
// (libs/lockfree/examples/spsc_queue.cpp: spsc_queue<int, capacity<1024>>, push
// and pop in spin loops) and atomic_queue's benchmark of it (capacity<C>) use it:
// - compile-time capacity when the budget is the benchmark's (1 MiB of 32-byte
//   messages: kPeerFixedSlots), the run-time-sized queue otherwise; the choice is one
//   predictable branch per call;
// - 32-byte values by copy (push(const T&));
// - its bulk calls: the reader pops up to kBurst at a time (pop(T*, n): one index
//   load and one store per batch instead of per message), the burst rows write
//   with push(const T*, n) and read with pop(T*, n) into the reader's own array
//   (read_burst: no callback per message, as boost's bulk pop is used).  No
//   read_each: the per-message rows' poll already pops 32 per library call.
// Orderings are the library's own.
// A release build of the library, as its benchmarks are compiled (the calls
// used here assert nothing, but the build should not depend on that).
#ifndef NDEBUG
#define NDEBUG 1
#endif
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <boost/lockfree/spsc_queue.hpp>

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

constexpr uint32_t kBurst = 32;

// capacity<N> holds N - 1 messages.
using Fixed = boost::lockfree::spsc_queue<Msg32, boost::lockfree::capacity<kPeerFixedSlots + 1>>;
using Sized = boost::lockfree::spsc_queue<Msg32>;

struct Handle {
    Either<Fixed, Sized> q;
    uint64_t slots = 0;
    // Reader-owned: popped but not yet handed to the callback (it may stop a
    // poll in the middle of a batch).
    alignas(64) uint32_t stash_n = 0, stash_pos = 0;
    Msg32 stash[kBurst];
};

int boost_create(const pyq_adapter_params_t *p, void **handle)
{
    uint64_t slots = p->capacity_bytes / sizeof(Msg32);
    int rc;

    if (p->msg_size != sizeof(Msg32) || slots < 1)
        return PYQ_EINVAL;
    if ((rc = pyq_peer_make<Handle>(slots == kPeerFixedSlots, slots, handle)) == 0)
        static_cast<Handle *>(*handle)->slots = slots;
    return rc;
}

void boost_destroy(void *h)
{
    delete static_cast<Handle *>(h);
}

uint64_t boost_capacity(void *h)
{
    return static_cast<Handle *>(h)->slots;
}

PYQ_PEER_OP int boost_try_write(void *p, const void *msg, uint32_t)
{
    Handle *h = static_cast<Handle *>(p);
    Msg32 m;

    std::memcpy(&m, msg, sizeof m);
    return h->q.apply([&](auto &q) { return q.push(m); }) ? 0 : PYQ_EAGAIN;
}

PYQ_PEER_OP int64_t boost_try_write_burst(void *p, const void *msgs, uint32_t n, uint32_t)
{
    Handle *h = static_cast<Handle *>(p);
    const Msg32 *m = static_cast<const Msg32 *>(msgs);

    return static_cast<int64_t>(h->q.apply([&](auto &q) PYQ_PEER_INLINE { return q.push(m, n); }));
}

void boost_flush(void *)
{
    // each push is visible when it returns
}

PYQ_PEER_OP int64_t boost_poll(void *p, uint64_t max, pyq_message_fn fn, void *ctx)
{
    Handle *h = static_cast<Handle *>(p);
    uint64_t n = 0;

    while (n < max) {
        if (h->stash_pos == h->stash_n) {
            size_t want = static_cast<size_t>(std::min<uint64_t>(max - n, kBurst));

            h->stash_pos = 0;
            h->stash_n = static_cast<uint32_t>(h->q.apply([&](auto &q) {
                return q.pop(h->stash, want);
            }));
            if (h->stash_n == 0)
                break;
        }
        n++;
        int rc = fn(ctx, &h->stash[h->stash_pos++], sizeof(Msg32));
        if (rc != 0)
            return rc < 0 ? rc : static_cast<int64_t>(n);
    }
    return static_cast<int64_t>(n);
}

// The burst rows' reader: pop(T *, n) straight into the caller's array, as
// boost's bulk pop is meant to be used; what an earlier poll popped but did not
// deliver goes first (FIFO).
PYQ_PEER_OP int64_t boost_read_burst(void *p, void *out, uint32_t max, uint32_t)
{
    Handle *h = static_cast<Handle *>(p);
    Msg32 *m = static_cast<Msg32 *>(out);
    uint32_t n = 0;

    while (h->stash_pos < h->stash_n && n < max)
        m[n++] = h->stash[h->stash_pos++];
    if (n == max)
        return n;
    return n + static_cast<int64_t>(
                   h->q.apply([&](auto &q) PYQ_PEER_INLINE { return q.pop(m + n, max - n); }));
}

// The per-message rows' streaming writer: boost_try_write in a loop (write_each).
PYQ_TWIN_WRITE_EACH(boost, boost_try_write)

// The round trip's receive: boost_poll(max 1) spun on in this file (read_spin).
PYQ_TWIN_READ_SPIN(boost, boost_poll)

const pyq_adapter_t adapter = {
    PYQ_ADAPTER_ABI, 0, "boost",
    boost_create, boost_destroy, boost_capacity, boost_try_write,
    boost_try_write_burst,
    boost_flush, boost_poll,
    nullptr, // wait_readable
    boost_read_burst,
    nullptr, // read_each: boost_poll pops 32 per library call already
    boost_write_each,
    boost_read_spin,
};

// The twin: the operations above called directly, inlined (adapters/twin_pvt.h).
PYQ_TWIN_DEFINE_EACH(boost, adapter, boost_try_write, boost_try_write_burst, boost_write_each,
                     boost_poll,
                     boost_read_burst, nullptr, boost_flush)

const pyq_twin_t twins[] = {
    {"boost", "spsc_queue<Msg32, capacity<32769>> (run-time size for other budgets): "
     "push(const T&) (burst rows: push(const T*, n)) / pop(T*, 32) (burst rows: pop(T*, 32) "
     "into the reader's array)", PYQ_TWIN_HAS_BURST, 0,
     boost_twin_throughput, boost_twin_roundtrip},
};

} // namespace

extern "C" __attribute__((visibility("default"))) const pyq_adapter_t *pyq_peer_adapter(void)
{
    return &adapter;
}

PYQ_TWIN_PEER_TABLE(twins)
