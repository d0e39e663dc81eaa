"""The queue as a C library (the top-level Makefile): built without Python,
exporting exactly the API of pyqueue.h, and the C example runs against it."""
import os
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
