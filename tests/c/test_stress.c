/* test_stress.c - two-thread FIFO/byte verification (built with TSan, and ASan). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pyq_selftest.h"

static void run(int publish, uint32_t pb, int scan, int claim, uint64_t n, uint32_t bs, int nt)
{
    pyq_config_t cfg;
    pyq_queue_t *q;
    pyq_stress_params_t p;
    pyq_stress_result_t r;
    pyq_stats_t st;

    pyq_config_init(&cfg);
    cfg.block_size = bs;
    cfg.hot_blocks = 4;
    cfg.spill_blocks = 64;
    cfg.publish = publish;
    cfg.publish_bytes = pb;
    cfg.scan_current = scan;
    cfg.retry_yield_every = 16;
#if defined(__x86_64__)
    cfg.spill_nontemporal = nt;
#else
    (void)nt;
#endif
    CHECK_EQ(pyq_queue_create(&cfg, &q), 0);
    memset(&p, 0, sizeof(p));
    p.messages = n;
    p.min_len = 0;
    p.max_len = pyq_queue_max_message(q);
    p.salt = 42;
    p.writer_cpu = p.reader_cpu = -1;
    p.reader_pause_every = n / 4;
    p.reader_pause_us = 2000;
    p.use_claim = (uint32_t)claim;
    p.flush_every = claim ? 5 : 0;
    p.write_timeout_ns = PYQ_WAIT_FOREVER;
    CHECK_EQ(pyq_stress_run(q, &p, &r), 0);
    CHECK_EQ(r.written, n);
    CHECK_EQ(r.read, n);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_read, n);
    CHECK(st.takes_spill > 0); /* the pauses built a backlog into tier 2 */
    CHECK(st.returns_spill + 1 >= st.takes_spill);
    pyq_queue_destroy(q);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;

    for (int scan = 0; scan <= 1; scan++) {
        for (int nt = 0; nt <= 1; nt++) { /* spill blocks cached / streamed */
            run(PYQ_PUBLISH_MAX, 0, scan, 0, n, 512, nt);
            run(PYQ_PUBLISH_EACH, 0, scan, 0, n, 512, nt);
            run(PYQ_PUBLISH_BYTES, 300, scan, 0, n, 512, nt);
        }
        run(PYQ_PUBLISH_MAX, 0, scan, 1, n, 512, 1);
    }
    CHECK_DONE("test_stress");
}
