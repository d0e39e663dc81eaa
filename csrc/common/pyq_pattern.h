/*
 * pyq_pattern.h - the verifiable message content shared by every stress test,
 * consumer thread and experiment: message k (k = 0, 1, 2, ...) of length len
 * carries k as its first 8 bytes (little-endian, when len >= 8) and a byte
 * pattern derived from (k, i) everywhere else, so one check proves FIFO order,
 * no loss, no duplication and every byte.
 */
#ifndef PYQ_PATTERN_H
#define PYQ_PATTERN_H

#include <stdint.h>

/* Any thread.  Fill buf[0..len) with the content of message seq. */
void pyq_pattern_fill(void *buf, uint32_t len, uint64_t seq);

/* Any thread.  0 if buf[0..len) is exactly message seq, else PYQ_EBADMSG. */
int pyq_pattern_check(const void *buf, uint32_t len, uint64_t seq);

/* Any thread.  A deterministic length in [lo, hi] for message seq (for random
 * sizes that the reader can predict). */
uint32_t pyq_pattern_len(uint64_t seq, uint32_t lo, uint32_t hi, uint64_t salt);

#endif /* PYQ_PATTERN_H */
