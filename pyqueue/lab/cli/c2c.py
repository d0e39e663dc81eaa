"""python -m pyqueue c2c: core-to-core latency, queue vs floor, false sharing (DESIGN §6.3).

The flags are CoreToCoreParams' fields (pyqueue.lab.experiments.c2c) and, for
--false-sharing, FalseSharingParams' (experiments/false_sharing.py), one each; the
two share --rounds, --writer-cpu and --reader-cpu: the false sharing runs on the
matrix's pair."""
import sys

from .common import EXIT_USAGE, exit_code
from .options import CpuPairAction, add_run_options, emit_json

NAME = "c2c"
HELP = "core-to-core cache-line latency matrix, pyqueue round trip vs the floor, false sharing"
# Options that choose which of the command's experiments run, not a parameter of one.
SELECTORS = ("false_sharing",)


def add_arguments(parser):
    from ..experiments.c2c import CoreToCoreParams
    from ..experiments.false_sharing import FalseSharingParams
    CoreToCoreParams.add_arguments(parser)
    parser.add_argument("--false-sharing", action="store_true",
                        help="also run the false-sharing demo, on the pair and for --rounds "
                             "rounds (its own output folder: --out's path + '-false-sharing')")
    FalseSharingParams.add_arguments(parser)
    # The old 'A,B' spelling of the pair, hidden.
    parser.add_argument("--pair", action=CpuPairAction, targets=("writer_cpu", "reader_cpu"))
    quick = CoreToCoreParams.quick()
    add_run_options(parser, quick="%d round of %d round trips, no over-time series: seconds"
                                  % (quick.rounds, quick.round_trips))


def output_folders(args):
    """--out, and with --false-sharing the folder beside it that demo writes."""
    return [args.out, _false_sharing_out(args)]


def _false_sharing_out(args):
    if args.false_sharing and args.out:
        return args.out.rstrip("/") + "-false-sharing"
    return None


def run(args):
    from ..experiments.c2c import CoreToCoreParams, core_to_core
    from ..experiments.false_sharing import FalseSharingParams, false_sharing
    p = CoreToCoreParams.from_args(args)
    # Both lists are checked before anything is measured.
    fs = FalseSharingParams.from_args(args) if args.false_sharing else None
    try:
        r = core_to_core(p, out=args.out, overwrite=args.overwrite,
                         progress=not args.no_progress)
    except OSError as e:                # e.g. no cycle counter to time with
        print("pyqueue c2c: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    f = None
    if fs is not None and r.status == "complete":
        f = false_sharing(fs, out=_false_sharing_out(args), overwrite=args.overwrite,
                          progress=not args.no_progress)
    # The JSON holds every result the command printed: the false sharing's too.
    if emit_json(args, r if f is None else dict(r.to_dict(), false_sharing=f.to_dict())):
        return exit_code((f or r).status)
    print(r.text(markdown=args.markdown))
    if f is not None:
        print()
        print(f.text(markdown=args.markdown))
    return exit_code((f or r).status)
