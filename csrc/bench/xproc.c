/*
 * xproc.c - the C halves of bench-xproc (pyq_xproc.h): each loop is one side
 * of a queue, run by whoever owns that side, so the same code measures two
 * processes over a shared queue and two threads over an in-process one.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/atomic.h"
#include "common/now_pvt.h"
#include "bench/pyq_xproc.h"

#define XPROC_MAX_BATCH 4096u
#define XPROC_BUF (64u * 1024u)   /* one message or one batch of small ones, on the stack */

/* The deadline test of a spin loop, read once every 1024 looks. */
static int timed_out(uint64_t *looks, uint64_t deadline)
{
    return (++*looks & 1023u) == 0 && pyq_now_ns() > deadline;
}

static uint64_t deadline_of(int64_t timeout_ns)
{
    return timeout_ns < 0 ? UINT64_MAX : pyq_now_ns() + (uint64_t)timeout_ns;
}

static void fill(uint8_t *buf, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 131u + 7u);
}

int pyq_xproc_write(pyq_queue_t *q, uint32_t msg_size, uint64_t n, uint32_t batch,
                    int64_t timeout_ns)
{
    uint8_t buf[XPROC_BUF];
    uint32_t per = batch ? batch : 1;
    int err = 0;

    if (!msg_size || batch > XPROC_MAX_BATCH || (uint64_t)msg_size * per > sizeof buf)
        return PYQ_EINVAL;
    fill(buf, (uint64_t)msg_size * per);
    if (!batch) {
        for (uint64_t i = 0; i < n; i++) {
            int rc = pyq_writer_write(q, buf, msg_size, timeout_ns);
            if (rc)
                return rc;
        }
        return pyq_writer_flush(q);
    }
    for (uint64_t left = n; left;) {
        uint64_t k = left < per ? left : per;
        int64_t got = pyq_writer_write_batch(q, buf, k, msg_size, timeout_ns, &err);
        left -= (uint64_t)got;
        if ((uint64_t)got < k)
            return err;
    }
    return pyq_writer_flush(q);
}

int pyq_xproc_read(pyq_queue_t *q, uint32_t msg_size, uint64_t n, uint32_t batch,
                   int64_t timeout_ns, pyq_xproc_read_t *out)
{
    uint8_t buf[XPROC_BUF];
    uint32_t per = batch ? batch : 1;
    uint64_t got = 0, looks = 0, deadline = deadline_of(timeout_ns), t0 = 0;
    int was_empty = 0;

    memset(out, 0, sizeof *out);
    /* msg_size 0 is refused: a zero-length message would read as "nothing yet". */
    if (!msg_size || batch > XPROC_MAX_BATCH || (uint64_t)msg_size * per > sizeof buf)
        return PYQ_EINVAL;
    while (got < n) {
        uint64_t want = n - got < per ? n - got : per;
        int64_t k = batch ? pyq_reader_poll_fixed(q, buf, want, msg_size)
                          : pyq_reader_read_one(q, buf, sizeof buf);
        if (k == PYQ_EAGAIN || k == 0) {
            out->empty_polls++;
            out->empty_runs += !was_empty;
            was_empty = 1;
            if (timed_out(&looks, deadline)) {
                out->messages = got;
                return PYQ_EAGAIN;
            }
            pyq_cpu_relax();
            continue;
        }
        if (k < 0 || (!batch && (uint64_t)k != msg_size))
            return k < 0 && k != PYQ_ERANGE ? (int)k : PYQ_EBADMSG;
        if (!got)
            t0 = pyq_now_ns();  /* the clock starts at the first delivery */
        got += batch ? (uint64_t)k : 1;
        was_empty = 0;
        looks = 0;
        deadline = deadline_of(timeout_ns);
    }
    out->ns = pyq_now_ns() - t0;
    out->messages = got;
    return 0;
}

/* Spin until one message comes from q into buf; its length or a code. */
static int64_t take_one(pyq_queue_t *q, uint8_t *buf, uint64_t cap, uint64_t deadline)
{
    uint64_t looks = 0;

    for (;;) {
        int64_t k = pyq_reader_read_one(q, buf, cap);
        if (k != PYQ_EAGAIN)
            return k;
        if (timed_out(&looks, deadline))
            return PYQ_EAGAIN;
        pyq_cpu_relax();
    }
}

int pyq_xproc_ping(pyq_queue_t *to, pyq_queue_t *from, uint32_t msg_size, uint64_t n,
                   int64_t timeout_ns, uint64_t *rt_ns)
{
    uint8_t msg[XPROC_BUF], back[XPROC_BUF];

    if (msg_size > sizeof msg)
        return PYQ_EINVAL;
    fill(msg, msg_size);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t0 = pyq_now_ns();
        int rc = pyq_writer_write(to, msg, msg_size, timeout_ns);
        if (rc)
            return rc;
        int64_t k = take_one(from, back, sizeof back, deadline_of(timeout_ns));
        rt_ns[i] = pyq_now_ns() - t0;
        if (k < 0)
            return (int)k;
        if ((uint64_t)k != msg_size)
            return PYQ_EBADMSG;
    }
    return 0;
}

int pyq_xproc_echo(pyq_queue_t *from, pyq_queue_t *to, uint32_t msg_size, uint64_t n,
                   int64_t timeout_ns)
{
    uint8_t buf[XPROC_BUF];

    for (uint64_t i = 0; i < n; i++) {
        int64_t k = take_one(from, buf, sizeof buf, deadline_of(timeout_ns));
        if (k < 0)
            return (int)k;
        if ((uint64_t)k != msg_size)
            return PYQ_EBADMSG;
        int rc = pyq_writer_write(to, buf, msg_size, timeout_ns);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- futex wake-up -------------------------------------------------------- */

static uint64_t voluntary_switches(void)
{
    struct rusage ru;
    /* This thread's: the other side may be a thread of the same process. */
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_nvcsw : 0;
}

/* XPROC-L1: the sleeper's sign (armed, sample i done); pairs with XPROC-L2. */
static void ack_set(uint64_t *ack, uint64_t i)
{
    pyq_store_release((_Atomic uint64_t *)&ack[i], 1);
}

static int ack_wait(uint64_t *ack, uint64_t i, uint64_t deadline)
{
    uint64_t looks = 0;

    /* XPROC-L2: the sleeper has re-armed (it is back in its wait); pairs with XPROC-L1. */
    while (!pyq_load_acquire((_Atomic uint64_t *)&ack[i])) {
        if (timed_out(&looks, deadline))
            return PYQ_EAGAIN;
        pyq_cpu_relax();
    }
    return 0;
}

int pyq_xproc_wake_sleeper(pyq_queue_t *q, int side, uint64_t n, int64_t timeout_ns,
                           uint64_t *ack, uint64_t *t_ret, uint64_t *slept)
{
    uint8_t buf[XPROC_BUF];
    uint32_t size = pyq_queue_max_message(q);

    if (side != PYQ_SIDE_READER && side != PYQ_SIDE_WRITER)
        return PYQ_EINVAL;
    if (side == PYQ_SIDE_WRITER) {
        if (size > sizeof buf)
            return PYQ_EINVAL;
        fill(buf, size);
        while (pyq_writer_try_write(q, buf, size) == 0) /* fill the queue: the next write waits */
            ;
    }
    ack_set(ack, 0);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v0 = voluntary_switches(), t;
        int rc;

        if (side == PYQ_SIDE_READER) {
            rc = pyq_reader_wait(q, timeout_ns);
            t = pyq_now_ns();
            rc = rc == 1 ? 0 : rc == 0 ? PYQ_ECLOSED : rc;
            if (!rc && pyq_reader_read_one(q, buf, sizeof buf) < 0)
                rc = PYQ_EBADMSG;
        } else {
            rc = pyq_writer_write(q, buf, size, timeout_ns);
            t = pyq_now_ns();
        }
        slept[i] = voluntary_switches() - v0;
        t_ret[i] = t;
        if (rc)
            return rc;
        ack_set(ack, i + 1);
    }
    return 0;
}

int pyq_xproc_wake_waker(pyq_queue_t *q, int sleeper, uint64_t n, uint64_t gap_ns,
                         int64_t timeout_ns, uint64_t *ack, uint64_t *t_pub)
{
    uint8_t buf[XPROC_BUF];
    struct timespec gap = { (time_t)(gap_ns / 1000000000u), (long)(gap_ns % 1000000000u) };

    if (sleeper != PYQ_SIDE_READER && sleeper != PYQ_SIDE_WRITER)
        return PYQ_EINVAL;
    fill(buf, 8);
    for (uint64_t i = 0; i < n; i++) {
        int rc = ack_wait(ack, i, deadline_of(timeout_ns));
        if (rc)
            return rc;
        nanosleep(&gap, NULL); /* long past the sleeper's spin: it is on the futex now */
        t_pub[i] = pyq_now_ns();
        if (sleeper == PYQ_SIDE_READER) {
            rc = pyq_writer_write(q, buf, 8, timeout_ns);   /* the publish wakes it */
        } else {
            int64_t k = pyq_reader_read_one(q, buf, sizeof buf); /* returns a block */
            rc = k < 0 ? (int)k : 0;
        }
        if (rc)
            return rc;
    }
    return 0;
}
