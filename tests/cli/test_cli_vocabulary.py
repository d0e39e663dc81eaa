"""Every experiment command speaks one vocabulary: --help, --quick --out into a fresh
folder, a bad value (exit 2, one line, no traceback), a non-empty --out refused
before measuring, and the hidden old spellings still accepted."""
import json
import os
import re

import pytest

from cli_quick import QUICK, pyqueue

BAD = {
    "bench": ["--writer-cpu", "4096"],
    "burst-tail": ["--windows", "0"],
    "c2c": ["--pair", "0"],
    "drain-rate": ["--msg-size", "3"],
    "ownership": ["--windows", "zero"],
    "pacing": ["--msg-size", "5000"],
    "pipeline": ["--placement", "0,1"],
    "soak": ["--seconds", "-1"],
}
SHARED = ("--quick", "--out", "--overwrite", "--no-progress", "--markdown", "--json")
UNPINNED = {"soak"}          # its threads move on purpose: no CPU to choose


@pytest.mark.parametrize("command", sorted(QUICK))
def test_help_shows_the_shared_options_and_exit_codes(command):
    p = pyqueue(command, "--help")
    assert p.returncode == 0, p.stderr
    for option in SHARED + (() if command in UNPINNED else ("--writer-cpu", "--reader-cpu")):
        assert option in p.stdout, option
    assert "--stage-cpu" in p.stdout or command != "pipeline"
    assert "exit status" in p.stdout and "130" in p.stdout
    for hidden in ("--quiet", "--consumer-cpu", "--pair", "--placement", "--size",
                   "--worker-cpu", "--other-cpu", "--timer-slack-ns"):
        assert hidden not in p.stdout
    for hidden in {"pacing": ("--drain-only", "--fifo "), "drain-rate": ("--fifo ",),
                   "soak": ("--period ", "--slice ")}.get(command, ()):
        assert hidden not in p.stdout


def test_version_and_program_name():
    p = pyqueue("--version")
    assert p.returncode == 0 and p.stdout.startswith("pyqueue ")
    assert "python -m pyqueue" in pyqueue("--help").stdout
    from pyqueue.__main__ import program_name
    assert program_name("/usr/local/bin/pyqueue") == "pyqueue"
    assert program_name("/x/pyqueue/__main__.py") == "python -m pyqueue"


@pytest.mark.parametrize("command", sorted(QUICK))
def test_quick_run_into_a_fresh_folder(quick_runs, command):
    p, out = quick_runs[command]
    assert p.returncode == 0, p.stderr
    assert (out / "index.json").is_file() and (out / "summary.json").is_file()
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("command", sorted(QUICK))
def test_markdown_prints_markdown_tables(quick_runs, command):
    p, _ = quick_runs[command]
    rules = [line for line in p.stdout.splitlines() if re.fullmatch(r"\|(-+\|)+", line)]
    assert rules, p.stdout
    header = p.stdout.splitlines()[p.stdout.splitlines().index(rules[0]) - 1]
    assert header.startswith("| ") and header.count("|") == rules[0].count("|")


# Commands outside the experiment vocabulary (no output folder): the tools.
OTHERS = {"compare": ["OLD", "NEW"], "env": [], "pacing-table": []}


def test_every_command_has_markdown_and_json():
    from pyqueue.lab.cli.main import commands as _commands
    assert sorted(_commands()) == sorted(set(QUICK) | set(OTHERS))
    for command in OTHERS:
        p = pyqueue(command, "--help")
        assert "--markdown" in p.stdout and "--json" in p.stdout, command


@pytest.mark.parametrize("command, argv", [("env", []), ("pacing-table", ["--drain", "1e6"])])
def test_markdown_and_json_of_the_commands_that_do_not_measure(command, argv, tmp_path):
    p = pyqueue(command, *argv, "--markdown")
    assert p.returncode == 0 and "|---" in p.stdout, p.stdout
    p = pyqueue(command, *argv, "--json")
    assert p.returncode == 0 and isinstance(json.loads(p.stdout), dict), p.stdout
    p = pyqueue(command, *argv, "--json", str(tmp_path / "x.json"))
    assert p.returncode == 0 and "|" not in p.stdout and p.stdout.strip()
    assert json.loads((tmp_path / "x.json").read_text())


@pytest.mark.parametrize("command", sorted(BAD))
def test_bad_value_is_one_line_naming_the_flag(command):
    p = pyqueue(command, *BAD[command], "--no-progress")
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith("pyqueue %s: " % command)
    assert BAD[command][0] in lines[0]


@pytest.mark.parametrize("command", sorted(QUICK))
def test_non_empty_out_is_refused_before_measuring(tmp_path, command):
    (tmp_path / "keep.txt").write_text("someone's file\n")
    # The full-length run would take minutes: refused at once, it takes none.
    p = pyqueue(command, "--no-progress", "--out", str(tmp_path), timeout=60)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "--out" in p.stderr and "not empty" in p.stderr and "Traceback" not in p.stderr
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"] and p.stdout == ""


def test_out_is_created_before_measuring(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    p = pyqueue("soak", "--seconds", "30", "--out", str(blocker / "sub"), timeout=60)
    assert p.returncode == 2 and "--out" in p.stderr and "Traceback" not in p.stderr


def test_old_spellings_still_work():
    from pyqueue.lab import CoreToCoreParams, OwnershipParams, PipelineParams
    from pyqueue.lab.cli.main import Parser as _Parser
    from pyqueue.lab.cli import c2c, drain_rate, ownership, pacing, pacing_table, pipeline, soak
    # (module, argv, what they mean, the Params that reads them or None: the parsed flags)
    cases = [(pacing, ["--producer-cpu", "1", "--consumer-cpu", "0", "--size", "64", "--quiet",
                       "--fifo", "5", "--drain-only"],
              dict(writer_cpu="1", reader_cpu="0", msg_size="64", no_progress=True,
                   fifo_priority="5", drain_only=True), None),
             (drain_rate, ["--producer-cpu", "1", "--consumer-cpu", "0", "--size", "64"],
              dict(writer_cpu="1", reader_cpu="0", msg_size="64"), None),
             (soak, ["--period", "2", "--slice", "0.5"], dict(period_s="2", slice_s="0.5"), None),
             (pacing_table, ["--drain", "1e6"], dict(drain_rate="1e6"), None),
             (c2c, ["--pair", "1,0"], dict(writer_cpu=1, reader_cpu=0), CoreToCoreParams),
             (pipeline, ["--placement", "1,0,1", "--fifo", "2", "--timer-slack-ns", "5"],
              dict(writer_cpu=1, stage_cpu=0, reader_cpu=1, fifo_priority=2,
                   receiver_slack_ns=5), PipelineParams),
             (ownership, ["--worker-cpu", "0", "--other-cpu", "1", "--seed", "0x10"],
              dict(reader_cpu=0, writer_cpu=1, seed=16), OwnershipParams)]
    for mod, argv, expect, params in cases:
        parser = _Parser(prog="pyqueue " + mod.NAME)
        mod.add_arguments(parser)
        args = parser.parse_args(argv)
        got = vars(params.from_args(args) if params else args)
        assert {k: got[k] for k in expect} == expect, mod.NAME


def test_bare_json_prints_one_object(tmp_path):
    p = pyqueue("soak", "--seconds", "1", "--no-progress", "--json")
    assert p.returncode == 0, p.stderr
    body = json.loads(p.stdout)
    assert set(body) >= {"params", "summary"}


def test_soak_without_end_is_refused_with_a_reason():
    p = pyqueue("soak", "--seconds", "inf", "--no-progress", timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--seconds: seconds must be in (0, inf), got inf" in p.stderr, p.stderr
    assert "finite, a soak is bounded" in pyqueue("soak", "--help").stdout


def test_bench_refuses_a_second_run_into_its_folder_and_overwrite_replaces_it(quick_runs,
                                                                              tmp_path):
    import shutil
    out = tmp_path / "bench"
    shutil.copytree(quick_runs["bench"][1], out)
    before = (out / "index.json").read_text()
    p = pyqueue("bench", *QUICK["bench"], "--no-progress", "--out", str(out), timeout=60)
    assert p.returncode == 2 and "not empty" in p.stderr and p.stdout == "", p.stderr
    assert (out / "index.json").read_text() == before          # refused before measuring
    p = pyqueue("bench", *QUICK["bench"], "--no-progress", "--overwrite", "--out", str(out))
    assert p.returncode == 0, p.stderr
    from pyqueue.lab.common import output
    assert output.verify(str(out)) == [] and (out / "index.json").read_text() != before


def test_c2c_json_holds_the_false_sharing_result():
    p = pyqueue("c2c", *QUICK["c2c"], "--false-sharing", "--increments", "20000",
                "--no-progress", "--json")
    assert p.returncode == 0, p.stderr
    body = json.loads(p.stdout)
    assert body["matrix"] and body["status"] == "complete"
    fs = body["false_sharing"]
    assert fs["increments"] == 20000 and len(fs["slowdown"]) == body["params"]["rounds"]
    assert fs["cpus"] == body["cpus"][:2] and fs["status"] == "complete"


def test_c2c_false_sharing_folder_beside_out_is_checked_before_measuring(tmp_path):
    """--false-sharing writes a second folder, OUT-false-sharing: a non-empty one is
    refused up front like --out itself, not overwritten after the matrix ran."""
    out = tmp_path / "run"
    beside = tmp_path / "run-false-sharing"
    beside.mkdir()
    (beside / "notes.txt").write_text("mine")
    p = pyqueue("c2c", *QUICK["c2c"], "--false-sharing", "--no-progress", "--out", str(out))
    assert p.returncode == 2 and "run-false-sharing" in p.stderr and "not empty" in p.stderr, \
        p.stderr
    # Every folder is checked before any is created: --out is not even made.
    assert (beside / "notes.txt").read_text() == "mine" and not out.exists()
