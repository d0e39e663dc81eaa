"""python -m pyqueue ownership: the ownership control of DESIGN §6.2.

Same worker, same business query, data warmed by the worker itself vs by a
thread on another core and handed over; prints p50/p99/p999 ns per 64-query
window per arm, the other/self ratio and whether the checksums agree.  The flags
are OwnershipParams' fields (pyqueue.lab.experiments.ownership), one each.

Exit status (cli/common.py): 0 complete with equal checksums; 1 checksums
differ; 2 bad arguments or CPUs; 130 interrupted (the partial output folder is valid).
"""
import sys

from .common import EXIT_USAGE, exit_code
from .options import add_run_options, emit_json

NAME = "ownership"
HELP = "ownership control: self-warmed vs handed-over data, same worker and query"


def add_arguments(parser):
    from ..experiments.ownership import OwnershipParams
    OwnershipParams.add_arguments(parser)
    add_run_options(parser, quick="a run of a few seconds (%d windows per arm per round)"
                    % OwnershipParams.quick().windows)


def run(args):
    from ..experiments.ownership import OwnershipParams, ownership
    try:
        result = ownership(OwnershipParams.from_args(args), out=args.out,
                           overwrite=args.overwrite, progress=not args.no_progress)
    except RuntimeError as e:           # fewer than two CPUs to run on
        print("pyqueue ownership: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    if not emit_json(args, result):
        print(result.text(markdown=args.markdown))
        if args.out:
            print("\noutput folder: %s" % args.out)
    equal = result.summary["checksums"]["equal"]
    if not result.complete:
        print("pyqueue ownership: %s" % result.status, file=sys.stderr)
    elif not equal:
        print("pyqueue ownership: checksums differ between the arms", file=sys.stderr)
    return exit_code(result.status, ok=equal)
