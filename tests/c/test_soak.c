/* test_soak.c - soak slices (csrc/stress/soak.c) under ASan+UBSan and TSan: two slices
 * continue one stream on one queue with every kind of write, pauses on both
 * sides and tier-2 spills; a bad parameter is refused. */
#include <string.h>

#include "check.h"
#include "stress/pyq_soak.h"

static void slices(int publish, int scan)
{
    pyq_config_t cfg;
    pyq_queue_t *q;
    pyq_soak_params_t p;
    pyq_soak_result_t r;
    pyq_stats_t st;
    uint64_t total = 0;

    pyq_config_init(&cfg);
    cfg.block_size = 512;
    cfg.hot_blocks = 2;
    cfg.spill_blocks = 16;
    cfg.publish = publish;
    cfg.publish_bytes = 300;
    cfg.scan_current = scan;
    cfg.retry_yield_every = 16;
    CHECK_EQ(pyq_queue_create(&cfg, &q), 0);
    memset(&p, 0, sizeof p);
    p.seed = 7;
    p.duration_ns = 200000000;
    p.max_messages = 30000;
    p.min_len = 0;
    p.max_len = pyq_queue_max_message(q);
    p.size_salt = 3;
    p.writer_pause_every = 2000;
    p.writer_pause_max_us = 200;
    p.reader_pause_every = 500;
    p.reader_pause_max_us = 1000;
    p.flush_every = 50;
    p.claim_every = 5;
    p.try_every = 5;
    p.timeout_every = 5;
    p.timeout_max_ns = 20000;
    p.max_poll = 40;
    p.writer_cpu = p.reader_cpu = -1;
    p.batch_every = 3;
    for (int i = 0; i < 4; i++) {
        /* Slices 2 and 3: one fixed size, so that write_batch runs too. */
        p.min_len = i < 2 ? 0 : 40;
        p.max_len = i < 2 ? pyq_queue_max_message(q) : 40;
        p.first_seq = total;
        CHECK_EQ(pyq_soak_run(q, &p, &r), 0);
        CHECK_EQ(r.error, 0);
        CHECK_EQ(r.read, r.written);
        CHECK(r.written > 0);
        CHECK(i < 2 ? r.batches == 0 : r.batches > 0 && r.batched > r.batches);
        total += r.written;
    }
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_written, total);
    CHECK_EQ(st.messages_read, total);
    CHECK_EQ(st.backlog, 0);
    CHECK(st.takes_spill > 0);
    p.max_len = pyq_queue_max_message(q) + 1;
    CHECK_EQ(pyq_soak_run(q, &p, &r), PYQ_EINVAL);
    pyq_queue_destroy(q);
}

int main(void)
{
    slices(PYQ_PUBLISH_MAX, 0);
    slices(PYQ_PUBLISH_EACH, 1);
    slices(PYQ_PUBLISH_BYTES, 0);
    CHECK_DONE("test_soak");
}
