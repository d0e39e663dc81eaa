"""The options every experiment command shares, spelt one way with one default.

A command calls ``add_run_options(parser, quick=...)`` and ``add_cpu_options(parser)``
in its ``add_arguments``; the old spellings of an option (``--quiet``,
``--consumer-cpu``, ``--pair``, ...) stay accepted as hidden aliases so that no
script that used them breaks, but ``--help`` shows only the one spelling.

``check_out(args)`` runs in ``__main__`` before the command: a non-empty ``--out``
without ``--overwrite`` is refused before anything is measured, and the folder is
created so that a path that cannot be written to fails now, not after the run.
"""
import argparse
import os
import sys

__all__ = ["WRITER_CPU", "READER_CPU", "STAGE_CPU", "add_run_options", "add_output_options",
           "add_cpu_options", "check_out", "flag_for", "emit_json", "CpuPairAction",
           "CpuListAction"]

# The CPUs every two-thread command pins to unless told otherwise; -1 leaves a
# thread to the scheduler.
WRITER_CPU, READER_CPU, STAGE_CPU = 0, 1, 1

# What an experiment function calls a parameter, for the flag that sets it: a
# ValueError from the lab names the parameter, the user typed the flag.
_PARAMETER_FLAGS = {
    "writer_cpu": "--writer-cpu", "producer_cpu": "--writer-cpu", "other_cpu": "--writer-cpu",
    "reader_cpu": "--reader-cpu", "consumer_cpu": "--reader-cpu", "worker_cpu": "--reader-cpu",
    "stage_cpu": "--stage-cpu", "size": "--msg-size", "msg_size": "--msg-size",
    "fifo_priority": "--fifo", "n": "--burst", "placement": "--writer-cpu/--stage-cpu/--reader-cpu",
    "pair": "--writer-cpu/--reader-cpu", "cpus": "--cpus",
}


def _integer(text):
    """An integer in any base Python writes (42, 0x5EED, 0o17)."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer: %r" % text) from None


def add_output_options(parser, what="the tables"):
    """--markdown and --json, which every command has: ``what`` it prints."""
    parser.add_argument("--markdown", action="store_true", help="print %s as Markdown" % what)
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                        help="also write the result as one JSON object to PATH (alone: to "
                             "stdout, instead of %s)" % what)


def add_run_options(parser, *, quick, seed=None, seed_help=None):
    """--quick, --out, --overwrite, --no-progress (alias --quiet), --markdown, --json
    and, for an experiment with random input, --seed (``seed``: its default; the
    string "random" for one drawn and recorded)."""
    g = parser.add_argument_group("run")
    g.add_argument("--quick", action="store_true", help=quick)
    g.add_argument("--out", metavar="DIR", default=None,
                   help="write the output folder here (checked and created before measuring; "
                        "a non-empty one is refused without --overwrite)")
    g.add_argument("--overwrite", action="store_true",
                   help="replace an existing pyqueue output folder at --out")
    g.add_argument("--no-progress", dest="no_progress", action="store_true",
                   help="no progress bar (stderr)")
    g.add_argument("--quiet", dest="no_progress", action="store_true", default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)
    if seed is not None:
        g.add_argument("--seed", type=_integer, default=None if seed == "random" else seed,
                       help=seed_help or ("seed of the random input, decimal or 0x hex "
                                          "(default: %s)" % (seed if seed == "random"
                                                             else "%#x" % seed)))
    add_output_options(g)
    return g


class CpuPairAction(argparse.Action):
    """A hidden 'A,B' (or 'P,S,C') spelling that sets several CPU options at once."""

    def __init__(self, option_strings, dest, targets=(), **kw):
        self.targets = targets
        super().__init__(option_strings, dest, default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            cpus = [int(c) for c in values.split(",")]
        except ValueError:
            parser.error("argument %s: not a list of CPUs: %r" % (option_string, values))
        if len(cpus) != len(self.targets):
            parser.error("argument %s: needs %d CPUs separated by ',', got %r"
                         % (option_string, len(self.targets), values))
        for dest, cpu in zip(self.targets, cpus):
            setattr(namespace, dest, cpu)


class CpuListAction(argparse.Action):
    """'0,2,3' -> [0, 2, 3]."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            cpus = [int(c) for c in values.split(",") if c.strip()]
        except ValueError:
            parser.error("argument %s: not a list of CPUs: %r" % (option_string, values))
        if not cpus:
            parser.error("argument %s: no CPU given" % option_string)
        setattr(namespace, self.dest, cpus)


def add_cpu_options(parser, *, writer="writer", reader="reader", stage=None, matrix=False,
                    writer_default=WRITER_CPU, reader_default=READER_CPU,
                    stage_default=STAGE_CPU, aliases=(), pair_alias=None,
                    placement_alias=None, note=""):
    """--writer-cpu / --reader-cpu (and --stage-cpu, --cpus for a matrix).
    ``writer``/``reader``/``stage``: what the thread is called in this experiment,
    for the help; ``aliases``: old spellings as (option, dest) pairs; ``pair_alias``
    / ``placement_alias``: an old 'A,B' / 'P,S,C' option."""
    g = parser.add_argument_group("CPUs (-1: not pinned)" + note)
    if matrix:
        g.add_argument("--cpus", action=CpuListAction, default=None, metavar="A,B,...",
                       help="CPUs of the matrix (default: every allowed CPU)")
    g.add_argument("--writer-cpu", type=int, default=writer_default, metavar="CPU",
                   help="CPU of the %s (default: %s)" % (writer, "%(default)s"))
    if stage:
        g.add_argument("--stage-cpu", type=int, default=stage_default, metavar="CPU",
                       help="CPU of the %s (default: %%(default)s)" % stage)
    g.add_argument("--reader-cpu", type=int, default=reader_default, metavar="CPU",
                   help="CPU of the %s (default: %s)" % (reader, "%(default)s"))
    for option, dest in aliases:
        g.add_argument(option, dest=dest, type=int, default=argparse.SUPPRESS,
                       help=argparse.SUPPRESS)
    if pair_alias:
        g.add_argument(pair_alias, action=CpuPairAction, targets=("writer_cpu", "reader_cpu"))
    if placement_alias:
        g.add_argument(placement_alias, action=CpuPairAction,
                       targets=("writer_cpu", "stage_cpu", "reader_cpu"))
    return g


def check_out(args, folders=None):
    """Refuse a non-empty output folder without --overwrite, and create it, before
    the command measures anything (ValueError / FileExistsError -> exit 2).
    ``folders``: every folder the command will write (default: --out alone)."""
    if folders is None:
        folders = [getattr(args, "out", None)]
    for out in folders:
        if not out:
            continue
        flag = "--out %s" % out if out == getattr(args, "out", None) else out
        from ..common.output import enclosing_output
        outer = enclosing_output(out)
        if outer is not None:
            raise FileExistsError("%s: inside the output folder %s; a run's folder is never "
                                  "written into another's" % (flag, outer))
        if os.path.exists(out) and not os.path.isdir(out):
            raise FileExistsError("%s: exists and is not a folder" % flag)
        if os.path.isdir(out) and os.listdir(out) and not getattr(args, "overwrite", False):
            raise FileExistsError("%s: the folder is not empty; choose a new one or pass "
                                  "--overwrite" % flag)
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise PermissionError("%s: cannot create the folder: %s"
                                  % (flag, e.strerror or e)) from None


def flag_for(message, parser):
    """``message`` (from a ValueError of the lab) with the flag it is about in front,
    when it starts with a parameter name a flag of ``parser`` sets."""
    head = message.split(None, 1)[0].split("=", 1)[0].rstrip(":") if message else ""
    if head.startswith("-"):
        return message
    flags = {a.dest: a.option_strings[0] for a in parser._actions
             if a.option_strings and a.help != argparse.SUPPRESS}
    flag = flags.get(head) or _PARAMETER_FLAGS.get(head)
    if flag is None:
        base = head.split("[", 1)[0]
        flag = flags.get(base) or _PARAMETER_FLAGS.get(base)
    return "%s: %s" % (flag, message) if flag else message


def emit_json(args, result):
    """Write ``result`` where --json asked: the file, or stdout for a bare --json.
    ``result``: an object with ``to_json(path)`` (an experiment's result) or plain
    data (dicts, lists, dataclasses; NaN and inf become null).  Returns True when
    the tables should not be printed (stdout is JSON)."""
    target = getattr(args, "json", None)
    if target is None:
        return False
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json") if target == "-" else target
        if hasattr(result, "to_json"):
            result.to_json(path)
        else:
            import json
            from ..common.output import to_jsonable
            with open(path, "w") as f:
                json.dump(to_jsonable(result), f, indent=1)
                f.write("\n")
        if target != "-":
            return False
        with open(path) as f:
            sys.stdout.write(f.read())
    return True
