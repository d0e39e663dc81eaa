"""python -m pyqueue ownership: the ownership control of DESIGN §6.2.

Same worker, same business query, data warmed by the worker itself vs by a
thread on another core and handed over; prints p50/p99/p999 ns per 64-query
window per arm, the other/self ratio and whether the checksums agree.

Exit status (cli/common.py): 0 complete with equal checksums; 1 checksums
differ; 2 bad arguments or CPUs; 130 interrupted (the partial output folder is valid).
"""
import sys

from .common import EXIT_USAGE, exit_code
from .options import add_cpu_options, add_run_options, emit_json

NAME = "ownership"
HELP = "ownership control: self-warmed vs handed-over data, same worker and query"

QUICK = {"windows": 1000, "rounds": 3, "slice_windows": 50}
DEFAULTS = {"windows": 10_000, "rounds": 3, "slice_windows": 100}


def add_arguments(parser):
    # The helper writes (warms) the data and hands it over; the timed worker reads it.
    add_cpu_options(parser, writer="helper that warms the data in arm 'other'",
                    reader="timed worker",
                    aliases=(("--other-cpu", "writer_cpu"), ("--worker-cpu", "reader_cpu")))
    parser.add_argument("--windows", type=int, default=None,
                        help="timed windows per arm per round (%d; --quick %d)"
                        % (DEFAULTS["windows"], QUICK["windows"]))
    parser.add_argument("--rounds", type=int, default=None, help="rounds (3)")
    parser.add_argument("--data-kib", type=int, default=48, help="business data in KiB (48)")
    parser.add_argument("--queries", type=int, default=64, help="queries per timed window (64)")
    parser.add_argument("--groups", type=int, default=4, help="timed groups per window (4)")
    parser.add_argument("--slice-windows", type=int, default=None,
                        help="windows per interleaved slice (%d)" % DEFAULTS["slice_windows"])
    parser.add_argument("--pmu", action="store_true",
                        help="also run counter-bracketed slices (hardware counters where the "
                             "machine has a PMU, software counters otherwise)")
    from ..experiments.ownership import DEFAULT_SEED
    add_run_options(parser, quick="a run of a few seconds (%d windows per arm per round)"
                    % QUICK["windows"], seed=DEFAULT_SEED,
                    seed_help="data and query seed, decimal or 0x hex (default: %#x, the "
                              "original study's id)" % DEFAULT_SEED)


def run(args):
    from ..experiments.ownership import ownership

    base = QUICK if args.quick else DEFAULTS
    pick = lambda name: getattr(args, name) if getattr(args, name) is not None else base[name]
    try:
        result = ownership(worker_cpu=args.reader_cpu, other_cpu=args.writer_cpu,
                           windows=pick("windows"), rounds=pick("rounds"),
                           data_kib=args.data_kib, queries=args.queries, groups=args.groups,
                           slice_windows=pick("slice_windows"), pmu=args.pmu, out=args.out,
                           progress=not args.no_progress,
                           seed=args.seed,
                           overwrite=args.overwrite, argv=sys.argv)
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
