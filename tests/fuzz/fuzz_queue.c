/*
 * fuzz_queue.c - libFuzzer target: one thread drives a random sequence of
 * writer and reader calls on a small queue and checks every result against a
 * reference model (DESIGN §3).
 *
 * The input's first bytes choose the configuration (block size 64..512, 1-3
 * hot and 0-4 spill blocks, publish max / each / bytes:N, scan_current,
 * streaming spill stores, touch, prefetch); every later byte group is one
 * operation: write / try_write of a random size (0, max, max + 1, random),
 * claim then commit or abort (and calls while a claim is outstanding), flush,
 * poll with a random limit and a callback that may stop early, read_one and
 * poll_copy with a random capacity, poll_fixed, next_len, close, a full drain,
 * a stats check.
 *
 * The model is a FIFO of committed messages (message k has length len[k] and
 * pyq_pattern content for seq k), plus the writer's framing (offset in the
 * current block, and the open run: with publish max and no scanning reader a
 * write or write_batch message of the length of the record just before extends
 * it by its padded payload, no header -- csrc/core/queue_pvt.h, Runs -- until a
 * claim, a flush, a seal or a record of another length ends it; zero-length
 * messages never run), which says exactly when a block is sealed -- with a scanning
 * reader also after a record that leaves less room than itself, when a free hot
 * block is taken at once (writer_block.c, pyq_w_seal_early).  Checked:
 *   - FIFO and bytes: the reader only ever delivers the next committed message,
 *     with its exact length and content; nothing aborted, never twice.
 *   - publish max without scan_current: exactly the sealed or flushed messages
 *     are visible (no earlier delivery);
 *   - visibility lower bound, whatever the policy: committed messages in sealed
 *     blocks, messages before a flush, and (each / scan_current) every committed
 *     message are delivered by an unlimited poll.
 *   - full: a write reports PYQ_EAGAIN only when it needs a new block, and never
 *     right after a drain when another block exists.
 *   - return codes: ETOOBIG above max, EBUSY / ENOCLAIM, ECLOSED after close,
 *     ERANGE from poll_fixed exactly when the next message has another size.
 *   - counters: messages/bytes written and read, blocks published, takes,
 *     full_events, backlog equal the model's; returns <= takes.
 *   - no loss: at the end, flush + drain delivers every committed message.
 * Any mismatch aborts (libFuzzer records the input as a crash).
 *
 * Built with -DPYQ_FUZZ_SEGMENT (bin/fuzz_segment, the same inputs), the queue
 * is a shared one (a memfd segment, both sides taken), and an operation may
 * rewrite its shared state between the writer's and the reader's calls the way
 * a damaged or hostile peer can (do_mutate): pub_pos, ring_tail, ring and
 * free-ring slots, free tails, a header no writer stores, the closed flag, the
 * configuration record, the mirrors, the owners.  The oracle then depends on
 * what the value could be:
 *   - one no writer or reader of this geometry stores (a block past the pool, a
 *     position past the blocks taken, a header of no kind, a free tail past the
 *     tier, ...): the reader must find out before it delivers anything from it --
 *     no crash, no hang (libFuzzer's timeout), only documented return codes, and
 *     no message that was not written (each one delivered is some committed
 *     message, whole); "tainted";
 *   - one a writer could have stored (another block of the pool, a position
 *     within the blocks taken): a forged hand-over, which no check can tell from
 *     a real one -- no crash, no hang, documented codes, and every message
 *     delivered lies inside one block of the pool; "forged";
 *   - a word this process never reads after attach (the configuration record,
 *     the mirrors, the owners): the exact model must still hold.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pyq_pattern.h"
#include "pyqueue.h"
#ifdef PYQ_FUZZ_SEGMENT
#include <unistd.h>

#include "core/queue_pvt.h"
#endif

#define MAX_OPS 3000
#define MAX_MSGS (MAX_OPS + 8)

#define REQUIRE(cond)                                                             \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "fuzz_queue: %s:%d: model mismatch: %s (op %u)\n",    \
                    __FILE__, __LINE__, #cond, m.op);                             \
            abort();                                                              \
        }                                                                         \
    } while (0)

/* A check of the exact model: only while no mutation could have changed what
 * the queue does (m.tainted, do_mutate). */
#define MODEL(cond)                                                               \
    do {                                                                          \
        if (!m.tainted)                                                           \
            REQUIRE(cond);                                                        \
    } while (0)

#define TAINTED 1
#define FORGED 2

/* A code a call may return once the segment was rewritten. */
#define DOCUMENTED(rc)                                                            \
    ((rc) == 0 || (rc) == PYQ_EAGAIN || (rc) == PYQ_ETOOBIG || (rc) == PYQ_ECLOSED || \
     (rc) == PYQ_EBUSY || (rc) == PYQ_ENOCLAIM || (rc) == PYQ_ECORRUPT ||        \
     (rc) == PYQ_ERANGE || (rc) == PYQ_EBADMSG)

struct input {
    const uint8_t *p;
    size_t n;
};

static int more(struct input *in) { return in->n > 0; }

static uint32_t byte(struct input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint32_t u16(struct input *in) { return byte(in) | byte(in) << 8; }

struct model {
    pyq_queue_t *q;
    pyq_config_t cfg;
    uint32_t max;
    uint32_t nblocks;
    uint32_t len[MAX_MSGS];   /* length of committed message k */
    uint64_t committed;       /* messages committed (= next seq) */
    uint64_t delivered;       /* messages the reader has consumed */
    uint64_t must_visible;    /* messages an unlimited poll must deliver */
    uint64_t bytes_w, bytes_r;
    /* writer framing */
    int has_block;            /* the writer holds a current block */
    uint32_t pos;             /* next record offset in it */
    int run_open;             /* a write of run_len may extend the open run */
    uint32_t run_len, run_step, run_limit;
    uint64_t run_msgs;        /* messages that went into a run as members */
    uint64_t takes, seals, full_events;
    /* claim */
    int claimed;
    uint32_t claim_len;
    void *claim_ptr;
    /* reader */
    int drained;              /* the last poll found nothing and no write since */
    int closed;
    int tainted;              /* the segment was rewritten: MODEL checks are off;
                                 FORGED: by a value a writer could have stored */
    int fd;                   /* PYQ_FUZZ_SEGMENT: the memfd */
    unsigned op;
};

static struct model m;

/* Bytes a record takes: header + payload padded to 8, or to a whole 64-byte
 * line with scan_current (csrc/core/queue_pvt.h, pyq_record_size). */
static uint32_t rec(uint32_t len)
{
    uint32_t align = m.cfg.scan_current ? 64 : PYQ_RECORD_ALIGN;
    return (PYQ_RECORD_HEADER + len + align - 1) & ~(align - 1);
}

static int runs_ok(void)
{
    return m.cfg.publish == PYQ_PUBLISH_MAX && !m.cfg.scan_current;
}

/* A write of len (not a claim) extends the open run: no header, no new block. */
static int extends(uint32_t len)
{
    return m.run_open && len == m.run_len && m.pos + m.run_step <= m.run_limit;
}

static int policy_shows_all(void)
{
    return m.cfg.scan_current || m.cfg.publish == PYQ_PUBLISH_EACH;
}

/* A pick of message length: 0, max, max + 1, or anything up to max. */
static uint32_t pick_len(struct input *in)
{
    uint32_t b = byte(in);
    switch (b & 7) {
    case 0: return 0;
    case 1: return m.max;
    case 2: return m.max + 1;
    case 3: return m.max + 1 + byte(in);
    default: return u16(in) % (m.max + 1);
    }
}

/* What a claim of len does to the framing before the C call: returns 1 when a
 * new block is needed (the current one, if any, gets sealed first).  ext: the
 * write extends the open run (extends(), known before the call). */
static int needs_block(uint32_t len, int ext)
{
    return !ext && (!m.has_block || m.pos + rec(len) > m.cfg.block_size);
}

/* Apply the result of a claim (rc) for len to the model (ext: as needs_block). */
static void after_claim(uint32_t len, int rc, int busy_before, int ext)
{
    int need;

    REQUIRE(DOCUMENTED(rc));
    if (m.tainted && rc != 0)
        return;
    if (busy_before) {
        MODEL(rc == PYQ_EBUSY);
        return;
    }
    if (len > m.max) {
        MODEL(rc == PYQ_ETOOBIG);
        return;
    }
    if (m.closed) {
        MODEL(rc == PYQ_ECLOSED);
        return;
    }
    need = needs_block(len, ext);
    if (!ext)
        m.run_open = 0;                /* a record of its own (its claim, in C) */
    if (need && m.has_block) {
        m.seals++;                     /* sealed before the take, whatever follows */
        m.has_block = 0;
        m.must_visible = m.committed;
    }
    if (rc == PYQ_EAGAIN) {
        MODEL(need);                   /* full only when a new block is needed... */
        MODEL(!(m.drained && m.nblocks >= 2)); /* ...and none is free */
        m.full_events++;
        return;
    }
    MODEL(rc == 0);
    if (need) {
        m.takes++;
        m.has_block = 1;
        m.pos = 0;
    }
}

/* Tier-1 blocks the writer holds or the reader has not returned yet
 * (single thread: the stats are exact). */
static uint64_t hot_in_use(void)
{
    pyq_stats_t st;

    pyq_queue_stats(m.q, &st);
    return st.takes_hot - st.returns_hot;
}

/* Apply a commit of len to the model; hot: hot_in_use() when it happens; ext:
 * the message extended the open run (else it is a record that opens one). */
static void after_commit(uint32_t len, uint64_t hot, int ext)
{
    uint32_t r = rec(len);

    m.len[m.committed++] = len;
    m.bytes_w += len;
    if (ext) {
        r = m.run_step;
        m.run_msgs++;
    } else if (runs_ok() && len > 0) {
        uint64_t cap = m.pos + PYQ_RECORD_HEADER + 0xffffull * ((len + 7u) & ~7u);
        m.run_open = 1;
        m.run_len = len;
        m.run_step = (len + 7u) & ~7u;
        m.run_limit = cap < m.cfg.block_size ? (uint32_t)cap : m.cfg.block_size;
    }
    m.pos += r;
    if (policy_shows_all() && !m.closed && m.cfg.block_size - m.pos < r &&
        hot < m.cfg.hot_blocks) {
        /* No room for another record of this size: with a scanning reader the
         * writer seals now and takes the next hot block (writer_block.c,
         * pyq_w_seal_early). */
        m.seals++;
        m.takes++;
        m.pos = 0;
        m.must_visible = m.committed;
    } else if (m.pos == m.cfg.block_size) {   /* exactly full: sealed by the commit */
        m.seals++;
        m.has_block = 0;
        m.run_open = 0;
        m.must_visible = m.committed;
    }
    if (policy_shows_all())
        m.must_visible = m.committed;
    m.drained = 0;
}

static void do_write(struct input *in, int try_only)
{
    uint32_t len = pick_len(in);
    static uint8_t buf[PYQ_MAX_BLOCK_SIZE > 1024 ? 1024 : PYQ_MAX_BLOCK_SIZE];
    uint32_t tb = byte(in);
    int64_t timeout = (tb & 3) == 0 ? 2000 : 0; /* now and then, the wait loop */
    int busy = m.claimed, rc;
    int ext = !busy && len <= m.max && !m.closed && extends(len);
    int need = !busy && len <= m.max && !m.closed && needs_block(len, ext);
    uint64_t hot = hot_in_use();

    if (len <= m.max)
        pyq_pattern_fill(buf, len, m.committed);
    /* try_write, half the time through its inline fast path (pyqueue_inline.h):
     * the same model, so the same outcome. */
    rc = try_only ? ((tb & 4) ? pyq_writer_try_write_inline(m.q, buf, len)
                              : pyq_writer_try_write(m.q, buf, len))
                  : pyq_writer_write(m.q, buf, len, timeout);
    after_claim(len, rc, busy, ext);
    if (rc == 0) {
        if (need && hot < m.cfg.hot_blocks)
            hot++;                     /* the write's own take: tier 1 first */
        after_commit(len, hot, ext);
    }
}

/* write_batch of n messages of one length: the same, message by message, as n
 * writes that stop at the first error -- through its run loop when the
 * configuration allows one (publish max, no scanning reader). */
static void do_write_batch(struct input *in)
{
    static uint8_t buf[16 * 512];
    uint32_t len = pick_len(in), n = byte(in) % 17, i;
    int busy = m.claimed, err = -1;
    uint64_t hot = hot_in_use();
    int64_t k;

    if (len > 512)             /* the buffer's row size; ETOOBIG still comes from pick_len's */
        len = m.max + 1;       /* max + 1 .. lengths, capped */
    for (i = 0; i < n && len <= m.max; i++)
        pyq_pattern_fill(buf + (size_t)i * len, len, m.committed + i);
    k = pyq_writer_write_batch(m.q, buf, n, len, 0, &err);
    REQUIRE(k >= 0 && (uint64_t)k <= n && DOCUMENTED(err));
    if (len > m.max) {          /* checked first, even before a claim in progress */
        MODEL(k == 0 && err == PYQ_ETOOBIG);
        return;
    }
    for (i = 0; i < (uint32_t)k; i++) {
        int ext = extends(len);
        int need = needs_block(len, ext);
        uint64_t takes = m.takes;

        after_claim(len, 0, busy, ext);
        if (need && hot < m.cfg.hot_blocks)
            hot++;                     /* tier 1 first, as in do_write */
        after_commit(len, hot, ext);
        if (m.takes > takes + (uint64_t)need)
            hot++;                     /* after_commit's early seal took a hot block */
    }
    if ((uint64_t)k < n) {
        MODEL(err != 0);
        after_claim(len, err, busy, 0); /* the message that stopped the batch: when
                                          it could extend, it stopped for close */
    } else {
        MODEL(err == 0);
    }
}

static void do_claim(struct input *in)
{
    uint32_t len = pick_len(in);
    void *ptr = NULL;
    int busy = m.claimed;
    int rc = pyq_writer_claim(m.q, len, 0, &ptr);

    after_claim(len, rc, busy, 0);
    if (rc == 0) {
        REQUIRE(ptr != NULL);
        m.claimed = 1;
        m.claim_len = len;
        m.claim_ptr = ptr;
        /* Garbage first: an abort must leave no trace, a commit must carry
         * what was written last. */
        memset(ptr, 0xAB, len);
    }
}

static void do_commit(void)
{
    uint64_t hot = hot_in_use();
    int rc;

    if (m.claimed)
        pyq_pattern_fill(m.claim_ptr, m.claim_len, m.committed);
    rc = pyq_writer_commit(m.q);
    REQUIRE(DOCUMENTED(rc));
    if (!m.claimed) {
        MODEL(rc == PYQ_ENOCLAIM);
        return;
    }
    MODEL(rc == 0);
    m.claimed = 0;
    after_commit(m.claim_len, hot, 0);
}

static void do_abort(void)
{
    int rc = pyq_writer_abort(m.q);
    REQUIRE(DOCUMENTED(rc));
    MODEL(rc == (m.claimed ? 0 : PYQ_ENOCLAIM));
    m.claimed = 0;
}

static void do_flush(void)
{
    REQUIRE(pyq_writer_flush(m.q) == 0);
    m.must_visible = m.committed;
    m.run_open = 0;                    /* a published run never grows */
}

/* One delivered message must be the next committed one, byte for byte. */
static void delivered(const void *msg, uint32_t len)
{
    if (m.tainted == FORGED) {
        REQUIRE(len <= m.max);
        m.delivered++;
        m.bytes_r += len;
        return;
    }
    if (m.tainted) {
        /* Some committed message, whole: a rewritten ring or position may
         * deliver an old one again, never bytes nobody wrote as a message. */
        uint64_t k = 0;
        REQUIRE(len <= m.max);
        if (len >= 8)
            memcpy(&k, msg, 8); /* its seq (pyq_pattern.h) */
        else
            for (k = 0; k < m.committed && (m.len[k] != len ||
                                            pyq_pattern_check(msg, len, k) != 0); k++)
                ;
        REQUIRE(k < m.committed && m.len[k] == len && pyq_pattern_check(msg, len, k) == 0);
        m.delivered++;
        m.bytes_r += len;
        return;
    }
    REQUIRE(m.delivered < m.committed);
    if (m.cfg.publish == PYQ_PUBLISH_MAX && !m.cfg.scan_current)
        REQUIRE(m.delivered < m.must_visible); /* max: only sealed or flushed messages */
    REQUIRE(len == m.len[m.delivered]);
    REQUIRE(pyq_pattern_check(msg, len, m.delivered) == 0);
    m.delivered++;
    m.bytes_r += len;
}

struct poll_ctx {
    uint64_t stop_after; /* return a stop code at this message (0: never) */
    int stop_code;
    uint64_t seen;
};

static int on_message(void *ctx, const void *msg, uint32_t len)
{
    struct poll_ctx *c = ctx;

#ifdef PYQ_FUZZ_SEGMENT
    {   /* in place: inside one block of the pool, whatever the segment says */
        const struct pyq_queue *q = (const struct pyq_queue *)m.q;
        uintptr_t at = (uintptr_t)msg, base = (uintptr_t)q->w.base, bs = m.cfg.block_size;
        REQUIRE(at >= base && at + len <= base + (uintptr_t)m.nblocks * bs);
        REQUIRE(len == 0 || (at - base) / bs == (at + len - 1 - base) / bs);
    }
#endif

    delivered(msg, len);
    c->seen++;
    return c->stop_after && c->seen == c->stop_after ? c->stop_code : 0;
}

static void do_poll(struct input *in)
{
    uint32_t b = byte(in);
    uint64_t max = (b & 3) == 0 ? UINT64_MAX : (b >> 2);
    struct poll_ctx c = { 0, 0, 0 };
    uint64_t before = m.delivered;
    int64_t rc;

    if ((b & 3) == 1) {
        c.stop_after = 1 + (byte(in) & 7);
        c.stop_code = (byte(in) & 1) ? 1 : PYQ_EBADMSG;
    }
    /* Half the time the inline poll (pyqueue_inline.h): pyq_reader_poll's results. */
    rc = (b & 0x80) ? pyq_reader_poll_inline(m.q, max, on_message, &c)
                    : pyq_reader_poll(m.q, max, on_message, &c);
    REQUIRE(m.delivered - before == c.seen);
    if (m.tainted) {
        REQUIRE(rc == (int64_t)c.seen || (rc < 0 && DOCUMENTED(rc)) ||
                (c.stop_after && c.seen == c.stop_after));
        return;
    }
    if (c.stop_after && c.seen == c.stop_after) {
        REQUIRE(rc == (c.stop_code < 0 ? c.stop_code : (int64_t)c.seen));
    } else {
        REQUIRE(rc == (int64_t)c.seen);
        if ((uint64_t)rc < max) {
            /* Stopped because nothing more was visible. */
            REQUIRE(m.delivered >= m.must_visible);
            if (rc == 0)
                m.drained = 1;
        }
    }
}

static void do_poll_copy(struct input *in)
{
    static uint8_t buf[8192];
    static uint32_t lens[64];
    uint64_t cap = u16(in) % sizeof buf;
    uint64_t max = byte(in) % 65;
    int64_t n = pyq_reader_poll_copy(m.q, buf, cap, lens, max);
    uint64_t off = 0;

    if (m.tainted && n == PYQ_ECORRUPT)
        return;
    REQUIRE(n >= 0 && (uint64_t)n <= max);
    for (int64_t i = 0; i < n; i++) {
        REQUIRE(off + lens[i] <= cap);
        delivered(buf + off, lens[i]);
        off += (lens[i] + 7u) & ~7u;
    }
    if ((uint64_t)n < max && m.delivered < m.must_visible) {
        /* Only a message that does not fit may stop it early. */
        MODEL(off + ((m.len[m.delivered] + 7u) & ~7u) > cap);
    }
}

static void do_read_one(struct input *in)
{
    static uint8_t buf[8192];
    uint64_t cap = u16(in) % sizeof buf;
    int64_t n = pyq_reader_read_one(m.q, buf, cap);

    REQUIRE(n >= 0 || DOCUMENTED(n));
    if (n == PYQ_EAGAIN || (m.tainted && n == PYQ_ECORRUPT)) {
        MODEL(m.delivered >= m.must_visible);
        return;
    }
    if (n == PYQ_ETOOBIG) {  /* it stays: the next read gets it */
        MODEL(m.delivered < m.committed && m.len[m.delivered] > cap);
        return;
    }
    REQUIRE(n >= 0 && (uint64_t)n <= cap);
    delivered(buf, (uint32_t)n);
}

static void do_poll_fixed(struct input *in)
{
    static uint8_t out[4096];
    uint32_t size = (byte(in) & 1) && m.delivered < m.committed ? m.len[m.delivered]
                                                               : pick_len(in) % (m.max + 1);
    uint64_t n_max = byte(in) % 16;
    int64_t n;

    if (size && n_max * size > sizeof out)
        n_max = sizeof out / size;
    n = pyq_reader_poll_fixed(m.q, out, n_max, size);
    if (m.tainted && (n == PYQ_ECORRUPT || n == PYQ_ERANGE))
        return;
    if (n == PYQ_ERANGE) {
        REQUIRE(n_max > 0 && m.delivered < m.committed && m.len[m.delivered] != size);
        REQUIRE(pyq_reader_next_len(m.q) == (int64_t)m.len[m.delivered]);
        return;
    }
    REQUIRE(n >= 0 && (uint64_t)n <= n_max);
    for (int64_t i = 0; i < n; i++)
        delivered(out + i * size, size);
    if ((uint64_t)n < n_max && m.delivered < m.must_visible)
        MODEL(m.len[m.delivered] != size); /* stopped before another size */
}

static void do_next_len(void)
{
    int64_t n = pyq_reader_next_len(m.q);

    if (m.tainted) {
        REQUIRE((n >= 0 && n <= m.max) || DOCUMENTED(n));
        return;
    }
    if (n == PYQ_EAGAIN) {
        REQUIRE(m.delivered >= m.must_visible);
        return;
    }
    REQUIRE(m.delivered < m.committed && n == (int64_t)m.len[m.delivered]);
}

/* pyq_reader_wait() with timeout 0: "visible" exactly when next_len says so;
 * the fuzzer never detaches, so never 0. */
static void do_wait(void)
{
    int rc = pyq_reader_wait(m.q, 0);

    if (m.tainted) {
        REQUIRE(rc == 1 || rc == 0 || DOCUMENTED(rc));
        return;
    }
    REQUIRE(rc == 1 || rc == PYQ_EAGAIN);
    if (rc == PYQ_EAGAIN)
        REQUIRE(m.delivered >= m.must_visible);
    else
        REQUIRE(m.delivered < m.committed);
}

static void drain(void)
{
    struct poll_ctx c = { 0, 0, 0 };
    int64_t rc = pyq_reader_poll(m.q, UINT64_MAX, on_message, &c);

    if (m.tainted) {  /* it ends, and says what it delivered or why it stopped */
        REQUIRE(rc == (int64_t)c.seen || (rc < 0 && DOCUMENTED(rc)));
        m.drained = 1;
        return;
    }
    REQUIRE(rc == (int64_t)c.seen);
    REQUIRE(m.delivered == m.must_visible || (m.delivered > m.must_visible &&
                                              m.delivered <= m.committed));
    REQUIRE(pyq_reader_poll(m.q, UINT64_MAX, on_message, &c) == 0);
    m.drained = 1;
}

static void check_stats(void)
{
    pyq_stats_t st;

    pyq_queue_stats(m.q, &st);
    if (m.tainted)
        return; /* read, whatever the segment holds: no more */
    REQUIRE(st.messages_written == m.committed);
    REQUIRE(st.bytes_written == m.bytes_w);
    REQUIRE(st.messages_read == m.delivered);
    REQUIRE(st.bytes_read == m.bytes_r);
    REQUIRE(st.backlog == m.bytes_w - m.bytes_r);
    REQUIRE(pyq_queue_backlog(m.q) == m.bytes_w - m.bytes_r);
    REQUIRE(st.blocks_published == m.seals);
    REQUIRE(st.takes_hot + st.takes_spill == m.takes);
    REQUIRE(st.returns_hot <= st.takes_hot && st.returns_spill <= st.takes_spill);
    REQUIRE(st.blocks_flushed <= st.returns_hot + st.returns_spill);
    /* Blocks in use: taken and not returned; never more than the pool. */
    REQUIRE(m.takes - st.returns_hot - st.returns_spill <= m.nblocks);
    REQUIRE(st.full_events == m.full_events);
    REQUIRE(st.peak_backlog <= m.bytes_w);
    REQUIRE(st.hugepages_used == 0 && st.mlocked == 0);
}

#ifdef PYQ_FUZZ_SEGMENT
/* The oracle from now on: the weaker of what it was and level. */
static void taint(int level)
{
    if (level > m.tainted)
        m.tainted = level;
}

/* A 64-bit value near cur or far from it. */
static uint64_t pick64(struct input *in, uint64_t cur)
{
    uint32_t b = byte(in);
    switch (b & 7) {
    case 0: return 0;
    case 1: return cur + 1 + byte(in);
    case 2: return cur - 1 - byte(in);
    case 3: return cur + (uint64_t)m.cfg.block_size * (1 + byte(in) % 8);
    case 4: return UINT64_MAX - byte(in);
    case 5: return (uint64_t)1 << (32 + byte(in) % 31);
    default: return cur ^ ((uint64_t)u16(in) << (byte(in) % 48));
    }
}

/* Rewrite the shared state the way a peer that may write the segment can.
 * Headers get only values no writer stores (one that stores a valid header
 * forges a message, which no check can tell from a written one). */
static void do_mutate(struct input *in)
{
    struct pyq_queue *q = (struct pyq_queue *)m.q;
    uint32_t bs = m.cfg.block_size, what = byte(in) % 10;
    uint32_t v32 = u16(in) | u16(in) << 16;

    switch (what) {
    case 0: {
        /* Behind what this reader saw, or far past any block a writer could
         * take while this input runs: no writer's.  At most what was
         * published: real records, fewer of them.  Anything else ahead of it
         * is a forged hand-over -- a position past the blocks taken now is
         * one the writer's next blocks reach. */
        uint64_t real = pyq_load_relaxed(&q->pub_pos), v = pick64(in, real);
        pyq_store_relaxed(&q->pub_pos, v);
        taint(v < q->r.pub_cache || v <= real || v - real > ((uint64_t)1 << 40) ? TAINTED
                                                                               : FORGED);
        break;
    }
    case 1: {
        uint64_t real = pyq_load_relaxed(&q->ring_tail), v = pick64(in, real);
        pyq_store_relaxed(&q->ring_tail, v);
        taint(v <= real || v - q->r.seq > m.nblocks ? TAINTED : FORGED);
        break;
    }
    case 2: {
        int past = byte(in) & 1; /* past the pool, or another block of it */
        q->w.ring[u16(in) & q->ring_mask] = past ? v32 | 0x80000000u : v32 % m.nblocks;
        taint(past ? TAINTED : FORGED);
        break;
    }
    case 3: {
        /* A block past the tier: no reader's.  Another of the tier: the writer
         * is made to overwrite a block the reader has not read. */
        int t = byte(in) & 1;
        uint32_t slot = u16(in) & q->free_mask[t], first = t ? m.cfg.hot_blocks : 0;
        uint32_t tier_n = t ? m.cfg.spill_blocks : m.cfg.hot_blocks;
        q->w.free_slots[t][slot] = v32;
        taint((v32 ^ (first + slot)) - first >= tier_n ? TAINTED : FORGED);
        break;
    }
    case 4: {
        int t = byte(in) & 1;
        uint64_t real = pyq_load_relaxed(&q->free_tail[t].v), v = pick64(in, real);
        uint64_t tier_n = t ? m.cfg.spill_blocks : m.cfg.hot_blocks;
        pyq_store_relaxed(&q->free_tail[t].v, v);
        taint(v - q->w.free_head[t] > tier_n || v <= real ? TAINTED : FORGED);
        break;
    }
    case 5: {
        /* A header position: a block's first, or where the writer's next
         * record goes (a scanning reader waits on it). */
        uint8_t *at = byte(in) & 1 && q->w.blk && q->w.pos + 8 <= bs
                          ? q->w.blk + q->w.pos
                          : q->w.base + (size_t)(byte(in) % m.nblocks) * bs;
        uint64_t hdr;
        switch (byte(in) % 3) {
        case 0: hdr = PYQ_HDR_COMMIT | (m.max + 1 + (uint64_t)(v32 % (UINT32_MAX - m.max))); break;
        case 1: hdr = PYQ_HDR_RUN | (uint64_t)0xffff << 48 | (8 + v32 % m.max); break;
        default: hdr = (uint64_t)(0x6000 + (v32 & 0x0fff)) << 32 | (v32 & 0xff); break;
        }
        pyq_store_relaxed(pyq_hdr(at, 0), hdr);
        taint(TAINTED);
        break;
    }
    case 6: /* the configuration record: never read after attach */
        ((uint8_t *)&q->rec)[byte(in) % sizeof(q->rec)] = (uint8_t)v32;
        break;
    case 7: /* the mirrors: read only by a process taking a side over */
        ((uint8_t *)&q->wm)[byte(in) % sizeof(q->wm)] = (uint8_t)v32;
        ((uint8_t *)&q->rm)[byte(in) % sizeof(q->rm)] = (uint8_t)(v32 >> 8);
        break;
    case 8:
        pyq_store_relaxed(&q->closed, 1);
        taint(TAINTED);
        break;
    default: /* the owners' words: messages only, this process holds both locks */
        pyq_store_relaxed(&q->sh.owner[byte(in) & 1], v32);
        pyq_store_relaxed(&q->sh.dead[byte(in) & 1], v32);
        break;
    }
}
#endif

static void configure(struct input *in)
{
    static const uint32_t sizes[] = { 64, 128, 256, 512 };
    uint32_t b = byte(in), c = byte(in);

    pyq_config_init(&m.cfg);
    m.cfg.block_size = sizes[b & 3];
    m.cfg.hot_blocks = 1 + ((b >> 2) % 3);
    m.cfg.spill_blocks = (b >> 4) % 5;
    m.cfg.publish = c % 3;
    m.cfg.publish_bytes = m.cfg.publish == PYQ_PUBLISH_BYTES ? 1 + byte(in) * 4 : 0;
    m.cfg.scan_current = (c >> 2) & 1;
#if defined(__x86_64__) && defined(__SSE2__)
    m.cfg.spill_nontemporal = (c >> 3) & 1;
    /* A spill block streamed whatever the backlog, or only 1 KiB behind the
     * reader: both kinds of spill block in one run. */
    m.cfg.nontemporal_backlog_kib = (c >> 7) & 1;
#endif
    m.cfg.touch_after_write = (c >> 4) & 1;
    m.cfg.prefetch = (c >> 5) & 1;
    m.cfg.retry_yield_every = (c >> 6) & 1 ? 0 : 4;
    /* Hot blocks flushed once read where the hot tier holds 1 KiB or more (2
     * or 3 blocks of 512 bytes): bit 7 of b, otherwise taken only by
     * spill_blocks' % 5. */
    m.cfg.flush_hot_kib = (b >> 7) & 1;
    /* Hot blocks flushed once read with the writer 1 KiB or more ahead (two
     * blocks of 512 bytes; the default 16 KiB is more than these pools hold):
     * bit 6 of b. */
    m.cfg.flush_backlog_kib = (b >> 6) & 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };
    int rc;

    memset(&m, 0, sizeof m);
    configure(&in);
#ifdef PYQ_FUZZ_SEGMENT
    rc = pyq_queue_create_shared(NULL, &m.cfg, &m.q, &m.fd);
    REQUIRE(rc == 0);
    REQUIRE(pyq_queue_take(m.q, PYQ_SIDE_WRITER, 0) == 0);
    REQUIRE(pyq_queue_take(m.q, PYQ_SIDE_READER, 0) == 0);
#else
    rc = pyq_queue_create(&m.cfg, &m.q);
    REQUIRE(rc == 0);
#endif
    m.max = pyq_queue_max_message(m.q);
    REQUIRE(m.max == m.cfg.block_size - PYQ_RECORD_HEADER);
    m.nblocks = m.cfg.hot_blocks + m.cfg.spill_blocks;
    m.drained = 1;

    for (m.op = 0; m.op < MAX_OPS && more(&in); m.op++) {
        uint32_t b;
        switch (byte(&in) % 16) {
        case 0: case 1: case 2: do_write(&in, 0); break;
        case 3: do_write(&in, 1); break;
        case 4: case 5: do_claim(&in); break;
        case 6: do_commit(); break;
        case 7: do_abort(); break;
        case 8: do_flush(); break;
        case 9: case 10: do_poll(&in); break;
        case 11: do_poll_copy(&in); break;
        case 12: do_poll_fixed(&in); break;
        case 13:
            switch (byte(&in) % 3) {
            case 0: do_next_len(); break;
            case 1: do_read_one(&in); break;
            default: do_wait(); break;
            }
            break;
        case 14:
            b = byte(&in);
            if ((b & 15) == 0) {  /* rarely: close for good */
                pyq_queue_close(m.q);
                m.closed = 1;
                REQUIRE(pyq_queue_is_closed(m.q));
#ifdef PYQ_FUZZ_SEGMENT
            } else if (b & 1) {
                do_mutate(&in);
#endif
            } else {
                do_flush();
                drain();
            }
            break;
        default:
            if (byte(&in) & 1)
                check_stats();
            else
                do_write_batch(&in);
            break;
        }
    }
    /* No loss: an outstanding claim is dropped, then flush + drain delivers
     * every committed message, and nothing else. */
    if (m.claimed)
        do_abort();
    do_flush();
    drain();
    MODEL(m.delivered == m.committed);
    check_stats();
    pyq_queue_destroy(m.q);
#ifdef PYQ_FUZZ_SEGMENT
    close(m.fd);
#endif
    return 0;
}
