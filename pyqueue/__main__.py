"""python -m pyqueue <command> [options]

Each command is a module in pyqueue/cli/ defining NAME, HELP, add_arguments(parser)
and run(args) -> exit code, so adding an experiment never touches this file.
"""
import argparse
import importlib
import pkgutil
import sys


def _commands():
    from . import cli
    found = {}
    for info in pkgutil.iter_modules(cli.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module("pyqueue.cli." + info.name)
        found[mod.NAME] = mod
    return dict(sorted(found.items()))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pyqueue",
                                     description="pyqueue: SPSC queue and burst tail-latency lab")
    sub = parser.add_subparsers(dest="command", metavar="command")
    commands = _commands()
    for name, mod in commands.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return commands[args.command].run(args) or 0
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
