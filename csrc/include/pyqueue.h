/*
 * pyqueue.h - the public API of the pyqueue SPSC message queue (DESIGN §3).
 *
 * One writer thread and one reader thread share a pyq_queue_t.  Messages are
 * framed into fixed-size blocks taken from a two-tier pool (tier 1 "hot",
 * tier 2 "spill"); full blocks travel to the reader through an SPSC ring of
 * block indices and come back through one free ring per tier.
 *
 * Conventions (liburing style): functions return 0 or a count on success and a
 * negative errno-style PYQ_E* code on failure; pyq_strerror() names the code.
 * A full queue is an expected outcome (PYQ_EAGAIN), not a failure.
 *
 * This header is also the cffi cdef (pyqueue/_build.py strips the preprocessor
 * lines and turns each "#define PYQ_x <value>" into "#define PYQ_x ..."), so it
 * holds plain declarations only: no inline functions, no atomics, no macros
 * with arguments.  The inline fast paths are in pyqueue_inline.h, included at
 * the end (a preprocessor line: the cdef never sees it).
 */
#ifndef PYQUEUE_H
#define PYQUEUE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes: negative errno values, so they read naturally in strace/perror. */
#define PYQ_OK 0
#define PYQ_EINVAL (-EINVAL)     /* bad argument or configuration */
#define PYQ_ENOMEM (-ENOMEM)     /* the pool or the control block could not be mapped */
#define PYQ_EAGAIN (-EAGAIN)     /* queue full (try_write, or timeout expired) */
#define PYQ_ETOOBIG (-EMSGSIZE)  /* message larger than pyq_queue_max_message() */
#define PYQ_ECLOSED (-EPIPE)     /* the queue was closed */
#define PYQ_EBUSY (-EBUSY)       /* a claim is outstanding (commit or abort it first) */
#define PYQ_ENOCLAIM (-ENOENT)   /* commit/abort without a claim */
#define PYQ_EPERM (-EPERM)       /* the OS refused (mlock, SCHED_FIFO, ...) */
#define PYQ_ERANGE (-ERANGE)     /* a fixed-size reader met a message of another size */
#define PYQ_EBADMSG (-EBADMSG)   /* a verifying consumer found a wrong message */
#define PYQ_ENOTSUP (-EOPNOTSUPP) /* not supported on this platform/kernel */
#define PYQ_EINTR (-EINTR)       /* interrupted by a stop request */
#define PYQ_EPEER (-ECONNRESET)  /* shared queue: the process owning the other side died */
#define PYQ_EOWNED (-EADDRINUSE) /* shared queue: the side is owned by another live process */
#define PYQ_EBADSEG (-EPROTO)    /* not a pyqueue segment, truncated, or another layout */
#define PYQ_ENOSEG (-ENXIO)      /* pyq_queue_attach: no shared queue of that name */
#define PYQ_EEXIST (-EEXIST)     /* pyq_queue_create_shared: the name is taken */
/* shared queue: the segment holds a value no writer or reader of this queue's
 * geometry stores (a corrupted or hostile peer); this side's calls fail from then on */
#define PYQ_ECORRUPT (-EUCLEAN)
#define PYQ_EUNTRUSTED (-EACCES) /* attach: the segment is another user's, or open to others */
#define PYQ_EMFILE (-EMFILE)     /* shared queue: no file descriptor left for the segment */

/* Publish policies (pyq_config_t.publish): when committed messages become visible. */
#define PYQ_PUBLISH_MAX 0   /* publish a block when it is full, or on flush */
#define PYQ_PUBLISH_EACH 1  /* every message is visible when its write returns */
#define PYQ_PUBLISH_BYTES 2 /* publish every publish_bytes bytes (and when full) */

/* Bytes of framing per message: an 8-byte record header; payload padded to 8
 * (header + payload padded to 64 with scan_current).  Under publish max without
 * scan_current, consecutive messages of one length > 0 share one header (a
 * run): each after the first takes its payload padded to 8 only. */
#define PYQ_RECORD_HEADER 8
#define PYQ_RECORD_ALIGN 8
#define PYQ_RECORD_ALIGN_SCAN 64
/* Limits checked by pyq_queue_create(). */
#define PYQ_MIN_BLOCK_SIZE 64
#define PYQ_MAX_BLOCK_SIZE 16777216
#define PYQ_MAX_BLOCKS 1073741824
/* The largest max_message (1 GiB); the large region's alignment: each large
 * message starts a cache line of the region (docs/DESIGN.md, "Large messages"). */
#define PYQ_MAX_MESSAGE 1073741824
#define PYQ_LARGE_ALIGN 64
#define PYQ_LARGE_PAGE 4096
/* nontemporal_backlog_kib's default: twice a 2 MiB L2 -- a block taken with
 * that much unread ahead of it leaves the caches before the reader gets to it. */
#define PYQ_NT_BACKLOG_KIB 4096
/* flush_hot_kib's default: 16 blocks of 4 KiB.  A smaller tier comes back to the
 * writer while the reader's copy is still close, and flushing it slows a reader
 * chasing the writer (docs/BENCHMARKS.md). */
#define PYQ_FLUSH_HOT_KIB 64
/* flush_backlog_kib's default: the default hot tier's 16 KiB -- a writer that far
 * ahead is streaming, and a reader that far behind is not chasing it. */
#define PYQ_FLUSH_BACKLOG_KIB 16

/* Pass as timeout_ns to wait without limit. */
#define PYQ_WAIT_FOREVER (-1)
#define PYQ_READER_WAIT_SPINS 1024         /* pyq_reader_wait: relaxed looks before sleeping */
#define PYQ_READER_WAIT_SLEEP_CAP_NS 50000 /* ... and its longest sleep */
#define PYQ_BELL_SLEEP_CAP_NS 5000000     /* bell waits in-process: longest sleep */

/* Shared queues (pyq_queue_create_shared() and below). */
#define PYQ_SIDE_WRITER 0
#define PYQ_SIDE_READER 1
#define PYQ_TAKE_DEAD 1                    /* pyq_queue_take: re-take a dead owner's side */
/* pyq_queue_attach_flags: accept a segment of another uid, or of a mode wider than 0600 */
#define PYQ_ATTACH_TRUST_OTHERS 1
#define PYQ_SHM_NAME_MAX 200               /* bytes of a segment name, without the '/' */
#define PYQ_SHM_PREFIX "pyq-"              /* the names this project makes (and cleans up) */
#define PYQ_SHM_SLEEP_SLICE_NS 10000000    /* a sleeping side looks at its peer this often */
#define PYQ_SHM_SPIN_RETRIES 4096          /* a shared writer's retries before it sleeps */

typedef struct pyq_queue pyq_queue_t;

/* Queue configuration; pyq_config_init() fills the defaults named below (fields
 * that name none default to 0). */
typedef struct pyq_config {
    uint32_t block_size;        /* bytes per block: multiple of 64 in [64, 16 MiB]; default 4096 */
    uint32_t hot_blocks;        /* tier 1 blocks, >= 1; default 4 */
    uint32_t spill_blocks;      /* tier 2 blocks, >= 0; default 65536 */
    int32_t publish;            /* PYQ_PUBLISH_*; default MAX */
    uint32_t publish_bytes;     /* N of bytes:N (>= 1) when publish == PYQ_PUBLISH_BYTES */
    int32_t scan_current;       /* reader also consumes committed messages of the
                                   writer's current, unpublished block; records are
                                   then padded to 64 bytes (one cache line carries a
                                   small message); default 0 */
    uint32_t retry_yield_every; /* full queue: sched_yield() every N failed retries,
                                   0 = never yield; default 1024 */
    int32_t touch_after_write;  /* read the first byte of each message just written */
    int32_t hugepages;          /* MAP_HUGETLB, falling back to MADV_HUGEPAGE */
    int32_t prefault;           /* touch every page of the pool at creation */
    int32_t mlock;              /* mlock() the pool; failure is PYQ_EPERM/PYQ_ENOMEM */
    int32_t spill_nontemporal;  /* spill (tier-2) blocks stay out of the caches
                                   (x86-64 only; default 1 there): written with
                                   streaming stores when taken under a backlog of at
                                   least nontemporal_backlog_kib (such blocks are read
                                   much later, so they bypass the writer's caches;
                                   touch_after_write skips them), and flushed from
                                   the reader's caches once read (CLFLUSHOPT, where
                                   the CPU has it), so that the writer takes them
                                   again from memory, not line by line from the
                                   reader's cache */
    int32_t prefetch;           /* writer prefetches a block for writing when it takes
                                   it, reader prefetches the published part of a block
                                   when it starts it; default 1 */
    int32_t hot_nontemporal;    /* write tier-1 (hot) blocks with streaming stores too
                                   (x86-64 only; default 0): a lever of the burst-tail
                                   study -- the payload then bypasses the writer's
                                   caches whatever its tier; touch_after_write skips
                                   streamed blocks */
    uint32_t nontemporal_backlog_kib; /* spill_nontemporal streams a spill block only
                                   when the backlog, as the writer takes the block, is
                                   at least this many KiB (0: every spill block); a
                                   block that close behind the reader is read while
                                   it is still cached; default 4096 */
    uint32_t flush_hot_kib;     /* the reader flushes each hot (tier-1) block from its
                                   caches once read, as spill_nontemporal does a spill
                                   block, when the hot tier (hot_blocks * block_size)
                                   holds at least this many KiB: such a tier comes back
                                   to the writer long after the block was read, line
                                   by line from the reader's cache unless flushed.  A
                                   small tier comes back at once and is left alone.
                                   0: never.  No effect on a CPU without CLFLUSHOPT;
                                   default 64 */
    uint32_t flush_backlog_kib; /* the reader also flushes a hot block of a smaller
                                   tier once read when, as it finishes the block, the
                                   writer is at least this many KiB ahead of the
                                   block's end (as far as the reader last looked):
                                   the writer, streaming ahead, takes the block again
                                   at once, after the reader's copy but long after
                                   its own.  0: never.  No effect on a CPU without
                                   CLFLUSHOPT; default 16 */
    uint32_t max_message;       /* the largest message, in bytes (at most PYQ_MAX_MESSAGE):
                                   0 (default) or at most block_size - 8, what one block
                                   holds, and nothing larger is taken.  Above that, a
                                   message of more than block_size - 8 bytes goes to the
                                   pool's large region -- contiguous, so that a claim or
                                   a view of it is one buffer -- and the block stream
                                   carries a 16-byte record naming it, in order with
                                   the others; smaller ones are framed in blocks as
                                   always */
    uint32_t large_bytes;       /* bytes of the large region when max_message needs one:
                                   a multiple of 4096 of at least max_message rounded up
                                   to 64; 0 (default): twice max_message rounded up to
                                   4096.  Must be 0 when max_message needs none */
} pyq_config_t;

/* Counters: each written by one thread only, readable at any time. */
typedef struct pyq_stats {
    uint64_t messages_written;
    uint64_t bytes_written;     /* payload bytes */
    uint64_t messages_read;
    uint64_t bytes_read;
    uint64_t blocks_published;  /* blocks handed over complete (sealed) */
    uint64_t publishes;         /* publish operations (block seals, flushes, each/bytes:N) */
    uint64_t takes_hot;         /* blocks taken from tier 1 */
    uint64_t takes_spill;       /* blocks taken from tier 2 */
    uint64_t returns_hot;       /* blocks the reader gave back to tier 1 */
    uint64_t returns_spill;
    uint64_t retries;           /* failed attempts to take a block (queue full) */
    uint64_t yields;            /* sched_yield() calls made while full */
    uint64_t full_events;       /* writes that found the queue full at least once */
    uint64_t peak_backlog;      /* max payload bytes written but not yet read,
                                   sampled by the writer at each block take */
    uint64_t backlog;           /* payload bytes written but not yet read, now */
    uint32_t hugepages_used;    /* 1 MAP_HUGETLB, 2 MADV_HUGEPAGE advice, 0 none */
    uint32_t mlocked;
    uint64_t blocks_flushed;    /* blocks the reader flushed from its caches once read
                                   (spill_nontemporal, flush_hot_kib,
                                   flush_backlog_kib) */
} pyq_stats_t;

/* Per-message callback of pyq_reader_poll(): return 0 to go on; any other value
 * stops the poll after this message (which counts as consumed) and is returned
 * by pyq_reader_poll() when negative. */
typedef int (*pyq_message_fn)(void *ctx, const void *msg, uint32_t len);

/* Any thread.  Fill *cfg with the defaults pyq_config_t names. */
void pyq_config_init(pyq_config_t *cfg);

/* Any thread.  Check a configuration without allocating.
 * @return 0, or PYQ_EINVAL; *bad_field (if not NULL) names the first bad field. */
int pyq_config_check(const pyq_config_t *cfg, const char **bad_field);

/* Any thread.  How many times this process's copy of the core has run
 * pyq_config_check() (directly or inside pyq_queue_create*, pyq_queue_attach):
 * a diagnostic for tests, which count one check per queue made.
 * @return the count (relaxed: exact once the checking threads are joined). */
uint64_t pyq_config_check_count(void);

/* Any thread.  Create a queue; the whole pool is mapped here (no later allocation).
 * @return 0 and *out, or PYQ_EINVAL, PYQ_ENOMEM, PYQ_EPERM (mlock refused). */
int pyq_queue_create(const pyq_config_t *cfg, pyq_queue_t **out);

/* Any thread, once no other thread uses the queue.  Unmap everything. NULL is ok.
 * A shared queue: give up the sides this process owns (no detach), leave the
 * segment's users, unmap; the last live user also removes the name. */
void pyq_queue_destroy(pyq_queue_t *q);

/* Any thread.  Mark the queue closed: a writer waiting for space returns
 * PYQ_ECLOSED; later writes fail with PYQ_ECLOSED.  Reads still drain what is
 * there.  Wait-free. */
void pyq_queue_close(pyq_queue_t *q);
int pyq_queue_is_closed(const pyq_queue_t *q);

/* Writer thread, or the thread that holds the writer side once no writer runs
 * (Python's close() does this after pyq_queue_close()).  Publish everything
 * committed and declare that no write will follow: from then on a reader that
 * finds the queue empty has every message.  A claim still open is dropped,
 * never delivered.  Implies pyq_queue_close(). */
void pyq_writer_detach(pyq_queue_t *q);

/* Any thread.  1 once pyq_writer_detach() was called (acquire: every message
 * written before it is visible to a reader that sees 1), else 0. */
int pyq_queue_writer_detached(const pyq_queue_t *q);

/* Any thread.  The largest payload a message may have: max_message when the
 * configuration gives one above block_size - 8, else block_size - 8. */
uint32_t pyq_queue_max_message(const pyq_queue_t *q);

/* Any thread.  A copy of the configuration the queue was created with. */
void pyq_queue_config(const pyq_queue_t *q, pyq_config_t *out);

/* Any thread.  Snapshot of the counters (each read relaxed; not one instant). */
void pyq_queue_stats(const pyq_queue_t *q, pyq_stats_t *out);

/* Any thread.  Payload bytes written but not yet consumed. */
uint64_t pyq_queue_backlog(const pyq_queue_t *q);

/* Writer thread only.  Copy one message in (claim + memcpy + commit) and publish
 * it per the policy.  Waits for a free block (spinning, with a sched_yield()
 * every retry_yield_every retries) for at most timeout_ns (PYQ_WAIT_FOREVER: no
 * limit; 0: do not wait); a shared queue's
 * writer sleeps on a futex after PYQ_SHM_SPIN_RETRIES retries.
 * @return 0, PYQ_ETOOBIG, PYQ_EAGAIN (full past the timeout), PYQ_ECLOSED,
 *         PYQ_EBUSY (a claim is outstanding), PYQ_EPEER (shared: the reader's
 *         process died while the queue was full; seen within
 *         PYQ_SHM_SLEEP_SLICE_NS).
 * Progress: wait-free when a block has room; otherwise waits on the reader. */
int pyq_writer_write(pyq_queue_t *q, const void *data, uint32_t len, int64_t timeout_ns);

/* Writer thread only.  pyq_writer_write() with timeout 0: never waits.
 * @return 0, PYQ_EAGAIN (full: nothing written), PYQ_ETOOBIG, PYQ_ECLOSED, PYQ_EBUSY. */
int pyq_writer_try_write(pyq_queue_t *q, const void *data, uint32_t len);

/* Writer thread only.  Write n messages of msg_size bytes each, stored back to
 * back at data (a C-contiguous (n, msg_size) array).  Stops at the first error.
 * @return the number written (0..n); when fewer than n, *err holds the code. */
int64_t pyq_writer_write_batch(pyq_queue_t *q, const void *data, uint64_t n,
                               uint32_t msg_size, int64_t timeout_ns, int *err);

/* Writer thread only.  Reserve len payload bytes in the current block (or, for
 * len > block_size - 8, in the large region: contiguous, 64-byte aligned) and
 * return a pointer to them in *ptr; nothing is visible until pyq_writer_commit().
 * Waits for room as pyq_writer_write() does.
 * @return 0, PYQ_ETOOBIG, PYQ_EAGAIN, PYQ_ECLOSED, PYQ_EBUSY (claim outstanding). */
int pyq_writer_claim(pyq_queue_t *q, uint32_t len, int64_t timeout_ns, void **ptr);

/* Writer thread only.  Turn the outstanding claim into a message. Wait-free.
 * The claim's pointer is invalid from then on (and after pyq_writer_abort()).
 * @return 0, PYQ_ENOCLAIM, or PYQ_ECLOSED when pyq_writer_detach() dropped the claim. */
int pyq_writer_commit(pyq_queue_t *q);

/* Writer thread only.  Drop the outstanding claim; its pointer is invalid from
 * then on. @return 0 or PYQ_ENOCLAIM. */
int pyq_writer_abort(pyq_queue_t *q);

/* Writer thread only.  Publish every committed message now. Wait-free. @return 0. */
int pyq_writer_flush(pyq_queue_t *q);

/* Reader thread only.  Deliver up to max_messages visible messages in FIFO
 * order to fn; drained blocks go back to their tier at once.  fn must not call
 * a reader function of the same queue (the reader's state is held in registers
 * across a run's messages).
 * @return the count delivered, or the negative value fn returned (that message
 *         and those before it are consumed).  Wait-free (bounded by max_messages). */
int64_t pyq_reader_poll(pyq_queue_t *q, uint64_t max_messages, pyq_message_fn fn, void *ctx);

/* Reader thread only.  Copy up to max_messages visible messages into buf
 * (capacity cap bytes, each message at an 8-byte aligned offset) and their
 * lengths into lens.  Stops before a message that does not fit.
 * @return the count copied (0 when nothing is visible or the first message does
 *         not fit in cap: see pyq_reader_next_len()). */
int64_t pyq_reader_poll_copy(pyq_queue_t *q, void *buf, uint64_t cap, uint32_t *lens,
                             uint64_t max_messages);

/* Reader thread only.  Copy the next visible message into buf (capacity cap
 * bytes): poll_copy for one message, with the length as the result (the
 * per-message path of the Python Reader.poll(1)).
 * @return its length (>= 0; zero-length messages exist), PYQ_EAGAIN when none
 *         is visible, or PYQ_ETOOBIG when it does not fit in cap (it stays in
 *         the queue: see pyq_reader_next_len()).  Wait-free. */
int64_t pyq_reader_read_one(pyq_queue_t *q, void *buf, uint64_t cap);

/* Reader thread only.  Copy up to n messages of exactly msg_size bytes into out
 * (a C-contiguous (n, msg_size) array).  Stops before a message of another size.
 * @return the count copied, or PYQ_ERANGE when the first visible message has
 *         another size (it stays in the queue). */
int64_t pyq_reader_poll_fixed(pyq_queue_t *q, void *out, uint64_t n, uint32_t msg_size);

/* Reader thread only.  Length of the next visible message, or PYQ_EAGAIN if none. */
int64_t pyq_reader_next_len(pyq_queue_t *q);

/* Reader thread only.  The next visible message in place, not consumed: its
 * payload in *ptr (valid, and left unchanged by the writer, until
 * pyq_reader_release()).  At most one view at a time: until it is released,
 * every other reader call but pyq_reader_wait() returns PYQ_EBUSY.
 * @return its length (>= 0), PYQ_EAGAIN when none is visible, PYQ_EBUSY (a
 *         view is held), PYQ_ECORRUPT (shared).  Wait-free. */
int64_t pyq_reader_view(pyq_queue_t *q, const void **ptr);

/* Reader thread only.  Consume the message pyq_reader_view() returned: its
 * space goes back to the writer (its block once drained, its part of the
 * large region at once).  @return 0, or PYQ_ENOCLAIM when no view is held. */
int pyq_reader_release(pyq_queue_t *q);

/* Reader thread only.  Drop the view without consuming the message: the next
 * read delivers it again.  @return 0, or PYQ_ENOCLAIM when no view is held. */
int pyq_reader_unview(pyq_queue_t *q);

/* Reader thread only.  Wait until a message is visible, the writer has
 * detached (pyq_writer_detach()), or timeout_ns has passed (0: look once;
 * PYQ_WAIT_FOREVER: no limit).  Consumes nothing.  Spins with the CPU relax
 * hint for PYQ_READER_WAIT_SPINS looks, then sleeps between looks, 1 us
 * doubling to PYQ_READER_WAIT_SLEEP_CAP_NS: a message that comes during a
 * sleep is seen when it ends.  A shared queue's reader sleeps on a futex
 * instead and is woken by the writer's next publish; if the writer's process
 * died, its committed messages are published for it (pyq_queue_dead_peer()
 * names it) and the stream ends -- a look with timeout 0 that finds nothing
 * looks at the writer's process too (at most every 10 ms, the clock read every
 * 8 looks), so that a non-blocking reader sees a dead writer as well.
 * Blocking (by design), bounded by the timeout.
 * @return 1 when a message is visible, 0 when the writer has detached (or
 *         died) and every message was read (none will come), PYQ_EAGAIN on
 *         timeout. */
int pyq_reader_wait(pyq_queue_t *q, int64_t timeout_ns);

/* Waits a bell also ends (core/bell_wait.c): a thread that waits on a side
 * for an event loop (Python's asyncio, pyqueue/aio.py) consumes and writes
 * nothing, and gives the side back as soon as another thread rings.  The bell
 * is a 32-bit word the caller owns, zero before the wait, touched only by
 * these functions while one runs. */

/* Reader thread only.  pyq_reader_wait() that also returns when the bell
 * rings (pyq_queue_ring).  Across processes it sleeps on the futex the
 * writer's publish wakes, as pyq_reader_wait does; in-process it sleeps on the
 * bell in steps growing from 1 us to PYQ_BELL_SLEEP_CAP_NS (an in-process
 * writer wakes nobody): a message is seen when a step ends, a ring at once.
 * bell may be NULL (no ring: nanosleep steps).  Consumes nothing.
 * Blocking (by design), bounded by the timeout.
 * @return 1 when a message is visible, 0 when the stream has ended (detached,
 *         or the writer's process died, after its messages), PYQ_EAGAIN on
 *         timeout, PYQ_EINTR when the bell rang, PYQ_ECORRUPT. */
int pyq_reader_wait_bell(pyq_queue_t *q, int64_t timeout_ns, uint32_t *bell);

/* Writer thread only.  Wait until a len-byte message can be written without
 * waiting (a claim of len would take no time), the timeout passes or the bell
 * rings; writes nothing (a look is a claim given back at once, so each look
 * at a full queue counts a full event).  Sleeps as pyq_reader_wait_bell does,
 * across processes on the futex the reader's block returns wake.
 * @return 1 room, PYQ_EAGAIN (timeout), PYQ_EINTR (rang), PYQ_ECLOSED,
 *         PYQ_ETOOBIG, PYQ_EBUSY (a claim is outstanding), PYQ_EPEER (shared:
 *         the reader's process died while the queue was full), PYQ_ECORRUPT. */
int pyq_writer_wait_room(pyq_queue_t *q, uint32_t len, int64_t timeout_ns, uint32_t *bell);

/* Any thread of the process whose thread waits.  Ring the bell of the wait of
 * side (PYQ_SIDE_READER or PYQ_SIDE_WRITER): it returns PYQ_EINTR at once (or
 * its result, if it had one).  A bell stays rung until its owner zeroes it.
 * Wait-free but for one or two futex wake-ups.  @return 0, PYQ_EINVAL. */
int pyq_queue_ring(pyq_queue_t *q, int side, uint32_t *bell);

/* Any thread.  Create a queue in a shared-memory segment that other processes
 * attach to: the name "/name" in /dev/shm (name: 1 to
 * PYQ_SHM_NAME_MAX bytes, no '/'), or with name NULL an anonymous memfd whose
 * descriptor is returned in *fd_out (the caller closes it; pass it to
 * pyq_queue_attach() in a child, or fork and pyq_queue_adopt()).  The segment
 * holds the queue, its rings and its pool; nothing is touched beyond the
 * first pages until used.  The caller is the segment's first user; neither
 * side is owned until pyq_queue_take().
 * @return 0 and *out, or PYQ_EINVAL (config or name), PYQ_EEXIST (name taken),
 *         PYQ_ENOMEM (no room in /dev/shm, or mapping failed), PYQ_EPERM,
 *         PYQ_ENOTSUP (no /dev/shm or memfd). */
int pyq_queue_create_shared(const char *name, const pyq_config_t *cfg, pyq_queue_t **out,
                            int *fd_out);

/* Any thread.  Map a shared queue made by pyq_queue_create_shared(): by name,
 * or with name NULL by a descriptor of it (fd, not closed here).  The segment
 * is a trust boundary (DESIGN §3.9): it must be a regular file owned by this
 * process's effective uid and, by name, of mode 0600 or narrower (a memfd's
 * descriptor is its own capability: its uid is checked, not its mode), unless
 * flags has PYQ_ATTACH_TRUST_OTHERS.  Its header is then checked (magic,
 * layout version, sizes, configuration and everything derived from it) before
 * anything else is read, and only the geometry this process derives from it is
 * used from then on.  This handle holds a description of the segment of its
 * own (by fd: a new one, reopened through /proc/self/fd), which makes it one
 * of the segment's users for as long as it lives.
 * @return 0 and *out, or PYQ_ENOSEG (no such name, or being removed by its
 *         last user), PYQ_EUNTRUSTED (another uid's, or a mode wider than 0600,
 *         without the flag), PYQ_EBADSEG (not a pyqueue segment, not a regular
 *         file, truncated, garbage, or another layout version), PYQ_EMFILE (no
 *         descriptor left), PYQ_EPERM, PYQ_EINVAL. */
int pyq_queue_attach_flags(const char *name, int fd, int flags, pyq_queue_t **out);

/* pyq_queue_attach_flags() with flags 0. */
int pyq_queue_attach(const char *name, int fd, pyq_queue_t **out);

/* The child of fork(), once, for each shared queue it inherited mapped.
 * Gives the child a description of the segment of its own (its parent's
 * carries the parent's locks: until this -- or the child's first take -- the
 * child keeps them alive, and its exit or exec ends that) and registers it as
 * a user; it owns no side.
 * @return 0, PYQ_EMFILE (no descriptor left), PYQ_EINVAL (not a shared queue,
 *         or no /proc to reopen the segment through). */
int pyq_queue_adopt(pyq_queue_t *q);

/* Any thread.  1 for a queue in a shared segment, else 0. */
int pyq_queue_is_shared(const pyq_queue_t *q);

/* Any thread of the process that will run the side.  Make this process the
 * owner of the side (PYQ_SIDE_WRITER or PYQ_SIDE_READER) of a shared queue and
 * point the side at this process's mapping; a no-op in-process and when this
 * process owns it already.  The side's state is restored from its mirror in
 * the segment (a side given up or left by a dead owner goes on where it
 * stopped), checked against this process's geometry.  The owner holds a lock
 * on the segment (F_OFD_SETLK) that the kernel drops when its process ends, so
 * liveness holds across pid namespaces; its pid is recorded for messages.  With
 * flags PYQ_TAKE_DEAD a side whose owner died is re-taken: a reader resumes
 * at the next unconsumed message; a dead writer's committed messages are
 * published and the stream ends (its later writes fail with PYQ_ECLOSED).
 * @return 0, PYQ_EOWNED (a live process owns it), PYQ_EPEER (its owner died;
 *         pass PYQ_TAKE_DEAD), PYQ_ECORRUPT (its mirror describes no state of
 *         this geometry), PYQ_EMFILE (a fork() child found no descriptor for a
 *         description of its own), PYQ_EINVAL (bad side). */
int pyq_queue_take(pyq_queue_t *q, int side, int flags);

/* The owning process.  Give the side up (another process may take it);
 * nothing is published or detached.  @return 0, or PYQ_EOWNED if this process
 * does not own it. */
int pyq_queue_release(pyq_queue_t *q, int side);

/* Any thread.  The pid owning the side: > 0 a live owner, the negated pid of
 * a dead one, 0 when free (always 0 in-process). */
int64_t pyq_queue_owner(const pyq_queue_t *q, int side);

/* Any thread.  The pid of the dead process whose side was recovered or
 * re-taken last (the writer: the one whose death ended the stream), or 0. */
int64_t pyq_queue_dead_peer(const pyq_queue_t *q, int side);

/* Any thread.  The longest futex sleep of either side of a shared queue, for
 * tests: 0 restores PYQ_SHM_SLEEP_SLICE_NS; PYQ_WAIT_FOREVER sleeps until a
 * wake-up (a lost wake-up then hangs, and a dead peer goes unseen while no
 * timeout is given).  No-op in-process. */
void pyq_queue_set_sleep_slice(pyq_queue_t *q, int64_t ns);

/* Any thread of a process that is ending while threads may still be inside
 * calls on the queue (Python's interpreter exit with daemon threads blocked in
 * a read or a write): remove the name if no other process maps the segment,
 * as pyq_queue_destroy() would, without unmapping anything.  The memory goes
 * with the process.
 * @return 1 removed (this was the last user), 0 others map it, PYQ_EINVAL
 *         (not a shared queue of this process). */
int pyq_queue_leave(pyq_queue_t *q);

/* Any thread.  A handle of this shared queue is on its way to another process
 * (Python pickles one for multiprocessing): until that process attaches and
 * calls pyq_queue_handoff_done(), or within_ns (at most an hour) passes, the
 * last user's pyq_queue_destroy() leaves the name in place, so a writer may
 * close before its reader has attached; after the deadline
 * pyq_queue_reclaim() removes a segment nobody uses.
 * @return 0, PYQ_EINVAL (not shared, or within_ns <= 0). */
int pyq_queue_handoff(pyq_queue_t *q, int64_t within_ns);

/* Any thread of the process a handle was handed to, once it has attached:
 * one in-flight handle fewer.  @return 0, PYQ_EINVAL (not shared). */
int pyq_queue_handoff_done(pyq_queue_t *q);

/* Any thread.  Remove the shared queue's name now: handles that map it keep
 * working, later attaches by name fail.  Idempotent.  The last handle's
 * pyq_queue_destroy() does this by itself.  @return 0, PYQ_EINVAL (not
 * named). */
int pyq_queue_unlink(pyq_queue_t *q);

/* Any thread.  Remove the segment called name if it is a pyqueue segment of
 * this layout that no process holds (no description holds a lock on it: a
 * crashed run's leftover), or, under the PYQ_SHM_PREFIX prefix, a creation
 * whose creator died before its magic was in (only where /dev/shm has no
 * O_TMPFILE).  Opened read-only, without following a link or waiting on a
 * FIFO; read, never mapped; removed under the users' write lock, so nobody
 * attaches meanwhile.
 * @return 1 removed, 0 in use, PYQ_ENOSEG, PYQ_EBADSEG (not ours: untouched). */
int pyq_queue_reclaim(const char *name);

/* Any thread.  Static string naming an error code ("queue full", ...). */
const char *pyq_strerror(int code);

/* The version of pyqueue, written here once: setup.py reads it for the Python
 * package's metadata, so the C library and the package cannot disagree. */
#define PYQ_VERSION "0.1.0"

/* Any thread.  The library version string (PYQ_VERSION of the build). */
const char *pyq_version(void);

/* The per-message fast paths as static inline functions over these
 * declarations; not part of the cdef. */
#include "pyqueue_inline.h"

#endif /* PYQUEUE_H */
