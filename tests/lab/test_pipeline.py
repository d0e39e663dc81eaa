"""Pipeline: every variant, and every built peer, delivers every message, in order.

The C stage and consumer check each message's sequence number and check word,
so a run that returns has delivered 0..n-1 in order.  No timing assertions.
"""

import os

import pytest

import pyqueue.lab as lab
import pyqueue.lab.peers as peers
from pyqueue.lab._lab import ffi, lib
from pyqueue.lab.experiments import pipeline as pl
from pyqueue.lab.common.output import load, verify

import support

ALLOWED = support.ALLOWED_CPUS
PLACEMENT = (ALLOWED[0], ALLOWED[-1], ALLOWED[0])
UNPINNED = (-1, -1, -1)
PEER_STATUS = peers.available()


def cpus(placement):
    """The writer_cpu, stage_cpu, reader_cpu keywords of a (producer, stage, consumer)."""
    return dict(zip(("writer_cpu", "stage_cpu", "reader_cpu"), placement))


@pytest.mark.parametrize("variant", list(pl.VARIANTS))
def test_variant_delivers_every_message_in_order(variant):
    spec = pl.VARIANTS[variant]
    where = PLACEMENT if spec["pinned"] else UNPINNED
    lat, late, info = pl.run_once(spec["kind"], spec["idle"] or "backoff", **cpus(where),
                                  rate=50_000, messages=3000, timeout=30)
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
        lat, _, info = pl.run_once("pyqueue", idle, **cpus(UNPINNED), rate=100_000,
                                   messages=1000, msg_size=200, stage_work_ns=200, timeout=30)
        assert info["delivered"] == 1000


@pytest.mark.two_cpus
@pytest.mark.parametrize("idle", ["spin", "backoff"])
def test_combined_stage_and_consumer_with_rests_deliver_in_order(idle):
    """One thread runs stage and consumer; rests and receiver timer slack on."""
    lat, late, info = pl.run_once("pyqueue", idle, **cpus((ALLOWED[0], ALLOWED[-1], ALLOWED[-1])),
                                  rate=50_000, messages=3000, combine=True, rest_share=0.5,
                                  rest_ns=20_000, receiver_slack_ns=1, timeout=30)
    assert info["delivered"] == 3000 and (lat > 0).all()
    for t in ("producer", "stage", "consumer"):
        assert info["threads"][t]["messages"] == 3000
    assert info["threads"]["consumer"]["cpu_end"] == ALLOWED[-1]
    assert info["threads"]["consumer"]["cpu_ns"] == 0        # its time is in the stage's row
    assert info["threads"]["stage"]["rests"] >= 0


def test_rests_in_three_thread_pipeline_deliver_in_order():
    lat, _, info = pl.run_once("pyqueue", "spin", **cpus(PLACEMENT), rate=50_000, messages=2000,
                               rest_share=0.5, rest_ns=1000, timeout=30)
    assert info["delivered"] == 2000 and (lat > 0).all()


def test_pipeline_result_and_folder(tmp_path):
    out = tmp_path / "pipe"
    r = lab.pipeline(rate=50_000, messages=1000, slices=2, **cpus(PLACEMENT), out=out,
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
    # the params are exactly the fields; what each variant ran with is in the results
    assert loaded.params == lab.PipelineParams(rate=50_000, messages=1000, slices=2,
                                               **cpus(PLACEMENT)).to_json()
    assert loaded.results["variant_specs"]["pinned_spin"]["cpus"] == list(PLACEMENT)
    assert loaded.results["variant_specs"]["mutex_condvar"]["cpus"] == list(UNPINNED)
    assert lab.load(out).variant_specs == loaded.results["variant_specs"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="variants"):
        lab.pipeline(variants=("nope",))
    with pytest.raises(ValueError, match="placement must be a sequence of 3 values"):
        lab.pipeline(placement=(0, 1))
    with pytest.raises(ValueError, match="stage_cpu=4095"):
        lab.pipeline(stage_cpu=4095)
    with pytest.raises(ValueError, match="SCHED_FIFO would starve"):
        lab.pipeline(variants=("pinned_spin",), **cpus((0, 0, 0)), fifo_priority=5)
    with pytest.raises(ValueError, match="SCHED_FIFO would starve"):
        pl.run_once("pyqueue", "spin", **cpus((0, 0, 0)), fifo_priority=5)
    with pytest.raises(ValueError, match=r"fifo_priority must be in \[0, 99\]"):
        lab.pipeline(fifo_priority=100)
    with pytest.raises(ValueError, match="rate"):
        pl.run_once(rate=0)
    with pytest.raises(ValueError, match="producer_fifo"):
        pl.run_once(rate=100_000, pacer_spin_ns=10_000, producer_fifo=1)
    with pytest.raises(ValueError, match="combine.*same CPU"):
        lab.pipeline(**cpus((0, 1, 0)), combine=True)
    with pytest.raises(ValueError, match="combine.*same CPU"):
        pl.run_once(**cpus((0, 1, 0)), combine=True)
    with pytest.raises(ValueError, match="combine needs kind"):
        pl.run_once(kind="mutex", **cpus((0, 1, 1)), combine=True)
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
            lab.pipeline(variants=("pinned_spin",), **cpus((0, 1, 1)), combine=True,
                         fifo_priority=1, rest_share=0)


def test_one_parameter_list_old_names():
    p = lab.PipelineParams()
    assert p.cpus == pl.DEFAULT_PLACEMENT == (0, 1, 0) and (p.slices, p.messages) == (5, 20_000)
    assert lab.PipelineParams.quick().slices == 2
    with pytest.warns(DeprecationWarning, match="placement is now called writer_cpu and "
                                                "stage_cpu and reader_cpu"):
        assert lab.PipelineParams.of(placement=(0, 1, 1)).cpus == (0, 1, 1)
    from pyqueue.lab.cli import pipeline as cli
    from pyqueue.lab.cli.main import Parser
    parser = Parser(prog="pyqueue pipeline")
    cli.add_arguments(parser)
    args = parser.parse_args(["--fifo", "3", "--timer-slack-ns", "50", "--placement", "0,1,1"])
    assert lab.PipelineParams.from_args(args) == p.replace(
        fifo_priority=3, receiver_slack_ns=50, writer_cpu=0, stage_cpu=1, reader_cpu=1)


def test_rest_share_default_follows_fifo():
    spin, mutex = pl.VARIANTS["pinned_spin"], pl.VARIANTS["mutex_condvar"]
    assert pl._rest_share_for(spin, 0, None) == 0.0
    assert pl._rest_share_for(spin, 1, None) == (0.15 if pl._rt_throttling_on() else 0.0)
    assert pl._rest_share_for(spin, 1, 0.3) == 0.3
    assert pl._rest_share_for(mutex, 1, None) == 0.0


@pytest.mark.two_cpus
def test_fifo_bounded_run():
    """SCHED_FIFO where it is safe: backoff idle sleeps, so nothing is starved."""
    try:
        lat, _, info = pl.run_once("pyqueue", "backoff", **cpus(PLACEMENT), rate=50_000,
                                   messages=1000, fifo_priority=1, timeout=10)
    except PermissionError:
        pytest.skip("SCHED_FIFO not allowed here")
    assert info["delivered"] == 1000
    assert info["threads"]["stage"]["policy"] == 1      # SCHED_FIFO
    lat, _, info = pl.run_once("pyqueue", "spin", **cpus(PLACEMENT), rate=20_000, messages=500,
                               producer_fifo=1, timeout=10)
    assert info["delivered"] == 500 and info["threads"]["producer"]["policy"] == 1
    # the configured pinned pipeline: producer alone, one FIFO poller with rests
    r = lab.pipeline(variants=("pinned_spin", "mutex_condvar"), rate=20_000, messages=1000,
                     slices=1, **cpus((ALLOWED[0], ALLOWED[-1], ALLOWED[-1])), combine=True,
                     fifo_priority=1, producer_fifo=2, pacer_spin_ns=20_000, timeout=10,
                     progress=False)
    assert r.status == "complete" and r.latency_ns["pinned_spin"].size == 1000
    assert r.slices["pinned_spin"][0]["threads"]["stage"]["policy"] == 1
    assert r.variant_specs["pinned_spin"]["combine"] is True
    assert r.variant_specs["mutex_condvar"]["combine"] is False
    assert "one thread" in r.summary


def test_mutex_receivers_sleep_on_the_condvar_and_pollers_never_wait():
    """The seed's contrast stays observable: the mutex queue's receivers block in
    wait_readable (counted, and each wake-up is a context switch); busy pollers
    never wait."""
    _, _, info = pl.run_once("mutex", None, **cpus(UNPINNED), rate=20_000, messages=1000,
                             timeout=30)
    for t in ("stage", "consumer"):
        assert info["threads"][t]["waits"] > 0 and info["threads"][t]["voluntary_cs"] > 0
    _, _, info = pl.run_once("pyqueue", "spin", **cpus(PLACEMENT), rate=20_000, messages=1000,
                             timeout=30)
    assert info["threads"]["stage"]["waits"] == 0 == info["threads"]["consumer"]["waits"]


def test_c_config_names_its_queue_by_adapter():
    cfg = ffi.new("pyq_pipeline_config_t *")
    lib.pyq_pipeline_config_init(cfg)
    assert ffi.string(cfg.queue.name) == b"pyqueue"
    res = ffi.new("pyq_pipeline_result_t *")
    latency = ffi.new("uint64_t[]", 10)
    cfg.latency_ns, cfg.count = latency, 10
    cfg.queue = ffi.NULL
    assert lib.pyq_pipeline_run(cfg, res) == lib.PYQ_EINVAL
    cfg.queue, cfg.combine = peers.get("mutex"), 1       # one thread cannot sleep on hop 0
    assert lib.pyq_pipeline_run(cfg, res) == lib.PYQ_EINVAL
    cfg.combine, cfg.slots = 0, 0
    assert lib.pyq_pipeline_run(cfg, res) == lib.PYQ_EINVAL


# --- peers enter the pipeline through the adapter interface ---------------------

def _need_peer(name):
    status = PEER_STATUS[name]
    if status == "built":
        return
    if os.environ.get("PYQ_REQUIRE_PEERS") == "1":
        pytest.fail("PYQ_REQUIRE_PEERS=1 but %s is %s" % (name, status))
    pytest.skip("%s: %s" % (name, status))


@pytest.mark.parametrize("peer", peers.PEERS)
def test_peer_delivers_every_message_in_order(peer):
    _need_peer(peer)
    lat, _, info = pl.run_once(peer, "spin", **cpus(PLACEMENT), rate=50_000, messages=2000,
                               timeout=30)
    assert info["delivered"] == 2000 and (lat > 0).all()
    assert info["threads"]["stage"]["cpu_end"] == PLACEMENT[1]
    lat, _, info = pl.run_once(peer, "backoff", **cpus(UNPINNED), rate=50_000, messages=1000,
                               timeout=30)
    assert info["delivered"] == 1000


@pytest.mark.two_cpus
@pytest.mark.parametrize("peer", peers.PEERS)
def test_peer_in_combined_pipeline(peer):
    _need_peer(peer)
    lat, _, info = pl.run_once(peer, "spin", **cpus((ALLOWED[0], ALLOWED[-1], ALLOWED[-1])),
                               rate=50_000, messages=2000, combine=True, timeout=30)
    assert info["delivered"] == 2000 and (lat > 0).all()


def test_pipeline_runs_peers_beside_the_variants(tmp_path):
    peer = next((q for q in peers.PEERS if PEER_STATUS[q] == "built"), None)
    if peer is None:
        _need_peer(peers.PEERS[0])
    r = lab.pipeline(variants=("mutex_condvar", "pinned_spin", "pinned_backoff"), rate=50_000,
                     messages=500, slices=1, **cpus(PLACEMENT), out=tmp_path / "pipe",
                     progress=False, queues=(peer,))
    assert r.status == "complete"
    assert list(r.table) == ["mutex_condvar", "pinned_spin", "pinned_backoff",
                             peer + "_pinned_spin", peer + "_pinned_backoff"]
    assert r.variant_specs[peer + "_pinned_spin"]["kind"] == peer
    assert r.latency_ns[peer + "_pinned_backoff"].size == 500
    assert (peer + "_pinned_spin") in r.summary
    assert verify(tmp_path / "pipe") == []


def test_bad_queues():
    with pytest.raises(ValueError, match=r"queues\[0\] must be one of"):
        lab.pipeline(queues=("nope",))
    with pytest.raises(ValueError, match=r"queues\[0\] must be one of"):
        lab.pipeline(queues=("pyqueue",))
    with pytest.raises(ValueError, match="name at least one"):
        lab.pipeline(variants=("mutex_condvar",), queues=(peers.PEERS[0],))
    with pytest.raises(ValueError, match="unknown adapter"):
        pl.run_once(kind="nope")


def test_cli_queues(capsys):
    from pyqueue.__main__ import main
    assert main(["pipeline", "--queues", "nope", "--quiet"]) == 2
    peer = next((q for q in peers.PEERS if PEER_STATUS[q] == "built"), None)
    if peer is None:
        _need_peer(peers.PEERS[0])
    assert main(["pipeline", "--variants", "pinned_backoff", "--queues", peer, "--rate", "50000",
                 "--messages", "300", "--slices", "1", "--writer-cpu", str(PLACEMENT[0]),
                 "--stage-cpu", str(PLACEMENT[1]), "--reader-cpu", str(PLACEMENT[2]),
                 "--quiet"]) == 0
    assert (peer + "_pinned_backoff") in capsys.readouterr().out
