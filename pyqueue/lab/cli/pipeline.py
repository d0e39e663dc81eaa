"""python -m pyqueue pipeline: producer -> stage -> consumer latency per variant (DESIGN §6.4)."""
from .common import exit_code
from .options import add_cpu_options, add_run_options, emit_json

NAME = "pipeline"
HELP = "producer -> stage -> consumer at a set rate: mutex+condvar vs pyqueue variants"


def add_arguments(parser):
    from ..experiments.pipeline import DEFAULT_PLACEMENT, VARIANTS
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated subset of %s" % ", ".join(VARIANTS))
    parser.add_argument("--queues", default="", metavar="PEERS",
                        help="comma-separated peers (ck, dpdk, rwq, boost) that also run each "
                             "selected pyqueue variant, e.g. ck_pinned_spin (default: none)")
    parser.add_argument("--rate", type=float, default=20_000, help="messages/s (default 20000)")
    parser.add_argument("--messages", type=int, default=20_000,
                        help="messages per slice (default 20000)")
    parser.add_argument("--slices", type=int, default=5,
                        help="slices per variant, interleaved (default 5)")
    parser.add_argument("--fifo", type=int, default=0, metavar="PRIO",
                        help="SCHED_FIFO priority for stage and consumer of every variant, "
                             "the mutex baseline included (0 = off)")
    parser.add_argument("--producer-fifo", type=int, default=0, metavar="PRIO",
                        help="SCHED_FIFO priority for the producer, which sleeps between sends "
                             "(0 = off); lets it preempt a busy poller sharing its CPU")
    parser.add_argument("--combine", action="store_true",
                        help="pinned variants: the stage's thread also runs the consumer (two "
                             "threads; --stage-cpu and --reader-cpu must be one CPU)")
    parser.add_argument("--rest-share", type=float, default=None, metavar="F",
                        help="pyqueue receivers sleep --rest-ns whenever their CPU time passes "
                             "(1 - F) of the current 10 ms (default: 0.15 with --fifo while RT "
                             "throttling is on, else 0)")
    parser.add_argument("--rest-ns", type=int, default=20_000,
                        help="length of one such rest (default 20000; too short a rest on a VM "
                             "is charged to the poller and the budget is not reached)")
    parser.add_argument("--timer-slack-ns", type=int, default=0, metavar="NS",
                        help="PR_SET_TIMERSLACK of stage and consumer (0 = leave the default)")
    parser.add_argument("--pacer-spin-ns", type=int, default=10_000, metavar="NS",
                        help="the producer spins, not sleeps, this close to each send time "
                             "(default 10000; with --producer-fifo below half the interval)")
    parser.add_argument("--msg-size", type=int, default=32, help="bytes per message (>= 32)")
    parser.add_argument("--stage-work-ns", type=int, default=0, help="stage spin per message")
    # Three threads on (usually) two CPUs: the producer sleeps between sends, so the
    # consumer shares its CPU and the stage has one to itself.
    add_cpu_options(parser, writer="producer (pinned variants)", stage="stage (pinned variants)",
                    reader="consumer (pinned variants)", writer_default=DEFAULT_PLACEMENT[0],
                    stage_default=DEFAULT_PLACEMENT[1], reader_default=DEFAULT_PLACEMENT[2],
                    placement_alias="--placement",
                    note="; the consumer shares the producer's CPU, which sleeps between sends")
    add_run_options(parser, quick="2 slices of 2000 messages per variant: seconds")


def run(args):
    from ..experiments.pipeline import pipeline
    if args.quick:
        args.slices, args.messages = min(args.slices, 2), min(args.messages, 2000)
    placement = (args.writer_cpu, args.stage_cpu, args.reader_cpu)
    r = pipeline(variants=[v.strip() for v in args.variants.split(",") if v.strip()],
                 rate=args.rate, messages=args.messages, slices=args.slices,
                 placement=placement, fifo_priority=args.fifo, producer_fifo=args.producer_fifo, msg_size=args.msg_size,
                 stage_work_ns=args.stage_work_ns, combine=args.combine,
                 rest_share=args.rest_share, rest_ns=args.rest_ns,
                 receiver_slack_ns=args.timer_slack_ns, pacer_spin_ns=args.pacer_spin_ns,
                 out=args.out, overwrite=args.overwrite,
                 progress=not args.no_progress,
                 queues=[q.strip() for q in args.queues.split(",") if q.strip()])
    if not emit_json(args, r):
        print(r.text(markdown=args.markdown))
    return exit_code(r.status)
