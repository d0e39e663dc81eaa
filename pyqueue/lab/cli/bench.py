"""python -m pyqueue bench: pyqueue against its peers, interleaved slices."""
from .common import command_line, exit_code
from .options import add_cpu_options, add_run_options, emit_json

NAME = "bench"
HELP = ("throughput and round trip of pyqueue vs its peers, the yardstick ring and the "
        "ping-pong floor, plus the Python API rows")


def add_arguments(p):
    from pyqueue.config import DEFAULTS
    from ..common.placement import DEFAULT_SPLIT_NS
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--messages", type=int, default=20_000_000,
                   help="messages per streaming throughput slice")
    p.add_argument("--chasing-messages", type=int, default=2_000_000,
                   help="messages per chasing throughput slice")
    p.add_argument("--gap-ns", type=float, default=50.0,
                   help="the chasing pass paces every writer to one message per GAP_NS "
                        "(default %(default)g)")
    p.add_argument("--trips", type=int, default=20_000, help="round trips per latency slice")
    p.add_argument("--py-messages", type=int, default=200_000,
                   help="messages per Python-API slice")
    p.add_argument("--budget-bytes", type=int, default=1 << 20,
                   help="memory budget of every queue (pyqueue: %d hot %d-byte blocks + spill)"
                        % (DEFAULTS["hot_blocks"], DEFAULTS["block_size"]))
    p.add_argument("--yardstick-slots", type=int, default=16384, metavar="N",
                   help="slots of 32 bytes in the yardstick ring, a power of two (default "
                        "%(default)d: 512 KiB, half the budget; 32768 gives it the 1 MiB "
                        "every queue has)")
    p.add_argument("--split-ns", type=float, default=DEFAULT_SPLIT_NS,
                   help="one-way probe threshold between 'near' and 'far' placements "
                        "(default %(default)g)")
    p.add_argument("--fifo", type=int, default=0, metavar="PRIO",
                   help="run every slice SCHED_FIFO at this priority, so that other jobs "
                        "cannot preempt it on a shared host (0, the default: SCHED_OTHER; "
                        "needs root or CAP_SYS_NICE)")
    p.add_argument("--only", metavar="ROWS", default=None,
                   help="run only these rows, comma-separated (e.g. ck,rwq,pingpong: each in "
                        "every group that has it); the targets of the others read "
                        "'not measured'")
    from ..common.watchdog import DEFAULT_SLICE_LIMIT_S
    p.add_argument("--slice-limit", type=float, default=DEFAULT_SLICE_LIMIT_S, metavar="S",
                   help="a slice still running after S seconds has hung: its name and the "
                        "Python stacks are printed, the partial output written, and the "
                        "process exits with code 3 (default %(default)g; 0: no limit)")
    p.add_argument("--settle-rounds", type=int, default=None, metavar="N",
                   help="after the rounds, the rows whose twin verdict the slices left "
                        "open ('not settled') run N more rounds, then the verdict is final "
                        "(default: as many as --rounds, none with --quick; 0: no settle pass)")
    add_cpu_options(p)
    add_run_options(p, quick="2 rounds of small slices")


def run(args):
    from ..experiments.bench import bench, format_markdown
    if args.quick:
        args.rounds, args.messages, args.trips, args.py_messages = 2, 100_000, 2_000, 10_000
        args.chasing_messages = 100_000
        if args.settle_rounds is None:   # a smoke run: its slices settle nothing
            args.settle_rounds = 0
    res = bench(args.writer_cpu, args.reader_cpu, args.rounds, args.messages, args.trips,
                py_messages=args.py_messages, budget_bytes=args.budget_bytes,
                yardstick_slots=args.yardstick_slots, split_ns=args.split_ns,
                progress=not args.no_progress, out=args.out, overwrite=args.overwrite,
                chasing_messages=args.chasing_messages, gap_ns=args.gap_ns,
                fifo_priority=args.fifo, only=args.only,
                slice_limit_s=args.slice_limit, settle_rounds=args.settle_rounds)
    if emit_json(args, res):
        return exit_code(res.status)
    print(res.table())
    if args.markdown:
        print("\n" + format_markdown(res.summary, res.params))
    if args.out:
        print("\noutput folder: %s" % res.params["out"])
    if res.status != "complete":
        print("\nstatus: %s" % res.status)
    print("\n" + command_line())
    return exit_code(res.status)
