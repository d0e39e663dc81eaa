"""The misuse suite: what an adversarial user does to the Python API, each case
that could crash or hang run in a subprocess with a timeout.  At the end of a run
it prints how many cases it tried (tests plus property-based examples)."""
from misuse_support import TRIED as _TRIED


def pytest_runtest_logreport(report):
    if report.when == "call" and report.nodeid.startswith("tests/misuse/"):
        _TRIED["tests"] += 1


def pytest_terminal_summary(terminalreporter):
    if _TRIED["tests"]:
        terminalreporter.write_line("misuse suite: %d tests, %d property-based examples, "
                                    "%d cases tried" % (_TRIED["tests"], _TRIED["examples"],
                                                        _TRIED["tests"] + _TRIED["examples"]))
