/* pyqueue.c - pyqueue itself behind the adapter interface. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "common/private.h"
#include "adapters/pyq_adapter.h"
#include "adapters/twin_pvt.h"

struct pq_handle {
    pyq_queue_t *q;
    uint64_t capacity; /* messages of msg_size that fit in the pool */
};

static int pq_create(const pyq_adapter_params_t *p, void **handle)
{
    struct pq_handle *ph;
    uint32_t rec, align, per_block;
    int rc;

    if (p->msg_size == 0 || p->queue.block_size < PYQ_MIN_BLOCK_SIZE ||
        p->msg_size > p->queue.block_size - PYQ_RECORD_HEADER)
        return PYQ_EINVAL;
    ph = calloc(1, sizeof *ph);
    if (!ph)
        return PYQ_ENOMEM;
    rc = pyq_queue_create(&p->queue, &ph->q);
    if (rc != 0) {
        free(ph);
        return rc;
    }
    /* Records are a header + the payload, the whole padded to 8 -- to 64 with
     * scan_current (pyqueue.h).  Under publish max without scan_current the
     * messages of a block form one run: one record, then a payload padded to 8
     * each (DESIGN §3.1). */
    align = p->queue.scan_current ? PYQ_RECORD_ALIGN_SCAN : PYQ_RECORD_ALIGN;
    rec = (PYQ_RECORD_HEADER + p->msg_size + align - 1) & ~(align - 1);
    per_block = p->queue.block_size / rec;
    if (p->queue.publish == PYQ_PUBLISH_MAX && !p->queue.scan_current)
        per_block = 1 + (p->queue.block_size - rec) / ((p->msg_size + 7u) & ~7u);
    ph->capacity = (uint64_t)per_block *
                   ((uint64_t)p->queue.hot_blocks + p->queue.spill_blocks);
    *handle = ph;
    return 0;
}

static void pq_destroy(void *h)
{
    struct pq_handle *ph = h;

    if (ph) {
        pyq_queue_destroy(ph->q);
        free(ph);
    }
}

static uint64_t pq_capacity(void *h)
{
    return ((struct pq_handle *)h)->capacity;
}

static int pq_try_write(void *h, const void *msg, uint32_t len)
{
    return pyq_writer_try_write(((struct pq_handle *)h)->q, msg, len);
}

static int64_t pq_try_write_burst(void *h, const void *msgs, uint32_t n, uint32_t len)
{
    int err = 0;
    int64_t k = pyq_writer_write_batch(((struct pq_handle *)h)->q, msgs, n, len, 0, &err);

    return (k == 0 && err != 0 && err != PYQ_EAGAIN) ? err : k;
}

static void pq_flush(void *h)
{
    pyq_writer_flush(((struct pq_handle *)h)->q);
}

static int64_t pq_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    return pyq_reader_poll(((struct pq_handle *)h)->q, max, fn, ctx);
}

/* The burst rows' reader: fixed-size messages copied out whole (the C side of
 * Reader.poll_into), no callback per message. */
static int64_t pq_read_burst(void *h, void *out, uint32_t max, uint32_t len)
{
    return pyq_reader_poll_fixed(((struct pq_handle *)h)->q, out, max, len);
}

/* The per-message rows' streaming writer (write_each): the public inline fast
 * path (pyqueue_inline.h: the common case in this loop, the rest the library's
 * pyq_writer_try_write) in a loop, as a C program writing one message at a time
 * at its fastest would. */
static inline int pq_try_write_inline(void *q, const void *msg, uint32_t len)
{
    return pyq_writer_try_write_inline(q, msg, len);
}

PYQ_TWIN_WRITE_EACH(pq_q, pq_try_write_inline)

/* The loop on the queue itself, as a C writer holds it: through the handle,
 * every message's copy (its stores may alias the handle) would make the loop
 * load the queue's address again. */
static int64_t pq_write_each(void *h, const void *msgs, uint32_t n, uint32_t len)
{
    return pq_q_write_each(((struct pq_handle *)h)->q, msgs, n, len);
}

/* The per-message rows' reader (read_each): the public inline poll
 * (pyqueue_inline.h) copying each message into the caller's array, its
 * callback inlined (adapters/twin_pvt.h) -- one indirect call per call, not
 * per message, as the rings' read_each. */
static int64_t pq_read_each(void *h, void *out, uint32_t max, uint32_t len)
{
    return pyq_twin_pq_read_each(((struct pq_handle *)h)->q, out, max, len);
}

/* The round trip's receive: pyq_reader_poll(max 1) spun on in this file
 * (read_spin), on the queue itself: through the handle, every empty poll
 * would load the queue's address again. */
static inline __attribute__((always_inline)) int64_t pq_q_poll(void *q, uint64_t max,
                                                               pyq_message_fn fn, void *ctx)
{
    return pyq_reader_poll(q, max, fn, ctx);
}

PYQ_TWIN_READ_SPIN(pq_q, pq_q_poll)

static int64_t pq_read_spin(void *h, uint64_t seq, const int *stop)
{
    return pq_q_read_spin(((struct pq_handle *)h)->q, seq, stop);
}

PYQ_PRIVATE const pyq_adapter_t pyq_adapter_pyqueue = {
    .abi = PYQ_ADAPTER_ABI,
    .name = "pyqueue",
    .create = pq_create,
    .destroy = pq_destroy,
    .capacity = pq_capacity,
    .try_write = pq_try_write,
    .try_write_burst = pq_try_write_burst,
    .flush = pq_flush,
    .poll = pq_poll,
    .wait_readable = NULL,
    .read_burst = pq_read_burst,
    .read_each = pq_read_each,
    .write_each = pq_write_each,
    .read_spin = pq_read_spin,
};
