"""What every command shares: the exit-code table and the command line it prints.  Not
a command itself (it has no NAME); the parameters are each experiment's Params."""
import errno
import shlex
import sys
import textwrap

from pyqueue.errors import UnsupportedError
from ..common import status as _status
from ..common.watchdog import EXIT_HUNG

__all__ = ["EXIT_OK", "EXIT_CHECK_FAILED", "EXIT_USAGE", "EXIT_HUNG", "EXIT_INTERRUPTED",
           "EXIT_CODES",
           "USAGE_ERRORS", "WRITE_ERRNOS", "exit_code", "epilog", "command_line"]

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130          # 128 + SIGINT, as a shell reports a Ctrl-C
EXIT_CODES = {
    EXIT_OK: "complete",
    EXIT_CHECK_FAILED: "a check failed (a message lost or damaged, checksums that differ, "
                       "an error found by the run)",
    EXIT_USAGE: "bad usage (an argument, a CPU, an output folder)",
    EXIT_HUNG: "a slice hung (bench: still running after --slice-limit; its name and the "
               "Python stacks are on stderr, the partial output folder says which)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C or SIGTERM: the first finishes the current slice "
                      "and keeps a valid partial output folder; a second aborts)",
}
# What the lab raises for a request it cannot run (a bad value, a CPU it may not
# use, a non-empty output folder, SCHED_FIFO without the right, a peer that is not
# installed): exit 2, no traceback.
USAGE_ERRORS = (ValueError, FileExistsError, PermissionError, UnsupportedError)
# An OSError with one of these while the output folder is written: exit 2 too.
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)


def exit_code(status, ok=True):
    """The exit code of a run that ended with ``status`` (the words of
    lab/common/status.py); ``ok=False``: it completed but a check failed."""
    if _status.is_failed(status):
        return EXIT_CHECK_FAILED
    if _status.is_interrupted(status):
        return EXIT_INTERRUPTED
    return EXIT_OK if ok else EXIT_CHECK_FAILED


def epilog():
    """The exit-code table as the --help text states it."""
    return "exit status (every command):\n" + "\n".join(
        textwrap.fill(text, 79, initial_indent="  %-4d " % code, subsequent_indent=" " * 7)
        for code, text in EXIT_CODES.items())


# How the user started the program ('python -m pyqueue' or 'pyqueue'); __main__ sets it.
PROG = "python -m pyqueue"


def command_line(argv=None):
    """'command: python -m pyqueue <args>': the line that reproduces this run."""
    args = sys.argv[1:] if argv is None else argv
    return "command: %s %s" % (PROG, " ".join(shlex.quote(a) for a in args))


