/* pattern.c - verifiable message content (see pyq_pattern.h).
 *
 * Byte i of message seq (i >= 8 when len >= 8) is (base + 131 i) mod 256 with
 * base = (seq * 0x9E3779B97F4A7C15 >> 56) + (seq >> 8).  The content is made
 * and checked eight bytes at a time, eight byte lanes of one 64-bit word added
 * without carries between them; made one byte at a time it was ~10 ns of a
 * 32-byte message, 90 % of the burst study's send (docs/BENCHMARKS.md, "The
 * send was the message generator").  The bytes are the same either way. */
#include <string.h>

#include "common/pyq_pattern.h"
#include "pyqueue.h"

static inline uint8_t pattern_base(uint64_t seq)
{
    return (uint8_t)((seq * 0x9E3779B97F4A7C15ull >> 56) + (seq >> 8));
}

static inline uint8_t pattern_byte(uint8_t base, uint32_t i)
{
    return (uint8_t)(base + i * 131u);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PATTERN_WORDS 1
/* Word q (bytes 8q .. 8q+7) of the pattern for base 0: lane m (byte m in
 * memory, little-endian) holds 131 (8q + m) mod 256; it repeats every 256 bytes. */
static const uint64_t STEP[32] = {
    0x95128f0c89068300ull, 0xad2aa724a11e9b18ull, 0xc542bf3cb936b330ull,
    0xdd5ad754d14ecb48ull, 0xf572ef6ce966e360ull, 0x0d8a0784017efb78ull,
    0x25a21f9c19961390ull, 0x3dba37b431ae2ba8ull, 0x55d24fcc49c643c0ull,
    0x6dea67e461de5bd8ull, 0x85027ffc79f673f0ull, 0x9d1a9714910e8b08ull,
    0xb532af2ca926a320ull, 0xcd4ac744c13ebb38ull, 0xe562df5cd956d350ull,
    0xfd7af774f16eeb68ull, 0x15920f8c09860380ull, 0x2daa27a4219e1b98ull,
    0x45c23fbc39b633b0ull, 0x5dda57d451ce4bc8ull, 0x75f26fec69e663e0ull,
    0x8d0a870481fe7bf8ull, 0xa5229f1c99169310ull, 0xbd3ab734b12eab28ull,
    0xd552cf4cc946c340ull, 0xed6ae764e15edb58ull, 0x0582ff7cf976f370ull,
    0x1d9a1794118e0b88ull, 0x35b22fac29a623a0ull, 0x4dca47c441be3bb8ull,
    0x65e25fdc59d653d0ull, 0x7dfa77f471ee6be8ull};
#define LOW7 0x7f7f7f7f7f7f7f7full

/* Bytes i .. i+7 (i a multiple of 8): base plus STEP, lane by lane mod 256.
 * lanes is base in every lane. */
static inline uint64_t pattern_word(uint64_t lanes, uint32_t i)
{
    uint64_t s = STEP[(i >> 3) & 31];

    return ((lanes & LOW7) + (s & LOW7)) ^ ((lanes ^ s) & ~LOW7);
}
#endif

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

void pyq_pattern_fill(void *buf, uint32_t len, uint64_t seq)
{
    uint8_t *b = buf, base = pattern_base(seq);
    uint32_t i = 0;

    if (len >= 8) {
        memcpy(b, &seq, 8); /* little-endian on every supported platform */
        i = 8;
    }
#ifdef PATTERN_WORDS
    for (uint64_t lanes = base * 0x0101010101010101ull; i + 8 <= len; i += 8) {
        uint64_t w = pattern_word(lanes, i);
        memcpy(b + i, &w, 8);
    }
#endif
    for (; i < len; i++)
        b[i] = pattern_byte(base, i);
}

int pyq_pattern_check(const void *buf, uint32_t len, uint64_t seq)
{
    const uint8_t *b = buf;
    uint8_t base = pattern_base(seq);
    uint32_t i = 0;

    if (len >= 8) {
        uint64_t got;
        memcpy(&got, b, 8);
        if (got != seq)
            return PYQ_EBADMSG;
        i = 8;
    }
#ifdef PATTERN_WORDS
    for (uint64_t lanes = base * 0x0101010101010101ull; i + 8 <= len; i += 8) {
        uint64_t got;
        memcpy(&got, b + i, 8);
        if (got != pattern_word(lanes, i))
            return PYQ_EBADMSG;
    }
#endif
    for (; i < len; i++)
        if (b[i] != pattern_byte(base, i))
            return PYQ_EBADMSG;
    return 0;
}

uint32_t pyq_pattern_len(uint64_t seq, uint32_t lo, uint32_t hi, uint64_t salt)
{
    if (hi <= lo)
        return lo;
    return lo + (uint32_t)(mix64(seq ^ salt) % ((uint64_t)hi - lo + 1));
}
