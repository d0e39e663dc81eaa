/*
 * queue_pvt.h - the queue's private layout (never installed).
 *
 * Memory:   one pool mapping of nblocks * block_size bytes (tier 1 = blocks
 *           [0, hot_blocks), tier 2 = the rest) and one control mapping holding
 *           the full ring and the two free rings (uint32 block indices).
 * Two parts: struct pyq_queue is a private part (PYQ_PRIV_BYTES: the geometry,
 *           the writer's and the reader's state, every pointer) and a shared
 *           part (from `rec` on: the hand-over words, the counters, the
 *           sides' mirrors, the owners).  An in-process queue is one
 *           allocation of both.  A shared queue (shared_pvt.h) is a segment
 *           that starts with the shared part, then the control rings at
 *           ctl_off, then the pool at pool_off; each process maps it right
 *           after a private anonymous page that holds its own private part,
 *           so the hot paths reach both parts at the same offsets from q and
 *           nothing a peer can write is a pointer, a size or a limit this
 *           process uses (the segment as a trust boundary: DESIGN §3.9).
 *           What a peer must see of a side's private state -- where a dead
 *           writer's committed records end, where a new reader resumes -- is
 *           copied into a mirror in the shared part (struct pyq_wmirror,
 *           pyq_rmirror), and checked against the geometry when it is read.
 * Free rings: a slot holds idx ^ (first block of its tier + slot number), so
 *           the untouched (zero) pages of a new ring read as "every block of
 *           the tier, in address order": nothing is written at creation.
 * Framing:  a block holds records back to back from offset 0.  A record is an
 *           8-byte header (PYQ_HDR_COMMIT | len, or PYQ_HDR_PAD = end of block)
 *           and the payload padded to 8 bytes -- to 64 with scan_current, so the
 *           next header always starts a cache line: one line transfer then
 *           delivers a small message's header and payload together, and the
 *           line the reader waits on is never the one still holding the
 *           previous record.  A zero header means "nothing committed here yet"
 *           (only meaningful when the reader scans headers: scan_current or
 *           publish each, see q->scan and writer.c).  The writer clears stale
 *           headers before the reader can reach them, a line or two ahead of
 *           its position and after its commits (writer_pvt.h, zero_ahead).
 * Runs:     with q->batch_ok (publish max, no scanning reader), consecutive
 *           writes of one length L > 0 share one record: a header
 *           PYQ_HDR_RUN | n << 48 | L, then n payloads back to back, each padded
 *           to 8, so a 32-byte message costs 32 bytes of block.
 *           The writer extends the open run in place (writer_pvt.h, run_*; a
 *           batch may open one with many payloads at once: writer_run_pvt.h, run_start),
 *           counting its members in w.run_n, the high half of the word whose low
 *           half is w.pos, so a member moves both with one store; it stores the
 *           header's count once, when the run ends (a record of another kind
 *           or length, a claim, a publish: the reader never sees a run that can
 *           still grow, it only reads below pub_pos).  Until then the header
 *           reads PYQ_HDR_COMMIT | L, a run of one.  n <= PYQ_RUN_MAX.
 * Link:     with q->scan, a block sealed because a record does not fit ends in
 *           a linked PAD (PYQ_HDR_LINK | ring position << 48 | block index): the
 *           writer took the next block first, so a scanning reader goes straight
 *           to it -- one line transfer, not three (ring_tail, ring slot, first
 *           header).  The writer seals this way as soon as a commit leaves less
 *           room than its own record and a hot block is free
 *           (writer_block.c, pyq_w_seal_early), else when the next record does
 *           not fit.  The ring slot and ring_tail are still written; a plain
 *           PAD (no free block, or an exactly full block: no PAD at all) or a
 *           link that does not check out sends the reader the ring way.
 * Large:    with cfg.max_message above block_size - 8, the pool ends in a large
 *           region of large_bytes (L), a byte ring of 64-aligned slots at
 *           64-bit positions (address: pos % L).  A message of more than
 *           block_size - 8 bytes takes a contiguous slot there -- at head,
 *           or at the next multiple of L when the rest of the region is too
 *           short -- and the block stream carries a record of kind
 *           PYQ_HDR_LARGE whose 16-byte payload (struct pyq_large_desc) names
 *           it, so that order and publishing are the blocks' own.  The reader
 *           gives a slot back by storing its end to large_tail (R2) once the
 *           message is consumed; the writer has room while head - tail <= L.
 *           Every descriptor is checked before its slot is used (writer_large.c).
 * Position: the writer's progress is pub_pos = seq * block_size + offset, where
 *           seq counts blocks taken; pub_pos >= (seq + 1) * block_size means
 *           block seq is sealed (complete).
 *
 * Ordering edges (labels used in the comments of csrc/core; the
 * grammar of every other file's labels is in common/atomic.h):
 *   W1 ring_tail release (writer, block taken)   -> A1 acquire (scan reader)
 *   W2 pub_pos release   (writer, publish)       -> A2 acquire (reader)
 *   W3 record header release (writer, commit)    -> A3 acquire (scan reader);
 *      a linked PAD also makes the next block's zeroed first lines visible
 *   R1 free_tail release (reader, block drained) -> A4 acquire (writer, take)
 *   W4 detached release (writer, after its last flush) -> A5 acquire (reader:
 *      empty after detached means drained for good)
 *   W5 ws.messages / ws.bytes release (writer, a run's end counted, after its
 *      w.run_n was zeroed) -> A6 acquire (pyq_queue_stats, pyq_queue_backlog: a
 *      run counted in ws is not added again from w.run_n)
 *   W7 large_head release (writer, a large message committed, before its
 *      record's W2/W3) -> the writer that takes the side over (restore)
 *   R2 large_tail release (reader, a large message consumed) -> A8 acquire
 *      (writer, room in the large region): the reader's reads of the slot
 *      happen before the writer's next writes there
 *   W6 w.run_id, w.run_n release (writer: a new id, when a run's length is
 *      not the last one's, after the last count of the run before; every
 *      count after its run's id) -> A7 acquire (pyq_w_pending: the id, the
 *      count, the id again; the same id twice means the count is of a run of
 *      that id's length)
 */
#ifndef PYQ_QUEUE_PVT_H
#define PYQ_QUEUE_PVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/atomic.h"
#include "common/now_pvt.h"
#include "common/private.h"
#include "pyqueue.h"

#define PYQ_HDR_COMMIT (UINT64_C(0x5051) << 32) /* "PQ": committed record */
#define PYQ_HDR_PAD (UINT64_C(0x5041) << 32)    /* "PA": rest of block unused */
#define PYQ_HDR_LINK (UINT64_C(0x504c) << 32)   /* "PL": PAD + next block, see Link */
#define PYQ_HDR_RUN (UINT64_C(0x5052) << 32)    /* "PR": run of n records, see Runs */
#define PYQ_HDR_LARGE (UINT64_C(0x5058) << 32)  /* "PX": a large message's record, see Large */
#define PYQ_LARGE_DESC 16u                      /* its payload: struct pyq_large_desc */
#define PYQ_HDR_RUN_COUNT_SHIFT 48               /* n, in the top 16 bits */
#define PYQ_RUN_MAX 0xffffu
#define PYQ_NO_RUN UINT32_MAX
#define PYQ_HDR_LEN_MASK UINT64_C(0xffffffff)
#define PYQ_HDR_KIND_MASK (UINT64_C(0xffff) << 32)
#define PYQ_HDR_LINK_POS_SHIFT 48                /* low 16 bits of the ring position */
#define PYQ_NO_CLAIM UINT32_MAX

enum { PYQ_TIER_HOT = 0, PYQ_TIER_SPILL = 1, PYQ_TIERS = 2 };

/* A tier's free_tail (R1) on a line of its own (struct pyq_queue). */
struct pyq_free_tail {
    PYQ_ALIGNED_LINE _Atomic uint64_t v;
};

struct pyq_writer_state {
    /* The inline fast path's view (pyqueue_inline.h, struct pyq_writer_view):
     * these first, in this order (checked below). */
    uint8_t *blk;                        /* current block, NULL before the first take */
    /* pos and the open run's count: one aligned 8-byte word, so that a run
     * member's write moves both with one store (pyqueue_inline.h,
     * pyq_writer_try_write_inline; run_extend's; write_batch's one add). */
    union {
        uint64_t pos_run;
        struct {
            uint32_t pos;                /* next record offset in blk */
            uint32_t run_n;              /* the open run's members, 0: no run to end;
                                            atomic, its stores release (W6:
                                            pyq_queue_stats reads it from any
                                            thread, pyq_w_pending) */
        };
    };
    /* run_key and run_gate: one aligned 8-byte word, which the run paths
     * compare with the message length's key (pyqueue_inline.h, pyq__run_member):
     * equal only when the length is the run's and no PYQ_GATE_RUN bit is set
     * (aligned: checked below). */
    uint32_t run_key;                    /* PYQ__RUN_KEY (len - 16) of run_len where the
                                            plain run path applies (a small len, see
                                            run_open), or of PYQ_NO_RUN */
    _Atomic uint32_t run_gate;           /* gate & PYQ_GATE_RUN, kept beside it by every
                                            change of those bits (atomic OR / AND) */
    uint32_t run_limit;                  /* offset the run may grow to: block end or
                                            its PYQ_RUN_MAX cap */
    _Atomic uint32_t gate;               /* PYQ_GATE_* bits: the special cases, one test
                                            (pyqueue_inline.h); the writer's own bits change at
                                            block takes, CLOSED comes from any thread, so
                                            every change is an atomic OR / AND */
    /* A member's move of pos_run: its stride in the low half, one more member
     * in the high half (run_one is 1 from pyq_q_init on), so the position and
     * the count move with one add of run_inc. */
    union {
        uint64_t run_inc;
        struct {
            uint32_t run_step;           /* payload stride: the run's length padded to 8 */
            uint32_t run_one;
        };
    };
    /* The open run's id (queue_pvt.h, Runs; writer_pvt.h): its message length
     * and a generation, one more each time a run's length is not the last
     * run's, stored before its count (run_n) becomes nonzero, so that
     * pyq_w_pending can tell a count read while the length changed.  Its members after the first are counted in ws at
     * run_close() (pyq_w_pending adds them in between).  Atomic, W6: stats
     * may read it anywhere. */
    union {
        uint64_t run_id;
        struct {
            uint32_t run_size;
            uint32_t run_gen;
        };
    };
    /* The rest of the writer's per-message state. */
    uint64_t seq;                        /* blocks taken so far (current = seq - 1) */
    uint32_t claim_len;                  /* outstanding claim, PYQ_NO_CLAIM if none */
    int tier;                            /* tier of blk */
    int nt;                              /* blk is written with streaming stores */
    int special;                         /* nt, q->scan or q->xproc: pyq_writer_write's plain
                                            fast path does not apply (one test) */
    uint32_t zeroed;                     /* q->scan: header positions in [pos, zeroed)
                                            of blk read zero (writer_pvt.h) */
    int nt_pending;                      /* streaming stores not yet fenced */
    uint32_t fast_limit;                 /* block_size while pyq_writer_write may take
                                            the fast path (a current block, no claim,
                                            not streamed under q->scan), else 0 */
    uint64_t last_pub;                   /* last value stored to pub_pos */
    uint64_t blk_start;                  /* (seq - 1) * block_size: the position of blk's
                                            offset 0, what a publish adds pos to */
    uint32_t run_len;                    /* a write of this length extends the open run
                                            (PYQ_NO_RUN: none may) */
    uint32_t run_hdr;                    /* offset of its header in blk */
    uint64_t free_head[PYQ_TIERS];       /* next free-ring slot to pop */
    uint64_t free_tail_cache[PYQ_TIERS]; /* cached free_tail: reload only when empty */
    /* The writer process's view of the mapping (pyq_q_bind): */
    uint8_t *base;                       /* the pool */
    uint32_t *ring;                      /* the full ring */
    uint32_t *free_slots[PYQ_TIERS];     /* the free rings */
    const uint8_t *prefetched;           /* the block the last take prefetched as the
                                            next one (writer_block.c, start_block) */
};

struct pyq_writer_stats {
    _Atomic uint64_t messages, bytes, blocks_published, publishes;
    _Atomic uint64_t takes[PYQ_TIERS], retries, yields, full_events, peak_backlog;
};

struct pyq_reader_state {
    /* The inline delivery's view (pyqueue_inline.h, struct pyq_reader_view):
     * these first, in this order (checked below). */
    uint8_t *blk;          /* block being drained, NULL between blocks */
    uint32_t pos;          /* next record offset */
    uint32_t limit;        /* without q->scan: records below this offset of blk
                              are published (0 between blocks) */
    uint32_t run_left;     /* messages of the current run not yet consumed: pos
                              is then the next one's payload (reader.c) */
    uint32_t run_len;      /* their length */
    uint32_t run_step;     /* and stride (run_len padded to 8) */
    uint32_t block_size;   /* cfg.block_size: pos there means blk is drained */
    uint32_t idx;          /* blk's index in the pool */
    uint64_t seq;          /* ring position of blk */
    uint64_t pub_cache;    /* cached pub_pos: reload only when exhausted */
    uint64_t drained_pub;  /* a pub_pos below which everything was consumed (no
                              q->scan): poll returns at once while it holds */
    uint64_t tail_cache;   /* cached ring_tail (q->scan) */
    uint64_t free_tail[PYQ_TIERS]; /* private copy of the free_tail we publish */
    /* The reader process's view of the mapping (pyq_q_bind): */
    uint8_t *base;
    uint32_t *ring;
    uint32_t *free_slots[PYQ_TIERS];
    uint64_t large_end;    /* the large message next_message() found at pos: the
                              end of its slot, stored to large_tail when it is
                              consumed (writer_large.c); 0: a block message */
};

struct pyq_reader_stats {
    _Atomic uint64_t messages, bytes, returns[PYQ_TIERS], flushed;
};

/* A queue's geometry record: the private copy every process keeps (q->seg),
 * and the segment's own first line (q->rec.seg, checked by shared.c against
 * what the configuration in it implies, then never read again). */
struct pyq_seg_header {
    _Atomic uint64_t magic;        /* PYQ_SEG_MAGIC, stored last at creation */
    uint32_t layout;               /* PYQ_SEG_LAYOUT */
    uint32_t queue_bytes;          /* sizeof(struct pyq_queue) */
    uint64_t seg_bytes;            /* whole segment (0: an in-process queue) */
    uint64_t ctl_off, pool_off;    /* rings and pool in the segment */
    uint64_t free_off[PYQ_TIERS];  /* each free ring in the control block */
};

#define PYQ_SEG_MAGIC UINT64_C(0x3165756575517950) /* "PyQueue1" */
#define PYQ_SEG_INIT UINT64_C(0x3174696e69517950)  /* "PyQinit1": being made (shared.c) */
#define PYQ_SEG_LAYOUT 13u                         /* bump with struct pyq_queue */
#define PYQ_PAGE 4096                              /* the parts' alignment */
#define PYQ_ALIGNED_PAGE _Alignas(PYQ_PAGE)

/* What a shared queue's process keeps to itself (zero in-process). */
#define PYQ_CORRUPT_READER 1u /* the reader found the segment inconsistent (reader.c) */
#define PYQ_CORRUPT_WRITER 2u /* the writer did (writer_block.c, pop_free) */

struct pyq_proc {
    int fd;                        /* this handle's description of the segment, which
                                      holds its locks (shared_owner.c); -1 in-process */
    int pid;                       /* the process that description is this handle's in
                                      (after fork(), the child's until own_fd) */
    uint32_t held;                 /* 1 << side: this handle owns the side's lock */
    int64_t slice_ns;              /* pyq_queue_set_sleep_slice; 0: default */
    uint32_t peer_looks;           /* empty non-blocking looks (reader_wait.c) */
    uint64_t peer_check_ns;        /* when the last of them looked at the writer */
    uint32_t corrupt;              /* PYQ_CORRUPT_*: that side's calls return PYQ_ECORRUPT */
    uint32_t unchecked;            /* pyq_shm_set_checks(q, 0): the reader's unchecked loops
                                      for this handle -- a benchmark's A/B only */
    uint64_t wgen, rgen;           /* the generations of the mirrors this process wrote */
    uint64_t wm_seq, wm_run_id;    /* what the slot wgen names holds, but pos_run */
    uint32_t wm_run_hdr, wm_blk;
    uint64_t rm_seq;               /* what the slot rgen names holds (pyq_r_mirror) */
    uint64_t rm_pos_left;
    uint32_t rm_run_len, rm_blk;
    uint64_t ino, dev;             /* the segment's file: unlink only it */
    char name[PYQ_SHM_NAME_MAX + 1]; /* "" for a memfd */
};

/* The writer's mirror (shared): where its committed records end, so that the
 * reader can publish them for a dead writer, and where a writer taking the
 * side over goes on.  Two slots and a generation, so a writer killed while
 * writing one leaves the other whole: slot gen & 1 is the last complete one
 * (MIR-L1 in pyq_w_mirror).  Only pos_run moves per message: while nothing
 * else has, it is stored into the slot gen names, one atomic 8-byte store,
 * which a writer killed either makes or does not. */
struct pyq_wslot {
    _Atomic uint64_t seq;          /* blocks taken (the current one is seq - 1) */
    _Atomic uint64_t pos_run;      /* w.pos | w.run_n << 32 */
    _Atomic uint64_t run_id;       /* w.run_id: the open run's length and generation */
    _Atomic uint64_t free_head[PYQ_TIERS];
    _Atomic uint32_t run_hdr;      /* offset of the open run's header */
    _Atomic uint32_t has_blk;      /* w.blk != NULL */
};

struct pyq_wmirror {
    PYQ_ALIGNED_LINE _Atomic uint64_t gen;
    struct pyq_wslot s[2];
};

/* The reader's mirror: where a reader taking the side over resumes.  Per
 * call only pos_left moves, stored alone into the slot gen names while the
 * rest has not changed (as the writer's pos_run). */
struct pyq_rslot {
    _Atomic uint64_t seq;          /* ring position of the block being drained */
    _Atomic uint64_t pos_left;     /* r.pos | r.run_left << 32 */
    _Atomic uint32_t run_len, has_blk;
};

struct pyq_rmirror {
    PYQ_ALIGNED_LINE _Atomic uint64_t gen;
    struct pyq_rslot s[2];
};

/* Cross-process state of a shared queue (shared_pvt.h); zero in-process.
 * Owner words: the owner's pid, for messages (liveness is its lock,
 * shared_owner.c); 0 = free. */
struct pyq_shm_state {
    PYQ_ALIGNED_LINE _Atomic uint64_t owner[2];  /* PYQ_SIDE_WRITER, PYQ_SIDE_READER */
    _Atomic uint64_t dead[2];                    /* a recovered dead owner's word */
    PYQ_ALIGNED_LINE _Atomic uint32_t r_waiting; /* SHM-S2: the reader may sleep on w_event */
    _Atomic uint32_t w_event;                    /* futex word the writer bumps */
    PYQ_ALIGNED_LINE _Atomic uint32_t w_waiting; /* SHM-S2: the writer may sleep on r_event */
    _Atomic uint32_t r_event;                    /* futex word the reader bumps */
    /* Handles in flight to other processes (pyq_queue_handoff): while any is
     * and its deadline (CLOCK_REALTIME ns, the latest of them) is ahead, the
     * last user leaves the name for it (shared.c, handoff_pending). */
    PYQ_ALIGNED_LINE _Atomic uint64_t handoffs;
    _Atomic uint64_t handoff_deadline;
};

/* A large message's record payload (queue_pvt.h, Large): its slot. */
struct pyq_large_desc {
    uint64_t pos; /* the slot's position (address: pos % large_bytes) */
    uint32_t len; /* the message's length */
    uint32_t zero;
};

/* The large region: this process's view and each side's private state
 * (writer_large.c). */
struct pyq_large {
    uint64_t bytes;          /* L, 0: no region */
    uint32_t max;            /* the largest message: cfg.max_message, or the block's */
    uint32_t claim_len;      /* the open large claim's length, PYQ_NO_CLAIM: none */
    uint8_t *wbase, *rbase;  /* the region in the writer's and the reader's view */
    uint64_t head;           /* writer: the end of the last committed slot */
    uint64_t claim_pos;      /* writer: the open claim's slot */
    uint64_t tail_cache;     /* writer: large_tail as last loaded */
    uint64_t tail;           /* reader: what it last stored to large_tail */
    /* The reader's view (pyq_reader_view): where the message is, to know it
     * again at the release; viewing 0: none. */
    int viewing;
    uint32_t view_len, view_pos, view_left;
    uint64_t view_seq;
};

struct pyq_queue {
    /* ==== The private part: each process's own. ==== */
    /* Read-only after pyq_queue_create() / pyq_queue_attach(): the geometry
     * this process fixed, never re-read from a segment. */
    PYQ_ALIGNED_LINE struct pyq_seg_header seg;
    pyq_config_t cfg;
    uint8_t *base;                 /* in-process pool: nblocks * block_size bytes */
    size_t pool_bytes;
    void *ctl;                     /* in-process control mapping: rings */
    size_t ctl_bytes;
    uint64_t ring_mask;
    uint64_t free_mask[PYQ_TIERS];
    uint32_t nblocks;
    uint32_t max_message;
    uint32_t hugepages_used, mlocked;
    bool scan;                     /* the reader finds records by their headers (W3/A3,
                                      W1/A1), not below pub_pos: cfg.scan_current,
                                      or publish each (queue.c) */
    uint32_t rec_mask;             /* record alignment - 1: 7, or 63 with scan_current */
    bool line_headers;             /* scan_current: every header starts a line, so the
                                      writer's zeroing ahead needs one word a line */
    bool batch_ok;                 /* publish max without a scanning reader: the
                                      writer frames runs (Runs above) */
    bool xproc;                    /* shared: the sides wake each other (shared_pvt.h) */
    bool commit_hook;              /* writer.c calls publish_policy after each commit:
                                      publish each or bytes:N, or shared scan_current */
    bool flush[PYQ_TIERS];         /* the reader flushes each block of the tier it has
                                      read (reader.c, finish_block), on a CPU with
                                      CLFLUSHOPT: spill under spill_nontemporal, hot
                                      when the tier holds flush_hot_kib or more */
    uint64_t flush_backlog;        /* cfg.flush_backlog_kib in bytes, 0 when off or the
                                      hot tier is flushed whole (flush[HOT]): a hot
                                      block is flushed when the writer is that far
                                      ahead of its end (reader.c, finish_block) */

    PYQ_ALIGNED_LINE struct pyq_writer_state w;
    PYQ_ALIGNED_LINE struct pyq_reader_state r;
    PYQ_ALIGNED_LINE struct pyq_proc p;
    PYQ_ALIGNED_LINE struct pyq_large lg;

    /* ==== The shared part: a segment's first page. ==== */
    /* Written once at creation (shared.c checks it at attach). */
    PYQ_ALIGNED_PAGE struct {
        struct pyq_seg_header seg;
        pyq_config_t cfg;
    } rec;

    /* Writer -> reader hand-over words (one line; written by the writer only). */
    PYQ_ALIGNED_LINE _Atomic uint64_t ring_tail; /* W1 */
    _Atomic uint64_t pub_pos;                    /* W2 */

    PYQ_ALIGNED_LINE struct pyq_writer_stats ws;
    struct pyq_wmirror wm;

    /* Reader -> writer hand-over words (written by the reader only), a line per
     * tier: the writer looks at the hot tier's at every block it takes while
     * the hot ring is empty, and the reader's returns of spill blocks -- one a
     * block while streaming -- must not take that line from it each time. */
    PYQ_ALIGNED_LINE struct pyq_free_tail free_tail[PYQ_TIERS]; /* R1 */

    PYQ_ALIGNED_LINE struct pyq_reader_stats rs;
    struct pyq_rmirror rm;

    /* The large region's hand-over words, a line each (queue_pvt.h, Large). */
    PYQ_ALIGNED_LINE _Atomic uint64_t large_head; /* W7: written by the writer only */
    PYQ_ALIGNED_LINE _Atomic uint64_t large_tail; /* R2: written by the reader only */

    PYQ_ALIGNED_LINE _Atomic int closed; /* read-mostly: stays Shared in both caches */
    _Atomic int detached;                /* W4: the writer will write no more */

    struct pyq_shm_state sh;
};

/* The private part is what precedes the shared one; a shared queue's view
 * maps the segment at q + PYQ_PRIV_BYTES (shared.c). */
#define PYQ_PRIV_BYTES offsetof(struct pyq_queue, rec)
#define PYQ_SHARED_BYTES (sizeof(struct pyq_queue) - PYQ_PRIV_BYTES)
_Static_assert(offsetof(struct pyq_queue, rec) == PYQ_PAGE, "the private part is one page");
_Static_assert(sizeof(struct pyq_queue) == 2 * PYQ_PAGE, "the shared part is one page");

_Static_assert(PYQ_RECORD_ALIGN_SCAN == PYQ_CACHELINE,
               "scan_current records start a cache line each");
/* The writer's per-message fields (blk, pos, the run) sit in its first two
 * lines; the third holds the mapping view, read once per block taken. */
_Static_assert(offsetof(struct pyq_writer_state, free_head) <= 2 * PYQ_CACHELINE,
               "the writer's per-message state spans at most two lines");
_Static_assert(sizeof(struct pyq_writer_state) <= 3 * PYQ_CACHELINE,
               "writer state spans at most three lines");
_Static_assert(sizeof(struct pyq_reader_state) <= 2 * PYQ_CACHELINE,
               "reader state spans at most two lines");

/* The inline paths' views (pyqueue_inline.h) match the state they read. */
#define PYQ_VIEW_AT(st, view, off, f)                                                      \
    _Static_assert(offsetof(struct pyq_queue, st.f) == (off) + offsetof(struct view, f) && \
                       sizeof(((struct pyq_queue *)0)->st.f) ==                            \
                           sizeof(((struct view *)0)->f),                                  \
                   "pyqueue_inline.h: " #st "." #f " moved")
#define PYQ_W_VIEW(f) PYQ_VIEW_AT(w, pyq_writer_view, PYQ_WRITER_VIEW_OFFSET, f)
#define PYQ_R_VIEW(f) PYQ_VIEW_AT(r, pyq_reader_view, PYQ_READER_VIEW_OFFSET, f)
PYQ_W_VIEW(blk); PYQ_W_VIEW(pos_run); PYQ_W_VIEW(run_key); PYQ_W_VIEW(run_gate);
PYQ_W_VIEW(run_limit); PYQ_W_VIEW(gate); PYQ_W_VIEW(run_step);
_Static_assert(offsetof(struct pyq_queue, w.pos) == offsetof(struct pyq_queue, w.pos_run) &&
                   offsetof(struct pyq_queue, w.run_n) == offsetof(struct pyq_queue, w.pos_run) + 4 &&
                   offsetof(struct pyq_queue, w.pos_run) % 8 == 0,
               "pos in the low half of one aligned 8-byte word with the run's count");
_Static_assert(offsetof(struct pyq_queue, w.run_step) == offsetof(struct pyq_queue, w.run_inc) &&
                   offsetof(struct pyq_queue, w.run_one) == offsetof(struct pyq_queue, w.run_inc) + 4,
               "run_inc: the stride in the low half (pos's), one member in the high half (run_n's)");
_Static_assert(offsetof(struct pyq_queue, w.run_size) == offsetof(struct pyq_queue, w.run_id) &&
                   offsetof(struct pyq_queue, w.run_gen) == offsetof(struct pyq_queue, w.run_id) + 4,
               "run_id: the length in the low half, the generation in the high half");
_Static_assert(offsetof(struct pyq_queue, w.run_gate) == offsetof(struct pyq_queue, w.run_key) + 4 &&
                   offsetof(struct pyq_queue, w.run_key) % 8 == 0,
               "run_key and run_gate make one aligned 8-byte word");
PYQ_R_VIEW(blk); PYQ_R_VIEW(pos); PYQ_R_VIEW(limit); PYQ_R_VIEW(run_left);
PYQ_R_VIEW(run_len); PYQ_R_VIEW(run_step); PYQ_R_VIEW(block_size);
_Static_assert(offsetof(struct pyq_queue, rs.messages) == PYQ_READER_COUNTS_OFFSET &&
                   offsetof(struct pyq_queue, rs.bytes) == PYQ_READER_COUNTS_OFFSET + 8,
               "pyqueue_inline.h: the reader's counters moved");

/* Free-ring slot values (see Free rings above): stored and loaded through these. */
static inline uint32_t pyq_free_code(const struct pyq_queue *q, int t, uint64_t slot)
{
    return (uint32_t)((t ? q->cfg.hot_blocks : 0) + slot);
}

/* The block index in free-ring position pos of tier t, for the writer: known
 * without reading the slot.  A tier's ring starts with its blocks in address
 * order (positions 0 .. n-1), and its blocks come back in the order the writer
 * popped them -- the reader drains the full ring in order and returns each
 * block to its tier's ring as it finishes it (reader.c, finish_block) -- so
 * position pos holds the tier's block pos % n.  The slot is the reader's line,
 * written at every return: reading it cost the writer a transfer at every take,
 * in series after the one of free_tail (A4 orders pos below free_tail all the
 * same; the reader still stores the slot, which says the same thing). */
static inline uint32_t pyq_free_slot(const struct pyq_queue *q, int t, uint64_t pos)
{
    uint32_t n = t ? q->cfg.spill_blocks : q->cfg.hot_blocks;

    return (uint32_t)((t ? q->cfg.hot_blocks : 0) + pos % n);
}

static inline _Atomic uint64_t *pyq_hdr(uint8_t *blk, uint32_t pos)
{
    return (_Atomic uint64_t *)(void *)(blk + pos);
}

/* The linked PAD that ends a block whose successor (ring position seq) is block idx. */
static inline uint64_t pyq_hdr_link(uint32_t idx, uint64_t seq)
{
    return PYQ_HDR_LINK | (seq << PYQ_HDR_LINK_POS_SHIFT) | idx;
}

/* Bytes a record of len payload bytes takes in a block: the header and the
 * payload, padded to the record alignment (rec_mask + 1; q->rec_mask, or a
 * constant where the caller knows it).  64-bit, so that a len near 4 GiB not
 * yet checked against max_message cannot wrap into a small record; at most
 * block_size once it has been. */
static inline uint64_t pyq_record_size(uint32_t len, uint32_t rec_mask)
{
    return (PYQ_RECORD_HEADER + (uint64_t)len + rec_mask) & ~(uint64_t)rec_mask;
}

/* A counter of ws or rs bumped on the per-message paths by its one writer
 * (pyq_counter_add's relaxed load and store of the sum, which stats() reads
 * relaxed): pyqueue_inline.h's pyq__own_add64, one add to memory on x86-64
 * where the builtins emit a load, an add and a store. */
static inline void pyq_count(_Atomic uint64_t *c, uint64_t v)
{
    pyq__own_add64((uint64_t *)(void *)c, v);
}

/* The open run's members after its first, not yet in ws (writer_pvt.h,
 * run_close): *bytes their payload.  Any thread; after A6's loads of ws. */
PYQ_PRIVATE uint64_t pyq_w_pending_shared(const struct pyq_queue *q, uint64_t *bytes);

static inline uint64_t pyq_w_pending(const struct pyq_queue *q, uint64_t *bytes)
{
    uint64_t id;
    uint32_t n;

    /* A shared queue's writer may be another process: its mirror says. */
    if (q->xproc)
        return pyq_w_pending_shared(q, bytes);

    /* The run's id before and after its count: the same id twice, the count is
     * of a run of that id's length (W6: a count read after the id is of a run
     * that opened with that id or later, and a run of another length stores
     * a new id before its count, which the second read would then see).  A run that changed in between is read again; after
     * three tries its members count with the later run's length (a snapshot of
     * counters read relaxed is not one instant, pyqueue.h). */
    for (int tries = 0;; tries++) {
        /* A7: pairs with W6: run_begin (writer_pvt.h), the count's stores. */
        uint64_t before = __atomic_load_n(&q->w.run_id, __ATOMIC_ACQUIRE);
        n = __atomic_load_n(&q->w.run_n, __ATOMIC_ACQUIRE);
        id = __atomic_load_n(&q->w.run_id, __ATOMIC_RELAXED);
        if (id == before || tries == 2)
            break;
    }
    uint32_t size = (uint32_t)id;
    n = n > 1 ? n - 1 : 0;
    *bytes = (uint64_t)n * size;
    return n;
}

/* writer_block.c: the writer's mirror (struct pyq_wmirror), after every
 * call of a shared queue's writer and before a run's end is counted. */
PYQ_PRIVATE void pyq_w_mirror(struct pyq_queue *q);
/* reader.c: the reader's mirror, after every call of a shared queue's reader
 * and before a drained block goes back (R1). */
PYQ_PRIVATE void pyq_r_mirror(struct pyq_queue *q);

/* pool.c */
PYQ_PRIVATE void pyq_pool_layout(struct pyq_queue *q);
PYQ_PRIVATE int pyq_pool_map(struct pyq_queue *q);
PYQ_PRIVATE void pyq_pool_unmap(struct pyq_queue *q);
PYQ_PRIVATE int pyq_pool_options(struct pyq_queue *q, uint8_t *pool, size_t bytes);
/* writer_large.c */
PYQ_PRIVATE int pyq_w_large_claim(struct pyq_queue *q, uint32_t len, int64_t timeout_ns,
                                  uint8_t **payload);
PYQ_PRIVATE int pyq_w_large_commit(struct pyq_queue *q);
PYQ_PRIVATE int pyq_w_large_abort(struct pyq_queue *q);
PYQ_PRIVATE int pyq_w_large_write(struct pyq_queue *q, const void *data, uint32_t len,
                                  int64_t timeout_ns);
PYQ_PRIVATE int pyq_large_restore(struct pyq_queue *q, int side);
/* writer.c: a block claim (its record: pyq_writer_claim() below the large size);
 * commit the open block claim as a record of kind (PYQ_HDR_*). */
PYQ_PRIVATE int pyq_w_block_claim(struct pyq_queue *q, uint32_t len, int64_t timeout_ns,
                                  uint8_t **payload);
PYQ_PRIVATE void pyq_w_commit_kind(struct pyq_queue *q, uint64_t kind);
/* writer_block.c: wait as the full queue's wait does until ready(q) is 1. */
PYQ_PRIVATE int pyq_w_wait(struct pyq_queue *q, int64_t timeout_ns,
                           int (*ready)(struct pyq_queue *q, void *arg), void *arg);
/* queue.c */
PYQ_PRIVATE int pyq_q_init(struct pyq_queue *q, const pyq_config_t *cfg);
PYQ_PRIVATE void pyq_q_gate(struct pyq_queue *q);
PYQ_PRIVATE void pyq_q_mark_closed(struct pyq_queue *q);
PYQ_PRIVATE void pyq_q_bind(struct pyq_queue *q, int side, uint8_t *ctl, uint8_t *pool);

#endif /* PYQ_QUEUE_PVT_H */
