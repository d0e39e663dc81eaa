"""python -m pyqueue soak: a bounded stress that checks every message.  The flags are
SoakParams' fields (pyqueue.lab.experiments.soak), one each."""
from . import common
from .common import command_line, exit_code
from .options import add_run_options, emit_json

NAME = "soak"
HELP = ("bounded stress: random sizes, pauses on both sides, tier-2 spills, flushes and "
        "timeouts, every message checked")


def add_arguments(p):
    from ..experiments.soak import SoakParams
    SoakParams.add_arguments(p)
    quick = SoakParams.quick()
    add_run_options(p, quick="at most %g seconds, %g per configuration"
                    % (quick.seconds, quick.period_s))


def run(args):
    """Exit 0: complete, no error; 1: an error was found; 130: stopped by Ctrl-C
    (the summary of what was checked is printed either way; cli/common.py)."""
    from ..experiments.soak import SoakParams, soak
    res = soak(SoakParams.from_args(args), progress=not args.no_progress, out=args.out,
               overwrite=args.overwrite)
    if emit_json(args, res):
        return exit_code(res.status)
    print(res.text(markdown=args.markdown))
    print("\n" + command_line())
    p = res.params
    print("reproduce: %s soak --seconds %g --seed %d --period-s %g --slice-s %g"
          % (common.PROG, p["seconds"], p["seed"], p["period_s"], p["slice_s"]))
    return exit_code(res.status)           # an error found is "failed: ..."
