"""python -m pyqueue pacing: measure the drain rate D, pace bursts at P_max per
delay target, and show the unbounded vs bounded backlog of streams above/below D
(DESIGN §6.5).  ``--drain-only`` stops after the drain-rate measurement.
"""
import argparse

from .common import command_line, exit_code, parse_duration
from .options import add_cpu_options, add_run_options, emit_json

NAME = "pacing"
HELP = "measure the drain rate D, then check paced bursts against their delay targets"


def _list(cast):
    def parse(text):
        try:
            return [cast(x) for x in text.split(",") if x.strip()]
        except ValueError as e:
            raise ValueError("%s: %s" % (text, e)) from None
    return parse


def add_arguments(p):
    p.add_argument("--burst", type=int, default=90_000, metavar="N",
                   help="messages per paced burst (default 90000)")
    p.add_argument("--targets", default="0.5ms,1ms,5ms,10ms,25ms", metavar="T,...",
                   help="queueing-delay targets (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of paced bursts and streams")
    p.add_argument("--drain-sizes", default=None, metavar="N,...",
                   help="burst sizes of the drain measurement (default N and N/4)")
    p.add_argument("--drain-reps", type=int, default=5, help="unpaced bursts per drain size")
    p.add_argument("--pace-with", choices=("conservative", "typical"), default="conservative",
                   help="D used for P_max: the lowest (default) or the median N/max-delay")
    p.add_argument("--d-margin", type=float, default=0.0, metavar="FRACTION",
                   help="pace with D lowered by this fraction (e.g. 0.05), default 0")
    p.add_argument("--stream-messages", type=int, default=None,
                   help="messages per sustained stream (default 4 N)")
    p.add_argument("--stream-factors", default="1.1,0.9", metavar="F,...",
                   help="stream rates as multiples of D (default 1.1,0.9)")
    p.add_argument("--work-ns", type=int, default=500,
                   help="consumer cost per message, ns of spin (default 500: D ~ 1.6 M msg/s)")
    p.add_argument("--msg-size", type=int, default=32, help="message size in bytes (default 32)")
    p.add_argument("--size", dest="msg_size", type=int, default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)
    add_cpu_options(p, writer="producer", reader="consumer",
                    aliases=(("--producer-cpu", "writer_cpu"), ("--consumer-cpu", "reader_cpu")))
    p.add_argument("--fifo", type=int, default=0, metavar="PRIO",
                   help="run both threads SCHED_FIFO at this priority (0: SCHED_OTHER)")
    p.add_argument("--no-verify", action="store_true", help="do not verify every message")
    p.add_argument("--drain-only", action="store_true", help="only measure D")
    add_run_options(p, quick="small run: N=20000, targets 0.5,1,5,20 ms, 1 round, 2 drain reps")


def run(args):
    from ..experiments.pacing import drain_rate, pacing
    if args.quick:
        args.burst, args.targets, args.rounds, args.drain_reps = 20_000, "0.5ms,1ms,5ms,20ms", 1, 2
    common = dict(work_ns=args.work_ns, size=args.msg_size, producer_cpu=args.writer_cpu,
                  consumer_cpu=args.reader_cpu, fifo_priority=args.fifo,
                  verify=not args.no_verify, out=args.out, overwrite=args.overwrite,
                  progress=not args.no_progress)
    sizes = _list(int)(args.drain_sizes) if args.drain_sizes else None
    if args.drain_only:
        res = drain_rate(sizes or (args.burst, max(2, args.burst // 4)), args.drain_reps,
                         **common)
    else:
        targets = [parse_duration(t, "--targets") for t in args.targets.split(",") if t.strip()]
        res = pacing(args.burst, targets, args.rounds, drain_sizes=sizes,
                     drain_reps=args.drain_reps, pace_with=args.pace_with, d_margin=args.d_margin,
                     stream_messages=args.stream_messages,
                     stream_factors=_list(float)(args.stream_factors), **common)
    if not emit_json(args, res):
        print(res.text(markdown=args.markdown))
        if args.out:
            print("\noutput folder: %s (%s)" % (args.out, res.status))
        print("\n" + command_line())
    return exit_code(res.status)
