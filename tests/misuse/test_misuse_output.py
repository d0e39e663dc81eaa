"""Output-folder abuse: --overwrite never deletes what is not a pyqueue output
folder's own files, verify() never follows an index out of the folder, corrupt
files give one clear error from load(), and a full disk leaves a folder that
verifies and says it failed."""
import errno
import gzip
import json
import os
import subprocess

import numpy as np
import pytest

from pyqueue.lab.common import output as out


def _make(path, **kw):
    return out.OutputFolder(path, "x", {"a": 1}, total=2, **kw)


def test_overwrite_spares_a_folder_that_merely_has_an_index_json(tmp_path):
    web = tmp_path / "site"
    (web / "src").mkdir(parents=True)
    (web / "index.json").write_text('{"name": "my web project"}')
    (web / "src" / "app.js").write_text("console.log(1)")
    with pytest.raises(FileExistsError, match="not a pyqueue output index"):
        _make(web, overwrite=True)
    assert (web / "src" / "app.js").read_text() == "console.log(1)"


def test_overwrite_never_follows_dotdot_and_verify_refuses_it(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    f = _make(tmp_path / "run")
    f.finish({}, 2)
    index = json.loads((tmp_path / "run" / "index.json").read_text())
    index["files"]["../precious.txt"] = {"sha256": "0" * 64, "size": 7}
    (tmp_path / "run" / "index.json").write_text(json.dumps(index))
    assert any("not a path inside the folder" in p for p in out.verify(tmp_path / "run"))
    with pytest.raises(FileExistsError):
        _make(tmp_path / "run", overwrite=True)
    assert victim.read_text() == "keep me"


def test_overwrite_refuses_files_the_index_does_not_list(tmp_path):
    f = _make(tmp_path / "run")
    f.finish({}, 2)
    (tmp_path / "run" / "notes.md").write_text("mine")
    with pytest.raises(FileExistsError, match="does not list"):
        _make(tmp_path / "run", overwrite=True)
    assert (tmp_path / "run" / "notes.md").read_text() == "mine"


def test_overwrite_of_a_previous_run_replaces_it(tmp_path):
    f = _make(tmp_path / "run")
    f.save_samples("g", a=np.arange(5))
    f.finish({}, 2)
    g = _make(tmp_path / "run", overwrite=True)
    g.finish({"b": 2}, 2)
    assert out.verify(tmp_path / "run") == []
    assert not (tmp_path / "run" / "samples" / "g").exists()


@pytest.mark.parametrize("damage", ["summary_not_json", "summary_a_list", "sample_not_gzip",
                                    "sample_truncated", "index_garbage"])
def test_load_of_a_damaged_folder_is_one_clear_error(tmp_path, damage):
    f = _make(tmp_path / "run")
    f.save_samples("g", a=np.arange(1000))
    f.finish({}, 2)
    run = tmp_path / "run"
    target = {"summary_not_json": run / "summary.json", "summary_a_list": run / "summary.json",
              "sample_not_gzip": run / "samples/g/a.npy.gz",
              "sample_truncated": run / "samples/g/a.npy.gz",
              "index_garbage": run / "index.json"}[damage]
    data = {"summary_not_json": b"{not json", "summary_a_list": b"[1, 2]",
            "sample_not_gzip": b"plain bytes", "index_garbage": b"\x00\xff",
            "sample_truncated": target.read_bytes()[:40]}[damage]
    target.write_bytes(data)
    # check=False still reads a folder whose index alone is damaged (problems listed).
    for check in (True,) if damage == "index_garbage" else (True, False):
        with pytest.raises(ValueError, match="not a valid pyqueue output folder"):
            out.load(run, check=check)


@pytest.fixture
def tiny_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_a_full_disk_leaves_a_folder_that_verifies_and_says_failed(tiny_tmpfs):
    f = _make(tiny_tmpfs / "run")
    rng = np.random.default_rng(1)
    with pytest.raises(OSError) as exc:
        for i in range(1000):
            f.save_samples("g", **{"s%d" % i: rng.integers(0, 2**63, 4096)})
            f.checkpoint({"i": i}, 0)
    assert exc.value.errno == errno.ENOSPC
    assert out.verify(tiny_tmpfs / "run") == []
    try:
        status = f.finish({}, 0, error=exc.value)
    except OSError:
        status = None                       # not even the summary fits: still verifies
    else:
        assert status.startswith("failed: no space left")
    assert out.verify(tiny_tmpfs / "run") == []


def test_a_full_disk_during_a_cli_run_is_one_line_and_exit_2(tiny_tmpfs):
    # pacing writes four arrays per run: a 256 KiB tmpfs is full within the first few.
    import sys
    import support
    run = tiny_tmpfs / "run"
    p = subprocess.run([sys.executable, "-m", "pyqueue", "pacing", "--quick", "--rounds", "1",
                        "--no-progress", "--out", str(run)], capture_output=True, text=True,
                       env=support.subprocess_env(), timeout=300, cwd=support.ROOT)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "No space left" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert out.verify(run) == []
    status = json.loads((run / "summary.json").read_text())["status"]
    # "failed: ..." when the last summary still fitted, else the last checkpoint's
    assert status.startswith(("failed: no space left", "interrupted after")), status


@pytest.mark.parametrize("where", ["a_file", "under_a_file", "read_only"])
def test_a_bad_out_is_refused_before_measuring_in_one_line(tmp_path, where):
    import sys
    import support
    (tmp_path / "file").write_text("")
    target = {"a_file": tmp_path / "file", "under_a_file": tmp_path / "file" / "run",
              "read_only": tmp_path / "ro" / "run"}[where]
    if where == "read_only":
        if os.geteuid() != 0:
            pytest.skip("mounting a read-only tmpfs needs root")
        (tmp_path / "ro").mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs",
                           str(tmp_path / "ro")], capture_output=True).returncode != 0:
            pytest.skip("cannot mount a tmpfs here")
    try:
        p = subprocess.run([sys.executable, "-m", "pyqueue", "soak", "--seconds", "30",
                            "--out", str(target)], capture_output=True, text=True,
                           env=support.subprocess_env(), timeout=60, cwd=support.ROOT)
    finally:
        if where == "read_only":
            subprocess.run(["umount", str(tmp_path / "ro")], check=True)
    assert p.returncode == 2 and p.stdout == "", (p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1 and "--out" in p.stderr and "Traceback" not in p.stderr
