"""The options every experiment command shares besides its parameters: how it runs and
where its output goes (its parameters are its Params' flags, lab/common/params.py).

A command calls ``add_run_options(parser, quick=...)`` in its ``add_arguments``; the old
spellings of an option (``--quiet``, ``--pair``, ...) stay accepted as hidden aliases so
that no script that used them breaks, but ``--help`` shows only the one spelling.

``check_out(args)`` runs in ``__main__`` before the command: every path the command
will write is checked before anything is measured (a non-empty ``--out`` without
``--overwrite``, a folder or a ``--json`` file inside an output folder, a ``--json``
file that cannot be written), and the folder is created so that a path that cannot
be written to fails now, not after the run.  ``emit_json`` writes --json at the end;
if that fails all the same, the tables are still printed and the JSON kept elsewhere.
"""
import argparse
import os
import sys

__all__ = ["add_run_options", "add_output_options", "check_out", "flag_for", "emit_json",
           "CpuPairAction"]


def add_output_options(parser, what="the tables"):
    """--markdown and --json, which every command has: ``what`` it prints."""
    parser.add_argument("--markdown", action="store_true", help="print %s as Markdown" % what)
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                        help="also write the result as one JSON object to PATH (alone: to "
                             "stdout, instead of %s)" % what)


def add_run_options(parser, *, quick):
    """--quick (``quick``: what it does, for the help), --out, --overwrite,
    --no-progress (alias --quiet), --markdown and --json."""
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


def check_out(args, folders=None):
    """Refuse, before the command measures anything, every path it would write that
    cannot be written: a non-empty output folder without --overwrite, a folder inside
    another run's output folder, a --json file in a folder that does not exist or
    cannot be written, or inside an output folder (this run's or another's: the
    folder would no longer verify).  Creates the output folders, so that a path that
    cannot be written fails now, not after the run (ValueError / FileExistsError /
    PermissionError -> exit 2).  ``folders``: every folder the command will write
    (default: --out alone)."""
    if folders is None:
        folders = [getattr(args, "out", None)]
    folders = [out for out in folders if out]
    for out in folders:
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
    _check_json(getattr(args, "json", None), folders)
    for out in folders:
        flag = "--out %s" % out if out == getattr(args, "out", None) else out
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise PermissionError("%s: cannot create the folder: %s"
                                  % (flag, e.strerror or e)) from None
        if not os.access(out, os.W_OK | os.X_OK):
            raise PermissionError("%s: the folder cannot be written" % flag)


def _check_json(target, folders):
    """--json PATH: a file the run can write, outside every output folder."""
    if not target or target == "-":
        return
    from ..common.output import enclosing_output
    flag = "--json %s" % target
    if os.path.isdir(target):
        raise FileExistsError("%s: a folder; give a file name" % flag)
    if os.path.exists(target) and not os.path.isfile(target):
        raise FileExistsError("%s: exists and is not a regular file" % flag)
    here = os.path.abspath(target)
    for out in folders:
        if os.path.commonpath([here, os.path.abspath(out)]) == os.path.abspath(out):
            raise FileExistsError("%s: inside the output folder --out %s, which would then not "
                                  "verify (every file of it is in its index); write it beside"
                                  % (flag, out))
    outer = enclosing_output(target)
    if outer is not None:
        raise FileExistsError("%s: inside the output folder %s, which would then not verify; "
                              "write it elsewhere" % (flag, outer))
    parent = os.path.dirname(here)
    if not os.path.isdir(parent):
        raise ValueError("%s: the folder %s does not exist" % (flag, parent))
    if not os.access(parent, os.W_OK | os.X_OK) or (os.path.exists(target) and
                                                     not os.access(target, os.W_OK)):
        raise PermissionError("%s: cannot be written (permission denied or a read-only file "
                              "system)" % flag)


def flag_for(message, parser):
    """``message`` (from a ValueError of the lab) with the flag it is about in front,
    when it starts with a parameter name a flag of ``parser`` sets."""
    head = message.split(None, 1)[0].split("=", 1)[0].rstrip(":") if message else ""
    if head.startswith("-"):
        return message
    flags = {a.dest: a.option_strings[0] for a in parser._actions
             if a.option_strings and a.help != argparse.SUPPRESS}
    flag = flags.get(head) or flags.get(head.split("[", 1)[0])   # "cpus[1]" -> --cpus
    return "%s: %s" % (flag, message) if flag else message


def emit_json(args, result):
    """Write ``result`` where --json asked: the file, or stdout for a bare --json.
    ``result``: an object with ``to_json(path)`` (an experiment's result) or plain
    data (dicts, lists, dataclasses; NaN and inf become null).  Returns True when
    the tables should not be printed (stdout is JSON).

    A file that cannot be written after all (check_out vetted it before the run;
    a full disk still can) loses nothing: the JSON goes to a file in the temporary
    folder instead, stderr says where, the tables are printed as without --json
    and ``args.json_failed`` holds the message (the command then exits 2)."""
    target = getattr(args, "json", None)
    if target is None:
        return False
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        _write_json(result, path)
        if target == "-":
            with open(path) as f:
                sys.stdout.write(f.read())
            return True
        import shutil
        try:
            shutil.copyfile(path, target)
        except OSError as e:
            fd, kept = tempfile.mkstemp(prefix="pyqueue-", suffix=".json")
            os.close(fd)
            shutil.copyfile(path, kept)
            args.json_failed = ("cannot write --json %s: %s; the result is kept in %s"
                                % (target, e.strerror or e, kept))
            print("pyqueue: %s" % args.json_failed, file=sys.stderr)
    return False


def _write_json(result, path):
    if hasattr(result, "to_json"):
        result.to_json(path)
    else:
        import json
        from ..common.output import to_jsonable
        with open(path, "w") as f:
            json.dump(to_jsonable(result), f, indent=1)
            f.write("\n")
