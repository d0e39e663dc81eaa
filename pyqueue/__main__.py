"""python -m pyqueue <command> [options]

Each command is a module in pyqueue/cli/ defining NAME, HELP, add_arguments(parser)
and run(args) -> exit code, so adding an experiment never touches this file.  The
exit codes are one table for every command (cli/common.py).
"""
import argparse
import importlib
import pkgutil
import sys


def _commands():
    from . import cli
    found = {}
    for info in pkgutil.iter_modules(cli.__path__):
        mod = importlib.import_module("pyqueue.cli." + info.name)
        if hasattr(mod, "NAME"):                 # cli/common.py is shared, not a command
            found[mod.NAME] = mod
    return dict(sorted(found.items()))


def main(argv=None):
    from ._errors import VerificationError
    from .cli import common

    parser = argparse.ArgumentParser(prog="python -m pyqueue",
                                     description="pyqueue: SPSC queue and burst tail-latency lab",
                                     epilog=common.epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="command")
    commands = _commands()
    for name, mod in commands.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP, epilog=common.epilog(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return common.EXIT_USAGE
    try:
        return commands[args.command].run(args) or common.EXIT_OK
    except common.USAGE_ERRORS as e:
        print("%s: %s" % (args.command, e), file=sys.stderr)
        return common.EXIT_USAGE
    except VerificationError as e:
        print("%s: %s" % (args.command, e), file=sys.stderr)
        return common.EXIT_CHECK_FAILED
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return common.EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
