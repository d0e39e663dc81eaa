/*
 * writer.c - the writer's records: claim / commit / write / write_batch /
 * flush (DESIGN §3.3, §3.5, §3.7).  Writer thread only.  Taking and sealing
 * blocks, and the full-queue wait, are writer_block.c's.
 *
 * Hot path (block has room): bounds checks, the payload copy, one header store,
 * two single-writer counter bumps -- or, extending a run, the copy and two
 * stores (its members are counted when it ends).  Every special case is a bit
 * of one gate word (pyqueue_inline.h, PYQ_GATE_*), tested once.  No malloc,
 * lock or system call; the only system call is the sched_yield() of the
 * full-queue wait.
 */
#include <string.h>

#include "core/writer_pvt.h"

/* Scanning reader, before the commit of a record ending at next: its next
 * header must read zero.  It already does for a record that ends inside the
 * zeroed span -- every small message -- so nothing is stored ahead of its
 * commit: a store into the line after the record, which the reader's next-line
 * prefetch may hold Shared, would put an invalidation in front of the commit
 * (round trip 1.37x -> 1.80x the same-line floor in a minimal ring, 'near'). */
static inline void before_commit(struct pyq_writer_state *w, uint32_t next, uint32_t limit)
{
    if (next < limit && next + PYQ_RECORD_HEADER > w->zeroed)
        pyq_store_relaxed(pyq_hdr(w->blk, next), 0);
}

/* After it: zero ahead to the end of the line after next's (writer_pvt.h).
 * These stores also leave that line Modified here before the reader first
 * reads it, so a later commit there only has to invalidate the reader's copy
 * instead of waiting for a full transfer (1.37x -> 1.15x in the same ring). */
static inline void after_commit(struct pyq_queue *q, uint32_t next, uint32_t limit)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t to = (next & ~(uint32_t)(PYQ_CACHELINE - 1)) + PYQ_ZERO_AHEAD;

    if (to > limit)
        to = limit;
    if (to > w->zeroed) {
        zero_ahead(q, w->blk, next > w->zeroed ? next : w->zeroed, to);
        w->zeroed = to;
    }
}

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
};

/* Lengths copy_small() moves without a call. */
#define PYQ_SMALL_MIN 8u
#define PYQ_SMALL_MAX 64u
static inline int is_small(uint32_t len)
{
    return len - PYQ_SMALL_MIN <= PYQ_SMALL_MAX - PYQ_SMALL_MIN;
}

static inline int claim(struct pyq_queue *q, uint32_t len, int64_t timeout_ns, uint8_t **payload)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t rec;

    if (PYQ_UNLIKELY(w->claim_len != PYQ_NO_CLAIM))
        return PYQ_EBUSY;
    if (PYQ_UNLIKELY(len > q->max_message))
        return PYQ_ETOOBIG;
    if (PYQ_UNLIKELY(atomic_load_explicit(&q->closed, memory_order_relaxed)))
        return PYQ_ECLOSED;
    rec = pyq_record_size(len, q->rec_mask);
    if (PYQ_UNLIKELY(!w->blk || w->pos + rec > q->cfg.block_size)) {
        int rc = 0;
        if (!w->blk || !q->scan || !pyq_w_take_linked(q)) {
            if (w->blk)
                pyq_w_seal(q, PYQ_HDR_PAD);
            rc = pyq_w_take_block(q, timeout_ns);
        }
        if (rc != 0)
            return rc;
    }
    w->claim_len = len;
    w->fast_limit = 0;
    w->run_len = w->run_fast_len = PYQ_NO_RUN; /* a claim is a record of its own */
    *payload = w->blk + w->pos + PYQ_RECORD_HEADER;
    return 0;
}

/* DESIGN §3.3 after a record ending at offset next of the current block: each
 * publishes it now, bytes:N once N bytes are unpublished (max: seal or flush). */
static inline void publish_policy(struct pyq_queue *q, uint32_t next, unsigned how)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t at = (w->seq - 1) * (uint64_t)q->cfg.block_size + next;

    if (!(how & REC_LOCAL) && q->cfg.publish == PYQ_PUBLISH_MAX)
        pyq_shm_wake_reader(q); /* shared scan_current: the commit is the hand-over */
    else if (q->cfg.publish == PYQ_PUBLISH_EACH || at - w->last_pub >= q->cfg.publish_bytes) {
        if (how & REC_LOCAL)
            publish_local(q, at);
        else
            publish(q, at);
    }
}

/* W3: the record's payload is complete; pairs with A3 in reader.c (q->scan).
 * Without scanning W2 is the edge, and this costs a plain store on x86. */
static inline void commit_header(uint8_t *rec, uint32_t len)
{
    pyq_store_release(pyq_hdr(rec, 0), PYQ_HDR_COMMIT | len);
}

/* touch_after_write: a cache touch of the message just written (not a sync
 * device).  Never for a streamed block: it would fetch back the line just
 * streamed out. */
static inline void touch_record(const uint8_t *rec, uint32_t len)
{
    (void)*(const volatile uint8_t *)(rec + (len ? PYQ_RECORD_HEADER : 0));
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
 * first word alone when dst is not), four to a step, then the last words: a
 * 1 KiB run streams in ~180 instructions, where 8-byte steps took ~390. */
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
 * two instructions a word), and a tail of len % 8 bytes as one word taken
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

/* Out of line: the streamed case stays out of write_fast()'s register budget. */
static __attribute__((noinline)) void stream_payload_call(uint8_t *dst, const void *src,
                                                          uint32_t len)
{
    stream_payload(dst, src, len);
}
#endif

/* A record of len bytes was just written at offset at (q->batch_ok): it starts
 * the open run, which the next writes of the same length extend in place
 * (queue_pvt.h, Runs).  Zero-length messages never run: nothing would bound
 * the count of a run that takes no room. */
static inline void run_open(struct pyq_queue *q, uint32_t at, uint32_t len)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t step = (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
    uint64_t cap = at + PYQ_RECORD_HEADER + (uint64_t)PYQ_RUN_MAX * step;

    run_close(q); /* the run before it gets its count */
    if (PYQ_UNLIKELY(len == 0))
        return;
    w->run_hdr = at;
    run_set(w, (uint64_t)len << 32 | 1); /* this record, counted already */
    w->run_step = step;
    w->run_limit = cap < q->cfg.block_size ? (uint32_t)cap : q->cfg.block_size;
    w->run_len = len;
    w->run_fast_len = is_small(len) ? len : PYQ_NO_RUN; /* streamed: the gate says */
}

/* The one ending of a record, for commit() and write_fast(): the record at rec
 * (size bytes, ending at offset next <= limit) has its payload in place; store
 * its header, then the writer's bookkeeping.  nt: the block is streamed (w->nt
 * as the caller read it; 0 when REC_MAY_NT is not in how). */
static inline __attribute__((always_inline)) void finish_record(struct pyq_queue *q, uint8_t *rec,
                                                                uint32_t next, uint32_t size,
                                                                uint32_t len, uint32_t limit,
                                                                unsigned how, int nt)
{
    struct pyq_writer_state *w = &q->w;

    if (how & REC_SCAN) {
        before_commit(w, next, limit); /* W3 publishes the zero with the record */
        if (how & REC_MAY_NT)
            fence_streamed(w); /* the payload may be streamed; W3 is the edge */
    }
#if PYQ_HAVE_NT
    if (!(how & REC_SCAN) && nt) {
        stream_header(rec, len);
        w->nt_pending = 1;
    } else
#endif
    {
        commit_header(rec, len);
        if (!(how & REC_PLAIN) && !nt && PYQ_UNLIKELY(q->cfg.touch_after_write))
            touch_record(rec, len);
    }
    if (how & REC_SCAN)
        after_commit(q, next, limit);
    else if ((how & REC_PLAIN) || q->batch_ok) /* a zero gate: publish max, no scan */
        run_open(q, next - size, len);
    w->pos = next;
    pyq_counter_add(&q->ws.messages, 1);
    pyq_counter_add(&q->ws.bytes, len);
    if (!(how & REC_PLAIN) && q->commit_hook)
        publish_policy(q, next, how);
    if (PYQ_UNLIKELY(limit - next < size))
        pyq_w_seal_early(q); /* no room for another record of this size */
}

static inline void commit(struct pyq_queue *q)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t len = w->claim_len, pos = w->pos;
    uint32_t size = (uint32_t)pyq_record_size(len, q->rec_mask);

    w->claim_len = PYQ_NO_CLAIM;
    w->fast_limit = fast_limit(q);
    finish_record(q, w->blk + pos, pos + size, size, len, q->cfg.block_size,
                  REC_MAY_NT | (q->scan ? REC_SCAN : 0), w->nt);
}

int pyq_writer_claim(pyq_queue_t *q, uint32_t len, int64_t timeout_ns, void **ptr)
{
    uint8_t *p;
    int rc = claim(q, len, timeout_ns, &p);
    if (rc == 0)
        *ptr = p;
    return rc;
}

int pyq_writer_commit(pyq_queue_t *q)
{
    if (q->w.claim_len == PYQ_NO_CLAIM)   /* detach dropped a claim left open */
        return pyq_load_relaxed(&q->detached) ? PYQ_ECLOSED : PYQ_ENOCLAIM;
    commit(q);
    return 0;
}

int pyq_writer_abort(pyq_queue_t *q)
{
    if (q->w.claim_len == PYQ_NO_CLAIM)
        return PYQ_ENOCLAIM;
    /* Nothing was published: the header at pos is still zero (or stale and
     * below pub_pos never), so dropping the claim is enough -- except that the
     * claim's payload may have overwritten words of the zeroed span, which a
     * scanning reader's next headers rely on (writer_pvt.h, zero_ahead). */
    if (q->scan) {
        uint64_t end = (uint64_t)q->w.pos + PYQ_RECORD_HEADER + q->w.claim_len;
        zero_ahead(q, q->w.blk, q->w.pos + PYQ_RECORD_HEADER,
                   end < q->w.zeroed ? (uint32_t)end : q->w.zeroed);
    }
    q->w.claim_len = PYQ_NO_CLAIM;
    q->w.fast_limit = fast_limit(q);
    return 0;
}

static inline void copy_payload(struct pyq_queue *q, uint8_t *dst, const void *src, uint32_t len)
{
#if PYQ_HAVE_NT
    if (q->w.nt) {
        stream_payload(dst, src, len);
        q->w.nt_pending = 1;
        return;
    }
#endif
    memcpy(dst, src, len);
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
 * moves, sixteen to a loop step, in a function of its own compiled for AVX: a
 * 1 KiB batch of 32-byte messages moves in ~85 instructions, where libc's
 * memcpy took ~124 and the call's dispatch (DESIGN §3.5); else memcpy. */
#if defined(__x86_64__) && defined(__GNUC__)
#define PYQ_HAVE_AVX_COPY 1
#define PYQ_LOAD32(k) __m256i v##k = _mm256_loadu_si256((const __m256i *)(const void *)(s + o + 32 * k))
#define PYQ_STORE32(k) _mm256_storeu_si256((__m256i *)(void *)(d + o + 32 * k), v##k)
static __attribute__((target("avx"), noinline)) int64_t copy_run_avx(uint8_t *d, const uint8_t *s,
                                                                    uint64_t bytes, int64_t ret)
{
    uint64_t o = 0, big = bytes & ~(uint64_t)511;

    for (; o < big; o += 512) { /* the 16 ymm registers, one loop step a half KiB */
        PYQ_LOAD32(0); PYQ_LOAD32(1); PYQ_LOAD32(2); PYQ_LOAD32(3);
        PYQ_LOAD32(4); PYQ_LOAD32(5); PYQ_LOAD32(6); PYQ_LOAD32(7);
        PYQ_LOAD32(8); PYQ_LOAD32(9); PYQ_LOAD32(10); PYQ_LOAD32(11);
        PYQ_LOAD32(12); PYQ_LOAD32(13); PYQ_LOAD32(14); PYQ_LOAD32(15);
        PYQ_STORE32(0); PYQ_STORE32(1); PYQ_STORE32(2); PYQ_STORE32(3);
        PYQ_STORE32(4); PYQ_STORE32(5); PYQ_STORE32(6); PYQ_STORE32(7);
        PYQ_STORE32(8); PYQ_STORE32(9); PYQ_STORE32(10); PYQ_STORE32(11);
        PYQ_STORE32(12); PYQ_STORE32(13); PYQ_STORE32(14); PYQ_STORE32(15);
    }
    /* The rest, under 512 bytes, by halves: a test and the moves each. */
    if (bytes & 256) {
        PYQ_LOAD32(0); PYQ_LOAD32(1); PYQ_LOAD32(2); PYQ_LOAD32(3);
        PYQ_LOAD32(4); PYQ_LOAD32(5); PYQ_LOAD32(6); PYQ_LOAD32(7);
        PYQ_STORE32(0); PYQ_STORE32(1); PYQ_STORE32(2); PYQ_STORE32(3);
        PYQ_STORE32(4); PYQ_STORE32(5); PYQ_STORE32(6); PYQ_STORE32(7);
        o += 256;
    }
    if (bytes & 128) {
        PYQ_LOAD32(0); PYQ_LOAD32(1); PYQ_LOAD32(2); PYQ_LOAD32(3);
        PYQ_STORE32(0); PYQ_STORE32(1); PYQ_STORE32(2); PYQ_STORE32(3);
        o += 128;
    }
    if (bytes & 64) {
        PYQ_LOAD32(0); PYQ_LOAD32(1);
        PYQ_STORE32(0); PYQ_STORE32(1);
        o += 64;
    }
    if (bytes & 32) {
        PYQ_LOAD32(0);
        PYQ_STORE32(0);
        o += 32;
    }
    for (; o < bytes; o += 8) /* bytes is a multiple of 8 */
        memcpy(d + o, s + o, 8);
    return ret;
}
#undef PYQ_LOAD32
#undef PYQ_STORE32
#else
#define PYQ_HAVE_AVX_COPY 0
#endif

static inline __attribute__((always_inline)) int64_t copy_run(uint8_t *d, const uint8_t *s,
                                                              uint64_t bytes, int64_t ret)
{
#if PYQ_HAVE_AVX_COPY
    if (PYQ_LIKELY(__builtin_cpu_supports("avx")))
        return copy_run_avx(d, s, bytes, ret);
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
    run_open(q, at, len);
    w->pos = at + PYQ_RECORD_HEADER + (uint32_t)(k * step);
    run_add(w, k - 1); /* counted when the run ends */
    pyq_counter_add(&q->ws.messages, 1);
    pyq_counter_add(&q->ws.bytes, len);
    if (w->pos == q->cfg.block_size)
        pyq_w_seal_early(q); /* exactly full (no scanning reader) */
}

/* One more message of the open run's length (len == w->run_len): its payload
 * at pos, no header (run_close() stores the count), not counted (run_close()
 * counts it).  Returns 1 when written, 0 when the run is at its limit or the
 * queue is closed (the caller's general path decides).  how: REC_SMALL for a
 * small len (run_fast_len), which also needs none of the gate's PYQ_GATE_RUN
 * bits (a cached block, no touch: the one test) and room past this member
 * (pyqueue_inline.h's pyq_writer_try_write_inline() is this case); REC_NT in
 * a streamed block; else REC_MAY_NT. */
static inline __attribute__((always_inline)) int run_extend(struct pyq_queue *q, const void *data,
                                                            uint32_t len, unsigned how)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t pos = w->pos, next = pos + w->run_step;
    uint8_t *dst;

    if (how & REC_SMALL) {
        /* Strictly below the limit: this copy never fills the block, so it
         * never tests for the seal (the next path does: write_run_other). */
        if (PYQ_UNLIKELY(next >= w->run_limit))
            return 0;
        /* One test of the word in memory (pyq__any_bits); its value is loaded
         * only on the rare path that needs it. */
        if (PYQ_UNLIKELY(pyq__any_bits((const uint32_t *)(const void *)&w->gate, PYQ_GATE_RUN))) {
            uint32_t gate = pyq_load_relaxed(&w->gate) & PYQ_GATE_RUN;
#if PYQ_HAVE_NT
            /* A streamed block, nothing else set: the small copy streamed,
             * here too (under backlog most members go this way). */
            if (gate != PYQ_GATE_NT || !is_small(len)) /* UINT32_MAX: no run */
                return 0;
            stream_small(w->blk + pos, data, len);
            w->nt_pending = 1;
            w->pos = next;
            run_add(w, 1);
            return 1;
#else
            return 0;
#endif
        }
    } else if (PYQ_UNLIKELY(next > w->run_limit ||
                            atomic_load_explicit(&q->closed, memory_order_relaxed))) {
        return 0;
    }
    dst = w->blk + pos;
#if PYQ_HAVE_NT
    if ((how & REC_NT) || ((how & REC_MAY_NT) && w->nt)) {
        stream_payload(dst, data, len);
        w->nt_pending = 1;
    } else
#endif
    if (how & REC_MAY_NT) {
        put_members(q, dst, data, 1, len, w->run_step, 0);
    } else if (PYQ_UNLIKELY(!pyq__copy_member(dst, data, len))) {
        return 0; /* len is run_fast_len's "no run" (UINT32_MAX), not a member */
    }
    w->pos = next;
    run_add(w, 1);
    if (!(how & REC_SMALL) && PYQ_UNLIKELY(next == q->cfg.block_size))
        pyq_w_seal_early(q); /* exactly full: sealed now (no scanning reader) */
    return 1;
}

/* The common case in one place: room in the current block, no claim -- claim
 * and commit() in one, for every publish policy.  how: REC_* constants, so
 * that pyq_writer_write() inlines a copy that calls nothing but
 * pyq_w_seal_early() and keeps the callee-saved registers untouched.
 * Returns 1 when the message was written. */
static inline __attribute__((always_inline)) int write_fast(struct pyq_queue *q, const void *data,
                                                            uint32_t len, unsigned how)
{
    struct pyq_writer_state *w = &q->w;
    uint32_t pos = w->pos;
    uint64_t size = pyq_record_size(len, q->rec_mask), next = pos + size;
    uint8_t *rec;
    int nt;

    if (PYQ_UNLIKELY(next > w->fast_limit ||
                     (!(how & REC_PLAIN) &&
                      atomic_load_explicit(&q->closed, memory_order_relaxed))))
        return 0;
    rec = w->blk + pos;
    nt = (how & REC_MAY_NT) && PYQ_UNLIKELY(w->nt);
#if PYQ_HAVE_NT
    if (nt)
        stream_payload_call(rec + PYQ_RECORD_HEADER, data, len);
    else
#endif
        copy_small(rec + PYQ_RECORD_HEADER, data, len, how);
    finish_record(q, rec, (uint32_t)next, (uint32_t)size, len, w->fast_limit, how, nt);
    return 1;
}

/* A record through claim() and commit(): a block change, a full queue, a
 * closed queue.  Out of line, so that the paths before it stay small. */
static __attribute__((noinline)) int write_claimed(struct pyq_queue *q, const void *data,
                                                   uint32_t len, int64_t timeout_ns)
{
    uint8_t *p;
    int rc = claim(q, len, timeout_ns, &p);

    if (PYQ_UNLIKELY(rc != 0))
        return rc;
    copy_payload(q, p, data, len);
    commit(q);
    return 0;
}

/* Other lengths, streamed blocks.  Under q->scan a streamed block has no
 * fast_limit, so that copy need not test w->nt. */
static __attribute__((noinline)) int write_slow(struct pyq_queue *q, const void *data,
                                                uint32_t len, int64_t timeout_ns)
{
    /* run_len is PYQ_NO_RUN (UINT32_MAX, a len too) when no run is open. */
    if (len == q->w.run_len && len <= q->max_message && run_extend(q, data, len, REC_MAY_NT))
        return 0;
    if (q->scan ? write_fast(q, data, len, REC_SCAN) : write_fast(q, data, len, REC_MAY_NT))
        return 0;
    return write_claimed(q, data, len, timeout_ns);
}

/* The small-message fast path for a scanning reader (publish each or
 * scan_current), apart: its header zeroing would otherwise cost every other
 * configuration's fast path two callee-saved registers.  Reached by a tail
 * call; when it fails, so would write_slow()'s. */
static __attribute__((noinline)) int write_scan(struct pyq_queue *q, const void *data,
                                                uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(write_fast(q, data, len, REC_SMALL | REC_SCAN | REC_LOCAL)))
        return 0;
    return write_claimed(q, data, len, timeout_ns);
}

/* write_scan() for a shared queue: its commits may wake a sleeping reader. */
static __attribute__((noinline)) int write_scan_shared(struct pyq_queue *q, const void *data,
                                                       uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(write_fast(q, data, len, REC_SMALL | REC_SCAN)))
        return 0;
    return write_claimed(q, data, len, timeout_ns);
}

/* The plain small record: the gate word was zero, the one test for every
 * special case. */
static __attribute__((noinline)) int write_plain(struct pyq_queue *q, const void *data,
                                                 uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(write_fast(q, data, len, REC_SMALL | REC_LOCAL | REC_PLAIN)))
        return 0;
    return write_claimed(q, data, len, timeout_ns); /* write_slow's would fail alike */
}

/* Touch, bytes:N -- the small record with its tests -- and the rest. */
static __attribute__((noinline)) int write_general(struct pyq_queue *q, const void *data,
                                                   uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(is_small(len) && !q->w.special)) {
        if (PYQ_LIKELY(write_fast(q, data, len, REC_SMALL | REC_LOCAL)))
            return 0;
        return write_claimed(q, data, len, timeout_ns); /* write_slow's would fail alike */
    }
    return write_slow(q, data, len, timeout_ns);
}

/* Everything but the extension of a run, by tail calls only: a body shared
 * with the paths would save their callee-saved registers before choosing
 * (under publish each, ~14 instructions a message before write_scan). */
static __attribute__((noinline)) int write_record(struct pyq_queue *q, const void *data,
                                                  uint32_t len, int64_t timeout_ns)
{
    uint32_t gate = pyq_load_relaxed(&q->w.gate);

    if (PYQ_LIKELY(is_small(len) && gate == 0))
        return write_plain(q, data, len, timeout_ns);
    if ((gate & PYQ_GATE_SCAN) && is_small(len) && !q->w.nt)
        return (gate & PYQ_GATE_XPROC) ? write_scan_shared(q, data, len, timeout_ns)
                                       : write_scan(q, data, len, timeout_ns);
    return write_general(q, data, len, timeout_ns);
}

/* The member that does not fit in the open run (its block's end or its cap;
 * a small len, q->batch_ok, no claim, not closed): it starts the next run, in
 * the next block when this one has no room -- the record write_record()
 * would make, without its general path. */
static __attribute__((noinline)) int write_run_next(struct pyq_queue *q, const void *data,
                                                    uint32_t len, int64_t timeout_ns)
{
    uint32_t step = (len + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
    int rc = run_room(q, step, timeout_ns);

    if (PYQ_UNLIKELY(rc != 0))
        return rc;
    run_start(q, data, 1, len, step, REC_SMALL);
    return 0;
}

/* The next message of the open run that pyq_writer_write()'s copy turned
 * away: in a streamed (spill) block -- under backlog most messages go this
 * way --, with touch_after_write, the member that fills the block or reaches
 * the run's cap.  Apart from write_record(), whose other paths make it save
 * five registers first. */
static __attribute__((noinline)) int write_run_other(struct pyq_queue *q, const void *data,
                                                     uint32_t len, int64_t timeout_ns)
{
    if (PYQ_UNLIKELY(!is_small(len))) /* UINT32_MAX, run_fast_len's "no run" */
        return write_record(q, data, len, timeout_ns);
    if (PYQ_LIKELY(q->w.nt)) {
        if (PYQ_LIKELY(run_extend(q, data, len, REC_NT)))
            return 0;
    } else if (run_extend(q, data, len, REC_MAY_NT)) {
        return 0;
    }
    if (PYQ_LIKELY(!atomic_load_explicit(&q->closed, memory_order_relaxed)))
        return write_run_next(q, data, len, timeout_ns);
    return write_record(q, data, len, timeout_ns);
}

/* The next message of a run first, on its own: write_record()'s paths need
 * callee-saved registers, and sharing a body with them would make this one
 * save and restore them too.  Inlined into both exported writes, so that
 * pyq_writer_try_write() is not a jump to pyq_writer_write(). */
static inline __attribute__((always_inline)) int write_one(struct pyq_queue *q, const void *data,
                                                           uint32_t len, int64_t timeout_ns)
{
    if (PYQ_LIKELY(len == q->w.run_fast_len)) {
        if (PYQ_LIKELY(run_extend(q, data, len, REC_SMALL)))
            return 0;
        return write_run_other(q, data, len, timeout_ns);
    }
    return write_record(q, data, len, timeout_ns);
}

int pyq_writer_write(pyq_queue_t *q, const void *data, uint32_t len, int64_t timeout_ns)
{
    return write_one(q, data, len, timeout_ns);
}

int pyq_writer_try_write(pyq_queue_t *q, const void *data, uint32_t len)
{
    return write_one(q, data, len, 0);
}

/* pyq_writer_write_batch() in general: the open run takes what fits, block by
 * block; what does not fit, or cannot run, goes message by message. */
static __attribute__((noinline)) int64_t write_batch_loop(struct pyq_queue *q, const void *data,
                                                          uint64_t n, uint32_t msg_size,
                                                          int64_t timeout_ns, int *err)
{
    struct pyq_writer_state *w = &q->w;
    const uint8_t *src = data;
    const int small = is_small(msg_size);
    uint64_t i;

    *err = 0;
    if (msg_size > q->max_message) {
        *err = PYQ_ETOOBIG;
        return 0;
    }
    for (i = 0; i < n;) {
        /* The open run takes as many as fit (counted when it ends). */
        if (msg_size == w->run_len && !atomic_load_explicit(&q->closed, memory_order_relaxed)) {
            uint32_t step = w->run_step;
            uint64_t room = (w->run_limit - w->pos) / step;
            if (room) {
                uint64_t k = room < n - i ? room : n - i;
                uint8_t *dst = w->blk + w->pos;
                const uint8_t *from = src + i * msg_size;
                if (small) /* one loop per copy, not a test per message */
                    put_members(q, dst, from, k, msg_size, step, REC_SMALL);
                else
                    put_members(q, dst, from, k, msg_size, step, 0);
                w->pos += (uint32_t)(k * step);
                run_add(w, k); /* counted when the run ends */
                i += k;
                if (w->pos == q->cfg.block_size)
                    pyq_w_seal_early(q); /* exactly full (no scanning reader) */
                continue;
            }
        }
        /* No run to extend: the next messages start one, with one header for
         * the lot -- in the next block when this one has no room for a member.
         * The framing and the counts a write and its extensions make. */
        if (q->batch_ok && msg_size && w->claim_len == PYQ_NO_CLAIM &&
            !atomic_load_explicit(&q->closed, memory_order_relaxed)) {
            uint32_t step = (msg_size + PYQ_RECORD_ALIGN - 1) & ~(uint32_t)(PYQ_RECORD_ALIGN - 1);
            uint64_t room, k;
            int rc = run_room(q, step, timeout_ns);
            if (PYQ_UNLIKELY(rc != 0)) {
                *err = rc;
                break;
            }
            room = (q->cfg.block_size - w->pos - PYQ_RECORD_HEADER) / step;
            k = room < n - i ? room : n - i;
            if (k > PYQ_RUN_MAX)
                k = PYQ_RUN_MAX;
            if (small)
                run_start(q, src + i * msg_size, k, msg_size, step, REC_SMALL);
            else
                run_start(q, src + i * msg_size, k, msg_size, step, 0);
            i += k;
            continue;
        }
        /* A record of its own, a full or closed queue, a claim, a
         * configuration without runs. */
        int rc = pyq_writer_write(q, src + i * msg_size, msg_size, timeout_ns);
        if (PYQ_UNLIKELY(rc != 0)) {
            *err = rc;
            break;
        }
        i++;
    }
    return (int64_t)i;
}

/* A batch of n >= 1 messages of msg_size bytes (a multiple of 8, at most
 * max_message) that runs (q->batch_ok) in cached blocks (the gate's
 * PYQ_GATE_RUN bits clear: not streamed, no touch, not closed), no claim: the
 * open run takes what fits, then each next block gets one run of what fits
 * there -- write_batch_loop's framing and counts without its per-step tests of
 * the cases this batch is not (a block change, or the first batch after a
 * publish, every few batches). */
static __attribute__((noinline)) int64_t write_batch_runs(struct pyq_queue *q, const uint8_t *src,
                                                          uint64_t n, uint32_t msg_size,
                                                          int64_t timeout_ns, int *err)
{
    struct pyq_writer_state *w = &q->w;
    uint64_t i = 0;

    if (msg_size == w->run_len) {
        uint64_t k = (w->run_limit - w->pos) / msg_size;
        if (k > n)
            k = n;
        copy_run(w->blk + w->pos, src, k * msg_size, 0);
        w->pos += (uint32_t)(k * msg_size);
        run_add(w, k); /* counted when the run ends */
        i = k;
        if (w->pos == q->cfg.block_size)
            pyq_w_seal_early(q); /* exactly full (no scanning reader) */
    }
    while (i < n) {
        uint64_t k;
        int rc = PYQ_UNLIKELY(atomic_load_explicit(&q->closed, memory_order_relaxed))
                     ? PYQ_ECLOSED /* closed meanwhile: what write() would say */
                     : run_room(q, msg_size, timeout_ns);
        if (PYQ_UNLIKELY(rc != 0)) {
            *err = rc;
            return (int64_t)i;
        }
        k = (q->cfg.block_size - w->pos - PYQ_RECORD_HEADER) / msg_size;
        if (k > n - i)
            k = n - i;
        if (k > PYQ_RUN_MAX)
            k = PYQ_RUN_MAX;
        run_start(q, src + i * msg_size, k, msg_size, msg_size, 0);
        i += k;
    }
    *err = 0;
    return (int64_t)n;
}

/* The common batch first: all n messages extend the open run of their size
 * in a cached block (the gate's PYQ_GATE_RUN bits clear: not streamed, no
 * touch, not closed), back to back (a multiple of 8 bytes), with room past
 * them (so nothing is sealed here, as in run_extend) -- SPEC §3.1's one run:
 * one copy of the lot and one count, no per-message work (DESIGN §3.5). */
int64_t pyq_writer_write_batch(pyq_queue_t *q, const void *data, uint64_t n,
                               uint32_t msg_size, int64_t timeout_ns, int *err)
{
    struct pyq_writer_state *w = &q->w;

    if (PYQ_LIKELY(msg_size == w->run_len && msg_size == w->run_step && n - 1 < PYQ_RUN_MAX &&
                   !(pyq_load_relaxed(&w->gate) & PYQ_GATE_RUN))) {
        uint32_t pos = w->pos;
        uint64_t bytes = n * (uint64_t)msg_size; /* < 2^48: n <= PYQ_RUN_MAX */
        if (PYQ_LIKELY(bytes < w->run_limit - pos)) {
            /* The bookkeeping first, so that the copy is the tail call: only
             * this thread writes below pos until a publish, which comes later. */
            w->pos = pos + (uint32_t)bytes;
            run_add(w, n); /* counted when the run ends */
            *err = 0;
            return copy_run(w->blk + pos, data, bytes, (int64_t)n);
        }
    }
    if (PYQ_LIKELY(q->batch_ok && n && msg_size && !(msg_size % PYQ_RECORD_ALIGN) &&
                   msg_size <= q->max_message && w->claim_len == PYQ_NO_CLAIM &&
                   !(pyq_load_relaxed(&w->gate) & PYQ_GATE_RUN)))
        return write_batch_runs(q, data, n, msg_size, timeout_ns, err);
    return write_batch_loop(q, data, n, msg_size, timeout_ns, err);
}

int pyq_writer_flush(pyq_queue_t *q)
{
    struct pyq_writer_state *w = &q->w;

    if (w->blk)
        publish(q, (w->seq - 1) * (uint64_t)q->cfg.block_size + w->pos);
    return 0;
}

void pyq_writer_detach(pyq_queue_t *q)
{
    /* A claim still open is dropped: committed after the reader was told
     * end-of-stream it would appear past the end (commit then says ECLOSED). */
    if (q->w.claim_len != PYQ_NO_CLAIM)
        pyq_writer_abort(q);
    pyq_q_mark_closed(q);
    pyq_writer_flush(q);
    /* W4: every committed record is published before this; pairs with A5. */
    pyq_store_release(&q->detached, 1);
    if (q->xproc)
        pyq_shm_wake_reader(q); /* a reader asleep on the futex sees the end */
}
