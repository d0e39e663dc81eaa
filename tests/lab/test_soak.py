"""The soak (pyqueue.lab.experiments.soak, csrc/stress/soak.c): a CI-length run that must check
every message without an error, its output folder, and proof that its checker
catches a message that is not the next one of the stream.  Ctrl-C is in test_failures.py."""
import os
import subprocess
import sys

import pytest

import pyqueue as pq
from pyqueue.lab._lab import ffi, lib
from pyqueue.lab.common import output as _output
from pyqueue.lab.experiments.soak import SoakParams, soak

import support

ROOT = support.ROOT
SECONDS = float(os.environ.get("PYQ_SOAK_SECONDS", "60"))


def params(q, first_seq=0, n=2000):
    p = ffi.new("pyq_soak_params_t *")
    p.seed = 1
    p.first_seq = first_seq
    p.duration_ns = 10**9
    p.max_messages = n
    p.min_len, p.max_len = 0, q.block_size - 8   # the soak drives the block framing
    p.flush_every = 10
    p.max_poll = 16
    p.stall_ns = 300_000_000
    p.writer_cpu = p.reader_cpu = -1
    return p


@pytest.mark.slow
def test_soak_ci_run():
    res = soak(seconds=SECONDS, seed=8, progress=False)
    assert res.ok, res.error
    assert res.status == "complete"
    t = res.totals
    assert t["read"] == t["written"] > 0
    assert t["takes_spill"] > 0, "the reader pauses should spill into tier 2"
    assert t["full_events"] > 0 and t["flushes"] > 0 and t["aborts"] > 0
    print("\n" + res.table())


def test_soak_cli_writes_a_valid_folder(tmp_path):
    out = tmp_path / "soak"
    proc = subprocess.run([sys.executable, "-m", "pyqueue", "soak", "--seconds", "2",
                           "--period-s", "1", "--slice-s", "0.25", "--seed", "3", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "status            complete" in proc.stdout
    assert "--seed 3 --period-s 1 --slice-s 0.25" in proc.stdout
    loaded = _output.load(out)
    assert loaded.complete and loaded.status == "complete"
    assert loaded.params == SoakParams(seconds=2, seed=3, period_s=1, slice_s=0.25).to_json()
    s = loaded.results["summary"]
    assert s["messages_checked"] == s["totals"]["written"] > 0 and s["error"] == ""
    assert (out / "summary.txt").read_text().splitlines()[2].startswith("status")


def test_soak_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"seconds must be in \(0, inf\), got 0"):
        soak(seconds=0)
    with pytest.raises(ValueError, match=r"seconds must be in \(0, inf\), got inf"):
        soak(seconds=float("inf"))              # a soak is bounded
    with pytest.raises(ValueError, match=r"slice_s must be at most period_s \(1\), got 2"):
        soak(seconds=1, slice_s=2, period_s=1)
    with pytest.raises(ValueError, match=r"seed must be in \[0, "):
        soak(seconds=1, seed=-1)
    with pytest.raises(TypeError, match="unknown parameter period;"):
        soak(period=1)
    with pq.Queue(block_size=256, spill_blocks=4) as q:
        p = params(q)
        p.max_len = q.max_message + 1
        r = ffi.new("pyq_soak_result_t *")
        assert lib.pyq_soak_run(q.c_handle, p, r) == lib.PYQ_EINVAL


def test_a_seed_not_given_is_drawn_and_recorded():
    res = soak(seconds=0.2, slice_s=0.1, progress=False)
    assert res.ok and isinstance(res.params["seed"], int)
    assert res.params == SoakParams(seconds=0.2, slice_s=0.1, seed=res.params["seed"]).to_json()
    assert SoakParams.quick() == SoakParams(seconds=3, period_s=1)


def test_checker_catches_a_stray_message():
    # A message the slice did not write sits first in the queue: wrong seq.
    with pq.Queue(block_size=256, spill_blocks=8, publish="each") as q:
        q.writer.write(b"\x07" * 40)
        r = ffi.new("pyq_soak_result_t *")
        assert lib.pyq_soak_run(q.c_handle, params(q), r) == lib.PYQ_EBADMSG
        assert r.error_side == 2 and r.error_seq == 0 and r.read == 0


def test_checker_catches_a_foreign_message_between_slices():
    with pq.Queue(block_size=256, spill_blocks=8) as q:
        r = ffi.new("pyq_soak_result_t *")
        assert lib.pyq_soak_run(q.c_handle, params(q), r) == 0
        assert r.read == r.written == 2000
        # Slices continue one stream: the next expects seq 2000 and finds a
        # message that is not it.
        q.writer.write(bytes(16))
        q.writer.flush()
        p = params(q, first_seq=2000)
        assert lib.pyq_soak_run(q.c_handle, p, r) == lib.PYQ_EBADMSG
        assert r.error_seq == 2000
