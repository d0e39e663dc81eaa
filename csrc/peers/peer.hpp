// peer.hpp - what the C++ peer adapters share (header-only: each peer is its
// own shared object).
//
// Either: a queue whose type is chosen when it is created: the library's
// compile-time-capacity variant when the budget is the benchmark's, its
// run-time-sized one otherwise (boost.cpp, atomic_queue.cpp).  Each call goes
// to the one that exists: a branch on a pointer the handle's line already
// holds, always the same way for a queue.
#ifndef PYQ_PEERS_PEER_HPP
#define PYQ_PEERS_PEER_HPP

#include <cstdint>
#include <memory>
#include <new>

// For an adapter's hot operations (try_write, try_write_burst, poll), in a file
// that also holds their twin: the twin's call sites must not change what the
// compiler inlines into the adapter's own copy (a library template called from
// both, such as moodycamel's inner_enqueue, may otherwise stay a call in the
// adapter and not in the twin).
#define PYQ_PEER_OP __attribute__((flatten))

// For the lambdas given to apply(): inlined like apply itself (a lambda with a
// loop inside may otherwise stay a call).
#define PYQ_PEER_INLINE __attribute__((always_inline))

// The benchmark's budget, 1 MiB, in 32-byte slots: where compile-time capacity pays.
constexpr uint64_t kPeerFixedSlots = 32768;

template <class Fixed, class Sized>
struct Either {
    std::unique_ptr<Fixed> fixed; // exactly one of the two is set
    std::unique_ptr<Sized> sized;

    template <class F>
    __attribute__((always_inline)) decltype(auto) apply(F &&f)
    {
        return fixed ? f(*fixed) : f(*sized);
    }
};

// Make a Handle (which has an Either `q`) with the fixed queue when fixed is
// true, else Sized(size).  0, or PYQ_ENOMEM.
template <class Handle, class Size>
int pyq_peer_make(bool fixed, Size size, void **out)
{
    try {
        auto h = std::make_unique<Handle>();
        if (fixed)
            h->q.fixed.reset(new typename decltype(h->q.fixed)::element_type());
        else
            h->q.sized.reset(new typename decltype(h->q.sized)::element_type(size));
        *out = h.release();
    } catch (const std::bad_alloc &) {
        return PYQ_ENOMEM;
    }
    return 0;
}

// The adapter contract's poll (adapters/pyq_adapter.h) over a library that
// takes one message at a time: take(m) until it finds none or max are
// delivered; a nonzero return from fn stops after that message.
template <class Msg, class Take>
__attribute__((always_inline)) inline int64_t pyq_peer_deliver(uint64_t max, pyq_message_fn fn,
                                                               void *ctx, Take &&take)
{
    Msg m;

    for (uint64_t n = 0; n < max;) {
        if (!take(m))
            return static_cast<int64_t>(n);
        n++;
        if (int rc = fn(ctx, &m, sizeof m))
            return rc < 0 ? rc : static_cast<int64_t>(n);
    }
    return static_cast<int64_t>(max);
}

#endif // PYQ_PEERS_PEER_HPP
