"""Output folders built to hurt (SPEC §3.9: the lab's output folders are untrusted
input).  Each case runs in its own process with a timeout: a FIFO, a link out of
the folder, a decompression bomb, a JSON nested 100,000 deep, an output folder
inside another run's -- each gets a clear error (exit 2 at the command line), never
a hang, a traceback, a read outside the folder or gigabytes of memory."""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import support
from pyqueue.lab.common import output as out

TIMEOUT = 60


def _folder(path, **arrays):
    f = out.OutputFolder(path, "x", {"a": 1}, total=1)
    f.save_samples("g", **(arrays or {"v": np.arange(10, dtype=np.uint64)}))
    f.finish({"figure": 1.0}, 1)
    return path


def _reindex(path, rel, drop_raw=False):
    """Make index.json agree with the file ``rel`` as it is now (so that only the
    file's content, not a checksum, is what the reader meets)."""
    index = json.loads((path / "index.json").read_text())
    data = (path / rel).read_bytes()
    entry = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    raw = index["files"].get(rel, {}).get("raw_size")
    if raw is not None and not drop_raw:
        entry["raw_size"] = raw
    index["files"][rel] = entry
    (path / "index.json").write_text(json.dumps(index))


def _py(code, *args):
    """Run ``code`` in a fresh interpreter; (returncode, stdout, stderr)."""
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                       text=True, timeout=TIMEOUT, env=support.subprocess_env())
    return r.returncode, r.stdout, r.stderr


LOAD = ("import sys\nfrom pyqueue.lab.common import output as out\n"
        "try:\n    out.load(sys.argv[1])\nexcept ValueError as e:\n    print('REFUSED', e)\n")
VERIFY = ("import sys\nfrom pyqueue.lab.common import output as out\n"
          "print('PROBLEMS', out.verify(sys.argv[1]))\n")


def _cli(*argv):
    r = subprocess.run([sys.executable, "-m", "pyqueue", *map(str, argv)], capture_output=True,
                       text=True, timeout=TIMEOUT, env=support.subprocess_env())
    return r.returncode, r.stdout, r.stderr


def test_a_fifo_index_is_refused_not_waited_on(tmp_path):
    run = _folder(tmp_path / "run")
    os.unlink(run / "index.json")
    os.mkfifo(run / "index.json")
    rc, so, se = _py(LOAD, run)
    assert rc == 0 and "REFUSED" in so and "not a regular file" in so, se
    rc, so, se = _py(VERIFY, run)
    assert rc == 0 and "not a regular file" in so, se
    with pytest.raises(FileExistsError, match="not a pyqueue output index"):   # --overwrite
        out.OutputFolder(run, "x", {}, total=1, overwrite=True)
    assert os.path.exists(run / "summary.json")
    rc, so, se = _cli("compare", run, run)
    assert rc == 2 and "Traceback" not in se, se


def test_a_fifo_summary_is_refused(tmp_path):
    run = _folder(tmp_path / "run")
    os.unlink(run / "summary.json")
    os.mkfifo(run / "summary.json")
    rc, so, se = _py(LOAD, run)
    assert rc == 0 and "REFUSED" in so, se


def test_a_linked_samples_folder_is_not_followed(tmp_path):
    outside = _folder(tmp_path / "other", v=np.full(10, 7, np.uint64))
    run = _folder(tmp_path / "run")
    os.rename(run / "samples" / "g", tmp_path / "moved")
    os.symlink(outside / "samples" / "g", run / "samples" / "g")
    rc, so, se = _py(VERIFY, run)
    assert rc == 0 and "a link" in so, se
    rc, so, se = _py(LOAD, run)
    assert rc == 0 and "REFUSED" in so, se


def test_a_linked_file_is_not_followed(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"status": "complete", "params": {"stolen": true}}')
    run = _folder(tmp_path / "run")
    os.unlink(run / "summary.json")
    os.symlink(secret, run / "summary.json")
    _reindex(run, "summary.json")
    rc, so, se = _py(LOAD, run)
    assert rc == 0 and "REFUSED" in so and "stolen" not in so, se


def _bomb(path, declared_shape):
    """A .npy.gz whose header declares ``declared_shape`` float64 but holds 8 bytes."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False,
                                               "shape": declared_shape})
    buf.write(b"\0" * 8)
    with gzip.GzipFile(path, "wb", mtime=0) as gz:
        gz.write(buf.getvalue())


@pytest.mark.parametrize("drop_raw", [False, True], ids=["declared", "older-folder"])
def test_a_header_that_claims_gigabytes_is_refused_before_allocating(tmp_path, drop_raw):
    run = _folder(tmp_path / "run")
    rel = "samples/g/v.npy.gz"
    _bomb(run / rel, (1 << 29,))               # 4 GiB declared
    _reindex(run, rel, drop_raw=drop_raw)
    assert out.verify(run) == []               # the checksums agree: only the reader can tell
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))\n" + LOAD)
    rc, so, se = _py(code, run)
    assert rc == 0 and "REFUSED" in so and "declares" in so, se


def test_a_real_deflate_bomb_is_bounded_by_the_declared_size(tmp_path):
    run = _folder(tmp_path / "run")
    rel = "samples/g/v.npy.gz"
    big = np.zeros(1 << 24, np.uint64)          # 128 MiB of zeros: ~130 KiB compressed
    with gzip.GzipFile(run / rel, "wb", mtime=0) as gz:
        np.save(gz, big, allow_pickle=False)
    _reindex(run, rel)                          # raw_size still the real 80 bytes
    rc, so, se = _py(LOAD, run)
    assert rc == 0 and "REFUSED" in so and "declares" in so, se


def test_json_nested_100000_deep_is_one_clear_error(tmp_path):
    run = _folder(tmp_path / "run")
    (run / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    _reindex(run, "summary.json")
    rc, so, se = _py(LOAD, run)
    assert rc == 0 and "REFUSED" in so and "nested too deep" in so, se
    rc, so, se = _cli("compare", run, run)
    assert rc == 2 and "Traceback" not in se, se


def test_a_summary_that_is_not_utf8_is_one_clear_error(tmp_path):
    run = _folder(tmp_path / "run")
    (run / "summary.json").write_bytes(b'{"status": "\xff\xfe"}')
    _reindex(run, "summary.json")
    rc, so, se = _py(LOAD, run)
    assert rc == 0 and "REFUSED" in so, se


def test_an_output_folder_inside_another_runs_is_refused(tmp_path):
    run = _folder(tmp_path / "run")
    for inner in (run / "samples" / "nested", run / "deeper" / "still"):
        with pytest.raises(FileExistsError, match="inside the output folder"):
            out.OutputFolder(inner, "x", {}, total=1)
        assert not inner.exists()
    assert out.verify(run) == []                # run1 still verifies
    rc, so, se = _cli("burst-tail", "--quick", "--out", run / "samples" / "nested")
    assert rc == 2 and "inside the output folder" in se, se
    assert out.verify(run) == [] and not (run / "samples" / "nested").exists()


def test_a_folder_beside_a_run_is_fine(tmp_path):
    _folder(tmp_path / "run")
    _folder(tmp_path / "run2")                  # a sibling, not inside
    assert out.verify(tmp_path / "run2") == []
