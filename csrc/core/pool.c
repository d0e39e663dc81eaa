/*
 * pool.c - the two-tier block pool and the control rings, mapped once at
 * creation (DESIGN §3.2).  Nothing here runs on the hot path.
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

/* Map the pool with the requested options.  hugepages: MAP_HUGETLB first (needs
 * reserved huge pages), else MADV_HUGEPAGE advice on a normal mapping. */
static int map_pool(struct pyq_queue *q)
{
    const pyq_config_t *c = &q->cfg;
    size_t bytes = (size_t)q->nblocks * c->block_size;
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
#ifdef MADV_HUGEPAGE
        if (c->hugepages && madvise(p, bytes, MADV_HUGEPAGE) == 0)
            q->hugepages_used = 2;
#endif
    }
    q->base = p;
    q->pool_bytes = bytes;

    if (c->prefault) {
        long page = sysconf(_SC_PAGESIZE);
        for (size_t off = 0; off < bytes; off += (size_t)page)
            ((volatile uint8_t *)q->base)[off] = 0;
    }
    if (c->mlock) {
        /* EPERM (no privilege) or ENOMEM (over RLIMIT_MEMLOCK): both are the OS
         * refusing to lock, not a failed allocation. */
        if (mlock(q->base, bytes) != 0)
            return PYQ_EPERM;
        q->mlocked = 1;
    }
    return 0;
}

int pyq_pool_map(struct pyq_queue *q)
{
    const pyq_config_t *c = &q->cfg;
    uint64_t tier_n[PYQ_TIERS] = { c->hot_blocks, c->spill_blocks };
    uint64_t ring_n = next_pow2(q->nblocks);
    uint64_t free_n[PYQ_TIERS];
    size_t off = 0, slots_off[PYQ_TIERS];
    int rc;

    /* The pool first: an impossible size fails here before any ring is filled. */
    if ((rc = map_pool(q)) != 0)
        return rc;

    /* Ring capacities >= the blocks that can be in them, so no ring ever overflows
     * and neither side needs the other's head index. */
    for (int t = 0; t < PYQ_TIERS; t++)
        free_n[t] = next_pow2(tier_n[t] ? tier_n[t] : 1);
    off = round_up(ring_n * sizeof(uint32_t), PYQ_CACHELINE);
    for (int t = 0; t < PYQ_TIERS; t++) {
        slots_off[t] = off;
        off += round_up(free_n[t] * sizeof(uint32_t), PYQ_CACHELINE);
    }
    q->ctl_bytes = off;
    q->ctl = mmap(NULL, q->ctl_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q->ctl == MAP_FAILED) {
        q->ctl = NULL;
        return PYQ_ENOMEM;
    }
    q->ring = q->ctl;
    q->ring_mask = ring_n - 1;
    for (int t = 0; t < PYQ_TIERS; t++) {
        q->free_slots[t] = (uint32_t *)((uint8_t *)q->ctl + slots_off[t]);
        q->free_mask[t] = free_n[t] - 1;
    }

    /* Every block starts free, in its tier's free ring, in address order. */
    for (uint32_t i = 0; i < c->hot_blocks; i++)
        q->free_slots[PYQ_TIER_HOT][i] = i;
    for (uint32_t i = 0; i < c->spill_blocks; i++)
        q->free_slots[PYQ_TIER_SPILL][i] = c->hot_blocks + i;
    atomic_init(&q->free_tail[PYQ_TIER_HOT], c->hot_blocks);
    atomic_init(&q->free_tail[PYQ_TIER_SPILL], c->spill_blocks);
    q->r.free_tail[PYQ_TIER_HOT] = c->hot_blocks;
    q->r.free_tail[PYQ_TIER_SPILL] = c->spill_blocks;
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
