"""Core-to-core matrix and false sharing: shapes, labels, output folders.

No timing assertions: the figures depend on the host (a VM's vCPUs move).
"""

import numpy as np
import pytest

import pyqueue.lab as lab
from pyqueue.lab.experiments import c2c
from pyqueue.lab.runtime.topology import read as read_topology
from pyqueue.lab.common.output import load, verify

import support

ALLOWED = support.ALLOWED_CPUS


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def fake_sysfs(root):
    """8 CPUs: 2 NUMA nodes x 2 L3 domains x 1 core of 2 SMT threads.

    node 0: L3 {0,1,2,3}: cores (0,1) and (2,3)... laid out so that every
    relation occurs among CPUs 0..7."""
    layout = {  # cpu: (package, core siblings, l3 set, node)
        0: (0, "0-1", "0-3", 0), 1: (0, "0-1", "0-3", 0),
        2: (0, "2-3", "0-3", 0), 3: (0, "2-3", "0-3", 0),
        4: (0, "4-5", "4-5", 0), 5: (0, "4-5", "4-5", 0),
        6: (1, "6-7", "6-7", 1), 7: (1, "6-7", "6-7", 1),
    }
    cpu = root / "devices" / "system" / "cpu"
    for c, (pkg, sib, l3, node) in layout.items():
        d = cpu / ("cpu%d" % c)
        _write(d / "topology" / "physical_package_id", str(pkg))
        _write(d / "topology" / "core_id", str(c // 2))
        _write(d / "topology" / "thread_siblings_list", sib)
        _write(d / "cache" / "index3" / "level", "3")
        _write(d / "cache" / "index3" / "shared_cpu_list", l3)
    _write(root / "devices" / "system" / "node" / "node0" / "cpulist", "0-5")
    _write(root / "devices" / "system" / "node" / "node1" / "cpulist", "6-7")
    return root


def test_fake_topology_relations(tmp_path):
    topo = read_topology(fake_sysfs(tmp_path))
    cpus = list(range(8))
    m = c2c.relation_matrix(topo, cpus)
    assert len(m) == 8 and all(len(row) == 8 for row in m)
    assert all(m[i][i] == "same_cpu" for i in cpus)
    assert m[0][1] == m[1][0] == "smt_sibling"
    assert m[0][2] == "same_l3"
    assert m[0][4] == "other_l3"
    assert m[0][6] == m[6][0] == "other_numa"
    assert m[6][7] == "smt_sibling"
    assert all(m[i][j] == m[j][i] for i in cpus for j in cpus)


@pytest.mark.two_cpus
def test_fake_topology_labels_a_measured_matrix(tmp_path):
    """The lab labels with the topology it is given: CPUs 0, 1 of the fake tree
    are SMT siblings, whatever the real machine is."""
    r = lab.core_to_core(cpus=[0, 1], _topology=read_topology(fake_sysfs(tmp_path)),
                         modes=("two_lines",), round_trips=200, warmup=50, rounds=1,
                         queue=False, over_time=0, progress=False)
    assert r.relations == [["same_cpu", "smt_sibling"], ["smt_sibling", "same_cpu"]]
    assert "SMT sibling" in r.summary


@pytest.mark.two_cpus
def test_machine_matrix_shape_and_labels(tmp_path):
    cpus = ALLOWED[:2]
    out = tmp_path / "c2c"
    r = lab.core_to_core(cpus=cpus, writer_cpu=cpus[0], reader_cpu=cpus[1], round_trips=300,
                         warmup=100, rounds=2, over_time=1.0, interval=0.25,
                         over_time_round_trips=200, out=out, progress=False)
    topo = read_topology()
    n = len(cpus)
    assert r.relations == c2c.relation_matrix(topo, cpus)
    for mode in ("cas", "two_lines"):
        for key in ("median_ns", "p99_ns", "median_cycles", "p99_cycles"):
            a = np.asarray(r.matrix[mode][key])
            assert a.shape == (n, n)
            assert np.isnan(np.diag(a)).all()
            off = a[~np.eye(n, dtype=bool)]
            if key.startswith("p99"):
                # 300 round trips a round: p99 would rest on 3 beyond it, not reported.
                assert np.isnan(off).all()
            else:
                assert np.isfinite(off).all() and (off > 0).all()
    # queue beside the floor, as ratios
    assert set(r.queue["variants"]) == {"two_lines", "queue_each", "queue_each_scan"}
    assert len(r.queue["variants"]["queue_each"]["ratios"]) == 2
    # over time: one entry per slice per mode
    assert len(r.over_time["t_s"]) >= 1
    assert len(r.over_time["two_lines"]["median_ns"]) == len(r.over_time["t_s"])
    # raw samples, unfiltered, in a verified folder
    assert verify(out) == []
    loaded = load(out)
    assert loaded.complete
    s = loaded.samples["two_lines_%d_%d" % (cpus[0], cpus[1])]["round_trip_ticks"]
    assert s.size == 2 * 300
    assert loaded.results["relations"] == r.relations
    # the params are the fields; what the run found out is in the results
    assert loaded.params == lab.CoreToCoreParams(
        cpus=cpus, writer_cpu=cpus[0], reader_cpu=cpus[1], round_trips=300, warmup=100,
        rounds=2, over_time=1.0, interval=0.25, over_time_round_trips=200).to_json()
    assert loaded.results["over_time"]["seconds"] == 1.0
    assert loaded.results["topology"] and loaded.results["timer_step_ticks"] >= 1
    assert lab.load(out).timer_step_ticks == r.timer_step_ticks


@pytest.mark.two_cpus
def test_pingpong_slice_each_mode():
    for mode in ("cas", "two_lines", "queue_each", "queue_each_scan"):
        s, meta = c2c.pingpong_slice(ALLOWED[0], ALLOWED[1], mode, round_trips=100, warmup=10)
        assert s.shape == (100,) and (s > 0).all()
        assert meta["cpu_a_end"] == ALLOWED[0] and meta["cpu_b_end"] == ALLOWED[1]


def test_a_loop_error_is_mapped_by_check():
    from pyqueue import VerificationError
    from pyqueue._pyq import lib
    from pyqueue.lab.common import cloops
    assert cloops.check(0, "two_lines ping-pong") == 0
    for rc, cls, text in ((lib.PYQ_EINVAL, ValueError, "allowed and online"),
                          (lib.PYQ_EAGAIN, TimeoutError, "did not answer"),
                          (lib.PYQ_EBADMSG, VerificationError, "verification failed")):
        with pytest.raises(cls, match="two_lines ping-pong: .*" + text):
            cloops.check(rc, "two_lines ping-pong")


def test_bad_arguments():
    with pytest.raises(ValueError, match="differ"):
        c2c.pingpong_slice(0, 0)
    with pytest.raises(ValueError, match="mode"):
        c2c.pingpong_slice(0, 1, "smoke")
    with pytest.raises(ValueError, match="modes"):
        lab.core_to_core(modes=("nope",))
    with pytest.raises(ValueError, match="allowed|online"):
        c2c.pingpong_slice(0, 4095, round_trips=10)
    with pytest.raises(ValueError, match=r"round_trips must be in \[1, 2147483648\]"):
        c2c.pingpong_slice(0, 1, round_trips=0)
    with pytest.raises(ValueError, match="writer_cpu and reader_cpu must differ"):
        lab.core_to_core(writer_cpu=1, reader_cpu=1)
    with pytest.raises(ValueError, match="reader_cpu must be a CPU id >= 0"):
        lab.core_to_core(reader_cpu=-1)           # a ping-pong is pinned
    with pytest.raises(ValueError, match="cpus must not repeat"):
        lab.core_to_core(cpus=(0, 0))
    with pytest.raises(ValueError, match="cpus must name at least two"):
        lab.core_to_core(cpus=(0,))
    with pytest.raises(ValueError, match="interval must be in"):
        lab.core_to_core(interval=0)
    with pytest.raises(TypeError, match="unknown parameter topology"):
        lab.core_to_core(topology=None)


def test_one_parameter_list():
    p = lab.CoreToCoreParams()
    assert (p.writer_cpu, p.reader_cpu, p.round_trips, p.rounds) == (0, 1, 20_000, 5)
    assert lab.CoreToCoreParams.quick().over_time == 0.0
    with pytest.warns(DeprecationWarning, match="pair is now called writer_cpu and reader_cpu"):
        assert lab.CoreToCoreParams.of(pair=(1, 0)) == p.replace(writer_cpu=1, reader_cpu=0)
    f = lab.FalseSharingParams()
    assert (f.writer_cpu, f.reader_cpu, f.increments, f.rounds) == (0, 1, 20_000_000, 5)
    with pytest.warns(DeprecationWarning, match="cpus is now called writer_cpu and reader_cpu"):
        assert lab.FalseSharingParams.of(cpus=(1, 0)) == f.replace(writer_cpu=1, reader_cpu=0)
    with pytest.raises(ValueError, match="writer_cpu and reader_cpu must differ"):
        lab.false_sharing(writer_cpu=0, reader_cpu=0)


@pytest.mark.two_cpus
def test_false_sharing_runs(tmp_path):
    out = tmp_path / "fs"
    f = lab.false_sharing(writer_cpu=ALLOWED[0], reader_cpu=ALLOWED[1], increments=200_000,
                          rounds=2, out=out, progress=False)
    assert len(f.ns_per_increment["shared"]) == len(f.ns_per_increment["padded"]) == 2
    assert len(f.slowdown) == 2 and all(x > 0 for x in f.slowdown)
    assert verify(out) == [] and load(out).complete
    assert load(out).params == {"increments": 200_000, "rounds": 2, "rmw": False,
                                "writer_cpu": ALLOWED[0], "reader_cpu": ALLOWED[1]}
    assert lab.load(out).cpus == tuple(ALLOWED[:2])
    f2 = lab.false_sharing(writer_cpu=ALLOWED[0], reader_cpu=ALLOWED[1], increments=100_000,
                           rounds=1, rmw=True, progress=False)
    assert f2.rmw and len(f2.slowdown) == 1


def test_interrupted_run_leaves_a_valid_partial_folder(tmp_path, monkeypatch):
    """A stop request between slices ends the run with a valid, partial folder."""
    if len(ALLOWED) < 2:
        pytest.skip("needs two allowed CPUs")
    from pyqueue.lab.common import progress as _progress
    calls = {"n": 0}
    real = c2c._pingpong

    def slice_then_stop(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:       # first slice of round 2 (2 slices per round)
            _progress_stop[0].request()
        return real(*a, **k)

    _progress_stop = []
    orig_init = _progress.GracefulInterrupt.__init__

    def init(self, *a, **k):
        orig_init(self, *a, **k)
        _progress_stop.append(self)
    monkeypatch.setattr(_progress.GracefulInterrupt, "__init__", init)
    monkeypatch.setattr(c2c, "_pingpong", slice_then_stop)
    out = tmp_path / "partial"
    r = lab.core_to_core(cpus=ALLOWED[:2], writer_cpu=ALLOWED[0], reader_cpu=ALLOWED[1],
                         modes=("two_lines",), round_trips=100, warmup=10, rounds=2,
                         queue=False, over_time=0, out=out, progress=False)
    assert verify(out) == []
    loaded = load(out)
    assert not loaded.complete and "interrupted after 1 of 2" in loaded.status
    assert r.status == loaded.status              # one status string, result and folder alike
