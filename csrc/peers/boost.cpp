// boost.cpp - boost::lockfree::spsc_queue behind the adapter interface (SPEC §7).
//
// Run-time capacity (allocated once by the constructor), push / pop of 32-byte
// values.  Orderings are the library's own.
#include <cstdint>
#include <cstring>
#include <new>

#include <boost/lockfree/spsc_queue.hpp>

extern "C" {
#include "adapters/pyq_adapter.h"
}

namespace {

struct Msg32 {
    unsigned char b[PYQ_ADAPTER_MSG_SIZE];
};

struct Handle {
    explicit Handle(uint64_t n) : q(n), slots(n) {}
    boost::lockfree::spsc_queue<Msg32> q;
    uint64_t slots;
};

int boost_create(const pyq_adapter_params_t *p, void **handle)
{
    if (p->msg_size != sizeof(Msg32) || p->capacity_bytes / sizeof(Msg32) < 1)
        return PYQ_EINVAL;
    try {
        *handle = new Handle(p->capacity_bytes / sizeof(Msg32));
    } catch (const std::bad_alloc &) {
        return PYQ_ENOMEM;
    }
    return 0;
}

void boost_destroy(void *h)
{
    delete static_cast<Handle *>(h);
}

uint64_t boost_capacity(void *h)
{
    return static_cast<Handle *>(h)->slots;
}

int boost_try_write(void *h, const void *msg, uint32_t)
{
    Msg32 m;

    std::memcpy(&m, msg, sizeof m);
    return static_cast<Handle *>(h)->q.push(m) ? 0 : PYQ_EAGAIN;
}

void boost_flush(void *)
{
    // each push is visible when it returns
}

int64_t boost_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    auto &q = static_cast<Handle *>(h)->q;
    Msg32 m;
    uint64_t n = 0;

    while (n < max && q.pop(m)) {
        n++;
        int rc = fn(ctx, &m, sizeof m);
        if (rc != 0)
            return rc < 0 ? rc : static_cast<int64_t>(n);
    }
    return static_cast<int64_t>(n);
}

const pyq_adapter_t adapter = {
    PYQ_ADAPTER_ABI, 0, "boost",
    boost_create, boost_destroy, boost_capacity, boost_try_write,
    nullptr, // try_write_burst
    boost_flush, boost_poll,
    nullptr, // wait_readable
};

} // namespace

extern "C" __attribute__((visibility("default"))) const pyq_adapter_t *pyq_peer_adapter(void)
{
    return &adapter;
}
