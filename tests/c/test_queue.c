/* test_queue.c - single-threaded unit tests of the queue core (built with ASan+UBSan). */
#include <string.h>

#include "check.h"
#include "common/pyq_pattern.h"
#include "pyqueue.h"
#include "queue_make.h"

struct collect {
    int n;
    uint32_t lens[4096];
    uint8_t first[4096];
};

static int collect_fn(void *ctx, const void *msg, uint32_t len)
{
    struct collect *c = ctx;
    c->lens[c->n] = len;
    c->first[c->n] = len ? *(const uint8_t *)msg : 0;
    c->n++;
    return 0;
}

static int64_t drain(pyq_queue_t *q, struct collect *c)
{
    c->n = 0;
    return pyq_reader_poll(q, UINT64_MAX, collect_fn, c);
}

/* The content is made and checked a word at a time (pattern.c): the same bytes
 * as the definition, byte by byte, for every length and alignment; any one
 * flipped bit is caught, and nothing past len is written. */
static void test_pattern(void)
{
    uint8_t ref[300], got[304];

    for (uint64_t k = 0; k < 3000; k++) {
        uint64_t seq = k * 0x9E3779B97F4A7C15ull + (k & 1 ? ~k : k);
        uint8_t base = (uint8_t)((seq * 0x9E3779B97F4A7C15ull >> 56) + (seq >> 8));
        for (uint32_t len = 0; len <= 300; len += len < 40 ? 1 : 37) {
            uint32_t off = (uint32_t)(k & 3), i = 0;
            if (len >= 8) {
                memcpy(ref, &seq, 8);
                i = 8;
            }
            for (; i < len; i++)
                ref[i] = (uint8_t)(base + i * 131u);
            memset(got, 0xA5, sizeof got);
            pyq_pattern_fill(got + off, len, seq);
            CHECK_EQ(memcmp(got + off, ref, len), 0);
            CHECK_EQ(got[off + len], 0xA5);
            CHECK_EQ(pyq_pattern_check(got + off, len, seq), 0);
            if (len) {
                got[off + seq % len] ^= (uint8_t)(1u << (k % 8));
                CHECK_EQ(pyq_pattern_check(got + off, len, seq), PYQ_EBADMSG);
            }
        }
    }
}

static void test_config(void)
{
    pyq_config_t cfg;
    const char *bad = NULL;
    pyq_queue_t *q = (pyq_queue_t *)1;

    pyq_config_init(&cfg);
    CHECK_EQ(cfg.block_size, 4096);
    CHECK_EQ(cfg.hot_blocks, 4);
    CHECK_EQ(cfg.spill_blocks, 65536);
    CHECK_EQ(cfg.retry_yield_every, 1024);
    CHECK_EQ(pyq_config_check(&cfg, &bad), 0);
    cfg.block_size = 100;
    CHECK_EQ(pyq_config_check(&cfg, &bad), PYQ_EINVAL);
    CHECK(bad && strcmp(bad, "block_size") == 0);
    CHECK_EQ(pyq_queue_create(&cfg, &q), PYQ_EINVAL);
    CHECK(q == NULL);
    pyq_config_init(&cfg);
    cfg.hot_blocks = 0;
    CHECK_EQ(pyq_config_check(&cfg, &bad), PYQ_EINVAL);
    CHECK(strcmp(bad, "hot_blocks") == 0);
    pyq_config_init(&cfg);
    cfg.publish = 7;
    CHECK_EQ(pyq_config_check(&cfg, &bad), PYQ_EINVAL);
    CHECK(strcmp(bad, "publish") == 0);
    cfg.publish = PYQ_PUBLISH_BYTES;
    cfg.publish_bytes = 0;
    CHECK_EQ(pyq_config_check(&cfg, &bad), PYQ_EINVAL);
    CHECK(strcmp(bad, "publish_bytes") == 0);
    CHECK(strcmp(pyq_strerror(PYQ_EAGAIN), "queue full") == 0);
}

static void test_publish_policies(void)
{
    struct collect c;
    uint8_t msg[32];
    memset(msg, 7, sizeof(msg));

    /* max: nothing visible until the block is full or flushed. */
    pyq_queue_t *q = make(4096, 4, 4, PYQ_PUBLISH_MAX, 0, 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(drain(q, &c), 0);
    CHECK_EQ(pyq_writer_flush(q), 0);
    CHECK_EQ(drain(q, &c), 3);
    /* ...and after a flush the same block goes on filling. */
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(drain(q, &c), 0);
    for (int i = 0; i < 200; i++) /* fills past one block: the first is sealed */
        CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    /* Runs (DESIGN §3.1): the 3 before the flush are one run (40 + 2 * 32 bytes),
     * the flush ends it; the next write opens another, which takes 32 bytes a
     * message until a 40-byte record no longer fits. */
    CHECK_EQ(drain(q, &c), 1 + (4096 - 104 - 40) / 32);
    pyq_queue_destroy(q);

    /* each: visible as soon as write returns. */
    q = make(4096, 4, 4, PYQ_PUBLISH_EACH, 0, 0);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(drain(q, &c), 1);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(drain(q, &c), 2);
    pyq_queue_destroy(q);

    /* bytes:100 with 40-byte records: published at 120 bytes, i.e. the 3rd write. */
    q = make(4096, 4, 4, PYQ_PUBLISH_BYTES, 100, 0);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(drain(q, &c), 0);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(drain(q, &c), 3);
    pyq_queue_destroy(q);

    /* scan_current: committed messages of the unpublished block are visible. */
    q = make(4096, 4, 4, PYQ_PUBLISH_MAX, 0, 1);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(drain(q, &c), 1);
    CHECK_EQ(drain(q, &c), 0);
    CHECK_EQ(pyq_writer_write(q, msg, 5, 0), 0);
    CHECK_EQ(drain(q, &c), 1);
    CHECK_EQ(c.lens[0], 5);
    pyq_queue_destroy(q);
}

static void test_sizes(void)
{
    struct collect c;
    uint8_t big[200];
    pyq_queue_t *q = make(64, 2, 0, PYQ_PUBLISH_EACH, 0, 0);

    memset(big, 1, sizeof(big));
    CHECK_EQ(pyq_queue_max_message(q), 56);
    CHECK_EQ(pyq_writer_write(q, big, 57, 0), PYQ_ETOOBIG);
    CHECK_EQ(pyq_writer_write(q, big, 56, 0), 0);
    CHECK_EQ(pyq_writer_write(q, big, 0, 0), 0); /* empty messages are allowed */
    CHECK_EQ(drain(q, &c), 2);
    CHECK_EQ(c.lens[0], 56);
    CHECK_EQ(c.lens[1], 0);
    pyq_queue_destroy(q);
}

/* A len of UINT32_MAX is also the writer's "no run" mark (PYQ_NO_RUN): with
 * no run open, after a small run and after a run of a length the fast paths
 * do not take, every write path refuses it (it once matched the mark and
 * copied 4 GiB). */
static void test_len_of_no_run(void)
{
    static uint8_t buf[256];
    struct collect c;
    pyq_config_t cfg;
    pyq_queue_t *q = NULL;
    const uint32_t huge = UINT32_MAX;

    pyq_config_init(&cfg);
    cfg.spill_blocks = 4;
    CHECK_EQ(pyq_queue_create(&cfg, &q), 0);
    CHECK_EQ(pyq_writer_try_write(q, buf, huge), PYQ_ETOOBIG); /* before any block */
    for (uint32_t len = 32; len <= 100; len += 68) {
        CHECK_EQ(pyq_writer_try_write(q, buf, len), 0);
        CHECK_EQ(pyq_writer_try_write(q, buf, len), 0); /* an open run of len */
        CHECK_EQ(pyq_writer_try_write(q, buf, huge), PYQ_ETOOBIG);
        CHECK_EQ(pyq_writer_try_write_inline(q, buf, huge), PYQ_ETOOBIG);
        CHECK_EQ(pyq_writer_write(q, buf, huge, 0), PYQ_ETOOBIG);
        CHECK_EQ(pyq_writer_flush(q), 0); /* no run open */
        CHECK_EQ(pyq_writer_try_write(q, buf, huge), PYQ_ETOOBIG);
        CHECK_EQ(pyq_writer_try_write_inline(q, buf, huge), PYQ_ETOOBIG);
        CHECK_EQ(pyq_writer_write(q, buf, huge, 0), PYQ_ETOOBIG);
    }
    CHECK_EQ(drain(q, &c), 4); /* the four real messages, nothing else */
    CHECK_EQ(c.lens[0], 32);
    CHECK_EQ(c.lens[3], 100);
    pyq_queue_destroy(q);
}

static void test_full_and_tiers(void)
{
    struct collect c;
    uint8_t msg[32];
    pyq_stats_t st;
    int written = 0, rc;
    /* 2 hot + 3 spill blocks of 256 B: one run a block, 40 B for its header and
     * first message, then 32 B a message -- 7 messages (DESIGN §3.1). */
    pyq_queue_t *q = make(256, 2, 3, PYQ_PUBLISH_MAX, 0, 0);

    for (;;) {
        pyq_pattern_fill(msg, 32, (uint64_t)written);
        rc = pyq_writer_try_write(q, msg, 32);
        if (rc != 0)
            break;
        written++;
    }
    CHECK_EQ(rc, PYQ_EAGAIN);
    CHECK_EQ(written, 5 * (1 + (256 - 40) / 32));
    CHECK_EQ(pyq_writer_write(q, msg, 32, 1000000), PYQ_EAGAIN); /* 1 ms timeout */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 2);
    CHECK_EQ(st.takes_spill, 3);
    CHECK(st.full_events >= 2);
    CHECK(st.peak_backlog >= 4 * 7 * 32);
    /* The failed write sealed the last block (it had no room), so all five come back. */
    pyq_writer_flush(q);
    CHECK_EQ(drain(q, &c), written);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.returns_hot, 2);
    CHECK_EQ(st.returns_spill, 3);
    CHECK_EQ(st.backlog, 0);
    /* After a drain the writer takes tier 1 again first. */
    for (int i = 0; i < 12; i++)
        CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 4);
    pyq_queue_destroy(q);
}

static void test_claim(void)
{
    struct collect c;
    void *p = NULL, *p2 = NULL;
    pyq_queue_t *q = make(4096, 2, 2, PYQ_PUBLISH_EACH, 0, 1);

    CHECK_EQ(pyq_writer_commit(q), PYQ_ENOCLAIM);
    CHECK_EQ(pyq_writer_abort(q), PYQ_ENOCLAIM);
    CHECK_EQ(pyq_writer_claim(q, 16, 0, &p), 0);
    memset(p, 0xEE, 16);
    CHECK_EQ(pyq_writer_claim(q, 16, 0, &p2), PYQ_EBUSY);
    CHECK_EQ(pyq_writer_write(q, "x", 1, 0), PYQ_EBUSY);
    CHECK_EQ(drain(q, &c), 0);
    CHECK_EQ(pyq_writer_abort(q), 0);
    CHECK_EQ(drain(q, &c), 0);
    CHECK_EQ(pyq_writer_claim(q, 3, 0, &p), 0);
    memcpy(p, "abc", 3);
    CHECK_EQ(pyq_writer_commit(q), 0);
    CHECK_EQ(drain(q, &c), 1);
    CHECK_EQ(c.lens[0], 3);
    CHECK_EQ(c.first[0], 'a');
    pyq_queue_destroy(q);
}

static void test_close_and_fixed(void)
{
    struct collect c;
    uint8_t out[4 * 32], msg[32];
    pyq_queue_t *q = make(4096, 2, 2, PYQ_PUBLISH_EACH, 0, 0);

    memset(msg, 3, sizeof(msg));
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), 0);
    CHECK_EQ(pyq_writer_write(q, msg, 16, 0), 0);
    CHECK_EQ(pyq_reader_poll_fixed(q, out, 4, 32), 2);
    CHECK_EQ(pyq_reader_poll_fixed(q, out, 4, 32), PYQ_ERANGE);
    CHECK_EQ(pyq_reader_next_len(q), 16); /* the odd one stays queued */
    pyq_queue_close(q);
    CHECK(pyq_queue_is_closed(q));
    CHECK_EQ(pyq_writer_write(q, msg, 32, 0), PYQ_ECLOSED);
    CHECK_EQ(drain(q, &c), 1); /* reads still drain */
    CHECK_EQ(pyq_reader_next_len(q), PYQ_EAGAIN);
    pyq_queue_destroy(q);
    pyq_queue_destroy(NULL);
}

static void test_poll_copy(void)
{
    uint8_t buf[64];
    uint32_t lens[8];
    uint8_t msg[40];
    pyq_queue_t *q = make(4096, 2, 2, PYQ_PUBLISH_EACH, 0, 0);

    for (int i = 0; i < 3; i++) {
        pyq_pattern_fill(msg, 20, (uint64_t)i);
        CHECK_EQ(pyq_writer_write(q, msg, 20, 0), 0);
    }
    /* 20 bytes take 24 in buf: two fit in 64, the third waits. */
    CHECK_EQ(pyq_reader_poll_copy(q, buf, sizeof(buf), lens, 8), 2);
    CHECK_EQ(pyq_pattern_check(buf, 20, 0), 0);
    CHECK_EQ(pyq_pattern_check(buf + 24, 20, 1), 0);
    CHECK_EQ(pyq_reader_poll_copy(q, buf, sizeof(buf), lens, 8), 1);
    CHECK_EQ(pyq_pattern_check(buf, 20, 2), 0);
    pyq_queue_destroy(q);
}

/* Messages in order, each with the pattern of its sequence number. */
static int check_seq_fn(void *ctx, const void *msg, uint32_t len)
{
    uint64_t *next = ctx;
    CHECK_EQ(pyq_pattern_check(msg, len, *next), 0);
    (*next)++;
    return 0;
}

static void write_seq(pyq_queue_t *q, uint64_t *seq, uint32_t len, int n)
{
    uint8_t msg[64];
    for (int i = 0; i < n; i++, (*seq)++) {
        pyq_pattern_fill(msg, len, *seq);
        CHECK_EQ(pyq_writer_write(q, msg, len, 0), 0);
    }
}

/* Stops the poll at the message whose sequence number is *stop (returning
 * 1), fails it with PYQ_EBADMSG at *fail; else check_seq_fn. */
struct stop_at { uint64_t next, stop, fail; };

static int stop_fn(void *ctx, const void *msg, uint32_t len)
{
    struct stop_at *s = ctx;
    uint64_t seq = s->next;
    check_seq_fn(&s->next, msg, len);
    if (seq == s->fail)
        return PYQ_EBADMSG;
    return seq == s->stop;
}

/* Writes through the inline path: every size, so runs of each length start,
 * grow inline, end at a block's end and at a size change; the counters are
 * exact after every write (the inline path counts a run's members in the run
 * word, stats adds them back). */
static void write_seq_inline(pyq_queue_t *q, uint64_t *seq, uint64_t *bytes, uint32_t len,
                             int n)
{
    uint8_t msg[128];
    pyq_stats_t st;
    for (int i = 0; i < n; i++, (*seq)++) {
        pyq_pattern_fill(msg, len, *seq);
        CHECK_EQ(pyq_writer_try_write_inline(q, msg, len), 0);
        *bytes += len;
        pyq_queue_stats(q, &st);
        CHECK_EQ(st.messages_written, *seq + 1);
        CHECK_EQ(st.bytes_written, *bytes);
    }
}

/* pyqueue_inline.h: the inline writer and reader give what the library's
 * calls give -- same framing, order, counters, results -- under every mode
 * the gate word turns away (streamed spill blocks, touch, close, scanning
 * readers), and the inline poll's stops and errors are pyq_reader_poll's. */
static void test_inline_paths(void)
{
    static const uint32_t sizes[] = {32, 32, 8, 20, 64, 0, 33, 100, 32};
    uint8_t msg[64] = {0};
    pyq_stats_t st;

    for (int mode = 0; mode < 5; mode++) {
        /* 0 default (4 hot 512-byte blocks, streamed spill), 1 all spill
         * written through the cache, 2 touch_after_write, 3 publish each
         * (a scanning reader), 4 bytes:100 */
        pyq_config_t cfg;
        pyq_queue_t *q = NULL;
        uint64_t w = 0, bytes = 0;
        struct stop_at s = {0, UINT64_MAX, UINT64_MAX};

        pyq_config_init(&cfg);
        cfg.block_size = 512;
        cfg.hot_blocks = 1;
        cfg.spill_blocks = 40;
        cfg.spill_nontemporal = mode == 0;
        cfg.nontemporal_backlog_kib = 0; /* every spill block streamed */
        cfg.touch_after_write = mode == 2;
        cfg.publish = mode == 3 ? PYQ_PUBLISH_EACH : mode == 4 ? PYQ_PUBLISH_BYTES : PYQ_PUBLISH_MAX;
        cfg.publish_bytes = 100;
        CHECK_EQ(pyq_queue_create(&cfg, &q), 0);
        for (int round = 0; round < 3; round++) {
            for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
                write_seq_inline(q, &w, &bytes, sizes[k], 1 + (int)(k * 7) % 23);
            write_seq_inline(q, &w, &bytes, 24, 60); /* a run across blocks */
            /* Stop inside a run, then an error, then the rest in slices. */
            s.stop = s.next + 3;
            s.fail = s.next + 10;
            CHECK_EQ(pyq_writer_flush(q), 0);
            CHECK_EQ(pyq_reader_poll_inline(q, UINT64_MAX, stop_fn, &s), 4);
            CHECK_EQ(pyq_reader_poll_inline(q, UINT64_MAX, stop_fn, &s), PYQ_EBADMSG);
            CHECK_EQ(s.next, s.fail + 1); /* that message is consumed */
            while (pyq_reader_poll_inline(q, 5, stop_fn, &s) > 0)
                ;
            CHECK_EQ(s.next, w);
            pyq_queue_stats(q, &st);
            CHECK_EQ(st.messages_read, w);
            CHECK_EQ(st.backlog, 0);
            CHECK_EQ(st.returns_hot + st.returns_spill, st.takes_hot + st.takes_spill - 1);
        }
        pyq_queue_stats(q, &st);
        CHECK(st.takes_spill > 0);
        pyq_queue_close(q); /* the gate turns the inline path away: ECLOSED */
        CHECK_EQ(pyq_writer_try_write_inline(q, msg, 24), PYQ_ECLOSED);
        CHECK_EQ(pyq_writer_try_write_inline(q, msg, 32), PYQ_ECLOSED);
        pyq_queue_stats(q, &st);
        CHECK_EQ(st.messages_written, w);
        pyq_queue_destroy(q);
    }
}

/* A close that lands while a run is open: the run paths (inline and exported)
 * compare the message's length with one word that holds the run's length and
 * the gate's PYQ_GATE_RUN bits (queue_pvt.h, run_gate), so the next write of
 * the run's length is refused -- in a cached hot block, a streamed spill block
 * and under touch -- and the members written before it are all delivered. */
static void test_close_inside_a_run(void)
{
    for (int mode = 0; mode < 3; mode++) {
        pyq_config_t cfg;
        pyq_queue_t *q = NULL;
        pyq_stats_t st;
        uint64_t w = 0, r = 0, bytes = 0;
        uint8_t msg[32];

        pyq_config_init(&cfg);
        cfg.block_size = 512;
        cfg.hot_blocks = mode == 1 ? 1 : 4;
        cfg.spill_blocks = 4;
        cfg.nontemporal_backlog_kib = 0; /* mode 1: every spill block streamed */
        cfg.touch_after_write = mode == 2;
        if (pyq_queue_create(&cfg, &q) != 0) {
            CHECK(0);
            continue;
        }
        /* A run open: 5 members, or in mode 1 the hot block's 15 and 5 in a
         * streamed spill block; and 2 more through the library. */
        write_seq_inline(q, &w, &bytes, 32, mode == 1 ? 20 : 5);
        write_seq(q, &w, 32, 2);
        pyq_queue_stats(q, &st);
        CHECK_EQ(st.takes_spill, mode == 1 ? 1u : 0u);
        pyq_queue_close(q);
        pyq_pattern_fill(msg, 32, w);
        CHECK_EQ(pyq_writer_try_write_inline(q, msg, 32), PYQ_ECLOSED);
        CHECK_EQ(pyq_writer_try_write(q, msg, 32), PYQ_ECLOSED);
        CHECK_EQ(pyq_writer_write(q, msg, 32, 0), PYQ_ECLOSED);
        CHECK_EQ(pyq_writer_try_write_inline(q, msg, 24), PYQ_ECLOSED);
        pyq_queue_stats(q, &st);
        CHECK_EQ(st.messages_written, w);
        pyq_writer_detach(q); /* flushes what was written */
        while (pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r) > 0)
            ;
        CHECK_EQ(r, w);
        CHECK_EQ(w, mode == 1 ? 22u : 7u);
        pyq_queue_destroy(q);
    }
}

/* A scanning reader crosses blocks through linked PADs (queue_pvt.h, Link):
 * taken early when a commit leaves less room than its record and a hot block
 * is free, at the next write otherwise (either tier), never changing tiers. */
static void test_block_links(void)
{
    pyq_stats_t st;
    uint64_t w = 0, r = 0;
    pyq_queue_t *q = make(256, 2, 2, PYQ_PUBLISH_EACH, 0, 0);

    write_seq(q, &w, 32, 6);  /* 6 records of 40 B: 16 B left, sealed early */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 2);
    CHECK_EQ(st.blocks_published, 1);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(pyq_reader_poll(q, 1, check_seq_fn, &r), 1);
    CHECK_EQ(pyq_reader_poll(q, 1, check_seq_fn, &r), 0);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.returns_hot, 1); /* followed the link, first block back */
    write_seq(q, &w, 32, 6);     /* early again: the first block is free */
    write_seq(q, &w, 32, 6);     /* no hot block free: not early... */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 3);
    CHECK_EQ(st.takes_spill, 0);
    write_seq(q, &w, 32, 1);     /* ...but linked at the write that does not fit */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_spill, 1);
    CHECK_EQ(pyq_reader_next_len(q), 32);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 13);
    CHECK_EQ(r, w);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.returns_hot, 3);
    CHECK_EQ(st.returns_spill, 0);
    pyq_queue_destroy(q);

    /* scan_current, exactly full blocks: the next hot block is taken at once. */
    q = make(256, 2, 1, PYQ_PUBLISH_MAX, 0, 1);
    w = r = 0;
    write_seq(q, &w, 56, 4);     /* 4 records of 64 B */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 2);
    CHECK_EQ(st.blocks_published, 1);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 4);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 0);
    write_seq(q, &w, 56, 1);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 1);
    pyq_queue_close(q);          /* closed: no take at the next exact fill */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 2);
    pyq_queue_destroy(q);
}

/* Runs (DESIGN §3.1, queue_pvt.h Runs): equal-sized writes under publish max
 * share one header -- 32 B a message after the first -- mixed with other
 * sizes, claims, aborts and zero-length messages, across blocks, and read back
 * by every reader call in order, byte for byte; the counters stay exact after
 * every call. */
static void test_runs(void)
{
    static uint8_t batch[200 * 24], out[200 * 24];
    uint32_t lens[256];
    uint64_t w = 0, r = 0;
    pyq_stats_t st;
    void *p;
    int err;
    pyq_queue_t *q = make(512, 2, 2, PYQ_PUBLISH_MAX, 0, 0);

    write_seq(q, &w, 32, 5);          /* one run: 40 + 4 * 32 = 168 B */
    write_seq(q, &w, 20, 3);          /* another size, padded to 24: 32 + 2 * 24 */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_written, 8);  /* exact without a flush */
    CHECK_EQ(st.bytes_written, 5 * 32 + 3 * 20);
    CHECK_EQ(pyq_writer_claim(q, 20, 0, &p), 0); /* a claim ends the run... */
    CHECK_EQ(pyq_writer_abort(q), 0);            /* ...even when aborted */
    write_seq(q, &w, 20, 1);          /* a record of its own: 32 B, at 248 */
    write_seq(q, &w, 0, 2);           /* zero-length: 8 B each, never a run */
    CHECK_EQ(pyq_writer_claim(q, 32, 0, &p), 0);
    pyq_pattern_fill(p, 32, w++);
    CHECK_EQ(pyq_writer_commit(q), 0); /* at 296: opens a run that writes extend */
    write_seq(q, &w, 32, 5);          /* 296 + 40 + 5 * 32 = 496: full at the 6th */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 1);
    write_seq(q, &w, 32, 1);          /* does not fit: seals, a new block */
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.takes_hot, 2);
    CHECK_EQ(st.blocks_published, 1);
    CHECK_EQ(pyq_reader_poll(q, 3, check_seq_fn, &r), 3); /* stops inside the run */
    CHECK_EQ(pyq_reader_next_len(q), 32);
    CHECK_EQ(pyq_reader_poll_fixed(q, out, 10, 32), 2);  /* rest of the run, then 20 B */
    for (int i = 0; i < 2; i++, r++)
        CHECK_EQ(pyq_pattern_check(out + 32 * i, 32, r), 0);
    CHECK_EQ(pyq_reader_poll_fixed(q, out, 10, 32), PYQ_ERANGE);
    CHECK_EQ(pyq_reader_read_one(q, out, 8), PYQ_ETOOBIG); /* stays in the run */
    CHECK_EQ(pyq_reader_poll_copy(q, out, sizeof out, lens, 2), 2);
    for (int i = 0; i < 2; i++, r++)
        CHECK_EQ(pyq_pattern_check(out + 24 * i, 20, r), 0);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 10);
    CHECK_EQ(r, w - 1);               /* the last write is in the open block */
    pyq_writer_flush(q);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 1);
    pyq_queue_destroy(q);

    /* write_batch: runs across blocks, 24-byte rows (back to back: one copy a
     * run on both sides), a zero-size batch, counters exact after each. */
    q = make(2048, 2, 2, PYQ_PUBLISH_MAX, 0, 0); /* 32 + 84 * 24: exactly full */
    w = r = 0;
    for (int i = 0; i < 200; i++)
        pyq_pattern_fill(batch + 24 * i, 24, w + (uint64_t)i);
    CHECK_EQ(pyq_writer_write_batch(q, batch, 200, 24, 0, &err), 200);
    CHECK_EQ(err, 0);
    w += 200;
    CHECK_EQ(pyq_writer_write_batch(q, batch, 3, 0, 0, &err), 3);
    w += 3;
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_written, w);
    pyq_writer_flush(q);
    CHECK_EQ(pyq_reader_poll_fixed(q, out, 200, 24), 200);
    for (int i = 0; i < 200; i++, r++)
        CHECK_EQ(pyq_pattern_check(out + 24 * i, 24, r), 0);
    CHECK_EQ(pyq_reader_poll_fixed(q, out, 200, 0), 3);
    r += 3;
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_read, w);
    CHECK_EQ(st.backlog, 0);
    pyq_queue_destroy(q);
}

/* Runs in streamed spill blocks and across blocks, every small size: the
 * streamed member's word stores and its shifted tail (len % 8), a batch's
 * 16-byte stream at either alignment of its first payload, a batch's rest
 * opening the next block's run, writes extending a batch's run -- byte for
 * byte, in order, counters exact after each step.  Then a batch that meets a
 * full queue stops at the member that finds no block (EAGAIN), with every
 * message before it delivered. */
static void test_streamed_runs(void)
{
    static uint8_t batch[300 * 64];
    pyq_config_t cfg;
    pyq_queue_t *q = NULL;
    pyq_stats_t st;
    uint64_t w = 0, r = 0;
    int64_t k;
    int err;

    pyq_config_init(&cfg);
    cfg.block_size = 512;
    cfg.hot_blocks = 1;
    cfg.spill_blocks = 80;
    cfg.nontemporal_backlog_kib = 0; /* every spill block streamed */
    if (pyq_queue_create(&cfg, &q) != 0) /* spill_nontemporal refused: cached spill */
        CHECK(0);
    for (uint32_t len = 8; len <= 64; len++) {
        write_seq(q, &w, len, 40); /* single writes: a run across blocks */
        for (int i = 0; i < 50; i++)
            pyq_pattern_fill(batch + len * i, len, w + (uint64_t)i);
        CHECK_EQ(pyq_writer_write_batch(q, batch, 50, len, 0, &err), 50);
        CHECK_EQ(err, 0);
        w += 50;
        write_seq(q, &w, len, 3); /* extending the batch's run */
        pyq_queue_stats(q, &st);
        CHECK_EQ(st.messages_written, w);
        CHECK_EQ(pyq_writer_flush(q), 0);
        CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 93);
        CHECK_EQ(r, w);
    }
    pyq_queue_stats(q, &st);
    CHECK(st.takes_spill > 0);
    CHECK_EQ(st.messages_read, w);
    CHECK_EQ(st.bytes_read, st.bytes_written);
    pyq_queue_destroy(q);

    q = make(512, 1, 1, PYQ_PUBLISH_MAX, 0, 0);
    w = r = 0;
    for (int i = 0; i < 300; i++)
        pyq_pattern_fill(batch + 32 * i, 32, (uint64_t)i);
    k = pyq_writer_write_batch(q, batch, 300, 32, 0, &err);
    CHECK_EQ(err, PYQ_EAGAIN);
    CHECK(k > 0 && k < 300);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_written, (uint64_t)k);
    CHECK_EQ(st.full_events, 1);
    CHECK_EQ(pyq_writer_flush(q), 0);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), k);
    pyq_queue_destroy(q);
}

/* write_batch's run batches (writer_batch.c, write_batch_runs, and the AVX copy of
 * their payloads): the first batch after a publish (no run open), batches that
 * fill the open run's tail and go on for several blocks in one call, sizes
 * that make every piece of the copy (8 to 520 bytes, multiples of 8) -- byte
 * for byte, in order, the counters exact after each call.  Then a batch that
 * meets a full queue stops with EAGAIN at the member that finds no block,
 * everything before it delivered, and one on a closed queue writes nothing. */
static void test_batch_runs(void)
{
    static uint8_t batch[300 * 520];
    static const uint32_t sizes[] = {8, 32, 40, 96, 168, 520};
    static const uint64_t counts[] = {3, 300, 17, 1};
    pyq_stats_t st;
    int err;

    for (unsigned z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        uint32_t size = sizes[z];
        uint64_t w = 0, r = 0;
        pyq_queue_t *q = make(4096, 4, 60, PYQ_PUBLISH_MAX, 0, 0);
        for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            uint64_t n = counts[c];
            for (uint64_t i = 0; i < n; i++)
                pyq_pattern_fill(batch + size * i, size, w + i);
            CHECK_EQ(pyq_writer_write_batch(q, batch, n, size, 0, &err), n);
            CHECK_EQ(err, 0);
            w += n;
            pyq_queue_stats(q, &st);
            CHECK_EQ(st.messages_written, w);
            CHECK_EQ(st.bytes_written, w * size);
            if (c == 1)
                pyq_writer_flush(q); /* the next batch finds no run open */
        }
        pyq_writer_flush(q);
        CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), w);
        CHECK_EQ(r, w);
        pyq_queue_destroy(q);
    }

    pyq_queue_t *q = make(512, 1, 1, PYQ_PUBLISH_MAX, 0, 0); /* 15 members a block */
    uint64_t r = 0;
    for (uint64_t i = 0; i < 100; i++)
        pyq_pattern_fill(batch + 32 * i, 32, i);
    CHECK_EQ(pyq_writer_write_batch(q, batch, 100, 32, 0, &err), 30);
    CHECK_EQ(err, PYQ_EAGAIN);
    pyq_writer_flush(q);
    CHECK_EQ(pyq_reader_poll(q, UINT64_MAX, check_seq_fn, &r), 30);
    pyq_queue_close(q);
    CHECK_EQ(pyq_writer_write_batch(q, batch, 4, 32, 0, &err), 0);
    CHECK_EQ(err, PYQ_ECLOSED);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_written, 30);
    pyq_queue_destroy(q);
}

int main(void)
{
    test_pattern();
    test_config();
    test_publish_policies();
    test_sizes();
    test_len_of_no_run();
    test_full_and_tiers();
    test_claim();
    test_close_and_fixed();
    test_poll_copy();
    test_block_links();
    test_runs();
    test_inline_paths();
    test_close_inside_a_run();
    test_streamed_runs();
    test_batch_runs();
    CHECK_DONE("test_queue");
}
