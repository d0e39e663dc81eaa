"""The burst-tail study end to end on small parameters (no timing assertions)."""
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import pyqueue
import pyqueue.lab as lab
from pyqueue.lab import peers
from pyqueue.lab.common import output as _output
from pyqueue.lab.experiments.burst_tail import DEFAULT_CLASSES

import support

SMALL = dict(rounds=2, windows=6, send_bytes=64 << 10, spill_blocks=512, warmup_queries=64,
             slice_windows=3, gap_windows=4, progress=False)


def installed_classes():
    avail = peers.available()
    return [c for c in DEFAULT_CLASSES
            if c.startswith("yield") or c.startswith("none") or avail.get(c.removesuffix("-twin")) == "built"]


def test_small_study_end_to_end(tmp_path):
    out = tmp_path / "run"
    res = lab.burst_tail(classes=DEFAULT_CLASSES, out=str(out), **SMALL)
    assert res.status == "complete"
    assert _output.verify(str(out)) == []
    loaded = _output.load(str(out))
    assert loaded.complete
    s = res.summary
    assert set(s["classes"]) == set(installed_classes())
    assert set(s["classes"]) | set(s["not_installed"]) == set(DEFAULT_CLASSES)
    checksums = {d["business_checksum"] for d in s["classes"].values()}
    assert len(checksums) == 1, "every class must run the same business work"
    assert s["protocol_not_met"] == {}
    # 24 groups a round: p50 rests on 12 beyond it; p99 and p999 are not reported.
    assert s["classes"]["none"]["x_no_burst"] == [1.0, None, None]
    assert s["classes"]["none"]["messages_sent_total"] == 0
    for name, d in s["classes"].items():
        assert d["all_verified"], name
        assert d["protocol_problems"] == [], name
        assert d["x_no_burst"][0] > 0 and d["x_no_burst"][1:] == [None, None], name
        # Every class's send (a gap class's idle gap), per round: median and p99
        # (None: too few windows a round for a p99 with 10 beyond it).
        st = d["send_ns"]
        assert len(st["p50_per_round"]) == len(st["p99_per_round"]) == 2
        assert st["windows_per_round"] == [6, 6] and st["p99"] is None
        assert st["p50_per_round"] == [None, None], name    # 6 windows: < 10 beyond p50
        if name == "none+gap":
            assert d["messages_sent_total"] == 0 and d["gap_matched_to"] == "yield1024"
            assert d["gap_ns"] == s["gap_match"]["gap_ns"] > 0
            continue
        if name == "none":
            assert d["messages_sent_per_round"] == [0, 0] and d["backlog_fraction"]["mean"] == 0
            continue
        # Held at the target: the untimed top-up brings every class there.
        assert abs(d["backlog_fraction"]["mean"] - 0.8) <= 0.02, name
        assert d["messages_sent_total"] == d["messages_verified_total"] > 0
        assert d["messages_sent_per_round"] == [6 * 2048] * 2
        assert d["windows_per_round"] == [6, 6]
        lat = d["latency_ns_per_query"]
        assert lat["counts"] == [6 * 4, 6 * 4]
        assert lat["mean"][0] > 0 and np.isnan(lat["mean"][1:]).all()
        assert lat["not_reported"]["p99"].startswith("not enough samples (n=24 per round")
        g = res.samples[name]["group_ns"]
        assert g.shape == (2, 6, 4) and (g > 0).all()
        assert 0 <= d["backlog_fraction"]["mean"] <= 1
        assert np.array_equal(loaded.samples[name]["group_ticks"], res.samples[name]["group_ticks"])
    # Fresh, the result has the loaded one's to_pandas() (pandas is an optional extra).
    if importlib.util.find_spec("pandas"):
        assert res.to_pandas().equals(lab.load(str(out)).to_pandas())
    else:
        with pytest.raises(ImportError, match="pandas"):
            res.to_pandas()
    text = res.table()
    for name in DEFAULT_CLASSES:
        assert name in text
    assert "nearest rank" in text
    # Every installed peer ran through its adapter and its inline twin; the
    # comparison uses one of the two and the table says which.
    for peer in (n for n in s["classes"] if n in peers.PEERS):
        twin = s["classes"][peer + "-twin"]
        assert (twin["driver"], s["classes"][peer]["driver"]) == ("twin", "adapter")
        assert twin["driver_calls"] != "adapter" and "inlined" in twin["driver_calls"]
        assert s["peers"][peer]["used"] in (peer, peer + "-twin")
        assert s["peers"][peer]["used"] + " (used)" in text
        assert len(s["peers"][peer]["twin_over_adapter"]) == 3
    assert s["targets"]["class"] == "yield1024"
    assert [r["of"] for r in s["targets"]["rows"]][2] == "none"
    assert "Targets for yield1024" in text


def test_one_queue_config_with_keyword_overrides():
    small = dict(SMALL, rounds=1, windows=2, slice_windows=2)
    base = pyqueue.QueueConfig(spill_blocks=256, prefetch=False)
    res = lab.burst_tail(classes=["yield16-cached", "mutex"], queue=base, hot_blocks=2,
                         retry_yield_every=5, **dict(small, spill_blocks=None))
    p = res.params["queue"]
    assert (p["spill_blocks"], p["prefetch"], p["hot_blocks"], p["retry_yield_every"]) == \
        (256, False, 2, 5)
    with pytest.warns(DeprecationWarning, match="config is now called queue"):   # the old names
        old = lab.BurstTailParams.of(config=base, peer_retry_yield_every=5)
    assert old.queue == base.replace(retry_yield_every=5)
    c = res.summary["classes"]
    assert (c["yield16-cached"]["retry_yield_every"], c["mutex"]["retry_yield_every"]) == (16, 5)
    assert c["yield16-cached"]["spill_nontemporal"] is False
    with pytest.raises(ValueError, match="class 'yield4294967296': retry_yield_every must be"):
        lab.burst_tail(classes=["yield4294967296"], **small)
    with pytest.raises(TypeError, match="queue must be a pyqueue.QueueConfig"):
        lab.burst_tail(queue=dict(hot_blocks=2), **small)


def test_missing_peer_is_reported_not_dropped(monkeypatch):
    real = peers.available()
    fake = dict(real, rwq="not installed: readerwriterqueue.h not found")
    monkeypatch.setattr(peers, "available", lambda *a, **k: fake)
    res = lab.burst_tail(classes=["yield0", "rwq"], **dict(SMALL, rounds=1))
    assert "rwq" not in res.summary["classes"]
    assert "not installed" in res.summary["not_installed"]["rwq"]
    assert "rwq" in res.table() and "not installed" in res.table()


def test_verification_failure_is_raised():
    with pytest.raises(pyqueue.VerificationError, match="message 1000"):
        lab.burst_tail(classes=["yield0"], _fault_seq=1001, **dict(SMALL, rounds=1))


@pytest.mark.parametrize("kw, name", [
    (dict(windows=0), "windows"), (dict(rounds=-1), "rounds"), (dict(msg_size=4), "msg_size"),
    (dict(send_bytes=100), "send_bytes"), (dict(backlog_target=1.5), "backlog_target"),
    (dict(classes=["nonsense"]), "nonsense"), (dict(classes=[]), "classes"),
    (dict(writer_cpu=4096), "writer_cpu"), (dict(groups=0), "groups"),
])
def test_bad_parameters(kw, name):
    args = dict(SMALL)
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        lab.burst_tail(**args)


def _env():
    return support.subprocess_env()


def test_ctrl_c_leaves_valid_partial_folder(tmp_path):
    out = tmp_path / "partial"
    cmd = [sys.executable, "-m", "pyqueue", "burst-tail", "--classes", "yield0,yield1024",
           "--rounds", "50", "--windows", "40", "--slice-windows", "5", "--spill-blocks", "512",
           "--send-bytes", "65536", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=tempfile.gettempdir(), env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "summary.json").exists():
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    assert _output.verify(str(out)) == []
    loaded = _output.load(str(out))
    assert loaded.status.startswith("interrupted")
    assert "interrupted" in stdout


def test_benchmark_script_help():
    script = os.path.join(support.ROOT, "benchmarks", "burst", "run_burst_tail_1m.py")
    proc = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                          env=_env(), cwd=tempfile.gettempdir(), timeout=60)
    assert proc.returncode == 0 and "--windows" in proc.stdout


class _FakeClass:
    """What reports.burst_tail._protocol reads of a class."""

    def __init__(self, capacity, target, send, backlog, retries):
        self.capacity, self.target, self.send_messages = capacity, target, send
        self.done = [len(backlog)]
        self.rec = {"retries": np.array([retries], np.uint64)}
        self.backlog = np.array(backlog, np.float64) / capacity


def test_protocol_flags_a_class_that_left_it():
    from pyqueue.lab.reports.burst_tail import _protocol
    ok = _FakeClass(1000, 800, 100, [800, 805, 795], [0, 0, 0])
    assert _protocol(ok, {}, ok.backlog) == []
    low = _FakeClass(1000, 800, 100, [280, 300, 290], [0, 0, 0])   # ck's 28 % of old
    assert _protocol(low, {}, low.backlog) == ["backlog 29.0% of capacity, target 80.0%"]
    full = _FakeClass(1000, 800, 100, [800, 800, 800], [0, 5, 0])
    assert _protocol(full, {}, full.backlog) == ["the send met a full queue in 1 of 3 windows"]
    # A target + send beyond the capacity: every send must meet a full queue.
    over = _FakeClass(1000, 950, 100, [950, 950], [3, 0])
    assert _protocol(over, {}, over.backlog) == [
        "the send fit in the queue in 1 of 2 windows (target + send exceed the capacity)"]


def test_the_table_says_when_the_protocol_was_not_met():
    from pyqueue.lab.reports import burst_tail as report
    res = lab.burst_tail(classes=["yield0", "none"], **dict(SMALL, rounds=1))
    s = dict(res.summary, protocol_not_met={"yield0": "backlog 29.0% of capacity, target 80.0%"})
    text = report.table(s, res.params)
    assert "PROTOCOL NOT MET for: yield0 (backlog 29.0% of capacity, target 80.0%)" in text
    without = report.table(dict(res.summary, classes={"yield0": res.summary["classes"]["yield0"]}),
                           res.params)
    assert "not measured: 'none' was not among the classes" in without


def test_levers_are_classes_of_one_run(tmp_path):
    res = lab.burst_tail(classes=["yield0", "yield0+touch_after_write=0+prefetch=0",
                                  "yield0+hot_blocks=8", "none"], out=str(tmp_path / "levers"),
                         **dict(SMALL, rounds=1))
    assert _output.verify(str(tmp_path / "levers")) == []
    c = res.summary["classes"]
    assert set(c) == {"yield0", "yield0+touch_after_write=0+prefetch=0", "yield0+hot_blocks=8",
                      "none"}
    assert all(d["all_verified"] for d in c.values())
    assert len({d["business_checksum"] for d in c.values()}) == 1
    lever = c["yield0+touch_after_write=0+prefetch=0"]["queue"]
    assert (lever["touch_after_write"], lever["prefetch"], c["yield0"]["queue"]["prefetch"]) == \
        (False, False, True)
    assert c["yield0+hot_blocks=8"]["queue"]["hot_blocks"] == 8
    for bad, msg in [("yield0+bogus", "'bogus' is not a queue setting"),
                     ("yield0+hot_blocks=x", "not an integer"),
                     ("yield0+retry_yield_every=3", "is not a queue setting"),
                     ("yield0+hot_blocks=0", "hot_blocks")]:
        with pytest.raises(ValueError, match=msg):
            lab.burst_tail(classes=[bad], **dict(SMALL, rounds=1))


def test_the_study_keeps_the_touch_and_huge_pages_unless_told_otherwise():
    small = dict(SMALL, rounds=1, windows=2, slice_windows=2)
    assert not pyqueue.QueueConfig().touch_after_write          # the queue's default: off
    assert not pyqueue.QueueConfig().hugepages
    params = lab.burst_tail(classes=["yield0"], **small).params["queue"]
    assert params["touch_after_write"] is True and params["hugepages"] is True
    assert lab.burst_tail(classes=["yield0"], hot_blocks=2,
                          **small).params["queue"]["hugepages"] is True
    off = pyqueue.QueueConfig(touch_after_write=False)
    assert lab.burst_tail(classes=["yield0"], queue=off,
                          **small).params["queue"]["touch_after_write"] is False
    from pyqueue.lab.cli import burst_tail as cli
    import argparse
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    from pyqueue.lab.experiments.burst_tail import BurstTailParams
    assert BurstTailParams.from_args(p.parse_args([])).queue.touch_after_write is True
    assert BurstTailParams.from_args(
        p.parse_args(["--no-touch-after-write"])).queue.touch_after_write is False
    assert "default: on" in p.format_help().split("--no-touch-after-write")[-1][:60]


def test_a_class_without_a_twin_is_refused():
    with pytest.raises(ValueError, match="unknown class 'mutex-twin'"):
        lab.burst_tail(classes=["mutex-twin"], **dict(SMALL, rounds=1))


def test_a_full_queue_makes_each_retry_strategy_wait_its_own_way():
    # Without a spill tier the queue holds ~500 messages and one send of 8,192 is
    # 16 times that: the retry strategies' case.  Whether one send meets the full
    # queue is a race, not a rule: the consumer drains during the writer's warm-up
    # queries, and on a quiet core it can keep pace with a send (on two vCPUs, with
    # the threads pinned apart, 7 of 50 runs had a window whose send never waited;
    # unpinned, 1 of 38; the test that asserted it never happened failed 5 times
    # in 25 at 82ce11a).  The protocol's report names such windows, as it should;
    # this test asserts what is not a race: every message verified, yield0 never
    # yields, yield1 yields at every failed retry.  (A window that read as started
    # below its target, 1 in ~40 runs, was the backlog read after the consumer was
    # let go: fixed in burst_tail.c's top_up; a top-up that stops at a full queue
    # is still reported, and allowed here.)
    yield0, yield1 = "yield0+spill_blocks=0", "yield1+spill_blocks=0"
    res = lab.burst_tail(classes=[yield0, yield1, "none"],
                         **dict(SMALL, rounds=1, send_bytes=256 << 10))
    c = res.summary["classes"]
    for name, why in res.summary["protocol_not_met"].items():
        assert name in (yield0, yield1), (name, why)
        assert "the send fit in the queue" in why or "backlog" in why, (name, why)
    for name in (yield0, yield1):
        assert c[name]["all_verified"], name
    retries = {n: res.samples[n]["retries"] for n in (yield0, yield1)}
    assert sum(int(r.sum()) for r in retries.values()) > 0, "no send met the full queue"
    assert (res.samples[yield0]["yields"] == 0).all()
    assert (res.samples[yield1]["yields"] >= retries[yield1]).all()
    assert "retries/yields per window" in res.table()


class _CountingLib:
    """The experiment's view of the C library, counting (and optionally
    interrupting) the C calls the study makes."""

    def __init__(self, real, interrupt_at=(), signals=1):
        self.real, self.calls = real, {"pyq_burst_fill": 0, "pyq_burst_windows": 0}
        self.interrupt_at, self.signals = interrupt_at, signals
        self.returned = {}

    def __getattr__(self, name):
        fn = getattr(self.real, name)
        if name not in self.calls:
            return fn

        def counted(*args):
            self.calls[name] += 1
            if name == "pyq_burst_fill" and self.calls[name] in self.interrupt_at:
                for _ in range(self.signals):
                    os.kill(os.getpid(), signal.SIGINT)
            rc = fn(*args)
            self.returned.setdefault(name, []).append(rc)
            return rc
        return counted


def test_every_c_call_returns_within_its_slice(monkeypatch):
    from pyqueue.lab.experiments import burst_tail as bt
    counting = _CountingLib(bt.lib)
    monkeypatch.setattr(bt, "lib", counting)
    monkeypatch.setattr(bt, "SLICE_NS", 1)      # every slice is over at once
    res = bt.burst_tail(classes=["yield0", "ck"] if peers.available().get("ck") == "built"
                        else ["yield0"], **dict(SMALL, rounds=1, slice_windows=6))
    n = len(res.summary["classes"])
    # A fill of ~5,500 messages returns every 1,024; a windows call after at most
    # one window (or none, when its slice ended in the wait for the backlog).
    assert counting.calls["pyq_burst_fill"] >= 5 * n
    assert set(counting.returned["pyq_burst_fill"]) == {0, 1}
    assert set(counting.returned["pyq_burst_windows"]) <= {0, 1}
    assert sum(counting.returned["pyq_burst_windows"]) == 6 * n
    assert res.status == "complete"
    assert all(d["all_verified"] and d["windows_per_round"] == [6]
               for d in res.summary["classes"].values())


_FILL_CHILD = """
import json, os, signal, sys
sys.path[:0] = [%(tests)r, os.path.dirname(%(tests)r)]
from pyqueue.lab.experiments import burst_tail as bt
from test_burst import _CountingLib
bt.lib = _CountingLib(bt.lib, interrupt_at=(3,), signals=%(signals)d)
bt.SLICE_NS = 1000
try:
    res = bt.burst_tail(classes=["yield0", "yield1024"], rounds=1, windows=4, spill_blocks=4096,
                        send_bytes=65536, out=%(out)r, progress=False)
    print(json.dumps({"status": res.status, "calls": bt.lib.calls}))
except KeyboardInterrupt:
    print(json.dumps({"status": "KeyboardInterrupt", "calls": bt.lib.calls}))
    sys.exit(130)
"""


@pytest.mark.parametrize("signals", [1, 2])
def test_ctrl_c_during_the_fill(tmp_path, signals):
    # The fill is C calls of one slice each: a first Ctrl-C stops after the
    # current one with a valid partial folder; a second aborts at once.
    import json
    out = tmp_path / "fill"
    code = _FILL_CHILD % dict(tests=os.path.dirname(__file__), out=str(out), signals=signals)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), cwd=tempfile.gettempdir(), timeout=120)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["calls"]["pyq_burst_fill"] == 3, got      # nothing after the interrupted call
    assert got["calls"]["pyq_burst_windows"] == 0, got
    if signals == 1:
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert got["status"] == "interrupted after 0 of 1 rounds"
    else:
        assert proc.returncode == 130 and got["status"] == "KeyboardInterrupt", proc.stderr[-2000:]
    assert _output.verify(str(out)) == []
    assert _output.load(str(out)).status.startswith("interrupted")


def test_pretouch_leaves_the_windows_no_page_to_fault_in():
    # The fill writes only the target's share of a fresh pool; the pretouch
    # writes the queue full and drains it, twice, before the first window.
    small = dict(SMALL, rounds=1, slice_windows=6, queue=pyqueue.QueueConfig(hugepages=False))
    cold = lab.burst_tail(classes=["yield0"], pretouch=False, **small)
    warm = lab.burst_tail(classes=["yield0"], **small)
    def before_the_windows(res):    # messages written by the fill (and the pretouch)
        d = res.summary["classes"]["yield0"]
        return (d["messages_verified_total"] - d["topup_messages"] -
                sum(d["messages_sent_per_round"]))
    cap = warm.summary["classes"]["yield0"]["capacity_messages"]
    assert before_the_windows(warm) >= 2 * cap      # written full twice, then the target
    assert before_the_windows(cold) <= cap
    assert warm.params["pretouch"] is True
    assert warm.samples["yield0"]["faults"].sum() == 0
    assert warm.summary["classes"]["yield0"]["windows_with_page_faults"] == 0
    for res in (cold, warm):
        d = res.summary["classes"]["yield0"]
        assert d["all_verified"] and d["protocol_problems"] == []
        assert abs(d["backlog_fraction"]["mean"] - 0.8) <= 0.02
    assert "page faults per window" in warm.table()


def test_a_gap_class_idles_where_the_send_would_be():
    res = lab.burst_tail(classes=["yield1024", "none+gap=20", "none"], **dict(SMALL, rounds=1))
    gap = res.summary["classes"]["none+gap=20"]
    assert gap["messages_sent_total"] == 0 and gap["backlog_target_messages"] == 0
    assert gap["protocol_problems"] == [] and gap["x_no_burst"] is not None
    assert res.summary["targets"]["rows"][2]["of"] == "none"       # the baseline stays none
    for bad in ("none+gap=0", "none+gap=x", "none+gap=2000000"):
        with pytest.raises(ValueError, match="gap"):
            lab.burst_tail(classes=[bad], **dict(SMALL, rounds=1))


def test_an_interrupted_table_averages_over_the_rounds_run():
    from pyqueue.lab.reports import burst_tail as report
    res = lab.burst_tail(classes=["yield0"], **dict(SMALL, rounds=1))
    assert "averaged over 1 round;" in res.table()
    asked = dict(res.params, rounds=3)      # as if 2 of 3 rounds never ran
    text = report.table(res.summary, asked)
    assert "averaged over 1 round (the rounds run, of 3 asked" in text


def test_nt_class_streams_every_spill_block_whatever_the_backlog():
    """yieldN-nt means every spill block streamed: spill_nontemporal on and the
    backlog threshold 0; yieldN-cached turns streaming off; no suffix keeps the
    configuration's own fields."""
    from pyqueue.lab.experiments.burst_tail import _pyqueue_class
    assert _pyqueue_class("yield16-nt") == {"retry_yield_every": 16, "spill_nontemporal": True,
                                            "nontemporal_backlog_kib": 0}
    assert _pyqueue_class("yield16-cached") == {"retry_yield_every": 16,
                                                "spill_nontemporal": False}
    assert _pyqueue_class("yield16") == {"retry_yield_every": 16}


def test_the_matched_gap_class_idles_as_long_as_pyqueue_s_send():
    """none+gap: its gap is the reference class's median send, measured in the
    same run before the rounds; the JSON keeps both, and the table says so."""
    res = lab.burst_tail(classes=["yield0", "none+gap", "yield1024"],
                         **dict(SMALL, rounds=1, windows=20, gap_windows=10))
    s = res.summary
    g = s["gap_match"]
    assert g["class"] == "yield1024" and g["windows"] == 5     # the second half counted
    assert g["gap_ns"] == round(g["send_ns_median"]) > 0 and g["send_ns_p99"] is None
    d = s["classes"]["none+gap"]
    assert d["gap_ns"] == g["gap_ns"] and d["gap_matched_to"] == "yield1024"
    assert d["messages_sent_total"] == 0 and d["protocol_problems"] == []
    # Its "send" is the gap it idled: never shorter than the gap asked.
    assert min(d["send_ns"]["p50_per_round"]) >= g["gap_ns"]
    assert s["classes"]["yield1024"]["gap_ns"] is None
    assert "none+gap idles" in res.table() and "yield1024's median send" in res.table()
    # The first pyqueue class that sends when yield1024 does not run; none at all: refused.
    res = lab.burst_tail(classes=["none+gap", "yield0"], **dict(SMALL, rounds=1))
    assert res.summary["gap_match"]["class"] == "yield0"
    with pytest.raises(ValueError, match="none\\+gap"):
        lab.burst_tail(classes=["none", "none+gap"], **dict(SMALL, rounds=1))


def test_the_tail_is_split_by_send_pace():
    """by_send_pace: a window whose send took more than 1.2x its round's median
    is long; the p99 after usual and after long sends come from those windows'
    groups only, and a p99 with too few groups beyond it is not reported."""
    from types import SimpleNamespace
    from pyqueue.lab.reports import burst_tail as report
    rng = np.random.default_rng(1)
    n = 3000
    send = np.full((1, n), 1000, np.int64)
    send[0, :300] = 2500                        # 10 % of the sends ran long
    groups = rng.uniform(10, 20, (1, n, 4))     # ns/query after a usual send
    groups[0, :300] = rng.uniform(100, 200, (300, 4))
    c = SimpleNamespace(done=[n], rec={"send_ticks": send,
                                       "group_ticks": (groups * 16).astype(np.int64)})
    b = report._by_pace(c, {"rounds": 1, "ticks_per_ns": 1.0, "group_queries": 16})
    assert b["long_share"] == pytest.approx(0.1)
    usual, long_ = groups[0, 300:].ravel(), groups[0, :300].ravel()
    assert 19 < b["p99_after_usual"] <= 20
    assert b["p99_after_usual"] == pytest.approx(np.sort(usual)[int(np.ceil(.99 * usual.size)) - 1],
                                                 abs=0.1)
    assert 190 < b["p99_after_long"] <= 200
    c.rec["send_ticks"][0, 100:300] = 1000      # 100 long windows: 400 groups, p99 not reported
    assert report._by_pace(c, {"rounds": 1, "ticks_per_ns": 1.0,
                                "group_queries": 16})["p99_after_long"] is None


def test_the_idle_gap_follows_the_reference_send(monkeypatch):
    """Before each none+gap slice its gap is the median send of the reference
    class's last FOLLOW_WINDOWS windows: this round's, else the last round's,
    and left alone before the reference has that many."""
    from types import SimpleNamespace
    from pyqueue.lab.experiments import burst_tail as bt
    k = bt.FOLLOW_WINDOWS
    sets = []
    monkeypatch.setattr(bt, "lib", SimpleNamespace(
        pyq_burst_set_gap=lambda ptr, ns: sets.append(ns) or 0))
    send = np.zeros((2, 4 * k), np.int64)
    send[0, :2 * k] = 1000                     # round 0: 2k windows of 1000 ticks, ...
    send[0, k:2 * k] = 3000                    # ... the last k of them 3000
    send[1, :k] = 5000
    ref = SimpleNamespace(name="yield1024", done=[2 * k, 0], rec={"send_ticks": send})
    gap = SimpleNamespace(name=bt.GAP_AUTO, ptr=None, gap_ns=0, check=lambda rc, what: rc)
    follow = bt._gap_follower([ref, gap], ["yield1024", bt.GAP_AUTO], {"ticks_per_ns": 2.0})
    follow(gap, 0)
    assert sets[-1] == gap.gap_ns == 1500      # median of round 0's last k, in ns
    follow(gap, 1)                             # round 1 has none yet: round 0's
    assert sets[-1] == 1500
    ref.done[1] = k
    follow(gap, 1)
    assert sets[-1] == 2500
    ref.done[:] = [k - 1, 0]
    n = len(sets)
    follow(gap, 0)                             # too few: the gap stays as it was
    assert len(sets) == n
    assert bt._gap_follower([ref], ["yield1024"], {"ticks_per_ns": 1.0}) is None
