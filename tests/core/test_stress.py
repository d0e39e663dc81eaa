"""FIFO and every byte between a C writer thread and a C reader thread ([DESIGN §3](DESIGN.md#3-the-queue)):
>= 10 million messages per publish policy, with and without scan_current, random
sizes from 0 bytes to the maximum, with backlog spilling into tier 2 and back."""
import platform

import pytest

import pyqueue as pq
import support
from pyqueue.errors import strerror
from pyqueue.lab._lab import ffi, lib

POLICIES = ["max", "each", "bytes:1000"]


def stress(q, n, use_claim=False, pause_every=0, pause_us=0, flush_every=0, batch=0,
           min_len=0, max_len=None):
    p = ffi.new("pyq_stress_params_t *")
    r = ffi.new("pyq_stress_result_t *")
    p.messages = n
    p.min_len = min_len
    # Up to a block's worth: the large region has its own cases (tests/python/test_frames.py).
    p.max_len = q.block_size - 8 if max_len is None else max_len
    p.salt = 0xC0FFEE
    p.writer_cpu = p.reader_cpu = -1
    p.reader_pause_every = pause_every
    p.reader_pause_us = pause_us
    p.use_claim = use_claim
    p.flush_every = flush_every
    p.reader_batch = batch
    p.write_timeout_ns = lib.PYQ_WAIT_FOREVER
    rc = lib.pyq_stress_run(q.c_handle, p, r)
    assert rc == 0, "error %d (%s) on side %d at seq %d" % (
        r.error, strerror(r.error), r.error_side, r.error_seq)
    assert r.written == n and r.read == n
    return q.stats()


@pytest.mark.slow
@pytest.mark.parametrize("scan", [False, True])
@pytest.mark.parametrize("publish", POLICIES)
def test_ten_million_random_sizes(publish, scan):
    n = 10_000_000
    # 256-byte blocks keep 10 M random-size messages (0..248 B) to ~1.3 GB of copying.
    with pq.Queue(block_size=256, hot_blocks=4, spill_blocks=2048, publish=publish,
                  scan_current=scan, retry_yield_every=64) as q:
        st = stress(q, n, pause_every=2_000_000, pause_us=20_000)
        assert st["messages_read"] == n
        assert st["takes_spill"] > 0, "the reader pauses should spill into tier 2"
        assert st["returns_spill"] >= st["takes_spill"] - 1
        assert st["returns_hot"] >= st["takes_hot"] - 1
        assert st["peak_backlog"] > 4 * 256


@pytest.mark.parametrize("nt", [False, True])
@pytest.mark.parametrize("size", [32, 13])
def test_fixed_sizes_run_across_threads(size, nt):
    # Runs (DESIGN §3.1): one size under publish max, so nearly every message
    # is a run member; flushes end runs mid-block, pauses spill into tier 2.
    with pq.Queue(block_size=1024, hot_blocks=4, spill_blocks=512, publish="max",
                  spill_nontemporal=nt, nontemporal_backlog_kib=0) as q:
        st = stress(q, 1_000_000, pause_every=250_000, pause_us=20_000, flush_every=777,
                    min_len=size, max_len=size)
        assert st["messages_read"] == 1_000_000
        assert st["takes_spill"] > 0


@pytest.mark.parametrize("nt", [False, True])
@pytest.mark.parametrize("scan", [False, True])
@pytest.mark.parametrize("publish", POLICIES)
def test_default_blocks_random_sizes(publish, scan, nt):
    # nt: spill blocks written with streaming stores (the x86-64 default) or cached.
    with pq.Queue(spill_blocks=512, publish=publish, scan_current=scan,
                  spill_nontemporal=nt, nontemporal_backlog_kib=0) as q:
        st = stress(q, 300_000, pause_every=100_000, pause_us=20_000)
        assert st["takes_spill"] > 0


@pytest.mark.skipif(not pq.QueueConfig().spill_nontemporal,
                    reason="streaming stores need x86-64 with SSE2")
@pytest.mark.parametrize("scan", [False, True])
@pytest.mark.parametrize("publish", ["max", "each"])
def test_hot_blocks_streamed_too(publish, scan):
    # hot_nontemporal: every block, hot ones included, written with streaming
    # stores (a burst-tail lever); every message and byte across threads.
    with pq.Queue(block_size=1024, hot_blocks=4, spill_blocks=256, publish=publish,
                  scan_current=scan, hot_nontemporal=True) as q:
        assert q.config.hot_nontemporal is True
        st = stress(q, 300_000, pause_every=100_000, pause_us=20_000, flush_every=501)
        assert st["messages_read"] == 300_000 and st["takes_spill"] > 0


@pytest.mark.parametrize("scan", [False, True])
def test_claim_abort_flush_small_polls(scan):
    with pq.Queue(block_size=512, hot_blocks=2, spill_blocks=64, scan_current=scan) as q:
        stress(q, 500_000, use_claim=True, flush_every=3, batch=7, pause_every=100_000, pause_us=5000)


def test_stress_rejects_bad_params():
    with pq.Queue(block_size=256, spill_blocks=4) as q:
        p = ffi.new("pyq_stress_params_t *")
        r = ffi.new("pyq_stress_result_t *")
        p.messages = 10
        p.min_len, p.max_len = 0, 10_000
        assert lib.pyq_stress_run(q.c_handle, p, r) == lib.PYQ_EINVAL


@pytest.mark.parametrize("flush_hot_kib, flush_backlog_kib", [(0, 0), (4, 0), (0, 16)])
def test_hot_blocks_flushed_once_read_come_back_intact(flush_hot_kib, flush_backlog_kib):
    # flush_hot_kib flushes each hot block once read, flush_backlog_kib those
    # the writer is far enough ahead of (DESIGN §3.10); an all-hot ring of 8
    # blocks makes the writer rewrite every flushed block many times over, with
    # the reader on its heels and, through its pauses, a full ring behind:
    # FIFO and every byte.
    with pq.Queue(block_size=4096, hot_blocks=8, spill_blocks=0, publish="max",
                  flush_hot_kib=flush_hot_kib, flush_backlog_kib=flush_backlog_kib) as q:
        st = stress(q, 2_000_000, pause_every=100_000, pause_us=2_000, min_len=32, max_len=32)
        assert st["messages_read"] == 2_000_000
        assert st["takes_hot"] > 8 * 10, "the ring of 8 hot blocks went round many times"
        assert st["returns_hot"] >= st["takes_hot"] - 1
        if not support.has_clflushopt() or (flush_hot_kib, flush_backlog_kib) == (0, 0):
            assert st["blocks_flushed"] == 0
        elif flush_hot_kib:
            assert st["blocks_flushed"] == st["returns_hot"]
        else:  # the blocks read after each pause, the ring full behind them
            assert 0 < st["blocks_flushed"] <= st["returns_hot"]


@pytest.mark.parametrize("flush", [False, True])
def test_spill_blocks_flushed_once_read_come_back_intact(flush):
    # spill_nontemporal on x86-64 also flushes each spill block from the
    # reader's caches once read (DESIGN §3.10); a backlog never deep enough to
    # stream keeps the writer's stores cached, and a spill ring of 8 blocks
    # makes the writer rewrite every flushed block many times over: FIFO and
    # every byte (the stress reader checks both), every spill block returned.
    if flush and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("spill_nontemporal is x86-64 only")
    with pq.Queue(block_size=4096, hot_blocks=1, spill_blocks=8, publish="max",
                  spill_nontemporal=flush, nontemporal_backlog_kib=1 << 20) as q:
        st = stress(q, 2_000_000, pause_every=100_000, pause_us=2_000, min_len=32, max_len=32)
        assert st["messages_read"] == 2_000_000
        assert st["takes_spill"] > 8 * 10, "the ring of 8 spill blocks went round many times"
        assert st["returns_spill"] >= st["takes_spill"] - 1
