/*
 * writer_run_pvt.h - the pieces of a record and of a run that writer.c (one
 * message: claim / commit / write) and writer_batch.c (write_batch) both
 * build from: the REC_* write flags, the header store, the payload copies
 * (cached, AVX runs, streamed) and a run's start.  Private, never installed.
 * Writer thread only.
 */
#ifndef PYQ_WRITER_RUN_PVT_H
#define PYQ_WRITER_RUN_PVT_H

#include <string.h>

#include "core/writer_pvt.h"


/* How a record is written.  Every caller of write_fast() passes constants, so
 * that each inlined copy keeps only the tests its case needs; commit() passes
 * what it reads from the queue. */
enum {
    REC_SMALL = 1u << 0,  /* is_small(len): copy_small() moves it without a call */
    REC_MAY_NT = 1u << 1, /* the block may be streamed, w->nt is tested (else the
                             caller knows it is not) */
    REC_SCAN = 1u << 2,   /* q->scan: the reader finds the record by its header */
    REC_LOCAL = 1u << 3,  /* !q->xproc (w->special or the caller says so): no reader to wake, so
                             the fast path calls nothing more (shared_pvt.h) */
    REC_PLAIN = 1u << 4,  /* the caller found the gate word zero: not closed, no
                             touch, a runs-framing policy, nothing after the commit */
    REC_NT = 1u << 5,     /* the caller found the block streamed (w->nt) */
    REC_GATED = 1u << 6,  /* the caller found the gate word without CLOSED, TOUCH
                             and NT: not closed, no touch, a cached block (REC_PLAIN
                             says as much and more) */
    REC_SEAL_OUT = 1u << 7, /* the caller makes the early seal: write_fast() returns 2
                               when it is due, so the caller's pyq_w_seal_early() is a
                               tail call and its fast path saves no register */
    REC_LARGE = 1u << 8,  /* a large message's record (queue_pvt.h, Large): its header's
                             kind is PYQ_HDR_LARGE, and it never opens a run */
};

/* Lengths copy_small() moves without a call. */
#define PYQ_SMALL_MIN 8u
#define PYQ_SMALL_MAX 64u
static inline int is_small(uint32_t len)
{
    return len - PYQ_SMALL_MIN <= PYQ_SMALL_MAX - PYQ_SMALL_MIN;
}

/* W3: the record's payload is complete; pairs with A3 in reader.c (q->scan).
 * Without scanning W2 is the edge, and this costs a plain store on x86. */
static inline void commit_header(uint8_t *rec, uint32_t len)
{
    pyq_store_release(pyq_hdr(rec, 0), PYQ_HDR_COMMIT | len);
}

/* commit_header() of a record of either kind (how & REC_LARGE); W3 alike. */
static inline void commit_header_how(uint8_t *rec, uint32_t len, unsigned how)
{
    pyq_store_release(pyq_hdr(rec, 0), ((how & REC_LARGE) ? PYQ_HDR_LARGE : PYQ_HDR_COMMIT) | len);
}

#if PYQ_HAVE_NT
/* Eight bytes at s to dst with a streaming store. */
static inline void stream_word(uint8_t *dst, const uint8_t *s)
{
    long long v;
    memcpy(&v, s, 8);
    _mm_stream_si64((long long *)(void *)dst, v);
}

/* bytes (a multiple of 8) at s to dst (8-aligned) with streaming stores: SSE2's
 * 16-byte ones (baseline on x86-64; they need a 16-aligned destination, so a
 * first word alone when dst is not), four to a step, then the last words:
 * fewer instructions a byte than 8-byte stores. */
static inline void stream_bulk(uint8_t *dst, const uint8_t *s, uint64_t bytes)
{
    if (((uintptr_t)dst & 8) && bytes) {
        stream_word(dst, s);
        dst += 8, s += 8, bytes -= 8;
    }
    for (; bytes >= 64; dst += 64, s += 64, bytes -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
        _mm_stream_si128((__m128i *)(void *)dst, a);
        _mm_stream_si128((__m128i *)(void *)(dst + 16), b);
        _mm_stream_si128((__m128i *)(void *)(dst + 32), c);
        _mm_stream_si128((__m128i *)(void *)(dst + 48), d);
    }
    for (; bytes >= 8; dst += 8, s += 8, bytes -= 8)
        stream_word(dst, s);
}

/* The payload with streaming stores (stream_bulk), the tail zero-padded:
 * records are padded to 8. */
static inline void stream_payload(uint8_t *dst, const uint8_t *s, uint32_t len)
{
    uint32_t words = len / 8, rem = len % 8;

    stream_bulk(dst, s, 8 * (uint64_t)words);
    if (rem) {
        long long v = 0;
        memcpy(&v, s + 8 * words, rem);
        _mm_stream_si64((long long *)(void *)(dst + 8 * words), v);
    }
}

/* A small payload (is_small: 8 to 64 bytes) with streaming stores and no
 * loop: its whole words by a jump into a run of word stores (one test, then
 * a load and a store a word), and a tail of len % 8 bytes as one word taken
 * from the payload's last eight bytes, shifted down (little-endian x86-64) so
 * that the pad above it reads zero.  Reads no byte outside [s, s + len). */
static inline __attribute__((always_inline)) void stream_small(uint8_t *dst, const uint8_t *s,
                                                               uint32_t len)
{
    uint32_t rem = len % 8;

    if (rem) {
        unsigned long long v;
        memcpy(&v, s + len - 8, 8);
        _mm_stream_si64((long long *)(void *)(dst + len - rem),
                        (long long)(v >> (8 * (8 - rem))));
    }
    switch (len / 8) {
    case 8: stream_word(dst + 56, s + 56); /* fall through */
    case 7: stream_word(dst + 48, s + 48); /* fall through */
    case 6: stream_word(dst + 40, s + 40); /* fall through */
    case 5: stream_word(dst + 32, s + 32); /* fall through */
    case 4: stream_word(dst + 24, s + 24); /* fall through */
    case 3: stream_word(dst + 16, s + 16); /* fall through */
    case 2: stream_word(dst + 8, s + 8);   /* fall through */
    default: stream_word(dst, s);          /* len >= 8 */
    }
}

/* A streamed header: for a non-scanning reader only, which looks only below
 * pub_pos (fence_streamed).  The caller sets w->nt_pending. */
static inline void stream_header(uint8_t *rec, uint32_t len)
{
    _mm_stream_si64((long long *)(void *)rec, (long long)(PYQ_HDR_COMMIT | len));
}

static inline void stream_header_how(uint8_t *rec, uint32_t len, unsigned how)
{
    _mm_stream_si64((long long *)(void *)rec,
                    (long long)(((how & REC_LARGE) ? PYQ_HDR_LARGE : PYQ_HDR_COMMIT) | len));
}

#endif

/* A record of len bytes was just written at offset at (q->batch_ok), with n
 * payloads, the writer's position now pos: it starts the open run, which the
 * next writes of the same length extend in place (queue_pvt.h, Runs).  The
 * position and the run's count go in one store of their word, last, so that
 * the next member's 8-byte load of it is forwarded from that one store (from
 * two 4-byte stores it could not be, and waited for both to reach the cache),
 * and a writer killed before it left neither (shared_owner.c).  Zero-length
 * messages never run: nothing would bound the count of a run that takes no
 * room. */
static inline void run_open(struct pyq_queue *q, uint32_t at, uint32_t len, uint32_t pos,
                            uint64_t n)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t step = (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
    uint64_t cap = at + PYQ_RECORD_HEADER + (uint64_t)PYQ_RUN_MAX * step;

    run_close(q); /* the run before it gets its count: run_n is 0 now */
    if (PYQ_UNLIKELY(len == 0)) {
        pyq__pos_run_store(&w->pos_run, pos);
        return;
    }
    w->run_hdr = at;
    run_begin(w, len);
    w->run_step = step;
    w->run_limit = cap < q->cfg.block_size ? (uint32_t)cap : q->cfg.block_size;
    w->run_len = len;
    w->run_key = PYQ__RUN_KEY(is_small(len) ? len : PYQ_NO_RUN); /* streamed: the gate says */
    /* The first member counted already (in ws), the rest when the run ends. */
    pyq__pos_run_store(&w->pos_run, n << 32 | pos);
}


/* memcpy for the small messages of the hot path: fixed-size overlapping moves
 * the compiler inlines (pyq_copy_small, the inline header's), instead of a
 * call for every 32-byte message.  Other lengths call memcpy -- only without
 * REC_SMALL, so that the call (and the registers it makes the caller save)
 * stays out of pyq_writer_write(). */
static inline __attribute__((always_inline)) void copy_small(uint8_t *d, const void *src,
                                                             uint32_t len, unsigned how)
{
    if (how & REC_SMALL)
        pyq_copy_small(d, src, len);
    else
        memcpy(d, src, len);
}

/* A run's payloads back to back: bytes (a multiple of 8, at most a block)
 * from s to d, cached stores; returns ret, so that a caller with nothing left
 * to do after the copy makes it a tail call and saves no register for it.
 * With AVX (x86-64, checked at run time: SSE2 alone is the baseline), 32-byte
 * moves, sixteen to a loop step, in a function of its own compiled for AVX:
 * fewer instructions than libc's memcpy and its dispatch for a run's sizes;
 * else memcpy. */
#if defined(__x86_64__) && defined(__GNUC__)
#define PYQ_HAVE_AVX_COPY 1
PYQ_PRIVATE __attribute__((target("avx"))) int64_t pyq_w_copy_run_avx(uint8_t *d, const uint8_t *s,
                                                                     uint64_t bytes, int64_t ret);
#else
#define PYQ_HAVE_AVX_COPY 0
#endif

static inline __attribute__((always_inline)) int64_t copy_run(uint8_t *d, const uint8_t *s,
                                                              uint64_t bytes, int64_t ret)
{
#if PYQ_HAVE_AVX_COPY
    if (PYQ_LIKELY(__builtin_cpu_supports("avx")))
        return pyq_w_copy_run_avx(d, s, bytes, ret);
#endif
    memcpy(d, s, bytes);
    return ret;
}

/* Append k messages of len bytes from `from` (len apart) to the open run, at
 * dst (its next payload, step apart: len padded to 8), all in the current
 * block.  Back to back when len is a multiple of 8: one copy for the lot.  The
 * stream mode and the touch are tested once: the stores through dst may alias
 * *q, so the compiler would reload them per message otherwise.  how: REC_SMALL
 * (is_small(len)) or 0. */
static inline __attribute__((always_inline)) void put_members(struct pyq_queue *q, uint8_t *dst,
                                                              const uint8_t *from, uint64_t k,
                                                              uint32_t len, uint32_t step,
                                                              unsigned how)
{
#if PYQ_HAVE_NT
    if (PYQ_UNLIKELY(q->w.nt)) {
        if (len == step) /* back to back: one stream (k * len <= block_size) */
            stream_bulk(dst, from, k * len);
        else
            for (uint64_t j = 0; j < k; j++)
                stream_payload(dst + j * step, from + j * len, len);
        q->w.nt_pending = 1;
        return;
    }
#endif
    if (len == step && k > 1)
        copy_run(dst, from, k * len, 0);
    else
        for (uint64_t j = 0; j < k; j++)
            copy_small(dst + j * step, from + j * len, len, how);
    if (q->cfg.touch_after_write) /* touch_record(): len > 0 in a run */
        for (uint64_t j = 0; j < k; j++)
            (void)*(const volatile uint8_t *)(dst + j * step);
}

/* Runs only (q->batch_ok, no claim, not closed): a current block with room
 * for a record of one member of stride step, sealing the current one and
 * taking the next when it has none -- what claim() does there. */
static inline int run_room(struct pyq_queue *q, uint32_t step, int64_t timeout_ns)
{
    struct pyq_writer_state *w = &q->w;

    if (PYQ_LIKELY(w->blk && q->cfg.block_size - w->pos >= PYQ_RECORD_HEADER + step))
        return 0;
    if (w->blk)
        pyq_w_seal(q, PYQ_HDR_PAD);
    return pyq_w_take_block(q, timeout_ns);
}

/* Runs only, after run_room(): k >= 1 messages of len bytes from `from` (len
 * apart) as one new run at w->pos, k members of stride step fitting in the
 * block and k <= PYQ_RUN_MAX: the header (COMMIT | len, a run of one until
 * the run ends, queue_pvt.h, Runs) and one copy of the payloads -- the record
 * and the k - 1 extensions that k writes would make, counted as they count
 * (the first now, the rest when the run ends).  how: REC_SMALL or 0. */
static inline __attribute__((always_inline)) void run_start(struct pyq_queue *q,
                                                            const uint8_t *from, uint64_t k,
                                                            uint32_t len, uint32_t step,
                                                            unsigned how)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t at = w->pos;
    uint8_t *rec = w->blk + at;

    put_members(q, rec + PYQ_RECORD_HEADER, from, k, len, step, how);
#if PYQ_HAVE_NT
    if (w->nt) {
        stream_header(rec, len);
        w->nt_pending = 1;
    } else
#endif
        commit_header(rec, len);
    run_open(q, at, len, at + PYQ_RECORD_HEADER + (uint32_t)(k * step), k);
    pyq_count(&q->ws.messages, 1);
    pyq_count(&q->ws.bytes, len);
    if (w->pos == q->cfg.block_size)
        pyq_w_seal_early(q); /* exactly full (no scanning reader) */
}

#endif
