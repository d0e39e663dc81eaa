"""The CLI tests' shared fixture: one quick run of every experiment command, made once."""
import pytest

from cli_quick import QUICK, pyqueue


@pytest.fixture(scope="session")
def quick_runs(tmp_path_factory):
    """command -> (completed process, its output folder): one quick run each, shared
    with the compare and load tests."""
    root = tmp_path_factory.mktemp("quick")
    runs = {}
    for command, args in QUICK.items():
        out = root / command
        # --markdown: every command's tables come out of the one formatter as Markdown.
        runs[command] = (pyqueue(command, *args, "--no-progress", "--markdown", "--out",
                                 str(out)), out)
    return runs


