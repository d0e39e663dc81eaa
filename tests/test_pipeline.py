"""Pipeline: every variant delivers every message, in order; mutex queue basics.

The C stage and consumer check each message's sequence number and check word,
so a run that returns has delivered 0..n-1 in order.  No timing assertions.
"""
import os

import numpy as np
import pytest

import pyqueue.lab as lab
from pyqueue._pyq import ffi, lib
from pyqueue.lab import pipeline as pl
from pyqueue.lab._output import load, verify

ALLOWED = sorted(os.sched_getaffinity(0))
PLACEMENT = (ALLOWED[0], ALLOWED[-1], ALLOWED[0])


@pytest.mark.parametrize("variant", list(pl.VARIANTS))
def test_variant_delivers_every_message_in_order(variant):
    spec = pl.VARIANTS[variant]
    cpus = PLACEMENT if spec["pinned"] else (-1, -1, -1)
    lat, late, info = pl.run_once(spec["kind"], spec["idle"] or "backoff", cpus, rate=50_000,
                                  messages=3000, timeout=30)
    assert info["delivered"] == 3000
    for t in ("producer", "stage", "consumer"):
        assert info["threads"][t]["messages"] == 3000
    assert lat.shape == (3000,) and late.shape == (3000,)
    assert (lat > 0).all()                      # every slot written by the consumer
    if spec["pinned"]:
        assert info["threads"]["stage"]["cpu_end"] == PLACEMENT[1]
        assert info["threads"]["consumer"]["cpu_end"] == PLACEMENT[2]
    assert info["cpu_ns"] > 0


def test_other_idle_strategies_and_bigger_messages():
    for idle in ("relax", "backoff"):
        lat, _, info = pl.run_once("pyqueue", idle, (-1, -1, -1), rate=100_000, messages=1000,
                                   msg_size=200, stage_work_ns=200, timeout=30)
        assert info["delivered"] == 1000


def test_pipeline_result_and_folder(tmp_path):
    out = tmp_path / "pipe"
    r = lab.pipeline(rate=50_000, messages=1000, slices=2, placement=PLACEMENT, out=out,
                     progress=False)
    assert r.status == "complete"
    for v in pl.VARIANTS:
        assert r.latency_ns[v].size == 2000
        f = r.table[v]
        assert f["messages"] == 2000
        assert f["latency_us"].mean.shape == (4,)
        assert f["context_switches"] >= 0 and f["cpus_used"] > 0
    assert "mutex_condvar" in r.summary and "p999" in r.summary
    assert verify(out) == []
    loaded = load(out)
    assert loaded.complete
    assert loaded.samples["pinned_spin"]["latency_ns"].size == 2000


def test_bad_arguments():
    with pytest.raises(ValueError, match="variants"):
        lab.pipeline(variants=("nope",))
    with pytest.raises(ValueError, match="placement"):
        lab.pipeline(placement=(0, 1))
    with pytest.raises(ValueError, match="placement"):
        lab.pipeline(placement=(0, 4095, 0))
    with pytest.raises(ValueError, match="SCHED_FIFO would starve"):
        lab.pipeline(variants=("pinned_spin",), placement=(0, 0, 0), fifo_priority=5)
    with pytest.raises(ValueError, match="rate"):
        pl.run_once(rate=0)
    with pytest.raises(ValueError, match="producer_fifo"):
        pl.run_once(rate=100_000, pacer_spin_ns=10_000, producer_fifo=1)


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two CPUs")
def test_fifo_bounded_run():
    """SCHED_FIFO where it is safe: backoff idle sleeps, so nothing is starved."""
    try:
        lat, _, info = pl.run_once("pyqueue", "backoff", PLACEMENT, rate=50_000, messages=1000,
                                   fifo_priority=1, timeout=10)
    except PermissionError:
        pytest.skip("SCHED_FIFO not allowed here")
    assert info["delivered"] == 1000
    assert info["threads"]["stage"]["policy"] == 1      # SCHED_FIFO
    lat, _, info = pl.run_once("pyqueue", "spin", PLACEMENT, rate=20_000, messages=500,
                               producer_fifo=1, timeout=10)
    assert info["delivered"] == 500 and info["threads"]["producer"]["policy"] == 1


def test_mutex_queue_fifo_order_and_close():
    q = ffi.new("pyq_mutexq_t **")
    assert lib.pyq_mutexq_create(4, 8, q) == 0
    q = q[0]
    buf = ffi.new("uint64_t *")
    for i in range(4):
        buf[0] = i
        assert lib.pyq_mutexq_push(q, buf, 0) == 0
    assert lib.pyq_mutexq_push(q, buf, 0) == lib.PYQ_EAGAIN          # full, no wait
    assert lib.pyq_mutexq_push(q, buf, 1_000_000) == lib.PYQ_EAGAIN  # full after 1 ms
    for i in range(4):
        assert lib.pyq_mutexq_pop(q, buf, 0) == 0 and buf[0] == i
    assert lib.pyq_mutexq_pop(q, buf, 1_000_000) == lib.PYQ_EAGAIN
    buf[0] = 7
    assert lib.pyq_mutexq_push(q, buf, 0) == 0
    lib.pyq_mutexq_close(q)
    assert lib.pyq_mutexq_push(q, buf, 0) == lib.PYQ_ECLOSED
    assert lib.pyq_mutexq_pop(q, buf, 0) == 0 and buf[0] == 7          # drains
    assert lib.pyq_mutexq_pop(q, buf, -1) == lib.PYQ_ECLOSED
    assert lib.pyq_mutexq_waits(q) >= 2
    lib.pyq_mutexq_destroy(q)
    assert lib.pyq_mutexq_create(0, 8, ffi.new("pyq_mutexq_t **")) == lib.PYQ_EINVAL
