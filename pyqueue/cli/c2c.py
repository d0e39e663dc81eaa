"""python -m pyqueue c2c: core-to-core latency, queue vs floor, false sharing (DESIGN §6.3)."""
import sys

from .common import EXIT_USAGE, exit_code

NAME = "c2c"
HELP = "core-to-core cache-line latency matrix, pyqueue round trip vs the floor, false sharing"


def _cpus(text):
    return [int(c) for c in text.split(",") if c.strip()] if text else None


def add_arguments(parser):
    parser.add_argument("--cpus", default=None, metavar="A,B,...",
                        help="CPUs to include (default: every allowed CPU)")
    parser.add_argument("--modes", default="cas,two_lines",
                        help="ping-pong modes: cas, two_lines (default both)")
    parser.add_argument("--round-trips", type=int, default=20000,
                        help="timed round trips per slice (default 20000)")
    parser.add_argument("--warmup", type=int, default=1000, help="untimed round trips per slice")
    parser.add_argument("--rounds", type=int, default=5, help="rounds over every pair (default 5)")
    parser.add_argument("--batch", type=int, default=1, help="round trips per sample (default 1)")
    parser.add_argument("--pair", default=None, metavar="A,B",
                        help="pair for the queue comparison and the over-time series "
                             "(default: the first two CPUs)")
    parser.add_argument("--no-queue", action="store_true",
                        help="skip the ping-pong through pyqueue")
    parser.add_argument("--over-time", type=float, default=None, metavar="SECONDS",
                        help="follow the pair for this long (default 5 s on a VM, else 0)")
    parser.add_argument("--interval", type=float, default=0.5,
                        help="seconds between over-time slices (default 0.5)")
    parser.add_argument("--false-sharing", action="store_true",
                        help="also run the false-sharing demo on the pair")
    parser.add_argument("--increments", type=int, default=20_000_000,
                        help="false sharing: increments per thread per slice")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args):
    from ..lab.experiments import c2c, false_sharing
    try:
        pair = tuple(_cpus(args.pair)) if args.pair else None
        r = c2c.core_to_core(cpus=_cpus(args.cpus),
                             modes=[m.strip() for m in args.modes.split(",") if m.strip()],
                             round_trips=args.round_trips, warmup=args.warmup,
                             rounds=args.rounds, batch=args.batch, queue=not args.no_queue,
                             pair=pair, over_time=args.over_time, interval=args.interval,
                             out=args.out, overwrite=args.overwrite, progress=not args.quiet)
    except OSError as e:                # e.g. no cycle counter to time with
        print("c2c: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    print(r.summary)
    if args.false_sharing and r.status == "complete":
        fs_out = (args.out.rstrip("/") + "-false-sharing") if args.out else None
        f = false_sharing.false_sharing(cpus=pair or tuple(r.cpus[:2]), increments=args.increments,
                                  rounds=args.rounds, out=fs_out, overwrite=args.overwrite,
                                  progress=not args.quiet)
        print()
        print(f.summary)
        return exit_code(f.status)
    return exit_code(r.status)
