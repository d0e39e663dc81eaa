"""python -m pyqueue c2c: core-to-core latency, queue vs floor, false sharing (DESIGN §6.3)."""
import sys

from .common import EXIT_USAGE, exit_code
from .options import add_cpu_options, add_run_options, emit_json

NAME = "c2c"
HELP = "core-to-core cache-line latency matrix, pyqueue round trip vs the floor, false sharing"


def add_arguments(parser):
    parser.add_argument("--modes", default="cas,two_lines",
                        help="ping-pong modes: cas, two_lines (default: both)")
    parser.add_argument("--round-trips", type=int, default=20000,
                        help="timed round trips per slice (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1000, help="untimed round trips per slice")
    parser.add_argument("--rounds", type=int, default=5, help="rounds over every pair")
    parser.add_argument("--batch", type=int, default=1, help="round trips per sample")
    parser.add_argument("--no-queue", action="store_true",
                        help="skip the ping-pong through pyqueue")
    parser.add_argument("--over-time", type=float, default=None, metavar="SECONDS",
                        help="follow the pair for this long (default: 5 s on a VM, else 0)")
    parser.add_argument("--interval", type=float, default=0.5,
                        help="seconds between over-time slices (default: %(default)s)")
    parser.add_argument("--false-sharing", action="store_true",
                        help="also run the false-sharing demo on the pair")
    parser.add_argument("--increments", type=int, default=20_000_000,
                        help="false sharing: increments per thread per slice")
    # The pair's default is the first two CPUs of the matrix: 0 and 1 on a whole machine,
    # as every other command, but still a pair inside a --cpus that leaves 0 out.
    add_cpu_options(parser, matrix=True, writer="pair's first thread (queue writer)",
                    reader="pair's second thread (queue reader)", writer_default=None,
                    reader_default=None, pair_alias="--pair",
                    note="; the pair defaults to the first two of --cpus")
    add_run_options(parser, quick="1 round of 2000 round trips, no over-time series: seconds")


def output_folders(args):
    """--out, and with --false-sharing the folder beside it that demo writes."""
    return [args.out, _false_sharing_out(args)]


def _false_sharing_out(args):
    if args.false_sharing and args.out:
        return args.out.rstrip("/") + "-false-sharing"
    return None


def run(args):
    from ..experiments import c2c, false_sharing
    if args.quick:
        args.rounds, args.round_trips, args.warmup = 1, 2000, 200
        if args.over_time is None:
            args.over_time = 0.0
    if (args.writer_cpu is None) != (args.reader_cpu is None):
        raise ValueError("--writer-cpu and --reader-cpu: give both CPUs of the pair, or neither")
    pair = None if args.writer_cpu is None else (args.writer_cpu, args.reader_cpu)
    try:
        r = c2c.core_to_core(cpus=args.cpus,
                             modes=[m.strip() for m in args.modes.split(",") if m.strip()],
                             round_trips=args.round_trips, warmup=args.warmup,
                             rounds=args.rounds, batch=args.batch, queue=not args.no_queue,
                             pair=pair, over_time=args.over_time, interval=args.interval,
                             out=args.out, overwrite=args.overwrite,
                             progress=not args.no_progress)
    except OSError as e:                # e.g. no cycle counter to time with
        print("pyqueue c2c: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    f = None
    if args.false_sharing and r.status == "complete":
        f = false_sharing.false_sharing(cpus=pair or tuple(r.cpus[:2]), increments=args.increments,
                                        rounds=args.rounds, out=_false_sharing_out(args), overwrite=args.overwrite,
                                        progress=not args.no_progress)
    # The JSON holds every result the command printed: the false sharing's too.
    if emit_json(args, r if f is None else dict(r.to_dict(), false_sharing=f.to_dict())):
        return exit_code((f or r).status)
    print(r.text(markdown=args.markdown))
    if f is not None:
        print()
        print(f.text(markdown=args.markdown))
    return exit_code((f or r).status)
