"""The queue as a C library (the top-level Makefile): built without Python,
exporting exactly the API of pyqueue.h, and the C example runs against it."""
import os
import platform
import re
import shutil
import subprocess

import pytest

import support

ROOT = support.ROOT
HEADER = os.path.join(ROOT, "csrc", "include", "pyqueue.h")

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                                reason="needs make and a C compiler")


def _make(build, *targets):
    proc = subprocess.run(["make", "-s", "-C", ROOT, "BUILD=%s" % build, *targets],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


def _api():
    with open(HEADER) as f:
        return set(re.findall(r"\b(pyq_\w+)\(", f.read()))


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    b = str(tmp_path_factory.mktemp("clib"))
    _make(b, "lib", os.path.join(b, "two_threads"))
    return b


def test_library_exports_exactly_the_api(build):
    for lib in ("libpyqueue.a", "libpyqueue.so"):
        assert os.path.getsize(os.path.join(build, lib)) > 0
    if shutil.which("nm") is None:
        pytest.skip("needs nm")
    out = subprocess.run(["nm", "-D", "--defined-only", os.path.join(build, "libpyqueue.so")],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert exported == _api()


@pytest.mark.parametrize("n", ["1", "100000"])
def test_example_delivers_every_message_in_order(build, n):
    proc = subprocess.run([os.path.join(build, "two_threads"), n], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ("two_threads: %s messages of 32 bytes arrived in order" % n) in proc.stdout


def test_example_links_against_the_shared_library(build, tmp_path):
    exe = str(tmp_path / "two_threads_shared")
    subprocess.run(["cc", "-O2", "-I" + os.path.join(ROOT, "csrc", "include"),
                    os.path.join(ROOT, "examples", "c", "two_threads.c"), "-L" + build,
                    "-lpyqueue", "-pthread", "-o", exe], check=True, timeout=120)
    proc = subprocess.run([exe, "5000"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LD_LIBRARY_PATH=build))
    assert proc.returncode == 0, proc.stderr
    assert "5000 messages of 32 bytes arrived in order" in proc.stdout


def _bench_tool(build, tmp_path, name):
    """benchmarks/peers/NAME.c built against the static library, warnings as errors."""
    exe = str(tmp_path / name)
    subprocess.run(["cc", "-O2", "-std=gnu11", "-fno-strict-aliasing", "-Wall", "-Wextra",
                    "-Werror", "-I" + os.path.join(ROOT, "csrc", "include"),
                    os.path.join(ROOT, "benchmarks", "peers", name + ".c"),
                    os.path.join(build, "libpyqueue.a"), "-pthread", "-o", exe],
                   check=True, timeout=120)
    return exe


def _rounds(exe, args, names):
    """Run a bench tool; its per-round lines as {name: figure} (every name, in
    order), and its last line."""
    proc = subprocess.run([exe] + args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    got = [dict(f.split("=") for f in line.split(":", 1)[1].split()) for line in lines[:-1]]
    assert all(list(g) == names for g in got), proc.stdout
    return got, lines[-1]


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="rdtsc and PAUSE: x86-64 only")
def test_rt_shape_runs_every_shape_and_checks_every_message(build, tmp_path):
    """benchmarks/peers/rt_shape.c (docs/BENCHMARKS.md, "What the driver got
    wrong": round trips on an Intel guest) builds against the C library and runs
    every shape to the end: one line per
    round with p10/p50/p90 per shape, the median line with every shape (each
    echo checks every sequence number and exits 1 on a wrong one); bad
    arguments are refused with exit 2."""
    exe = _bench_tool(build, tmp_path, "rt_shape")
    shapes = ["pp_spin", "pp_pause", "pq_inline", "pq_call", "pq_ptr", "pq_copy", "pq_pause",
              "pq_wait", "pq_scan", "pq_scan_each", "fl_ring", "fl_ring_pfw"]
    got, last = _rounds(exe, ["2"] + shapes, shapes)
    assert len(got) == 2
    for g in got:
        for v in g.values():
            p10, p50, p90 = map(float, v.split("/"))
            assert 0 < p10 <= p50 <= p90, g
    assert last.startswith("median p50") and all(s + "=" in last for s in shapes)
    for bad in (["1", "pq_fast"], ["0", "pp_spin"], ["1"]):
        proc = subprocess.run([exe] + bad, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "rt_shape" in proc.stderr, bad


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
def test_writer_fill_runs_every_queue_and_checks_every_message(build, tmp_path):
    """benchmarks/peers/writer_fill.c (docs/BENCHMARKS.md, "The writer alone")
    builds against the C library and runs each queue and stamp mode to the end,
    the fills and (--reader) the drains:
    one line per round with a figure per spec, the ratio line with the first
    spec at 1.000 (its reader checks every sequence number and exits 1 on a
    wrong one); a bad spec is refused with exit 2."""
    exe = _bench_tool(build, tmp_path, "writer_fill")
    specs = ["yardstick,batch,4,1,4096", "yardstick_shuffled,each,4,1,4096",
             "pyqueue,each,4,0,4096", "pyqueue_move16,batch,256,1,8192",
             "yardstick_unread,batch,4,1,4096"]
    got, last = _rounds(exe, ["2"] + specs, specs)
    assert len(got) == 2 and all(float(v) > 0 for g in got for v in g.values()), got
    assert last.startswith("ratio to the first") and (specs[0] + "=1.000") in last
    got, last = _rounds(exe, ["--reader", "1"] + specs[:3], specs[:3])   # the drains
    assert len(got) == 1 and all(float(v) > 0 for v in got[0].values()), got
    for bad in (["--reader"], ["1", "pyqueue,batch,4,1,1000"], ["1", "pyqueue,batch,4,1,65536"],
                ["1", "ring,batch,4,1,4096"], ["0", specs[0]]):
        proc = subprocess.run([exe] + bad, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "writer_fill" in proc.stderr, bad
