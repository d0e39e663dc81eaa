"""python -m pyqueue soak: a bounded stress that checks every message."""
from .common import command_line, exit_code

NAME = "soak"
HELP = ("bounded stress: random sizes, pauses on both sides, tier-2 spills, flushes and "
        "timeouts, every message checked")


def add_arguments(p):
    p.add_argument("--seconds", type=float, default=60.0, help="how long to run (default 60)")
    p.add_argument("--seed", type=int, help="reproduce a run (default: random, printed)")
    p.add_argument("--period", type=float, default=5.0,
                   help="seconds per random queue configuration (default 5)")
    p.add_argument("--slice", type=float, default=0.5,
                   help="seconds per C slice: how soon Ctrl-C is honoured (default 0.5)")
    p.add_argument("--out", help="write the output folder here")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--no-progress", action="store_true")


def run(args):
    """Exit 0: complete, no error; 1: an error was found; 130: stopped by Ctrl-C
    (the summary of what was checked is printed either way; cli/common.py)."""
    from ..lab.experiments.soak import soak
    res = soak(args.seconds, args.seed, period_s=args.period, slice_s=args.slice,
               progress=not args.no_progress, out=args.out, overwrite=args.overwrite)
    print(res.table())
    print("\n" + command_line())
    print("reproduce: python -m pyqueue soak --seconds %g --seed %d --period %g --slice %g"
          % (args.seconds, res.params["seed"], args.period, args.slice))
    return exit_code(res.status)           # an error found is "failed: ..."
