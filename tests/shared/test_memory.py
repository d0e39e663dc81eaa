"""Memory at creation (RELIABILITY.md, "Memory"): a queue costs its control
struct until it is used -- the free rings and the Reader's staging buffer are
touched lazily and the staging buffer goes at close() -- and a configuration
larger than the machine is a MemoryError, not the OOM killer later."""
import pytest

import pyqueue as pq


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_free_rings_and_pool_are_not_touched_at_creation():
    # 2**19 spill blocks: 2 MiB of free ring each (touched by the old code), 2 GiB of pool.
    before = _rss()
    qs = [pq.Queue(block_size=4096, spill_blocks=2**19) for _ in range(8)]
    grown = _rss() - before
    for q in qs:
        q.close()
    assert grown < 4 << 20, "8 idle queues made RSS grow by %d bytes" % grown


def test_the_untouched_free_ring_still_hands_out_every_block():
    with pq.Queue(block_size=64, hot_blocks=3, spill_blocks=5, publish="each") as q:
        for rnd in range(3):   # each block leaves and comes back, three times over
            n = 0
            while q.writer.try_write(b"%07d" % n):
                n += 1
            assert n > 0
            assert b"".join(q.reader.poll()) == b"".join(b"%07d" % i for i in range(n))
        st = q.stats()
        assert st["takes_hot"] > 3 and st["takes_spill"] > 5


def test_the_reader_keeps_no_block_sized_staging_buffer():
    # Messages go straight from the block into their bytes object (DESIGN §5.3):
    # reading a small message of a 1 MiB-block queue allocates the message only.
    import tracemalloc
    with pq.Queue(block_size=1 << 20, hot_blocks=1, spill_blocks=1, publish="each") as q:
        q.writer.write(b"x")
        tracemalloc.start()
        try:
            assert q.reader.poll(1) == [b"x"]
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 64 * 1024


def test_a_queue_larger_than_the_machine_is_a_memory_error():
    with pytest.raises(MemoryError):
        pq.Queue(block_size=16 << 20, hot_blocks=1, spill_blocks=2**20)   # 16 TiB
