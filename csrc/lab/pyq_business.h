/*
 * pyq_business.h - the business workload of the burst-tail study and of the
 * ownership control (pyq_ownership.h): a linked structure of 64-byte
 * nodes in a caller-chosen amount of data (default 48 KiB = 768 nodes), linked
 * in one seeded random cycle.  A query starts at a random node and visits and
 * modifies 8 nodes along the links: load value, mix it into the state
 * (xor / rotate / add), store the value back (a dirty line), load next (the
 * address of the following visit), so the visits form one dependent chain.
 *
 * Everything is deterministic given the seeds: the same data seed, warm salt
 * and state seed give the same checksums on any thread, so two arms of an
 * experiment can prove they did the same work.
 *
 * A pyq_business_t is owned by one thread at a time; handing it to another
 * thread needs a release/acquire hand-over (see pyq_ownership.h).
 */
#ifndef PYQ_BUSINESS_H
#define PYQ_BUSINESS_H

#include <stdint.h>

#include "pyqueue.h"

#define PYQ_BUSINESS_NODE_SIZE 64       /* one cache line per node */
#define PYQ_BUSINESS_DEFAULT_BYTES 49152 /* 48 KiB = 768 nodes (the original burst study) */
#define PYQ_BUSINESS_MIN_NODES 2
#define PYQ_BUSINESS_MAX_NODES 16777216 /* 1 GiB of nodes */
#define PYQ_BUSINESS_VISITS 8           /* nodes visited and modified per query */

/* One node: a whole cache line, so every visit touches exactly one line. */
typedef struct pyq_business_node {
    uint32_t next;    /* index of the following node in the cycle */
    uint32_t index;   /* this node's own index (checked by tests) */
    uint64_t value;   /* read, mixed and written back by every visit */
    uint64_t pad[6];  /* fills the line; never touched by queries */
} pyq_business_node_t;

/* The data.  nodes[0..count) is 64-byte aligned; `owned` is 1 when
 * pyq_business_init() mapped it (pyq_business_destroy() unmaps it). */
typedef struct pyq_business {
    pyq_business_node_t *nodes;
    uint32_t count;
    uint32_t owned;
    uint64_t bytes;
    uint64_t seed;
} pyq_business_t;

/* A query stream's state (per thread, per window): xorshift64 for the start
 * node, the mixed business state, and the running checksum of the results. */
typedef struct pyq_business_state {
    uint64_t rng;      /* xorshift64 state, never 0 */
    uint64_t acc;      /* business state carried from visit to visit */
    uint64_t checksum; /* combined results of every query so far */
    uint64_t queries;  /* queries run */
} pyq_business_state_t;

/* Any thread (setup, not a hot path).  Lay out bytes / 64 nodes linked in one
 * random cycle (Sattolo's shuffle seeded by seed) with seeded initial values.
 * mem: the caller's memory (64-byte aligned, at least `bytes`, outlives b), or
 * NULL to map it here (mmap, pre-faulted).
 * @return 0; PYQ_EINVAL (bytes not a multiple of 64, fewer than
 *         PYQ_BUSINESS_MIN_NODES or more than PYQ_BUSINESS_MAX_NODES nodes, mem
 *         misaligned); PYQ_ENOMEM (mmap failed). */
int pyq_business_init(pyq_business_t *b, void *mem, uint64_t bytes, uint64_t seed);

/* Any thread, once.  Unmap the data if init mapped it; b is then empty. */
void pyq_business_destroy(pyq_business_t *b);

/* Any thread.  Number of nodes (bytes / 64). */
uint32_t pyq_business_nodes(const pyq_business_t *b);

/* Any thread.  Bytes of node data. */
uint64_t pyq_business_bytes(const pyq_business_t *b);

/* Owner thread.  Warm up and modify every node in memory order: read its next
 * and write value = f(salt, index, next).  Deterministic: after it the data
 * depends only on salt (and the layout seed), not on the earlier values, so
 * every window can start from the same data.  Leaves every line dirty in the
 * calling core's caches.  Wait-free. */
void pyq_business_warm(pyq_business_t *b, uint64_t salt);

/* Any thread.  Start a query stream: rng from seed (never 0), acc and checksum
 * from seed, queries = 0. */
void pyq_business_state_init(pyq_business_state_t *s, uint64_t seed);

/* Owner thread (hot path).  One query: a random start node, then 8 dependent
 * visits, each modifying its node.  Straight-line code (no data-dependent
 * branch, no call, no system call).  Updates *s.
 * @return the new s->checksum. */
uint64_t pyq_business_query(pyq_business_t *b, pyq_business_state_t *s);

/* Owner thread.  n queries in a row (the study's warm-up).
 * @return s->checksum after them. */
uint64_t pyq_business_queries(pyq_business_t *b, pyq_business_state_t *s, uint32_t n);

/* Owner thread.  A 64-bit hash of every node's value and link, in index order:
 * equal data give equal checksums. */
uint64_t pyq_business_checksum(const pyq_business_t *b);

/* Owner thread (tests).  Length of the cycle through node `start`, following
 * next at most count steps: count when every node is reachable, 0 when start
 * is out of range or the walk does not come back. */
uint32_t pyq_business_cycle_length(const pyq_business_t *b, uint32_t start);

#endif /* PYQ_BUSINESS_H */
