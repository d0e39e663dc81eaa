"""bench-xproc end to end on tiny slices, each run a subprocess with a timeout:
every row is a figure or says why not, the C rows' loops deliver every message
across processes, the futex rows' sleepers really slept and returned after the
hand-over that woke them, a Ctrl-C leaves a valid interrupted folder, and the
frame rows run alone at the frame sizes asked for, each a figure or a reason.
No figure is asserted."""
import json
import os
import subprocess
import sys

import pytest

import support
from pyqueue.lab.common import output
from pyqueue.lab.experiments import bench_xproc as X
from pyqueue.lab.experiments.bench_xproc import QUICK
from pyqueue.lab.reports import bench_xproc as report

# A --quick run's round trips a size: enough for p99 to rest on 10 beyond it.
QUICK_TRIPS = QUICK["round_trips"][0]

pytestmark = pytest.mark.two_cpus(reason="the writer and reader processes are pinned apart")


def _run(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "pyqueue", "bench-xproc", "--no-progress",
                           *args], capture_output=True, text=True, timeout=timeout,
                          env=env or support.subprocess_env(), cwd=support.ROOT)


def _cpus():
    return ["--writer-cpu", str(support.ALLOWED_CPUS[0]),
            "--reader-cpu", str(support.ALLOWED_CPUS[1])]


def test_c_rows_across_processes_and_the_futex_wake_ups(tmp_path):
    out = tmp_path / "run"
    p = _run("--quick", *_cpus(), "--only", "c-,wake", "--wakeups", "8", "--out", str(out),
             "--json", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert output.verify(out) == []
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["status"] == "complete"
    s = doc["summary"]
    for size in ("32", "1024"):
        rows = s["throughput"][size]
        assert set(rows) == {"c-shared-msg", "c-local-msg", "c-shared-batch", "c-local-batch"}
        for e in rows.values():       # the reader got every message (else the run fails)
            assert e["median"] > 0 and e["regimes"], e
        for e in s["roundtrip"][size].values():
            assert e["samples"] == QUICK_TRIPS and e["p50_ns"] > 0
    for e in s["wakeup"]["32"].values():
        assert e["tries"] == 8 and e["slept"] >= 1, e   # at least one sample was a real sleep
        # 8 wake-ups are too few for a p50 (10 beyond it): said, not printed.
        assert e["p50_ns"] is None and e["median"] is None and e["not_reported"]["p50"].startswith(
            "not enough samples (n=%d;" % e["samples"]), e
    # Every kept wake-up sample ends after the hand-over that woke it.
    for name in ("wake-reader-32", "wake-writer-32"):
        arr = output.load_array(out / "samples" / name / "ns.npy.gz")
        assert arr.size >= 1 and (arr > 0).all()
    # Each C target is measured, or -- a --quick run has one round, and the host may
    # move the CPUs inside it -- says the placement gave no round with both rows.
    mine = [t for t in s["targets"] if t["numerator"] in ("c-shared-batch", "rt-c-shared")]
    assert {t["numerator"] for t in mine} == {"c-shared-batch", "rt-c-shared"}
    for t in mine:
        assert "ratio" in t or t["not_measured"] == "no round with both in one placement", t
    assert "futex wake-up" in p.stdout and "output folder" in p.stdout  # --json PATH: tables too
    # pyqueue.lab.load() gives the folder back as the result bench_xproc() returns.
    from pyqueue import lab
    back = lab.load(out)
    assert type(back).__name__ == "BenchXprocResult" and back.status == "complete"
    assert back.summary["throughput"] == s["throughput"] and len(back.slices) > 0
    assert set(back.samples) >= {"wake-reader-32", "wake-writer-32"}
    assert "futex wake-up" in back.text()


def test_a_peer_that_does_not_import_is_not_installed(tmp_path):
    # A module that fails to import shadows the real one in the child.
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "iceoryx2.py").write_text("raise ImportError('blocked by the test')\n")
    env = support.subprocess_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fake), env["PYTHONPATH"]])
    # "oryx": every row whose id holds it (a row's whole id would select that row alone).
    p = _run("--quick", *_cpus(), "--only", "oryx,mp-simple", "--json", env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads(p.stdout)["summary"]
    for size in ("32", "1024"):
        assert s["throughput"][size]["iceoryx2"]["reason"] == \
            "not installed: blocked by the test"
        assert s["roundtrip"][size]["rt-iceoryx2"]["reason"].startswith("not installed")
        assert s["throughput"][size]["mp-simple"]["median"] > 0
    iox = [t for t in s["targets"] if t["denominator"] == "rt-iceoryx2"]
    assert iox and all(t["not_measured"].startswith("not installed") for t in iox)
    # Its frame row too, at every frame size (--only oryx selects it), and the ratio.
    assert {size: rows["iceoryx2-frames"]["reason"] for size, rows in s["frames"].items()} == \
        {str(size): "not installed: blocked by the test" for size in X.FRAME_SIZES}
    assert all(t["not_measured"].startswith("not installed") for t in s["frame_ratios"]
               if t["denominator"] == "iceoryx2-frames")


def test_iceoryx2_rows_when_it_is_installed(tmp_path):
    pytest.importorskip("iceoryx2")
    p = _run("--quick", *_cpus(), "--only", "iceoryx2,rt-iceoryx2,rt-py-shared", "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads(p.stdout)["summary"]
    for size in ("32", "1024"):
        assert s["throughput"][size]["iceoryx2"]["median"] > 0
        assert s["roundtrip"][size]["rt-iceoryx2"]["samples"] == QUICK_TRIPS
    # Measured, or the one reason a --quick run's single round can give (the host moved
    # the CPUs inside it), as for the C rows above.
    mine = [t for t in s["targets"] if t["denominator"] == "rt-iceoryx2"]
    assert mine
    for t in mine:
        assert "ratio" in t or t["not_measured"] == "no round with both in one placement", t


def test_ctrl_c_keeps_a_valid_interrupted_folder(tmp_path):
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "pyqueue", "bench-xproc", "--no-progress",
                          *_cpus(), "--rounds", "500", "--only", "c-shared-msg,rt-c-shared",
                          "--c-messages", "20000", "--round-trips", "100", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=support.subprocess_env(), cwd=support.ROOT)
    stdout, stderr = support.interrupt_after_first_checkpoint(p, out)
    assert p.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    assert output.verify(out) == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"].startswith("interrupted after"), summary["status"]
    assert summary["results"]["rounds_done"] >= 1


def test_the_put_get_rows_their_users_write(tmp_path):
    # Objects through pickle and get_many, on pyqueue and on the peers (issue 46).
    p = _run("--quick", *_cpus(), "--only", "py-shared-many,py-shared-obj,-obj,faster-fifo",
             "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads(p.stdout)["summary"]
    ff = "faster_fifo" in sys.modules or __import__("importlib").util.find_spec("faster_fifo")
    for size in ("32", "1024"):
        rows = s["throughput"][size]
        for row in ("py-shared-many", "py-shared-obj", "py-shared-obj-many", "mp-queue-obj"):
            assert rows[row]["median"] > 0, (size, row)
        if ff:
            assert rows["faster-fifo-obj"]["median"] > 0
    mine = [t for t in s["targets"] if t["numerator"] in ("py-shared-many", "py-shared-obj")]
    assert {t["denominator"] for t in mine} >= {"mp-queue-obj"} | (
        {"faster-fifo", "faster-fifo-obj"} if ff else set())


def test_the_asyncio_rows(tmp_path):
    p = _run("--quick", *_cpus(), "--only", "aio", "--round-trips", "100",
             "--idle-ms", "200", "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads(p.stdout)["summary"]
    for size in ("32", "1024"):
        assert s["roundtrip"][size]["rt-aio-shared"]["samples"] == 100
    idle = s["idle"]["32"]
    assert set(idle) == {"idle-aio-shared", "idle-aio-local", "idle-zmq-aio"}
    for row in ("idle-aio-shared", "idle-aio-local"):
        assert idle[row]["median"] >= 0 and "met" in idle[row]
    zmq = "zmq" in sys.modules or __import__("importlib").util.find_spec("zmq")
    mine = [t for t in s["targets"] if t["numerator"] == "rt-aio-shared"]
    assert len(mine) == 2
    for t in mine:
        assert "ratio" in t or t["not_measured"] == "no round with both in one placement" \
            or (not zmq and t["not_measured"].startswith("not installed")), t


FRAME_ROWS = ("py-bytes", "py-bytes-blocks", "py-view", "py-array", "py-bytes-fill",
              "py-bytes-blocks-fill", "py-view-fill", "py-bytes-fill-sum",
              "py-bytes-blocks-fill-sum", "py-view-fill-sum", "mp-queue-frames",
              "faster-fifo-frames", "zmq-frames", "iceoryx2-frames")


def _measured_or_why(e):
    return (e.get("median") or 0) > 0 and e["mb_s"] > 0 or \
        e.get("reason", "").startswith(("not installed: ", "not measured: "))


def test_the_frame_rows_at_a_small_and_a_large_frame_size(tmp_path):
    # --only frames: the frame rows alone, at 64 KiB and 1 MiB, a handful of messages each
    # (the summing readers check every frame's filled value, or the run fails).
    out = tmp_path / "run"
    p = _run("--quick", *_cpus(), "--only", "frames", "--frame-sizes", "1048576,65536",
             "--frame-messages", "6,12", "--out", str(out), "--json", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert output.verify(out) == []
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["params"]["frame_sizes"] == [1048576, 65536]
    assert doc["params"]["frame_messages"] == [6, 12]
    s = doc["summary"]
    assert not any(s[kind] for kind in ("throughput", "roundtrip", "wakeup", "idle"))
    assert set(s["frames"]) == {"65536", "1048576"}
    for size, rows in s["frames"].items():
        assert set(rows) == set(FRAME_ROWS), size
        for row, e in rows.items():
            assert _measured_or_why(e), (size, row, e)
            if "reason" not in e:
                assert sum(c["slices"] for c in e["by_placement"].values()) == e["slices"] == 1
    for row in ("py-bytes", "py-bytes-blocks", "py-view", "py-view-fill", "py-view-fill-sum"):
        assert s["frames"]["1048576"][row]["mb_s"] > 0
    # Every frame ratio at both sizes: a ratio, or the reason it has none.
    assert {(t["numerator"], t["denominator"], t["size"]) for t in s["frame_ratios"]} == {
        (num, den, size) for _, num, den, _ in report.FRAME_RATIOS for size in (65536, 1 << 20)}
    for t in s["frame_ratios"]:
        assert "ratio" in t or t["not_measured"] == "no round with both in one placement" or \
            t["not_measured"].startswith("not installed"), t
    table = (out / "table.md").read_text()
    assert "frames, MB/s" in table and "frames, ratio within a round" in table


def test_the_frame_rows_from_python_by_name():
    # lab.bench_xproc(only=[...], frame_sizes=[...]) in a process of its own (it forks).
    code = ("import json, pyqueue.lab as lab\n"
            "r = lab.bench_xproc(only=['py-view', 'py-bytes'], frame_sizes=[65536], "
            "frame_messages=8, rounds=1, writer_cpu=%d, reader_cpu=%d, progress=False)\n"
            "print(json.dumps({'status': r.status, 'frames': r.summary['frames'], "
            "'throughput': r.summary['throughput']}))\n"
            % (support.ALLOWED_CPUS[0], support.ALLOWED_CPUS[1]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=support.subprocess_env(), cwd=support.ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout)
    assert got["status"] == "complete" and got["throughput"] == {}
    assert set(got["frames"]["65536"]) == {"py-view", "py-bytes"}     # ids: those rows alone
    assert all(e["mb_s"] > 0 for e in got["frames"]["65536"].values())


def test_bad_frame_flags_name_the_parameter():
    for args, name in ((["--frame-sizes", "0"], "frame_sizes"),
                       (["--frame-sizes", "65536,65536"], "frame_sizes"),
                       (["--frame-sizes", str(1 << 27)], "frame_sizes"),
                       (["--frame-sizes", "1024,65536", "--frame-messages", "1,2,3"],
                        "frame_messages")):
        p = _run(*_cpus(), "--only", "frames", *args, timeout=60)
        assert p.returncode == 2 and name in p.stderr, (args, p.stderr[-2000:])
