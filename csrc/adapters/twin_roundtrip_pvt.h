/*
 * twin_roundtrip_pvt.h - the single-message round trip: side B's echo, side
 * A's timed loop and the run that starts and joins them, for the driver and
 * every twin (twin_pvt.h says how each is instantiated).  Never installed.
 */
#ifndef PYQ_TWIN_ROUNDTRIP_PVT_H
#define PYQ_TWIN_ROUNDTRIP_PVT_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/twin_base_pvt.h"

struct pyq_twin_rt {
    const pyq_adapter_t *a;  /* the queues' table (the driver calls through it) */
    void *ab, *ba;
    uint64_t trips;          /* timed trips + PYQ_TWIN_WARMUP_TRIPS */
    int32_t cpu_b;
    int ticks;               /* samples in cycle-counter ticks (1) or ns (0) */
    PYQ_TWIN_LINE int ready;
    PYQ_TWIN_LINE int err;
};

/* Send seq (retrying when full), then flush.  0, PYQ_EINTR (the other side
 * failed), or the queue's code. */
PYQ_TWIN_INLINE int pyq_twin_send(void *q, pyq_twin_msg_t *m, uint64_t seq, const int *err,
                                  pyq_twin_write_fn try_write, pyq_twin_flush_fn flush)
{
    uint64_t fails = 0;
    int rc;

    m->seq = seq;
    while ((rc = try_write(q, m, sizeof *m)) == PYQ_EAGAIN)
        if (pyq_twin_full_wait(&fails, err))
            return PYQ_EINTR;
    flush(q);
    return rc;
}

/* Spin, without relax, on poll(max 1) until one message arrives or *stop is
 * set; its sequence number is checked in poll's callback.  An adapter's
 * read_spin (PYQ_TWIN_READ_SPIN) and a twin's receive are this loop.
 * 1, 0 (stopped, nothing taken), PYQ_EBADMSG (another number, consumed) or
 * poll's negative code. */
PYQ_TWIN_INLINE int64_t pyq_twin_spin(void *q, uint64_t seq, const int *stop,
                                      pyq_twin_poll_fn poll)
{
    struct pyq_twin_seq s = {seq};
    int64_t k;

    while ((k = poll(q, 1, pyq_twin_next, &s)) == 0)
        if (pyq_twin_failed(stop))
            return 0;
    return k;
}

/* Receive seq: through the adapter's read_spin where it has one (one call per
 * message, not one per empty poll), else pyq_twin_spin over poll.  0,
 * PYQ_EINTR (the other side failed), PYQ_EBADMSG or the queue's code. */
PYQ_TWIN_INLINE int pyq_twin_recv(void *q, uint64_t seq, const int *err, pyq_twin_poll_fn poll,
                                  pyq_twin_spin_fn spin)
{
    int64_t k = spin ? spin(q, seq, err) : pyq_twin_spin(q, seq, err, poll);

    return k == 0 ? PYQ_EINTR : k < 0 ? (int)k : 0;
}

/* Side B: pin, meet A, echo every message back. */
PYQ_TWIN_INLINE void pyq_twin_echo(struct pyq_twin_rt *t, pyq_twin_write_fn try_write,
                                   pyq_twin_poll_fn poll, pyq_twin_spin_fn spin,
                                   pyq_twin_flush_fn flush)
{
    pyq_twin_msg_t m;
    int rc = pyq_twin_pin(t->cpu_b);

    memset(&m, 0x5A, sizeof m);
    if (rc)
        pyq_twin_fail(&t->err, rc);
    pyq_twin_meet(&t->ready);
    for (uint64_t i = 0; i < t->trips && !rc; i++)
        if ((rc = pyq_twin_recv(t->ab, i, &t->err, poll, spin)) == 0)
            rc = pyq_twin_send(t->ba, &m, i, &t->err, try_write, flush);
    if (rc && rc != PYQ_EINTR)
        pyq_twin_fail(&t->err, rc);
}

/* Side A: the timed loop, stamps in ticks or ns (a constant in a twin).
 * 0 or the first error. */
PYQ_TWIN_INLINE int pyq_twin_timed(struct pyq_twin_rt *t, uint64_t *samples,
                                   pyq_twin_write_fn try_write, pyq_twin_poll_fn poll,
                                   pyq_twin_spin_fn spin, pyq_twin_flush_fn flush,
                                   const int ticks)
{
    pyq_twin_msg_t m;
    int rc = pyq_twin_failed(&t->err);

    memset(&m, 0x5A, sizeof m);
    for (uint64_t i = 0; i < t->trips && !rc; i++) {
        uint64_t t0 = ticks ? pyq_twin_stamp() : pyq_twin_now_ns();
        rc = pyq_twin_send(t->ab, &m, i, &t->err, try_write, flush);
        if (!rc)
            rc = pyq_twin_recv(t->ba, i, &t->err, poll, spin);
        if (i >= PYQ_TWIN_WARMUP_TRIPS)
            samples[i - PYQ_TWIN_WARMUP_TRIPS] =
                (ticks ? pyq_twin_stamp() : pyq_twin_now_ns()) - t0;
    }
    return rc;
}

/* Run echo (side B) on a new thread and timed (side A) on the calling one,
 * pinned to cpu_a, over t (ab, ba, trips, cpu_b, ticks set).  0 or the first
 * error: the echo's own when A gave up for it. */
static inline int pyq_twin_rt_go(struct pyq_twin_rt *t, int32_t cpu_a, uint64_t *samples,
                                 void *(*echo)(void *),
                                 int (*timed)(struct pyq_twin_rt *, uint64_t *))
{
    pthread_t th;
    int rc;

    if ((rc = pthread_create(&th, NULL, echo, t)) != 0)
        return -rc;
    /* A pins itself once the echo exists (it inherits A's affinity: stuck on A's
     * CPU behind a spinning SCHED_FIFO A it would never run). */
    if ((rc = pyq_twin_pin(cpu_a)) != 0)
        pyq_twin_fail(&t->err, rc);
    pyq_twin_meet(&t->ready);
    if (!rc)
        rc = timed(t, samples);
    if (rc && rc != PYQ_EINTR)  /* the echo may be spinning on ab: tell it */
        pyq_twin_fail(&t->err, rc);
    pthread_join(th, NULL);
    if (!rc || rc == PYQ_EINTR)  /* A gave up for the echo: keep the echo's code */
        rc = pyq_twin_failed(&t->err) ? pyq_twin_failed(&t->err) : rc;
    return rc;
}

/* A twin's round trip: two new queues from the adapter's create(), warmed,
 * run, destroyed; samples in PYQ_TWIN_TICKS's unit. */
static inline int pyq_twin_roundtrip_run(const pyq_adapter_t *a, const pyq_twin_params_t *p,
                                         uint64_t *samples, pyq_twin_result_t *res,
                                         void *(*echo)(void *),
                                         int (*timed)(struct pyq_twin_rt *, uint64_t *))
{
    struct pyq_twin_rt *t;
    void *ab = NULL, *ba = NULL;
    int rc;

    memset(res, 0, sizeof *res);
    res->samples_in_ticks = PYQ_TWIN_TICKS;
    if (!samples && p->round_trips)
        return res->error = PYQ_EINVAL;
    if (posix_memalign((void **)&t, 64, sizeof *t) != 0)
        return res->error = PYQ_ENOMEM;
    memset(t, 0, sizeof *t);
    if ((rc = a->create(&p->queue, &ab)) != 0 || (rc = a->create(&p->queue, &ba)) != 0 ||
        (rc = pyq_twin_warm(a, ab)) != 0 || (rc = pyq_twin_warm(a, ba)) != 0)
        goto out;
    t->a = a;
    t->ab = ab;
    t->ba = ba;
    t->trips = (uint64_t)p->round_trips + PYQ_TWIN_WARMUP_TRIPS;
    t->cpu_b = p->reader_cpu;
    t->ticks = PYQ_TWIN_TICKS;
    rc = pyq_twin_rt_go(t, p->writer_cpu, samples, echo, timed);
    res->messages = rc ? 0 : p->round_trips;
    res->capacity = a->capacity(ab);
out:
    if (ab)
        a->destroy(ab);
    if (ba)
        a->destroy(ba);
    free(t);
    return res->error = rc;
}

#endif /* PYQ_TWIN_ROUNDTRIP_PVT_H */
