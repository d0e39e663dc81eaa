"""The experiment skeleton (pyqueue.lab.common.session), its status words and the
exit-code table every command shares, on a loop that measures nothing."""
import io

import pytest

from pyqueue.lab.cli import common as cli
from pyqueue.lab.common import output, status
from pyqueue.lab.common.progress import GracefulInterrupt
from pyqueue.lab.common.session import Session


def _run(tmp_path=None, rounds=3, stop_at=None, fail_at=None, ctrl_c_at=None):
    """A loop of ``rounds`` rounds; returns (session, record calls, folder path)."""
    calls = []

    def record(folder, st, final):
        calls.append((st, final, folder is not None))
        return {"rounds": len(calls)}

    out = None if tmp_path is None else tmp_path / "run"
    guard = GracefulInterrupt(stream=io.StringIO())
    with Session("demo", {"rounds": rounds}, rounds, "rounds", record=record, out=out,
                 progress=False, guard=guard) as s:
        for r in range(rounds):
            if r == stop_at:
                guard.request()                 # what the first Ctrl-C does
            if r == fail_at:
                raise RuntimeError("the consumer found a gap")
            if r == ctrl_c_at:
                raise KeyboardInterrupt         # a second Ctrl-C
            if s.stopping:
                break
            s.advance(1)
            s.checkpoint(r + 1)
    return s, calls, out


def test_complete_run(tmp_path):
    s, calls, out = _run(tmp_path)
    assert s.status == status.COMPLETE
    assert [c[1] for c in calls] == [False, False, False, True]     # 3 checkpoints, 1 finish
    assert calls[0][0] == "interrupted after 1 of 3 rounds"          # what a kill there leaves
    loaded = output.load(out)
    assert loaded.complete and loaded.status == "complete" and loaded.results == {"rounds": 4}


def test_without_a_folder_record_runs_once_at_the_end():
    s, calls, _ = _run()
    assert calls == [("complete", True, False)]


def test_first_ctrl_c_ends_the_run_interrupted(tmp_path):
    s, calls, out = _run(tmp_path, stop_at=2)
    assert s.status == "interrupted after 2 of 3 rounds" == calls[-1][0]
    assert output.load(out).status == s.status and not output.load(out).complete


def test_an_error_fails_the_run_and_goes_on(tmp_path):
    with pytest.raises(RuntimeError, match="gap"):
        _run(tmp_path, fail_at=1)
    loaded = output.load(tmp_path / "run")
    assert loaded.status == "failed: the consumer found a gap"
    assert loaded.summary["progress"]["done"] == 1


def test_a_second_ctrl_c_aborts_but_the_folder_says_how_far(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, ctrl_c_at=2)
    assert output.load(tmp_path / "run").status == "interrupted after 2 of 3 rounds"


def test_status_words():
    assert status.final(3, 3, "runs") == "complete"
    assert status.final(1, 3, "runs") == "interrupted after 1 of 3 runs"
    assert status.final(1, 3, "runs", error=ValueError()) == "failed: ValueError"
    assert status.failed("lost message 7") == "failed: lost message 7"


@pytest.mark.parametrize("st, ok, code", [
    ("complete", True, 0), ("complete", False, 1), ("failed: lost message 7", True, 1),
    ("interrupted after 1 of 3 rounds", True, 130), ("interrupted after 1 of 3 rounds", False, 130),
])
def test_one_exit_code_table(st, ok, code):
    assert cli.exit_code(st, ok) == code


def test_help_states_the_exit_codes(capsys):
    from pyqueue.__main__ import main
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for code in (0, 1, 2, 130):
        assert "\n  %-4d " % code in text
