// rwq.cpp - moodycamel::ReaderWriterQueue behind the adapter interface (SPEC §7).
//
// try_enqueue / try_dequeue only: enqueue() would allocate a new block when
// full, and the lab compares bounded queues of one memory budget.  All blocks
// are allocated by the constructor.  Orderings are the library's own.
#include <cstdint>
#include <cstring>
#include <new>

#include <readerwriterqueue/readerwriterqueue.h>

extern "C" {
#include "adapters/pyq_adapter.h"
}

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

int rwq_try_write(void *h, const void *msg, uint32_t)
{
    Msg32 m;

    std::memcpy(&m, msg, sizeof m);
    return static_cast<Queue *>(h)->try_enqueue(m) ? 0 : PYQ_EAGAIN;
}

void rwq_flush(void *)
{
    // each enqueue is visible when it returns
}

int64_t rwq_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    Queue *q = static_cast<Queue *>(h);
    Msg32 m;
    uint64_t n = 0;

    while (n < max && q->try_dequeue(m)) {
        n++;
        int rc = fn(ctx, &m, sizeof m);
        if (rc != 0)
            return rc < 0 ? rc : static_cast<int64_t>(n);
    }
    return static_cast<int64_t>(n);
}

const pyq_adapter_t adapter = {
    PYQ_ADAPTER_ABI, 0, "rwq",
    rwq_create, rwq_destroy, rwq_capacity, rwq_try_write,
    nullptr, // try_write_burst
    rwq_flush, rwq_poll,
    nullptr, // wait_readable
};

} // namespace

extern "C" __attribute__((visibility("default"))) const pyq_adapter_t *pyq_peer_adapter(void)
{
    return &adapter;
}
