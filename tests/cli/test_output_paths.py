"""Every path a command writes is checked before it measures (--out, --json, c2c's second
folder), and a --json that cannot be written at the end loses nothing: the tables are
printed, the JSON is kept elsewhere, the exit code says so (2)."""
import errno
import json
import os
import shutil

import pytest

from cli_quick import pyqueue
from pyqueue.lab.cli import main as cli_main
from pyqueue.lab.common.output import OutputFolder


@pytest.fixture
def run_folder(tmp_path):
    """An output folder of another run."""
    f = OutputFolder(tmp_path / "other", "soak", {}, total=1)
    f.finish({}, 1)
    return tmp_path / "other"


def _refused(argv, words):
    p = pyqueue(*argv)
    assert p.returncode == 2, p.stdout + p.stderr
    assert words in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert p.stdout == ""                      # nothing measured, nothing printed


def test_json_paths_are_checked_before_measuring(tmp_path, run_folder):
    soak = ["soak", "--seconds", "30", "--no-progress"]    # refused long before 30 s
    _refused(soak + ["--json", str(tmp_path / "missing" / "r.json")], "does not exist")
    _refused(soak + ["--json", str(tmp_path)], "a folder; give a file name")
    _refused(soak + ["--json", str(run_folder / "r.json")], "inside the output folder")
    _refused(soak + ["--json", str(run_folder / "samples" / "r.json")],
             "inside the output folder")
    _refused(soak + ["--out", str(tmp_path / "new"), "--json", str(tmp_path / "new" / "r.json")],
             "inside the output folder --out")
    assert not (tmp_path / "new").exists() or not os.listdir(tmp_path / "new")
    _refused(soak + ["--out", str(run_folder / "inner")], "inside the output folder")
    _refused(["pacing-table", "--json", str(run_folder / "t.json")], "inside the output folder")
    _refused(["env", "--json", str(run_folder / "e.json")], "inside the output folder")


def test_compare_json_is_checked_before_comparing(tmp_path, run_folder):
    _refused(["compare", str(run_folder), str(run_folder), "--json",
              str(run_folder / "c.json")], "inside the output folder")


def test_c2c_false_sharing_folder_is_checked_too(tmp_path, run_folder):
    out = tmp_path / "c2c"
    (tmp_path / "c2c-false-sharing").mkdir()
    (tmp_path / "c2c-false-sharing" / "x").write_text("not empty")
    _refused(["c2c", "--quick", "--false-sharing", "--no-progress", "--out", str(out)],
             "not empty")


def test_a_json_that_fails_at_the_end_keeps_the_tables_and_the_result(
        tmp_path, monkeypatch, capsys):
    target = tmp_path / "t.json"
    real = shutil.copyfile

    def full_disk(src, dst, *a, **kw):
        if str(dst) == str(target):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(shutil, "copyfile", full_disk)
    code = cli_main.main(["pacing-table", "--json", str(target)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "P_max" in out                                   # the table, printed all the same
    assert "cannot write --json %s: No space left on device" % target in err
    kept = err.split("the result is kept in ")[1].split()[0]
    try:
        assert json.loads(open(kept).read())["table"]
    finally:
        os.unlink(kept)
    assert not target.exists()
