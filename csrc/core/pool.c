/*
 * pool.c - the two-tier block pool and the control rings, mapped once at
 * creation.  Nothing here runs on the hot path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/queue_pvt.h"

static uint64_t next_pow2(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

/* The options that apply to a mapped pool of bytes at pool: MADV_HUGEPAGE
 * advice (when MAP_HUGETLB was not used), prefault, mlock. */
int pyq_pool_options(struct pyq_queue *q, uint8_t *pool, size_t bytes)
{
    const pyq_config_t *c = &q->cfg;

#ifdef MADV_HUGEPAGE
    if (c->hugepages && !q->hugepages_used && madvise(pool, bytes, MADV_HUGEPAGE) == 0)
        q->hugepages_used = 2;
#endif
    if (c->prefault) {
        long page = sysconf(_SC_PAGESIZE);
        for (size_t off = 0; off < bytes; off += (size_t)page)
            ((volatile uint8_t *)pool)[off] = 0;
    }
    if (c->mlock) {
        /* EPERM (no privilege) or ENOMEM (over RLIMIT_MEMLOCK): both are the OS
         * refusing to lock, not a failed allocation. */
        if (mlock(pool, bytes) != 0)
            return PYQ_EPERM;
        q->mlocked = 1;
    }
    return 0;
}

/* Map the pool with the requested options.  hugepages: MAP_HUGETLB first (needs
 * reserved huge pages), else MADV_HUGEPAGE advice on a normal mapping. */
static int map_pool(struct pyq_queue *q)
{
    const pyq_config_t *c = &q->cfg;
    size_t bytes = q->pool_bytes; /* the blocks, then the large region */
    void *p = MAP_FAILED;

    q->hugepages_used = 0;
#ifdef MAP_HUGETLB
    if (c->hugepages) {
        size_t huge = round_up(bytes, (size_t)2 << 20);
        p = mmap(NULL, huge, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (p != MAP_FAILED) {
            bytes = huge;
            q->hugepages_used = 1;
        }
    }
#endif
    if (p == MAP_FAILED) {
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return PYQ_ENOMEM;
    }
    q->base = p;
    q->pool_bytes = bytes;
    return pyq_pool_options(q, q->base, bytes);
}

/* The control block's layout: ring capacities >= the blocks that can be in
 * them, so no ring ever overflows and neither side needs the other's head
 * index.  Nothing is written into the rings here: a zero free ring reads as
 * full (queue_pvt.h, Free rings) and the full ring is written before it is
 * read, so a queue costs no memory until it is used (RELIABILITY.md,
 * "Memory"). */
void pyq_pool_layout(struct pyq_queue *q)
{
    const pyq_config_t *c = &q->cfg;
    uint64_t tier_n[PYQ_TIERS] = { c->hot_blocks, c->spill_blocks };
    uint64_t ring_n = next_pow2(q->nblocks);
    size_t off = round_up(ring_n * sizeof(uint32_t), PYQ_CACHELINE);

    q->ring_mask = ring_n - 1;
    for (int t = 0; t < PYQ_TIERS; t++) {
        uint64_t n = next_pow2(tier_n[t] ? tier_n[t] : 1);
        q->seg.free_off[t] = off;
        q->free_mask[t] = n - 1;
        off += round_up(n * sizeof(uint32_t), PYQ_CACHELINE);
    }
    q->ctl_bytes = off;
    q->pool_bytes = (size_t)q->nblocks * c->block_size + q->lg.bytes;
    /* Every block starts free, in its tier's free ring (the zero pages). */
    atomic_init(&q->free_tail[PYQ_TIER_HOT].v, c->hot_blocks);
    atomic_init(&q->free_tail[PYQ_TIER_SPILL].v, c->spill_blocks);
    q->r.free_tail[PYQ_TIER_HOT] = c->hot_blocks;
    q->r.free_tail[PYQ_TIER_SPILL] = c->spill_blocks;
}

/* The in-process queue: the pool and the control block, each its own
 * private anonymous mapping. */
int pyq_pool_map(struct pyq_queue *q)
{
    int rc;

    pyq_pool_layout(q);
    /* The pool first: an impossible size fails here before the rings are mapped. */
    if ((rc = map_pool(q)) != 0)
        return rc;
    q->ctl = mmap(NULL, q->ctl_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q->ctl == MAP_FAILED) {
        q->ctl = NULL;
        return PYQ_ENOMEM;
    }
    pyq_q_bind(q, PYQ_SIDE_WRITER, q->ctl, q->base);
    pyq_q_bind(q, PYQ_SIDE_READER, q->ctl, q->base);
    return 0;
}

void pyq_pool_unmap(struct pyq_queue *q)
{
    if (q->base) {
        if (q->mlocked)
            munlock(q->base, q->pool_bytes);
        munmap(q->base, q->pool_bytes);
        q->base = NULL;
    }
    if (q->ctl) {
        munmap(q->ctl, q->ctl_bytes);
        q->ctl = NULL;
    }
}
