"""python -m pyqueue drain-rate: measure the drain rate D of a consumer with a fixed
per-message cost, on unpaced bursts of two sizes (DESIGN §6.5).  ``pacing`` measures
it the same way first.  The flags are DrainRateParams' fields
(pyqueue.lab.experiments.pacing), one each."""
from .common import command_line, exit_code
from .options import add_run_options, emit_json

NAME = "drain-rate"
HELP = "measure the drain rate D: unpaced bursts, delay against position in the burst"


def add_arguments(p):
    from ..experiments.pacing import DrainRateParams
    DrainRateParams.add_arguments(p)
    quick = DrainRateParams.quick().resolved()
    add_run_options(p, quick="bursts of %s, %d reps each: seconds"
                    % (" and ".join(str(n) for n in quick.drain_sizes), quick.drain_reps))


def run(args):
    from ..experiments.pacing import DrainRateParams, drain_rate
    res = drain_rate(DrainRateParams.from_args(args), out=args.out, overwrite=args.overwrite,
                     progress=not args.no_progress)
    return finish(args, res)


def finish(args, res):
    """Print what ``res`` (a DrainResult or PacingResult) measured as the flags ask; the
    exit code."""
    if not emit_json(args, res):
        print(res.text(markdown=args.markdown))
        if args.out:
            print("\noutput folder: %s (%s)" % (args.out, res.status))
        print("\n" + command_line())
    return exit_code(res.status)
