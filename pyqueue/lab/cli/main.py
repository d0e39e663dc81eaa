"""python -m pyqueue <command> [options]   (or the console script: pyqueue <command>)

Each command is a module in pyqueue/lab/cli/ defining NAME, HELP, add_arguments(parser)
and run(args) -> exit code, so adding an experiment never touches this file.  The
exit codes are one table for every command (cli/common.py), and so is the error
policy here: a bad value is one line, ``pyqueue CMD: <message naming the flag>``,
and exit 2, never a traceback.
"""
import argparse
import importlib
import os
import pkgutil
import signal
import sys


def commands():
    """{name: module} of every command (a module of this package with NAME)."""
    from pyqueue.lab import cli
    found = {}
    for info in pkgutil.iter_modules(cli.__path__):
        mod = importlib.import_module("pyqueue.lab.cli." + info.name)
        if hasattr(mod, "NAME"):           # common.py and options.py are shared, not commands
            found[mod.NAME] = mod
    return dict(sorted(found.items()))


def program_name(argv0=None):
    """How the user started us: 'python -m pyqueue' or the console script's name."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    base = os.path.basename(argv0 or "")
    if not base or base in ("__main__.py", "-c", "-m") or base.endswith(".py"):
        return "python -m pyqueue"
    return base


class Parser(argparse.ArgumentParser):
    """argparse with the house error policy: one line on stderr, exit 2.  The
    usage is what --help is for; repeating it under every typo buries the message."""

    def error(self, message):
        from . import common
        name = self.prog.replace("python -m pyqueue", "pyqueue")
        self.exit(common.EXIT_USAGE, "%s: %s (see --help)\n" % (name, message))


def _sigterm(signum, frame):
    # A polite kill (a CI timeout, systemd) stops the run as Ctrl-C does: the
    # sessions' guard also listens for SIGTERM; outside one this ends the command.
    raise KeyboardInterrupt


def main(argv=None):
    from pyqueue import __version__
    from pyqueue.errors import VerificationError
    from . import common, options

    prog = program_name()
    common.PROG = prog
    formatter = argparse.RawDescriptionHelpFormatter
    parser = Parser(prog=prog, description="pyqueue: SPSC queue and burst tail-latency lab",
                     epilog=common.epilog(), formatter_class=formatter)
    parser.add_argument("--version", action="version", version="pyqueue %s" % __version__)
    sub = parser.add_subparsers(dest="command", metavar="command", parser_class=Parser)
    found = commands()
    parsers = {}
    for name, mod in found.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP, epilog=common.epilog(),
                           formatter_class=_HelpFormatter)
        mod.add_arguments(p)
        parsers[name] = p
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return common.EXIT_USAGE
    # numpy's OpenBLAS pool would be a third busy thread beside an experiment's two
    # (pyqueue/_blas.py); every command runs with it set to the calling thread.
    from ..runtime import blas as _blas
    _blas.single_thread()
    where = "pyqueue %s" % args.command
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _sigterm)
    try:
        folders = getattr(found[args.command], "output_folders", None)
        options.check_out(args, folders(args) if folders else None)
        code = found[args.command].run(args) or common.EXIT_OK
        # --json could not be written at the end (emit_json kept it elsewhere and said
        # where): the tables were printed, the output is not where it was asked for.
        return common.EXIT_USAGE if getattr(args, "json_failed", None) else code
    except common.USAGE_ERRORS as e:
        print("%s: %s" % (where, options.flag_for(str(e), parsers[args.command])),
              file=sys.stderr)
        return common.EXIT_USAGE
    except VerificationError as e:
        print("%s: %s" % (where, e), file=sys.stderr)
        return common.EXIT_CHECK_FAILED
    except OSError as e:
        if e.errno not in common.WRITE_ERRNOS:
            raise
        # The output folder could not be written (full disk, read-only, quota): its
        # summary says "failed: ..." where it still fit; not a failed check.
        print("%s: cannot write %s: %s" % (where, e.filename or "the output folder",
                                           e.strerror or e), file=sys.stderr)
        return common.EXIT_USAGE
    except KeyboardInterrupt:
        print("\n%s: interrupted" % where, file=sys.stderr)
        return common.EXIT_INTERRUPTED
    finally:
        if previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's table as written and shows every option's default."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("%(default)" not in text and "default" not in text and action.option_strings
                and action.default not in (None, False, argparse.SUPPRESS)
                and action.nargs != 0):
            text += " (default: %(default)s)"
        return text


if __name__ == "__main__":
    sys.exit(main())
