/*
 * pyqueue_inline.h - the per-message fast paths as static inline functions,
 * included by pyqueue.h.  liburing's model: the common case
 * runs in the caller's code, on a view of the queue's own state, and
 * everything else calls the library.
 *
 *   pyq_writer_try_write_inline  pyq_writer_try_write(), inline while the
 *                                message extends the open run of its size
 *                                (publish max, a plain block, no touch, not
 *                                closed): a copy and two stores
 *   pyq_reader_poll_inline       pyq_reader_poll(), delivering the block being
 *                                drained in the caller's loop, so that a
 *                                callback the compiler sees is inlined
 *
 * The views are the first fields of the writer's and the reader's state
 * inside the queue, at the offsets below; csrc/core/queue_pvt.h checks each
 * field against them, so a layout change that forgets this header does not
 * build.  Nothing here is part of the ABI of the shared object (the exported
 * functions are): a program compiled against one version's header runs only
 * with that version's library.  Not part of the cffi cdef (pyqueue.h's
 * preprocessor lines are dropped there).  C and C++.
 */
#ifndef PYQUEUE_INLINE_H
#define PYQUEUE_INLINE_H

#include <stdint.h>
#include <string.h>

/* Where the views sit in struct pyq_queue (checked in csrc/core/queue_pvt.h). */
#define PYQ_WRITER_VIEW_OFFSET 256
#define PYQ_READER_VIEW_OFFSET 448
#define PYQ_READER_COUNTS_OFFSET 4736

/* The writer's gate word: any bit set sends the inline run path to the library. */
#define PYQ_GATE_CLOSED 0x1u /* pyq_queue_close() or pyq_writer_detach() */
#define PYQ_GATE_TOUCH 0x2u  /* touch_after_write */
#define PYQ_GATE_NT 0x4u     /* the current block takes streaming stores */
#define PYQ_GATE_SCAN 0x8u   /* a scanning reader (scan_current, publish each) */
#define PYQ_GATE_XPROC 0x10u /* a shared queue: commits may wake the reader */
#define PYQ_GATE_HOOK 0x20u  /* a policy acts after each commit (each, bytes:N) */
/* The bits a run extension must find clear (runs exist only under publish max
 * without a scanning reader; a shared queue's reader is woken at publish),
 * kept apart in run_gate too. */
#define PYQ_GATE_RUN (PYQ_GATE_CLOSED | PYQ_GATE_TOUCH | PYQ_GATE_NT)

struct pyq_writer_view {
    uint8_t *blk;          /* current block */
    uint64_t pos_run;      /* the next offset in it (low half) and the open run's count
                              (high half; atomic, release stores): one store moves both */
    uint32_t run_key;      /* PYQ__RUN_KEY of the open run's length, or of UINT32_MAX:
                              no inline run */
    uint32_t run_gate;     /* gate & PYQ_GATE_RUN (atomic, relaxed); one aligned word
                              with run_key (pyq__run_member) */
    uint32_t run_limit;    /* the offset it may grow to */
    uint32_t gate;         /* PYQ_GATE_* (atomic, relaxed) */
    uint32_t run_step;     /* the open run's payload stride */
};

struct pyq_reader_view {
    const uint8_t *blk; /* block being drained */
    uint32_t pos;       /* next record (or, in a run, payload) offset */
    uint32_t limit;     /* records below it are published (0: ask the library) */
    uint32_t run_left;  /* messages of the current run still to deliver */
    uint32_t run_len;
    uint32_t run_step;
    uint32_t block_size; /* pos there: the block is drained */
};

/* Record headers the inline reader tells apart (the library's own framing). */
#define PYQ_INLINE_HDR_COMMIT (UINT64_C(0x5051) << 32)
#define PYQ_INLINE_HDR_KIND (UINT64_C(0xffff) << 32)

#define PYQ__VIEW(q, off, type) ((type *)(void *)((char *)(void *)(q) + (off)))

/* *p += v for a word only the calling thread writes and other threads read
 * with relaxed atomic loads (the open run's count): a relaxed atomic store of
 * *p + v.  On x86-64 one non-locked `add` to memory -- its store is a single
 * aligned 8-byte store, atomic for those loads -- where the builtins emit a
 * load, an add and a store.  Elsewhere, and under ThreadSanitizer (which sees
 * no asm), the builtins. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PYQ__TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define PYQ__ASAN 1 /* pyq__move16x2: plain copies, which it checks */
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define PYQ__TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PYQ__ASAN 1
#endif
static inline void pyq__own_add64(uint64_t *p, uint64_t v)
{
#if defined(__x86_64__) && !defined(PYQ__TSAN)
    __asm__("addq %1, %0" : "+m"(*p) : "er"(v) : "cc");
#else
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
#endif
}

/* The writer's pos_run word: its position in the current block in the low
 * half, the open run's count in the high half, which pyq_queue_stats() reads
 * from any thread.  Its stores are release stores (W6 in csrc/core/queue_pvt.h:
 * every count a reader sees comes after its run's id), which on x86-64 are one
 * plain 8-byte store, and a run member adds its stride plus PYQ__RUN_MEMBER. */
#define PYQ__RUN_MEMBER (UINT64_C(1) << 32)

static inline uint64_t pyq__pos_run_load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED); /* the writer's own word: a plain load */
}

static inline void pyq__pos_run_store(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* pyq__pos_run_store(p, *p + v): one add to memory on x86-64, whose stores are
 * all release stores (TSO), where the builtins emit a load, an add and a store. */
static inline void pyq__pos_run_add(uint64_t *p, uint64_t v)
{
#if defined(__x86_64__) && !defined(PYQ__TSAN)
    pyq__own_add64(p, v);
#else
    pyq__pos_run_store(p, pyq__pos_run_load(p) + v);
#endif
}

/* The run key of a length: what run_key holds for the open run of that
 * length.  len - 16, wrapping: the small copy's tail offset (pyq__copy_member),
 * which the fast paths compute anyway -- a 32-bit result, already
 * zero-extended, so the compare below needs no widening of len of its own. */
#define PYQ__RUN_KEY(len) ((uint32_t)(len) - 16u)

/* key[0] == PYQ__RUN_KEY(len) && key[1] == 0 for the word run_key, run_gate
 * (8-byte aligned), whose gate half other threads change with atomic RMWs:
 * whether len extends the open run with no PYQ_GATE_RUN bit set.  On x86-64
 * one compare of the 8-byte word in memory with the key zero-extended -- both
 * tests in one, and an aligned 8-byte load sees a 4-byte RMW of its half
 * whole; elsewhere, and under ThreadSanitizer, the two loads. */
static inline int pyq__run_member(const uint32_t *key, uint32_t len)
{
#if defined(__x86_64__) && !defined(PYQ__TSAN) && defined(__GCC_ASM_FLAG_OUTPUTS__)
    typedef uint64_t __attribute__((may_alias)) pyq__word; /* the two halves' bytes */
    int eq;
    __asm__ __volatile__("cmpq %2, %1" : "=@ccz"(eq) : "m"(*(const pyq__word *)(const void *)key),
                         "r"((uint64_t)PYQ__RUN_KEY(len)));
    return eq;
#else
    return *key == PYQ__RUN_KEY(len) && __atomic_load_n(key + 1, __ATOMIC_RELAXED) == 0;
#endif
}


/* 16 bytes at 0 and 16 at off (0 to 16, so the two may overlap) of a message,
 * moved as 8-byte loads and 16-byte stores.  A caller that stored an 8-byte
 * field of its message the moment before the write (a sequence number, a
 * timestamp) still has that store in flight, and x86 forwards a load from the
 * store buffer only when one store holds all of it: a 16-byte load spanning
 * it would wait for the store to reach the cache.  The stores stay two, as
 * many store-buffer entries as 16-byte moves take.  Under a sanitizer, plain
 * copies, which it checks. */
static inline void pyq__move16x2(uint8_t *d, const uint8_t *s, uint32_t off)
{
#if defined(__x86_64__) && defined(__SSE2__) && !defined(PYQ__TSAN) && !defined(PYQ__ASAN)
    typedef struct { uint8_t b[16]; } pyq__b16;
#ifdef PYQ__MOVE_OFF_REG /* the library's writes name it (csrc/core/writer.c) */
    register uint64_t o __asm__(PYQ__MOVE_OFF_REG) = off;
#else
    uint64_t o = off;
#endif
    /* In asm: the compiler fuses the halves back into one load.  The memory
     * operands are exactly the bytes read and written, so the compiler keeps
     * every other store around it. */
    __asm__ __volatile__("movq (%4), %%xmm0\n\t"
            "movhps 8(%4), %%xmm0\n\t"
            "movq (%4,%5), %%xmm1\n\t"
            "movhps 8(%4,%5), %%xmm1\n\t"
            "movups %%xmm0, (%3)\n\t"
            "movups %%xmm1, (%3,%5)"
            : "=m"(*(pyq__b16 *)(void *)d), "=m"(*(pyq__b16 *)(void *)(d + off))
            : "m"(*(const pyq__b16 *)(const void *)s), "r"(d), "r"(s), "r"(o),
              "m"(*(const pyq__b16 *)(const void *)(s + off))
            : "xmm0", "xmm1");
#else
    memcpy(d, s, 8);
    memcpy(d + 8, s + 8, 8);
    memcpy(d + off, s + off, 8);
    memcpy(d + off + 8, s + off + 8, 8);
#endif
}

/* A message of 8 to 64 bytes by fixed-size overlapping moves, no call (the
 * writer's own copies use it too: csrc/core/writer_run_pvt.h). */
static inline void pyq_copy_small(uint8_t *d, const void *src, uint32_t len)
{
    const uint8_t *s = (const uint8_t *)src;

    if (__builtin_expect(len >= 16 && len <= 32, 1)) { /* the common sizes fall through */
        pyq__move16x2(d, s, len - 16);
    } else if (len > 32) {
        pyq__move16x2(d, s, 16);
        pyq__move16x2(d + len - 32, s + len - 32, 16);
    } else {
        memcpy(d, s, 8);
        memcpy(d + len - 8, s + len - 8, 8);
    }
}

/* pyq_copy_small() for a run member: 0, and nothing copied, when len is not
 * 8 to 64 -- the run_key of no run (UINT32_MAX's) is a len's too, so the
 * test the fast paths make on len alone cannot tell it apart.  The common
 * sizes cost what pyq_copy_small() costs; the others one compare more. */
static inline int pyq__copy_member(uint8_t *d, const void *src, uint32_t len)
{
    const uint8_t *s = (const uint8_t *)src;
    /* The tail's offset is the compare's len - 16 (a 32-bit result, already
     * zero-extended): no widening of len. */
    uint32_t tail = len - 16;

    if (__builtin_expect(tail <= 16, 1)) {
        pyq__move16x2(d, s, tail);
    } else if (len - 33 <= 31) {
        pyq__move16x2(d, s, 16);
        pyq__move16x2(d + len - 32, s + len - 32, 16);
    } else if (len - 8 <= 7) {
        memcpy(d, s, 8);
        memcpy(d + len - 8, s + len - 8, 8);
    } else {
        return 0;
    }
    return 1;
}

/* Writer thread only.  pyq_writer_try_write(), same results; the next member
 * of the open run of this length is written here (it never ends the block nor
 * the run: the library does that), anything else by the library. */
static inline int pyq_writer_try_write_inline(pyq_queue_t *q, const void *data, uint32_t len)
{
    struct pyq_writer_view *w = PYQ__VIEW(q, PYQ_WRITER_VIEW_OFFSET, struct pyq_writer_view);
    /* The stride from len, not w->run_step: equal whenever len is the run's
     * (both set together), and a constant where len is one -- a load less. */
    uint32_t stride = (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
    uint64_t pos_run = pyq__pos_run_load(&w->pos_run), after = pos_run + (PYQ__RUN_MEMBER | stride);
    uint32_t pos = (uint32_t)pos_run, next = (uint32_t)after;

    if (__builtin_expect(pyq__run_member(&w->run_key, len) && next < w->run_limit, 1)) {
        if (__builtin_expect(!pyq__copy_member(w->blk + pos, data, len), 0))
            return pyq_writer_try_write(q, data, len);
        /* The position and the run's count (the library adds the members to
         * the counters when the run ends, pyq_queue_stats() in between) in one
         * store, after the copy's. */
        pyq__pos_run_store(&w->pos_run, after);
        return 0;
    }
    return pyq_writer_try_write(q, data, len);
}

/* Reader thread only.  pyq_reader_poll(), same results and the same contract
 * for fn; the records of the block being drained (runs message by message)
 * are delivered in this loop, the library is called to move on.  With fn a
 * function the compiler sees, it is inlined: no call per message. */
static inline int64_t pyq_reader_poll_inline(pyq_queue_t *q, uint64_t max_messages,
                                             pyq_message_fn fn, void *ctx)
{
    struct pyq_reader_view *r = PYQ__VIEW(q, PYQ_READER_VIEW_OFFSET, struct pyq_reader_view);
    uint64_t *counts = PYQ__VIEW(q, PYQ_READER_COUNTS_OFFSET, uint64_t);
    uint64_t n = 0, bytes = 0;
    int64_t next;
    int rc = 0, scan = 0;

    while (n < max_messages) {
        if (r->run_left) {
            const uint8_t *p = r->blk + r->pos;
            uint32_t k = r->run_left, j = 0, len = r->run_len, step = r->run_step;
            if (k > max_messages - n)
                k = (uint32_t)(max_messages - n);
            while (j < k) {
                rc = fn(ctx, p, len);
                p += step;
                j++;
                if (__builtin_expect(rc != 0, 0))
                    break;
            }
            r->pos += j * step;
            r->run_left -= j;
            n += j;
            bytes += (uint64_t)j * len;
        } else if (r->pos < r->limit) {
            /* Below pub_pos: the library's acquire of it ordered these bytes. */
            uint64_t hdr;
            uint32_t len;
            memcpy(&hdr, r->blk + r->pos, 8);
            len = (uint32_t)hdr;
            /* A record that does not fit below the limit is no writer's: the
             * library names it (a shared queue's segment, PYQ_ECORRUPT). */
            if ((hdr & PYQ_INLINE_HDR_KIND) != PYQ_INLINE_HDR_COMMIT ||
                (uint64_t)len + 8 > (uint64_t)(r->limit - r->pos)) {
                next = pyq_reader_next_len(q); /* a run, a PAD: the library steps */
                if (next < 0) {
                    if (next != PYQ_EAGAIN && !n)
                        rc = (int)next;
                    break;
                }
                if (!r->run_left && r->pos < r->limit) {
                    /* Still no plain record at pos: a large message's, which
                     * the library delivers (with the rest of the poll). */
                    memcpy(&hdr, r->blk + r->pos, 8);
                    if ((hdr & PYQ_INLINE_HDR_KIND) != PYQ_INLINE_HDR_COMMIT) {
                        scan = 1;
                        break;
                    }
                }
                continue;
            }
            rc = fn(ctx, r->blk + r->pos + PYQ_RECORD_HEADER, len);
            r->pos += (PYQ_RECORD_HEADER + len + PYQ_RECORD_ALIGN - 1) &
                      ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
            n++;
            bytes += len;
        } else if ((next = pyq_reader_next_len(q)) < 0) {
            if (next != PYQ_EAGAIN && !n)
                rc = (int)next; /* an error, returned alone (with messages: by the next call) */
            break; /* nothing visible */
        } else if (!r->run_left && r->pos >= r->limit) {
            scan = 1; /* a scanning reader's record: the library delivers the rest */
            break;
        }
        if (__builtin_expect(rc != 0, 0))
            break;
    }
    if (n) {
        __atomic_store_n(&counts[0], __atomic_load_n(&counts[0], __ATOMIC_RELAXED) + n,
                         __ATOMIC_RELAXED);
        __atomic_store_n(&counts[1], __atomic_load_n(&counts[1], __ATOMIC_RELAXED) + bytes,
                         __ATOMIC_RELAXED);
    }
    if (__builtin_expect(scan, 0)) {
        int64_t more = pyq_reader_poll(q, max_messages - n, fn, ctx);
        return more < 0 ? more : (int64_t)n + more;
    }
    if (r->blk && r->pos >= r->block_size)
        (void)pyq_reader_next_len(q); /* a drained block goes back to the writer now */
    return rc < 0 ? rc : (int64_t)n;
}

#endif /* PYQUEUE_INLINE_H */
