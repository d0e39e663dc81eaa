/* ring_floor.c - the round-trip yardstick "ring_floor" (not a peer): the
 * least a ring queue can do per message, behind the same adapter vtable as
 * pyqueue and the peers, so the bench's round-trip driver measures it exactly as
 * it measures them.  The ping-pong floor reuses one line every trip; a ring
 * hands each message over in a fresh line, and this row prices a plain one:
 * nothing is prefetched or touched ahead, so the writer takes each slot's line
 * over from the reader on the critical path (deliberately: the plain case).
 *
 * One 64-byte slot per message: an 8-byte sequence word and the 32-byte payload
 * in one line, so one line transfer delivers both (DESIGN §3.3).  The writer stores
 * the payload, then the slot's sequence (message i commits seq i + 1; a slot's
 * sequence only grows, so a stale lap never matches).  The reader spins on the
 * sequence of the next message it expects, copies the payload out and then
 * publishes its consumed count; the writer caches that count and reloads it only
 * when the ring looks full (once a lap in a round trip).
 *
 * Single writer thread, single reader thread.  Fixed PYQ_ADAPTER_MSG_SIZE
 * messages; PYQ_RING_FLOOR_SLOTS slots, fewer when capacity_bytes is smaller.
 * Ordering labels: RF-P<n> on the producer (writer) side, RF-C<n> on the
 * consumer's; one number, one edge. */
#define _GNU_SOURCE /* the twin's pinning (adapters/twin_pvt.h) */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/private.h"
#include "adapters/pyq_adapter.h"
#include "adapters/twin_pvt.h"

struct rf_slot {
    _Atomic uint64_t seq;                /* RF-P1 / RF-C1: message seq - 1 is in pay */
    uint8_t pay[PYQ_ADAPTER_MSG_SIZE];
} __attribute__((aligned(PYQ_CACHELINE)));

_Static_assert(sizeof(struct rf_slot) == PYQ_CACHELINE, "one slot = one cache line");

struct rf_queue {
    PYQ_ALIGNED_LINE uint64_t head;      /* writer: next message to write */
    uint64_t tail_cache;                 /* writer: last consumed count it saw */
    PYQ_ALIGNED_LINE _Atomic uint64_t tail; /* reader: messages consumed (RF-C2 / RF-P2) */
    PYQ_ALIGNED_LINE uint64_t mask;      /* read-only after create */
    struct rf_slot *slots;
};

_Static_assert(offsetof(struct rf_queue, tail) - offsetof(struct rf_queue, head) >= PYQ_CACHELINE,
               "writer and reader fields on separate lines");

static int rf_create(const pyq_adapter_params_t *p, void **handle)
{
    struct rf_queue *q;
    uint64_t n = PYQ_RING_FLOOR_SLOTS;

    if (p->msg_size != PYQ_ADAPTER_MSG_SIZE)
        return PYQ_EINVAL;
    while (n > 1 && n * sizeof(struct rf_slot) > p->capacity_bytes)
        n >>= 1;                         /* stay within the common memory budget */
    if (n * sizeof(struct rf_slot) > p->capacity_bytes || n < 2)
        return PYQ_EINVAL;
    q = aligned_alloc(PYQ_CACHELINE, sizeof *q);
    if (!q)
        return PYQ_ENOMEM;
    memset(q, 0, sizeof *q);
    q->mask = n - 1;
    q->slots = aligned_alloc(PYQ_CACHELINE, n * sizeof(struct rf_slot));
    if (!q->slots) {
        free(q);
        return PYQ_ENOMEM;
    }
    memset(q->slots, 0, n * sizeof(struct rf_slot)); /* seq 0: no message yet */
    *handle = q;
    return 0;
}

static void rf_destroy(void *h)
{
    struct rf_queue *q = h;

    if (q) {
        free(q->slots);
        free(q);
    }
}

static uint64_t rf_capacity(void *h)
{
    return ((struct rf_queue *)h)->mask + 1;
}

/* len is PYQ_ADAPTER_MSG_SIZE by the adapter contract (create refused others). */
static int rf_try_write(void *h, const void *msg, uint32_t len)
{
    struct rf_queue *q = h;
    uint64_t i = q->head;
    struct rf_slot *s;

    if (i - q->tail_cache > q->mask) {
        /* RF-P2: pairs with RF-C2 in rf_poll -- the reader has copied every message
         * below tail out, so their slots may be overwritten. */
        q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
        if (i - q->tail_cache > q->mask)
            return PYQ_EAGAIN;
    }
    s = &q->slots[i & q->mask];
    memcpy(s->pay, msg, PYQ_ADAPTER_MSG_SIZE);
    /* RF-P1: commit message i; pairs with RF-C1 in rf_poll (payload before seq). */
    atomic_store_explicit(&s->seq, i + 1, memory_order_release);
    q->head = i + 1;
    return 0;
}

static void rf_flush(void *h)
{
    (void)h; /* every write is visible when its seq store is */
}

static int64_t rf_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct rf_queue *q = h;
    uint8_t msg[PYQ_ADAPTER_MSG_SIZE] __attribute__((aligned(8)));
    uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed); /* own field */
    uint64_t n = 0;
    int rc = 0;

    while (n < max) {
        struct rf_slot *s = &q->slots[t & q->mask];

        /* RF-C1: pairs with RF-P1 in rf_try_write -- seq t + 1 means the payload is in. */
        if (atomic_load_explicit(&s->seq, memory_order_acquire) != t + 1)
            break;
        memcpy(msg, s->pay, PYQ_ADAPTER_MSG_SIZE);
        t++;
        n++;
        /* RF-C2: the slot is copied out, the writer may reuse it; pairs with RF-P2. */
        atomic_store_explicit(&q->tail, t, memory_order_release);
        if ((rc = fn(ctx, msg, PYQ_ADAPTER_MSG_SIZE)) != 0)
            break;
    }
    return rc < 0 ? rc : (int64_t)n;
}

/* The round trip's receive: rf_poll(max 1) spun on in this file (read_spin). */
PYQ_TWIN_READ_SPIN(rf, rf_poll)

PYQ_PRIVATE const pyq_adapter_t pyq_adapter_ring_floor = {
    .abi = PYQ_ADAPTER_ABI,
    .name = "ring_floor",
    .create = rf_create,
    .destroy = rf_destroy,
    .capacity = rf_capacity,
    .try_write = rf_try_write,
    .try_write_burst = NULL,
    .flush = rf_flush,
    .poll = rf_poll,
    .wait_readable = NULL,
    .read_spin = rf_read_spin,
};

/* The twin: the same operations called directly (adapters/twin_pvt.h). */
PYQ_TWIN_DEFINE(rf, pyq_adapter_ring_floor, rf_try_write, NULL, rf_poll, rf_flush)

static const pyq_twin_t rf_twins[] = {
    {"ring_floor", "rf_try_write / rf_poll inlined: a 64-byte slot per message", 0, 0,
     rf_twin_throughput, rf_twin_roundtrip},
};

PYQ_PRIVATE const pyq_twin_table_t pyq_twin_ring_floor = {PYQ_TWIN_ABI, 1, rf_twins};
