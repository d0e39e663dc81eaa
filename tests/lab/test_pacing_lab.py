"""The drain-rate and pacing experiments (pyqueue.lab, DESIGN §6.5) and the C pacer's
schedule.  Behaviour only: the schedule is checked on the recorded array, never
against wall time, and no measured delay or rate is asserted."""
import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import pyqueue
import pyqueue as pq
from pyqueue import lab
from pyqueue.__main__ import main
from pyqueue.lab.common.output import load, verify
from pyqueue.lab.runtime.threads import ConsumerThread, ProducerThread

import support

_ALLOWED = support.ALLOWED_CPUS
# Two distinct CPUs where the machine has them; unpinned otherwise.
CPUS = dict(writer_cpu=_ALLOWED[0], reader_cpu=_ALLOWED[1]) if len(_ALLOWED) > 1 else \
    dict(writer_cpu=-1, reader_cpu=-1)
SMALL = dict(work_ns=200, progress=False, **CPUS)


# ------------------------------------------------------------ the pacer ----

def reference_schedule(start_ns, n, rate, burst, per_burst=None, gap_ns=0):
    """The token bucket (GCRA) and the producer's burst loop in exact rational
    arithmetic: the schedule the C pacer must reproduce to the nanosecond."""
    interval = Fraction(10**9) / Fraction(rate)
    tolerance = (burst - 1) * interval
    tat, ready, out = None, start_ns, []
    for i in range(n):
        at = ready if tat is None else max(tat - tolerance, Fraction(ready))
        tat = (at if tat is None else max(tat, at)) + interval
        out.append(math.floor(at + Fraction(1, 2)))
        if per_burst and (i + 1) % per_burst == 0 and i + 1 < n:
            ready = out[-1] + gap_ns       # next producer burst: gap after the last schedule
    return np.array(out, dtype=np.uint64)


def paced_schedule(n, rate, pacer_burst=1, per_burst=0, gap_ns=0):
    sched, offer = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    with pq.Queue(publish="each", hot_blocks=4, spill_blocks=64) as q:
        c = ConsumerThread(q, n, idle="spin" if len(_ALLOWED) > 1 else "backoff").start()
        p = ProducerThread(q, n, size=32, rate=rate, pacer_burst=pacer_burst,
                           burst_bytes=per_burst * 32, gap_ns=gap_ns,
                           scheduled_ns=sched, offer_ns=offer).start()
        pres = p.join(30)
        c.join(30)
    assert np.all(offer >= sched)               # nothing is sent before its time
    return sched, pres


def test_schedule_is_exactly_one_interval_apart():
    sched, pres = paced_schedule(2_000, rate=250_000.0)          # 1/P = 4,000 ns exactly
    assert np.all(np.diff(sched.astype(np.int64)) == 4_000)
    assert np.array_equal(sched, reference_schedule(pres.start_ns, 2_000, 250_000.0, 1))
    assert int(sched[0]) == pres.start_ns                          # ready at once, no delay


def test_schedule_with_a_fractional_interval_does_not_drift():
    rate = 1.63e6                                                  # 1/P = 613.49... ns
    sched, pres = paced_schedule(20_000, rate)
    assert np.array_equal(sched, reference_schedule(pres.start_ns, 20_000, rate, 1))
    assert set(np.unique(np.diff(sched.astype(np.int64)))) == {613, 614}
    # message k is at start + k/P rounded: no drift however far into the stream
    exact = [pres.start_ns + Fraction(k * 10**9) / Fraction(rate) for k in (1, 999, 19_999)]
    assert [int(sched[k]) for k in (1, 999, 19_999)] == [math.floor(x + Fraction(1, 2)) for x in exact]


@pytest.mark.parametrize("gap_ns", [50_000, 3_000])      # bucket refilled / partly refilled
def test_pacer_burst_semantics(gap_ns):
    rate, bucket, per_burst = 1e6, 8, 32                  # 1/P = 1,000 ns
    sched, pres = paced_schedule(32 * 4, rate, bucket, per_burst, gap_ns)
    assert np.array_equal(sched, reference_schedule(pres.start_ns, 128, rate, bucket,
                                                    per_burst, gap_ns))
    d = np.diff(sched.astype(np.int64))
    assert np.all(d[:bucket - 1] == 0)                    # a full bucket goes back to back
    assert np.all(d[bucket - 1:per_burst - 1] == 1_000)   # then one every 1/P
    if gap_ns >= bucket * 1_000:                          # idle long enough: full bucket again
        for b in range(1, 4):
            first = b * per_burst
            assert sched[first] == sched[first - 1] + gap_ns
            assert np.all(d[first:first + bucket - 1] == 0)
            assert np.all(d[first + bucket - 1:first + per_burst - 1] == 1_000)


# ----------------------------------------------------- the experiments ----

def test_drain_rate_end_to_end(tmp_path):
    out = tmp_path / "drain"
    res = lab.drain_rate(drain_sizes=(4_000, 1_000), drain_reps=2, out=out, **SMALL)
    assert res.status == "complete" and not res.interrupted
    assert [b.n for b in res.runs] == [4_000, 1_000, 4_000, 1_000]
    for b in res.runs:
        assert b.rate == 0.0 and b.kind == "drain"
        assert np.all(b.scheduled_ns == b.scheduled_ns[0])       # unpaced: one ready time
        assert np.all(b.delay_ns >= 0)                           # dequeued after scheduled
        assert b.metrics["max_delay_ns"] == b.delay_ns.max()
        assert b.metrics["d_max"] == pytest.approx(b.n / (b.delay_ns.max() * 1e-9))
    assert res.d > 0 and res.d_conservative <= res.d
    assert set(res.results["agreement"]) == {"d_max", "d_fit", "within_10pct"}
    assert "N / max delay" in res.summary and "least-squares" in res.summary

    assert verify(out) == []
    loaded = load(out)
    assert loaded.complete and loaded.summary["experiment"] == "drain_rate"
    assert loaded.summary["progress"] == {"done": 4, "total": 4, "unit": "runs"}
    assert sorted(loaded.samples) == ["drain_n1000_r0", "drain_n1000_r1",
                                      "drain_n4000_r0", "drain_n4000_r1"]
    for b in res.runs:
        arrays = loaded.samples[b.label]
        assert set(arrays) == {"scheduled_ns", "offer_ns", "dequeue_ns", "delay_ns"}
        assert np.array_equal(arrays["dequeue_ns"], b.dequeue_ns)    # raw, unfiltered
        assert np.array_equal(arrays["delay_ns"], b.delay_ns)
    assert (out / "table.txt").read_text().startswith("Drain rate D")
    assert len(json.loads((out / "runs.json").read_text())["data"]) == 4
    assert loaded.environment  # CPU, kernel, pinning, versions...

    res.to_json(tmp_path / "drain.json")
    body = json.loads((tmp_path / "drain.json").read_text())
    assert body["experiment"] == "drain_rate" and len(body["runs"]) == 4


def test_pacing_end_to_end(tmp_path):
    out = tmp_path / "pacing"
    res = lab.pacing(burst=4_000, targets=(2e-4, 10.0), rounds=1, drain_sizes=(4_000, 1_000),
                     drain_reps=1, stream_messages=6_000, stream_segments=4, out=out, **SMALL)
    assert res.status == "complete"
    assert [b.kind for b in res.runs] == ["drain", "drain", "paced", "paced", "check",
                                          "stream", "stream"]
    rows = {row["t"]: row for row in res.results["targets"]}
    assert rows[10.0]["p_max"] == float("inf")           # T >= N/D: a tight loop is fine
    unpaced = next(b for b in res.paced if b.target_s == 10.0)
    assert unpaced.rate == 0.0
    paced = next(b for b in res.paced if b.target_s == 2e-4)
    assert paced.rate == pytest.approx(pyqueue.pacing.p_max(res.results["d_pace"], 2e-4, 4_000))
    d = np.diff(paced.scheduled_ns.astype(np.int64))       # the lab's burst is paced at P
    assert set(np.unique(d)) <= {int(1e9 / paced.rate), int(1e9 / paced.rate) + 1}
    assert rows[2e-4]["ratio"] == [paced.metrics["max_delay_ns"] * 1e-9 / 2e-4]
    streams = res.results["streams"]
    assert [s["factor"] for s in streams] == [1.1, 0.9]
    assert all(len(s["segment_max_ns"][0]) == 4 for s in streams)
    assert [b.n for b in res.streams] == [6_000, 6_000]
    for text in ("P_max = D/(1 - T·D/N)", "model@D_run", "Sustained streams"):
        assert text in res.summary

    assert verify(out) == []
    loaded = load(out)
    assert loaded.complete and loaded.summary["progress"]["done"] == 7
    assert set(loaded.samples) == {b.label for b in res.runs}
    assert loaded.results["targets"][1]["p_max"] is None        # inf is not JSON: null + note
    assert any("p_max" in n for n in loaded.summary["notes"])


def test_stop_between_runs_leaves_a_valid_partial_folder(tmp_path):
    out = tmp_path / "partial"
    calls = []
    res = lab.pacing(burst=2_000, targets=(1e-3,), rounds=3, drain_sizes=(2_000, 500),
                     drain_reps=1, stream_messages=2_000, out=out,
                     _should_stop=lambda: calls.append(1) or len(calls) > 3, **SMALL)
    total = 2 + 3 * (1 + 1 + 2)
    assert res.status == "interrupted after 3 of %d runs" % total and res.interrupted
    assert verify(out) == []
    summary = load(out).summary
    assert summary["status"] == res.status and summary["complete"] is False
    assert summary["progress"] == {"done": 3, "total": total, "unit": "runs"}


def test_ctrl_c_in_the_cli_leaves_a_valid_partial_folder(tmp_path):
    out = tmp_path / "cli"
    env = support.subprocess_env()
    cpus = ["--writer-cpu", str(CPUS["writer_cpu"]), "--reader-cpu", str(CPUS["reader_cpu"])]
    proc = subprocess.Popen([sys.executable, "-m", "pyqueue", "pacing", "--burst", "4000",
                             "--rounds", "1000", "--drain-reps", "1", "--work-ns", "200",
                             "--no-progress", "--out", str(out)] + cpus,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = support.interrupt_after_first_checkpoint(proc, out)
    assert proc.returncode == 130, stderr
    assert "stopping after the current run" in stderr
    assert verify(out) == []
    status = load(out).summary["status"]
    assert status.startswith("interrupted after ") and "output folder" in stdout


# ------------------------------------------------------------ bad input ----

@pytest.mark.parametrize("fn, kwargs, name", [
    ("drain_rate", dict(drain_sizes=(1,)), "drain_sizes"),
    ("drain_rate", dict(drain_sizes=()), "drain_sizes"),
    ("drain_rate", dict(drain_sizes=(100.5,)), "drain_sizes"),
    ("drain_rate", dict(drain_reps=0), "drain_reps"),
    ("drain_rate", dict(work_ns=-1), "work_ns"),
    ("drain_rate", dict(msg_size=0), "msg_size"),
    ("drain_rate", dict(msg_size=3), "msg_size"),      # no room for the sequence number
    ("drain_rate", dict(writer_cpu=0, reader_cpu=0), "reader_cpu"),
    ("pacing", dict(burst=1), "burst"),
    ("pacing", dict(burst=1000.0), "burst"),
    ("pacing", dict(msg_size=7), "msg_size"),
    ("pacing", dict(targets=(1e-3, 0)), "targets"),
    ("pacing", dict(targets=()), "targets"),
    ("pacing", dict(targets=("soon",)), "targets"),
    ("pacing", dict(rounds=0), "rounds"),
    ("pacing", dict(drain_sizes=(0, 10)), "drain_sizes"),
    ("pacing", dict(drain_reps=0), "drain_reps"),
    ("pacing", dict(pace_with="optimistic"), "pace_with"),
    ("pacing", dict(d_margin=1.0), "d_margin"),
    ("pacing", dict(d_margin=-0.1), "d_margin"),
    ("pacing", dict(stream_factors=(1.1, -0.9)), "stream_factors"),
    ("pacing", dict(stream_messages=1), "stream_messages"),
    ("pacing", dict(stream_messages=10, stream_segments=11), "stream_segments"),
    ("pacing", dict(writer_cpu=0, reader_cpu=0), "reader_cpu"),
    ("pacing", dict(reader_cpu=4096), "reader_cpu"),
    ("pacing", dict(writer_cpu="0"), "writer_cpu"),
    ("pacing", dict(fifo_priority=100), "fifo_priority"),
    ("pacing", dict(block_size=100), "block_size"),
])
def test_bad_input_raises_value_error_naming_it(tmp_path, fn, kwargs, name):
    kw = dict(SMALL, out=tmp_path / "never")
    kw.update(kwargs)
    with pytest.raises(ValueError, match=name):
        getattr(lab, fn)(**kw)
    assert not (tmp_path / "never").exists()          # refused before anything ran


def test_a_non_empty_folder_is_refused(tmp_path):
    (tmp_path / "mine.txt").write_text("not an output folder")
    with pytest.raises(FileExistsError):
        lab.drain_rate(drain_sizes=(1_000, 500), drain_reps=1, out=tmp_path, **SMALL)
    assert (tmp_path / "mine.txt").exists()


def test_cli_rejects_bad_input(capsys, tmp_path):
    assert main(["pacing", "--burst", "1", "--no-progress"]) == 2
    assert "--burst: burst must be" in capsys.readouterr().err
    assert main(["pacing", "--targets", "1ms,soon", "--no-progress"]) == 2
    # A reported bug: --size 3 ran in full; a message that short cannot carry its
    # sequence number, and the range refuses it before anything is measured.
    for command in ("pacing", "drain-rate"):
        out = tmp_path / command
        assert main([command, "--size", "3", "--no-progress", "--out", str(out)]) == 2
        assert "--msg-size: msg_size must be in [8, " in capsys.readouterr().err
        assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("run", [lab.pacing, lab.drain_rate])
def test_a_message_larger_than_the_block_is_refused_before_anything_starts(run, tmp_path):
    # The rig's blocks hold block_size - 8 bytes; a larger size is a ValueError at the
    # call, before the output folder or the first run exist.
    with pytest.raises(ValueError, match=r"msg_size must be in \[8, 4088\] \(the queue's "
                                         r"block_size - 8\), got 5000"):
        run(msg_size=5000, out=str(tmp_path / "out"), progress=False)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"msg_size must be in \[8, 8184\]"):
        run(msg_size=9000, block_size=8192, out=str(tmp_path / "out"), progress=False)


# ------------------------------------------------------ the parameters ----

def test_the_old_keywords_still_work_with_a_warning():
    with pytest.warns(DeprecationWarning) as caught:
        p = lab.PacingParams.of(n=1000, size=64, producer_cpu=-1, consumer_cpu=-1,
                                config=pq.QueueConfig(publish="max"))
    assert sorted(str(w.message) for w in caught) == [
        "config is now called queue", "consumer_cpu is now called reader_cpu",
        "n is now called burst", "producer_cpu is now called writer_cpu",
        "size is now called msg_size"]
    assert (p.burst, p.msg_size, p.writer_cpu, p.reader_cpu) == (1000, 64, -1, -1)
    assert p.queue.publish == "max"
    with pytest.warns(DeprecationWarning) as caught:
        d = lab.DrainRateParams.of(sizes=(400, 100), reps=1)
    assert len(caught) == 2
    assert (d.drain_sizes, d.drain_reps) == ((400, 100), 1)
    with pytest.raises(TypeError, match="unknown parameter n;"):
        lab.drain_rate(n=1000)                  # drain_rate never had an n


def test_defaults_that_follow_n_are_recorded_explicit():
    p = lab.PacingParams(burst=1000)
    assert (p.drain_sizes, p.stream_messages) == (None, None)
    r = p.resolved()
    assert (r.drain_sizes, r.stream_messages) == ((1000, 250), 4000)
    assert r.replace(burst=2000).drain_sizes == (1000, 250)      # explicit now: kept
    assert p.replace(burst=2000).resolved().drain_sizes == (2000, 500)
    assert p.drain() == lab.DrainRateParams(burst=1000)
    with pytest.raises(ValueError, match=r"stream_segments must be <= stream_messages \(8\)"):
        lab.PacingParams(burst=2, stream_segments=9)


def test_json_params_are_the_run_params_and_the_queue_as_run_is_a_result(tmp_path):
    out = tmp_path / "drain"
    res = lab.drain_rate(burst=2_000, drain_reps=1, out=out, hot_blocks=2, **SMALL)
    p = lab.DrainRateParams.of(burst=2_000, drain_reps=1, hot_blocks=2, **CPUS,
                               work_ns=SMALL["work_ns"]).resolved()
    assert res.params == p.to_json() == load(out).params
    assert res.params["drain_sizes"] == [2_000, 500]
    assert res.params["queue"]["spill_blocks"] == pq.QueueConfig().spill_blocks   # as asked
    queue = res.results["queue"]                                                   # as run
    assert queue["hot_blocks"] == 2 and queue["publish"] == "each" and queue["prefault"]
    assert 16 < queue["spill_blocks"] < pq.QueueConfig().spill_blocks
    assert lab.DrainRateParams.from_json(res.params) == p


def test_drain_only_is_the_drain_rate_command(tmp_path, capsys):
    argv = ["--burst", "2000", "--drain-reps", "1", "--work-ns", "200", "--no-progress",
            "--writer-cpu", str(CPUS["writer_cpu"]), "--reader-cpu", str(CPUS["reader_cpu"])]
    assert main(["pacing", "--drain-only", *argv, "--out", str(tmp_path / "a")]) == 0
    assert main(["drain-rate", *argv, "--out", str(tmp_path / "b")]) == 0
    a, b = load(tmp_path / "a"), load(tmp_path / "b")
    assert a.summary["experiment"] == b.summary["experiment"] == "drain_rate"
    assert a.params == b.params and a.params["drain_sizes"] == [2000, 500]
    assert "Drain rate D" in capsys.readouterr().out
