/*
 * producer.c - the producer thread's loop: a scripted load of
 * count messages carrying pyq_pattern content, in bursts of burst_bytes
 * separated by gaps, each message sent at the time the token-bucket pacer
 * scheduled for it.  The schedule never depends on when earlier messages
 * actually went out, so (offer_ns - scheduled_ns) and (dequeue_ns -
 * scheduled_ns) include every delay the queue caused (no coordinated omission).
 * Messages are built in place (claim + fill + commit): no staging copy.  No
 * allocation or lock; system calls only in the pacer's sleeps for long gaps and
 * the queue's own full-queue yields.
 */
#include "common/pyq_pattern.h"
#include "runtime/thread_pvt.h"

/* A full queue is waited on in slices this long, so a stop request is seen. */
#define WRITE_SLICE_NS 10000000

/* Claim len bytes, waiting while the queue is full until stopped. */
static int claim(struct pyq_thread *t, uint32_t len, void **ptr)
{
    for (;;) {
        int rc = pyq_writer_claim(t->q, len, WRITE_SLICE_NS, ptr);
        if (rc != PYQ_EAGAIN)
            return rc;
        t->res.full_waits++;
        if (pyq_thread_stopping(t))
            return PYQ_EINTR;
    }
}

static void end_burst(struct pyq_thread *t)
{
    const pyq_producer_config_t *cfg = &t->cfg.p;
    int cpu;

    if (cfg->flush_each_burst)
        pyq_writer_flush(t->q);
    cpu = pyq_thread_sample_cpu(t); /* outside the send: spots migrated bursts */
    if (cfg->burst_cpu && t->res.bursts < cfg->bursts_cap)
        cfg->burst_cpu[t->res.bursts] = (uint64_t)(int64_t)cpu;
    t->res.bursts++;
}

void pyq_producer_run(struct pyq_thread *t)
{
    const pyq_producer_config_t *cfg = &t->cfg.p;
    uint64_t cap = cfg->samples_cap;
    uint64_t *sched_out = cap ? cfg->scheduled_ns : NULL;
    uint64_t *offer_out = cap ? cfg->offer_ns : NULL;
    uint64_t seq = cfg->first_seq, i = 0, bytes = 0, in_burst = 0;
    uint64_t ready = t->res.start_ns + cfg->start_delay_ns, sched = ready;
    pyq_pacer_t pacer;
    int rc = 0;

    pyq_pacer_init(&pacer, cfg->rate, cfg->pacer_burst, 0); /* checked at start */
    t->res.end = PYQ_END_DONE;
    while (i < cfg->count) {
        uint32_t len;
        uint64_t now;
        void *ptr;

        if (pyq_thread_stopping(t)) {
            t->res.end = PYQ_END_STOPPED;
            break;
        }
        if (cfg->fault == PYQ_FAULT_SKIP && seq == cfg->fault_seq)
            seq++; /* test fault: this seq is never sent */
        len = pyq_pattern_len(seq, cfg->size_lo, cfg->size_hi, cfg->size_salt);
        sched = pyq_pacer_next(&pacer, ready);
        now = pyq_pacer_wait_until(&pacer, sched, &t->stop);
        if (now < sched)
            continue; /* stopped while waiting: the check above ends the loop */
        if (sched_out && i < cap) {
            sched_out[i] = sched;
            offer_out[i] = now;
        }
        rc = claim(t, len, &ptr);
        if (rc != 0)
            break;
        pyq_pattern_fill(ptr, len, seq);
        if (cfg->fault == PYQ_FAULT_CORRUPT && seq == cfg->fault_seq && len > 0)
            ((uint8_t *)ptr)[len - 1] ^= 0x5a; /* test fault: one wrong byte */
        pyq_writer_commit(t->q);
        i++;
        seq++;
        bytes += len;
        in_burst += len;
        pyq_thread_progress(t, i);
        if (cfg->burst_bytes && in_burst >= cfg->burst_bytes && i < cfg->count) {
            end_burst(t);
            in_burst = 0;
            ready = sched + cfg->gap_ns;
        }
    }
    if (rc == PYQ_EINTR) {
        t->res.end = PYQ_END_STOPPED;
    } else if (rc == PYQ_ECLOSED) {
        t->res.end = PYQ_END_CLOSED;
        t->res.first_error = rc;
        t->res.error_seq = seq;
    } else if (rc != 0) {
        t->res.end = PYQ_END_ERROR;
        t->res.first_error = rc;
        t->res.error_seq = seq;
    }
    if (rc != PYQ_ECLOSED)
        end_burst(t); /* the last burst, flushed even without flush_each_burst */
    /* Always, closed or not: every message counted as sent must be published,
     * or a consumer draining the closed queue could never see it. */
    pyq_writer_flush(t->q);
    t->res.messages = i;
    t->res.bytes = bytes;
}
