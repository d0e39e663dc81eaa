"""What every command shares: the exit-code table, the command line it prints, the
queue options, and the parsing of durations.  Not a command itself (it has no NAME)."""
import argparse
import errno
import re
import shlex
import sys
import textwrap

from pyqueue import validate
from pyqueue.errors import UnsupportedError
from ..common import status as _status
from ..common.watchdog import EXIT_HUNG

__all__ = ["EXIT_OK", "EXIT_CHECK_FAILED", "EXIT_USAGE", "EXIT_HUNG", "EXIT_INTERRUPTED",
           "EXIT_CODES",
           "USAGE_ERRORS", "WRITE_ERRNOS", "exit_code", "epilog", "command_line", "parse_duration",
           "add_queue_arguments", "queue_config"]

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


_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text, name="duration"):
    """'0.5ms' / '25 ms' / '1s' / '100us' -> seconds (a bare number is seconds)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|µs|ns)?\s*", text)
    if not m:
        raise ValueError("%s: not a duration: %r (use e.g. 0.5ms, 25ms, 1s)" % (name, text))
    return validate.duration(name, float(m.group(1)) * _UNITS[m.group(2) or "s"])


def add_queue_arguments(parser, rename=None, base=None):
    """An option per QueueConfig field (--block-size N, --publish POLICY,
    --scan-current / --no-scan-current, ...) in one group; the help shows the
    default (config.DEFAULTS), the option's own default is None, so that
    queue_config() keeps the defaults where nothing was given.  ``rename``:
    {field: option} for a command that has always spelt a field otherwise;
    ``base``: the command's own QueueConfig defaults (see queue_config)."""
    from pyqueue import config
    defaults = config.DEFAULTS if base is None else base.as_dict()
    group = parser.add_argument_group("queue configuration (pyqueue.QueueConfig)")
    for name, kind in config.KINDS.items():
        option = (rename or {}).get(name, "--" + name.replace("_", "-"))
        default = defaults[name]
        if kind == "flag":
            group.add_argument(option, dest=name, action=argparse.BooleanOptionalAction,
                               default=None, help="default: %s" % ("on" if default else "off"))
        else:
            group.add_argument(option, dest=name, type=int if kind == "count" else str,
                               default=None, metavar="N" if kind == "count" else "POLICY",
                               help="default: %s" % default)


def queue_config(args, base=None, **changes):
    """The QueueConfig the options of add_queue_arguments() ask for: ``base``
    (default: the queue's defaults), then the options given, then ``changes``."""
    from pyqueue.config import KINDS, QueueConfig
    given = {n: getattr(args, n) for n in KINDS if getattr(args, n, None) is not None}
    return QueueConfig.of(base, **dict(given, **changes))
