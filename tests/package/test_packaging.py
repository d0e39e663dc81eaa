"""The sdist carries what a build from it needs (MANIFEST.in), and pip installs
pyqueue from it alone -- not only from a clone, where every file is at hand.

One sdist serves the module, and one wheel pip builds from it serves both the
wheel's checks and the install: pip installs an sdist by building exactly that
wheel (PEP 517, in an isolated build environment) and installing it, so building
it twice, ~50 s each on two CPUs, checked nothing more."""
import glob
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

import support

ROOT = support.ROOT


def _sdist(out):
    # From a copy without build products: an egg-info left in the tree by an
    # earlier build feeds its file list (SOURCES.txt) into the new sdist.
    src = os.path.join(str(out), "src")
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        "*.so", "*.o", "bin", "results", "out"))
    proc = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(out)], cwd=src,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (path,) = glob.glob(os.path.join(str(out), "pyqueue[-_]lab-*.tar.gz"))
    return path


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    return _sdist(tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def wheel(sdist, tmp_path_factory):
    """The wheel pip builds from the sdist alone, as `pip install <sdist>` does."""
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "-w", str(out), sdist],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    (path,) = glob.glob(str(out / "pyqueue_lab-*.whl"))
    return path


def test_sdist_has_every_source(sdist):
    with tarfile.open(sdist) as t:
        have = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    want = {"README.md", "Makefile", "examples/c/two_threads.c",
            "benchmarks/burst/run_burst_tail_1m.py", "docs/DESIGN.md", "docs/CONTRIBUTING.md",
            "LICENSE", "pyqueue/py.typed", "pyqueue/queue.pyi", "pyqueue/config.pyi",
            "pyqueue/_pyq.pyi", "tests/conftest.py", "tests/support.py"}
    for d in ("tests", "notebooks", "docs"):
        for sub, _, files in os.walk(os.path.join(ROOT, d)):
            want |= {os.path.relpath(os.path.join(sub, f), ROOT) for f in files
                     if f.endswith((".py", ".ipynb", ".md", ".c"))
                     and "__pycache__" not in sub and ".ipynb_checkpoints" not in sub}
    for d, _, files in os.walk(os.path.join(ROOT, "csrc")):
        want |= {os.path.relpath(os.path.join(d, f), ROOT) for f in files
                 if f.endswith((".c", ".cpp", ".h", ".mk"))}
    assert want <= have, "missing from the sdist: %s" % sorted(want - have)
    assert not [n for n in have if n.endswith((".o", ".so", ".pyc"))]


def test_the_version_is_written_once():
    # PYQ_VERSION in the public C header says it; setup.py puts it in the
    # package metadata, which pyqueue.__version__ reads.
    import re

    import pyqueue
    from pyqueue._pyq import ffi, lib
    with open(os.path.join(ROOT, "csrc", "include", "pyqueue.h")) as f:
        declared = re.search(r'^#define PYQ_VERSION "([^"]+)"', f.read(), re.M).group(1)
    assert pyqueue.__version__ == declared
    assert ffi.string(lib.pyq_version()).decode() == declared
    for path in ("pyproject.toml", os.path.join("pyqueue", "__init__.py")):
        with open(os.path.join(ROOT, path)) as f:
            assert declared not in f.read(), path


@pytest.mark.slow
def test_pip_installs_from_the_sdist(wheel, tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--target", str(site), wheel],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    code = ("import pyqueue as pq\n"
            "print(pq.__file__)\n"
            "assert pq.__version__ != 'unknown', pq.__version__\n"
            "with pq.Queue(publish='each') as q:\n"
            "    q.writer.put(b'from the sdist')\n"     # the C-API extension, built too
            "    print(q.reader.get(timeout=1).decode())\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(site)))
    assert out.returncode == 0, out.stderr[-3000:]
    where, msg = out.stdout.split()[0], out.stdout.splitlines()[1]
    assert where.startswith(str(site)) and msg == "from the sdist"


def test_api_reference_names_every_public_name():
    import pyqueue
    import pyqueue.lab as lab
    with open(os.path.join(ROOT, "docs", "API.md")) as f:
        text = f.read()
    for name in pyqueue.__all__:
        assert "`pyqueue.%s" % name in text, name
    for name in lab._EXPORTS:
        assert "`pyqueue.lab.%s" % name in text, name


def test_typed_and_licensed():
    import pyqueue
    here = os.path.dirname(pyqueue.__file__)
    assert os.path.isfile(os.path.join(here, "py.typed"))
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert f.read().startswith("MIT License")


@pytest.mark.slow
def test_the_wheel_is_abi3_and_typed(wheel):
    # _pyq (cffi) and _pyext (limited API 3.11) use the stable ABI, so one wheel
    # serves every CPython >= 3.11.
    import zipfile
    assert "-cp311-abi3-" in os.path.basename(wheel)
    names = zipfile.ZipFile(wheel).namelist()
    assert "pyqueue/py.typed" in names and "pyqueue/_pyq.abi3.so" in names
    assert {"pyqueue/queue.pyi", "pyqueue/config.pyi", "pyqueue/_pyq.pyi"} <= set(names)
    assert "pyqueue/_pyext.abi3.so" in names
    assert any(n.endswith("/LICENSE") for n in names)
