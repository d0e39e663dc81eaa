/* queue_make.h - the C tests' queue of a given shape (after check.h and pyqueue.h). */
#ifndef PYQ_TEST_QUEUE_MAKE_H
#define PYQ_TEST_QUEUE_MAKE_H

/* A queue of cfg's other settings with bs-byte blocks, hot + spill of them,
 * publishing by publish (pb bytes for PYQ_PUBLISH_BYTES), scanning the current
 * block if scan; a failed create is a failed check and NULL. */
static inline pyq_queue_t *make_with(pyq_config_t *cfg, uint32_t bs, uint32_t hot, uint32_t spill,
                                     int publish, uint32_t pb, int scan)
{
    pyq_queue_t *q = NULL;

    cfg->block_size = bs;
    cfg->hot_blocks = hot;
    cfg->spill_blocks = spill;
    cfg->publish = publish;
    cfg->publish_bytes = pb;
    cfg->scan_current = scan;
    CHECK_EQ(pyq_queue_create(cfg, &q), 0);
    return q;
}

/* make_with() on the default configuration. */
static inline pyq_queue_t *make(uint32_t bs, uint32_t hot, uint32_t spill, int publish, uint32_t pb,
                                int scan)
{
    pyq_config_t cfg;

    pyq_config_init(&cfg);
    return make_with(&cfg, bs, hot, spill, publish, pb, scan);
}
#endif
