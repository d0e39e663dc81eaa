/*
 * consumer.c - the consumer thread's loop: poll the queue,
 * run the chosen per-message work, verify every message against the next
 * expected seq (pyq_pattern), record dequeue times, idle when empty.  The first
 * verification failure ends the loop with PYQ_EBADMSG and the seq expected.
 * No allocation, lock or system call except the idle strategy's.
 */
#include "common/pyq_pattern.h"
#include "runtime/thread_pvt.h"

struct consume {
    uint64_t next_seq;
    uint64_t n;
    uint64_t bytes;
    uint64_t *ts;
    uint64_t cap;
    uint64_t work_ticks;
    uint64_t work_ns;
    uint64_t sink;
    uint64_t salt;
    uint32_t lo, hi;
    int32_t work;
    int32_t verify;
};

static int on_message(void *ctx, const void *msg, uint32_t len)
{
    struct consume *c = ctx;
    uint64_t seq = c->next_seq;

    if (c->ts && c->n < c->cap)
        c->ts[c->n] = pyq_now_ns();
    if (c->work == PYQ_WORK_LOOP64)
        c->sink += pyq_work_loop64(seq ^ len);
    else if (c->work == PYQ_WORK_SPIN_NS)
        pyq_spin_ticks(c->work_ticks, c->work_ns);
    if (c->verify) {
        if ((c->lo && len != pyq_pattern_len(seq, c->lo, c->hi, c->salt)) ||
            pyq_pattern_check(msg, len, seq) != 0)
            return PYQ_EBADMSG; /* c->next_seq stays the seq that failed */
    }
    c->next_seq = seq + 1;
    c->n++;
    c->bytes += len;
    return 0;
}

void pyq_consumer_run(struct pyq_thread *t)
{
    const pyq_consumer_config_t *cfg = &t->cfg.c;
    uint32_t batch = cfg->poll_batch ? cfg->poll_batch : 256;
    struct consume c = {
        .next_seq = cfg->first_seq,
        .ts = cfg->dequeue_ns,
        .cap = cfg->dequeue_ns ? cfg->samples_cap : 0,
        .work_ns = cfg->work == PYQ_WORK_SPIN_NS ? cfg->work_ns : 0,
        .salt = cfg->size_salt,
        .lo = cfg->size_lo,
        .hi = cfg->size_hi,
        .work = cfg->work,
        .verify = cfg->verify,
    };
    pyq_idle_t idle;

    c.work_ticks = (uint64_t)((double)c.work_ns * pyq_clock_ticks_per_ns() + 0.5);
    pyq_idle_init(&idle, &cfg->idle); /* checked by pyq_consumer_start() */
    t->res.end = PYQ_END_STOPPED;
    while (!pyq_thread_stopping(t)) {
        uint64_t max = batch;
        int64_t got;

        if (cfg->count) {
            if (c.n >= cfg->count) {
                t->res.end = PYQ_END_DONE;
                break;
            }
            if (cfg->count - c.n < max)
                max = cfg->count - c.n;
        }
        got = pyq_reader_poll(t->q, max, on_message, &c);
        pyq_thread_progress(t, c.n);
        if (got < 0) {
            t->res.end = PYQ_END_ERROR;
            t->res.first_error = (int32_t)got;
            t->res.error_seq = c.next_seq;
            break;
        }
        if (got > 0) {
            if (idle.run)
                pyq_idle_reset(&idle);
            continue;
        }
        /* Closed is not enough: a write that passed its closed check may still
         * commit.  Only once the writer side has detached is empty final. */
        if (pyq_queue_writer_detached(t->q) && pyq_reader_next_len(t->q) == PYQ_EAGAIN) {
            t->res.end = PYQ_END_CLOSED; /* closed and drained */
            break;
        }
        if (idle.run == 0)
            pyq_thread_sample_cpu(t); /* once per idle period: spots migrations */
        pyq_idle_wait(&idle);
    }
    if (cfg->count && c.n >= cfg->count && t->res.end == PYQ_END_STOPPED)
        t->res.end = PYQ_END_DONE; /* the stop came after the last message */
    t->res.messages = c.n;
    t->res.bytes = c.bytes;
    t->res.sink = c.sink;
    t->res.idle = idle.stats;
}
