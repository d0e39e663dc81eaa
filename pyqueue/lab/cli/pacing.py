"""python -m pyqueue pacing: measure the drain rate D, pace bursts at P_max per
delay target, and show the unbounded vs bounded backlog of streams above/below D
(DESIGN §6.5).  The flags are PacingParams' fields (pyqueue.lab.experiments.pacing),
one each; ``drain-rate`` runs the first phase alone (the old ``--drain-only``, still
accepted here).
"""
import argparse

from . import drain_rate
from .options import add_run_options

NAME = "pacing"
HELP = "measure the drain rate D, then check paced bursts against their delay targets"


def add_arguments(p):
    from ..experiments.pacing import PacingParams
    PacingParams.add_arguments(p)
    # The drain rate alone is its own command, with its own parameter list.
    p.add_argument("--drain-only", action="store_true", help=argparse.SUPPRESS)
    quick = PacingParams.quick()
    add_run_options(p, quick="N=%d, %d round, %d drain reps: seconds"
                    % (quick.burst, quick.rounds, quick.drain_reps))


def run(args):
    from ..experiments.pacing import PacingParams, pacing
    if args.drain_only:
        return drain_rate.run(args)
    res = pacing(PacingParams.from_args(args), out=args.out, overwrite=args.overwrite,
                 progress=not args.no_progress)
    return drain_rate.finish(args, res)
