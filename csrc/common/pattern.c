/* pattern.c - verifiable message content (see pyq_pattern.h). */
#include <string.h>

#include "common/pyq_pattern.h"
#include "pyqueue.h"

static inline uint8_t pattern_byte(uint64_t seq, uint32_t i)
{
    return (uint8_t)((seq * 0x9E3779B97F4A7C15ull >> 56) + i * 131u + (seq >> 8));
}

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
    uint8_t *b = buf;
    uint32_t i = 0;

    if (len >= 8) {
        memcpy(b, &seq, 8); /* little-endian on every supported platform */
        i = 8;
    }
    for (; i < len; i++)
        b[i] = pattern_byte(seq, i);
}

int pyq_pattern_check(const void *buf, uint32_t len, uint64_t seq)
{
    const uint8_t *b = buf;
    uint32_t i = 0;

    if (len >= 8) {
        uint64_t got;
        memcpy(&got, b, 8);
        if (got != seq)
            return PYQ_EBADMSG;
        i = 8;
    }
    for (; i < len; i++)
        if (b[i] != pattern_byte(seq, i))
            return PYQ_EBADMSG;
    return 0;
}

uint32_t pyq_pattern_len(uint64_t seq, uint32_t lo, uint32_t hi, uint64_t salt)
{
    if (hi <= lo)
        return lo;
    return lo + (uint32_t)(mix64(seq ^ salt) % ((uint64_t)hi - lo + 1));
}
