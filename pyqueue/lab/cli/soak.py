"""python -m pyqueue soak: a bounded stress that checks every message."""
from . import common
from .common import command_line, exit_code
from .options import add_run_options, emit_json

NAME = "soak"
HELP = ("bounded stress: random sizes, pauses on both sides, tier-2 spills, flushes and "
        "timeouts, every message checked")


QUICK_SECONDS = 3.0


def add_arguments(p):
    p.add_argument("--seconds", type=float, default=60.0, help="how long to run (default 60)")
    p.add_argument("--period", type=float, default=5.0,
                   help="seconds per random queue configuration (default 5)")
    p.add_argument("--slice", type=float, default=0.5,
                   help="seconds per C slice: how soon Ctrl-C is honoured (default 0.5)")
    add_run_options(p, quick="%g seconds instead of --seconds" % QUICK_SECONDS, seed="random",
                    seed_help="reproduce a run (default: random, printed)")


def run(args):
    """Exit 0: complete, no error; 1: an error was found; 130: stopped by Ctrl-C
    (the summary of what was checked is printed either way; cli/common.py)."""
    from ..experiments.soak import soak
    if args.quick:
        args.seconds, args.period = min(args.seconds, QUICK_SECONDS), min(args.period, 1.0)
    res = soak(args.seconds, args.seed, period_s=args.period, slice_s=args.slice,
               progress=not args.no_progress, out=args.out, overwrite=args.overwrite)
    if emit_json(args, res):
        return exit_code(res.status)
    print(res.text(markdown=args.markdown))
    print("\n" + command_line())
    print("reproduce: %s soak --seconds %g --seed %d --period %g --slice %g"
          % (common.PROG, args.seconds, res.params["seed"], args.period, args.slice))
    return exit_code(res.status)           # an error found is "failed: ..."
