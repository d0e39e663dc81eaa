"""Pipeline: every variant delivers every message, in order; mutex queue basics.

The C stage and consumer check each message's sequence number and check word,
so a run that returns has delivered 0..n-1 in order.  No timing assertions.
"""
import os

import numpy as np
import pytest

import pyqueue.lab as lab
from pyqueue._pyq import ffi, lib
from pyqueue.lab.experiments import pipeline as pl
from pyqueue.lab.common.output import load, verify

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


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("idle", ["spin", "backoff"])
def test_combined_stage_and_consumer_with_rests_deliver_in_order(idle):
    """One thread runs stage and consumer; rests and receiver timer slack on."""
    cpus = (ALLOWED[0], ALLOWED[-1], ALLOWED[-1])
    lat, late, info = pl.run_once("pyqueue", idle, cpus, rate=50_000, messages=3000,
                                  combine=True, rest_share=0.5, rest_ns=20_000,
                                  receiver_slack_ns=1, timeout=30)
    assert info["delivered"] == 3000 and (lat > 0).all()
    for t in ("producer", "stage", "consumer"):
        assert info["threads"][t]["messages"] == 3000
    assert info["threads"]["consumer"]["cpu_end"] == ALLOWED[-1]
    assert info["threads"]["consumer"]["cpu_ns"] == 0        # its time is in the stage's row
    assert info["threads"]["stage"]["rests"] >= 0


def test_rests_in_three_thread_pipeline_deliver_in_order():
    lat, _, info = pl.run_once("pyqueue", "spin", PLACEMENT, rate=50_000, messages=2000,
                               rest_share=0.5, rest_ns=1000, timeout=30)
    assert info["delivered"] == 2000 and (lat > 0).all()


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
    with pytest.raises(ValueError, match="combine.*same CPU"):
        lab.pipeline(placement=(0, 1, 0), combine=True)
    with pytest.raises(ValueError, match="combine.*same CPU"):
        pl.run_once(cpus=(0, 1, 0), combine=True)
    with pytest.raises(ValueError, match="combine needs kind"):
        pl.run_once(kind="mutex", combine=True)
    with pytest.raises(ValueError, match="combine must be"):
        lab.pipeline(combine=2)
    with pytest.raises(ValueError, match="rest_share"):
        lab.pipeline(rest_share=0.9)
    with pytest.raises(ValueError, match="rest_share"):
        pl.run_once(rest_share=-0.1)
    with pytest.raises(ValueError, match="rest_ns"):
        lab.pipeline(rest_ns=10)
    with pytest.raises(ValueError, match="receiver_slack_ns"):
        lab.pipeline(receiver_slack_ns=-1)
    with pytest.raises(ValueError, match="pacer_spin_ns"):
        lab.pipeline(pacer_spin_ns=-5)
    if pl._rt_throttling_on():
        with pytest.raises(ValueError, match="RT throttling"):
            lab.pipeline(variants=("pinned_spin",), placement=(0, 1, 1), combine=True,
                         fifo_priority=1, rest_share=0)


def test_rest_share_default_follows_fifo():
    spin, mutex = pl.VARIANTS["pinned_spin"], pl.VARIANTS["mutex_condvar"]
    assert pl._rest_share_for(spin, 0, None) == 0.0
    assert pl._rest_share_for(spin, 1, None) == (0.15 if pl._rt_throttling_on() else 0.0)
    assert pl._rest_share_for(spin, 1, 0.3) == 0.3
    assert pl._rest_share_for(mutex, 1, None) == 0.0


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
    # the configured pinned pipeline: producer alone, one FIFO poller with rests
    r = lab.pipeline(variants=("pinned_spin", "mutex_condvar"), rate=20_000, messages=1000,
                     slices=1, placement=(ALLOWED[0], ALLOWED[-1], ALLOWED[-1]), combine=True,
                     fifo_priority=1, producer_fifo=2, pacer_spin_ns=20_000, timeout=10,
                     progress=False)
    assert r.status == "complete" and r.latency_ns["pinned_spin"].size == 1000
    assert r.slices["pinned_spin"][0]["threads"]["stage"]["policy"] == 1
    assert r.params["variant_specs"]["pinned_spin"]["combine"] is True
    assert r.params["variant_specs"]["mutex_condvar"]["combine"] is False
    assert "one thread" in r.summary


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
