/* adapter_mutex.c - the textbook baseline (DESIGN §7.2): a bounded ring of
 * fixed-size slots under one pthread mutex, a condition variable signalled on
 * every write.  The mutex orders everything, so no atomics here.  The one
 * mutex queue of the lab: the peers benchmark polls it like any queue, the
 * pipeline's readers sleep on its condition variable (wait_readable). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/atomic.h"
#include "common/private.h"
#include "adapters/pyq_adapter.h"

struct mutex_queue {
    pthread_mutex_t lock;
    pthread_cond_t readable;  /* signalled after each write */
    uint64_t head;            /* next slot to read */
    uint64_t tail;            /* next slot to write */
    uint64_t count;           /* messages in the ring */
    uint64_t nslots;
    uint32_t msg_size;
    uint8_t *slots;           /* nslots * msg_size bytes, mmap()ed */
    size_t map_bytes;
};

static int mq_create(const pyq_adapter_params_t *p, void **handle)
{
    struct mutex_queue *m;
    pthread_condattr_t ca;

    /* 64 KiB cap: poll copies a message to its stack. */
    if (p->msg_size == 0 || p->msg_size > 65536 || p->capacity_bytes / p->msg_size < 1)
        return PYQ_EINVAL;
    /* Line-aligned, so every queue has the same layout across cache lines: the
     * lock and the indices it guards then share the same lines in every run
     * (calloc's 16-byte alignment moved the boundaries from queue to queue). */
    m = aligned_alloc(PYQ_CACHELINE, (sizeof *m + PYQ_CACHELINE - 1) & ~(size_t)(PYQ_CACHELINE - 1));
    if (!m)
        return PYQ_ENOMEM;
    memset(m, 0, sizeof *m);
    m->msg_size = p->msg_size;
    m->nslots = p->capacity_bytes / p->msg_size;
    m->map_bytes = m->nslots * m->msg_size;
    m->slots = mmap(NULL, m->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->slots == MAP_FAILED) {
        free(m);
        return PYQ_ENOMEM;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->readable, &ca);
    pthread_condattr_destroy(&ca);
    *handle = m;
    return 0;
}

static void mq_destroy(void *h)
{
    struct mutex_queue *m = h;

    if (!m)
        return;
    pthread_cond_destroy(&m->readable);
    pthread_mutex_destroy(&m->lock);
    munmap(m->slots, m->map_bytes);
    free(m);
}

static uint64_t mq_capacity(void *h)
{
    return ((struct mutex_queue *)h)->nslots;
}

static int mq_try_write(void *h, const void *msg, uint32_t len)
{
    struct mutex_queue *m = h;

    pthread_mutex_lock(&m->lock);
    if (m->count == m->nslots) {
        pthread_mutex_unlock(&m->lock);
        return PYQ_EAGAIN;
    }
    memcpy(m->slots + m->tail * m->msg_size, msg, m->msg_size);
    m->tail = m->tail + 1 == m->nslots ? 0 : m->tail + 1;
    m->count++;
    pthread_mutex_unlock(&m->lock);
    pthread_cond_signal(&m->readable);
    return 0;
}

static void mq_flush(void *h)
{
    (void)h; /* every write is visible when its lock is released */
}

/* One message out under the lock into dst: 1, or 0 when the ring is empty. */
static inline int mq_take(struct mutex_queue *m, void *dst)
{
    pthread_mutex_lock(&m->lock);
    if (m->count == 0) {
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    memcpy(dst, m->slots + m->head * m->msg_size, m->msg_size);
    m->head = m->head + 1 == m->nslots ? 0 : m->head + 1;
    m->count--;
    pthread_mutex_unlock(&m->lock);
    return 1;
}

/* One lock round per message, callback outside the lock: the classic
 * lock-pop-unlock-process consumer. */
static int64_t mq_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct mutex_queue *m = h;
    uint8_t msg[m->msg_size];
    uint64_t n = 0;

    while (n < max && mq_take(m, msg)) {
        n++;
        int rc = fn(ctx, msg, m->msg_size);
        if (rc != 0)
            return rc < 0 ? rc : (int64_t)n;
    }
    return (int64_t)n;
}

/* The per-message rows' reader: mq_poll's mq_take per message, straight
 * into the reader's array (read_each; no callback per message), so the driver's
 * reader and the twin's run the same loop. */
static int64_t mq_read_each(void *h, void *out, uint32_t max, uint32_t len)
{
    struct mutex_queue *m = h;
    uint8_t *o = out;
    uint32_t n = 0;

    if (len < m->msg_size)
        return PYQ_EINVAL;
    while (n < max && mq_take(m, o + (size_t)n * len))
        n++;
    return n;
}

static int mq_wait_readable(void *h, int64_t timeout_ns)
{
    struct mutex_queue *m = h;
    struct timespec ts;
    int rc = 0;

    if (timeout_ns < 0) { /* no limit */
        pthread_mutex_lock(&m->lock);
        while (m->count == 0)
            pthread_cond_wait(&m->readable, &m->lock);
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ns / 1000000000;
    ts.tv_nsec += timeout_ns % 1000000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&m->lock);
    while (m->count == 0 && rc == 0)
        rc = pthread_cond_timedwait(&m->readable, &m->lock, &ts);
    pthread_mutex_unlock(&m->lock);
    return rc == ETIMEDOUT ? PYQ_EAGAIN : 0;
}

#include "adapters/twin_pvt.h"

/* The per-message rows' streaming writer: mq_try_write in a loop (write_each). */
PYQ_TWIN_WRITE_EACH(mq, mq_try_write)

/* The round trip's receive: mq_poll(max 1) spun on in this file (read_spin). */
PYQ_TWIN_READ_SPIN(mq, mq_poll)

PYQ_PRIVATE const pyq_adapter_t pyq_adapter_mutex = {
    .abi = PYQ_ADAPTER_ABI,
    .name = "mutex",
    .create = mq_create,
    .destroy = mq_destroy,
    .capacity = mq_capacity,
    .try_write = mq_try_write,
    .try_write_burst = NULL,
    .flush = mq_flush,
    .poll = mq_poll,
    .wait_readable = mq_wait_readable,
    .read_each = mq_read_each,
    .write_each = mq_write_each,
    .read_spin = mq_read_spin,
};

/* The twin: the same operations called directly (adapters/twin_pvt.h). */
PYQ_TWIN_DEFINE_EACH(mq, pyq_adapter_mutex, mq_try_write, NULL, mq_write_each, mq_poll, NULL,
                     mq_read_each, mq_flush)

static const pyq_twin_t mq_twins[] = {
    {"mutex", "mq_try_write / mq_poll inlined: lock, copy, unlock, signal", 0, 0,
     mq_twin_throughput, mq_twin_roundtrip},
};

PYQ_PRIVATE const pyq_twin_table_t pyq_twin_mutex = {PYQ_TWIN_ABI, 1, mq_twins};
