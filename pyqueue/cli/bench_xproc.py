"""python -m pyqueue bench-xproc: a shared queue across processes vs in-process and vs
Python's cross-process queues (DESIGN §3.9)."""
from .options import add_output_options, emit_json

NAME = "bench-xproc"
HELP = "cross-process throughput and round trip: shared pyqueue vs in-process and the IPC peers"


def add_arguments(parser):
    parser.add_argument("--messages", type=int, default=200_000,
                        help="messages a slice, 32-byte rows (default: %(default)s)")
    parser.add_argument("--messages-1k", type=int, default=50_000,
                        help="messages a slice, 1 KiB rows (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--round-trips", type=int, default=5000, help="round trips a round")
    parser.add_argument("--only", default=None, help="comma-separated substrings of row names")
    parser.add_argument("--writer-cpu", type=int, default=0, metavar="CPU")
    parser.add_argument("--reader-cpu", type=int, default=1, metavar="CPU")
    parser.add_argument("--quick", action="store_true", help="1 round of small slices")
    add_output_options(parser)


def run(args):
    from ..lab.experiments.bench_xproc import bench_xproc
    if args.quick:
        args.rounds, args.messages, args.messages_1k, args.round_trips = 1, 5000, 2000, 200
    r = bench_xproc(messages=args.messages, messages_1k=args.messages_1k, rounds=args.rounds,
                    writer_cpu=args.writer_cpu, reader_cpu=args.reader_cpu,
                    round_trips=args.round_trips,
                    only=[s.strip() for s in args.only.split(",")] if args.only else None)
    if not emit_json(args, r):
        print(r.text(markdown=args.markdown))
    return 0
