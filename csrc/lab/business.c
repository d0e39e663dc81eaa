/*
 * business.c - the 8-random-node business query of the original burst study.
 *
 * The query is the unit both the burst-tail writer and the ownership worker
 * time, so it is kept out of line (noinline): every caller runs this one copy
 * of its machine code, as the original study's query function.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "lab/pyq_business.h"

_Static_assert(sizeof(pyq_business_node_t) == PYQ_BUSINESS_NODE_SIZE, "a node is one cache line");
_Static_assert(offsetof(pyq_business_node_t, value) == 8, "next and value share the first 16 bytes");

static inline uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t mix64(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ (b * 0x9E3779B97F4A7C15ull);

    return splitmix64(&x);
}

static inline uint64_t rotr64(uint64_t v, unsigned r)
{
    return (v >> r) | (v << (64 - r));
}

int pyq_business_init(pyq_business_t *b, void *mem, uint64_t bytes, uint64_t seed)
{
    uint64_t n = bytes / PYQ_BUSINESS_NODE_SIZE, rng = seed;
    pyq_business_node_t *nodes;

    memset(b, 0, sizeof *b);
    if (bytes % PYQ_BUSINESS_NODE_SIZE || n < PYQ_BUSINESS_MIN_NODES || n > PYQ_BUSINESS_MAX_NODES)
        return PYQ_EINVAL;
    if (mem && ((uintptr_t)mem % PYQ_BUSINESS_NODE_SIZE))
        return PYQ_EINVAL;
    if (!mem) {
        /* MAP_POPULATE: no page fault ever lands in a timed window. */
        mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
        if (mem == MAP_FAILED)
            return PYQ_ENOMEM;
        b->owned = 1;
    }
    nodes = mem;
    memset(nodes, 0, bytes);
    /* Sattolo's shuffle of the identity: perm is one cycle through all n nodes,
     * so a walk from any start can reach every node.  The modulo's tiny bias
     * does not matter for a layout. */
    for (uint64_t i = 0; i < n; i++)
        nodes[i].next = (uint32_t)i;
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = splitmix64(&rng) % i; /* j < i: Sattolo, not Fisher-Yates */
        uint32_t t = nodes[i].next;

        nodes[i].next = nodes[j].next;
        nodes[j].next = t;
    }
    for (uint64_t i = 0; i < n; i++) {
        nodes[i].index = (uint32_t)i;
        nodes[i].value = splitmix64(&rng);
    }
    b->nodes = nodes;
    b->count = (uint32_t)n;
    b->bytes = bytes;
    b->seed = seed;
    return 0;
}

void pyq_business_destroy(pyq_business_t *b)
{
    if (b->owned && b->nodes)
        munmap(b->nodes, b->bytes);
    memset(b, 0, sizeof *b);
}

uint32_t pyq_business_nodes(const pyq_business_t *b)
{
    return b->count;
}

uint64_t pyq_business_bytes(const pyq_business_t *b)
{
    return b->bytes;
}

void pyq_business_warm(pyq_business_t *b, uint64_t salt)
{
    pyq_business_node_t *nodes = b->nodes;
    uint64_t k = mix64(salt, b->seed);

    /* A cheap per-node function of (salt, index, next): the store makes every
     * line Modified here; reading next touches the same line. */
    for (uint32_t i = 0; i < b->count; i++)
        nodes[i].value = rotr64(k ^ ((uint64_t)i * 0xD6E8FEB86659FD93ull), 23) + nodes[i].next;
}

void pyq_business_state_init(pyq_business_state_t *s, uint64_t seed)
{
    uint64_t x = seed;

    s->rng = splitmix64(&x) | 1; /* xorshift64 must never be 0 */
    s->acc = splitmix64(&x);
    s->checksum = 0;
    s->queries = 0;
}

/* The original study's query step: per visit add (address) / ldr value / eor, ror, add / str
 * value / ldr next.  The loop has a constant trip count and is unrolled, so
 * the only branches are none; the start uses Lemire's multiply-shift instead
 * of a division. */
__attribute__((noinline)) uint64_t pyq_business_query(pyq_business_t *b, pyq_business_state_t *s)
{
    pyq_business_node_t *nodes = b->nodes;
    uint64_t x = s->rng, acc = s->acc;
    uint32_t i;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    i = (uint32_t)(((x >> 32) * b->count) >> 32);
#pragma GCC unroll 8
    for (int v = 0; v < PYQ_BUSINESS_VISITS; v++) {
        pyq_business_node_t *n = &nodes[i];
        uint64_t val = n->value;

        acc = rotr64(acc ^ val, 29) + x;
        n->value = val + acc; /* the store that leaves the line dirty */
        i = n->next;          /* the dependent load: the next address */
    }
    s->rng = x;
    s->acc = acc;
    s->checksum = rotr64(s->checksum, 7) ^ (acc + i);
    s->queries++;
    return s->checksum;
}

uint64_t pyq_business_queries(pyq_business_t *b, pyq_business_state_t *s, uint32_t n)
{
    for (uint32_t q = 0; q < n; q++)
        pyq_business_query(b, s);
    return s->checksum;
}

uint64_t pyq_business_checksum(const pyq_business_t *b)
{
    uint64_t h = mix64(b->count, b->seed);

    for (uint32_t i = 0; i < b->count; i++)
        h = mix64(h, b->nodes[i].value ^ ((uint64_t)b->nodes[i].next << 32));
    return h;
}

uint32_t pyq_business_cycle_length(const pyq_business_t *b, uint32_t start)
{
    uint32_t i = start, len = 0;

    if (start >= b->count)
        return 0;
    do {
        i = b->nodes[i].next;
        if (i >= b->count)
            return 0;
        len++;
    } while (i != start && len <= b->count);
    return i == start ? len : 0;
}
