/*
 * paced.c - an adapter that paces another's writer (pyq_bench_paced in
 * pyq_twins.h): the adapter rows' way into the chasing regime, with the twins'
 * own busy-wait (adapters/twin_pvt.h), so a paced row and a paced twin wait
 * the same.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "adapters/twin_pvt.h"
#include "bench/pyq_twins.h"

struct paced {
    const pyq_adapter_t *a;
    void *h;
    uint64_t gap;
};

static int pc_create(const pyq_adapter_params_t *p, void **h)
{
    (void)p;
    (void)h;
    return PYQ_EINVAL; /* made by pyq_bench_paced() only */
}

static void pc_destroy(void *h)
{
    free(h);
}

static uint64_t pc_capacity(void *h)
{
    struct paced *p = h;

    return p->a->capacity(p->h);
}

static int pc_try_write(void *h, const void *msg, uint32_t len)
{
    struct paced *p = h;

    pyq_twin_spin(p->gap);
    return p->a->try_write(p->h, msg, len);
}

static int64_t pc_try_write_burst(void *h, const void *msgs, uint32_t n, uint32_t len)
{
    struct paced *p = h;

    pyq_twin_spin(p->gap * n);
    return p->a->try_write_burst(p->h, msgs, n, len);
}

static void pc_flush(void *h)
{
    struct paced *p = h;

    p->a->flush(p->h);
}

static int64_t pc_poll(void *h, uint64_t max, pyq_message_fn fn, void *ctx)
{
    struct paced *p = h;

    return p->a->poll(p->h, max, fn, ctx);
}

static const pyq_adapter_t paced = {
    .abi = PYQ_ADAPTER_ABI, .name = "paced", .create = pc_create, .destroy = pc_destroy,
    .capacity = pc_capacity, .try_write = pc_try_write, .try_write_burst = pc_try_write_burst,
    .flush = pc_flush, .poll = pc_poll,
};

/* The same, without a burst call, for adapters that have none. */
static const pyq_adapter_t paced_each = {
    .abi = PYQ_ADAPTER_ABI, .name = "paced", .create = pc_create, .destroy = pc_destroy,
    .capacity = pc_capacity, .try_write = pc_try_write, .flush = pc_flush, .poll = pc_poll,
};

int pyq_bench_paced(const pyq_adapter_t *a, void *h, uint64_t gap_ticks,
                    const pyq_adapter_t **out_a, void **out_h)
{
    struct paced *p;

    if (!a || !h || !out_a || !out_h)
        return PYQ_EINVAL;
    if (!(p = malloc(sizeof *p)))
        return PYQ_ENOMEM;
    p->a = a;
    p->h = h;
    p->gap = gap_ticks;
    *out_a = a->try_write_burst ? &paced : &paced_each;
    *out_h = p;
    return 0;
}
