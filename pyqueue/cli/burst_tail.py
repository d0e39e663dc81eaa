"""python -m pyqueue burst-tail: the 1 MiB burst-tail study (DESIGN §6.1).

Also benchmarks/burst/run_burst_tail_1m.py (the same code)."""
from .common import add_queue_arguments, command_line, exit_code, queue_config

NAME = "burst-tail"
QUICK_WINDOWS, QUICK_SPILL_BLOCKS = 100, 16384
HELP = "business tail latency after a 1 MiB send, pyqueue strategies vs open-source queues"


def add_arguments(p):
    from .. import peers
    from ..lab.experiments.burst_tail import DEFAULT_CLASSES
    others = [n for n in peers.BUILTIN if n != "pyqueue"] + list(peers.PEERS)
    p.add_argument("--classes", default=",".join(DEFAULT_CLASSES),
                   help="comma-separated: yieldN (pyqueue retrying with sched_yield every N), "
                        "optionally with levers, yieldN+field[=value] of the queue settings "
                        "(e.g. yield1024+hugepages, yield1024+touch_after_write=0), "
                        "none (the same windows with no send) and peers %s (default: %%(default)s)"
                        % ", ".join(others))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--windows", type=int, default=2500, help="windows per class per round")
    p.add_argument("--msg-size", type=int, default=32)
    p.add_argument("--send-bytes", type=int, default=1 << 20)
    p.add_argument("--verify-only", action="store_true",
                   help="consumer verifies without the 64-iteration loop")
    p.add_argument("--warmup-queries", type=int, default=512)
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--group-queries", type=int, default=16)
    p.add_argument("--data-kib", type=int, default=48)
    p.add_argument("--backlog-target", type=float, default=0.8)
    p.add_argument("--writer-cpu", type=int, default=-1)
    p.add_argument("--consumer-cpu", type=int, default=-1)
    p.add_argument("--slice-windows", type=int, default=50)
    p.add_argument("--pmu", action="store_true", help="add a pass with counters around the queries")
    p.add_argument("--pmu-windows", type=int, default=500)
    p.add_argument("--seed", type=int, default=0x5EED)
    p.add_argument("--out", help="output folder; refuses a non-empty one without --overwrite")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--quick", action="store_true",
                   help="%d windows per class per round and at most %d spill blocks: well "
                        "under a minute" % (QUICK_WINDOWS, QUICK_SPILL_BLOCKS))
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    # The peers' retry cadence is the queue's retry_yield_every; yieldN sets its own.
    from ..lab.experiments.burst_tail import STUDY_QUEUE
    add_queue_arguments(p, rename={"retry_yield_every": "--peer-retry-yield-every"},
                        base=STUDY_QUEUE)


def run(args):
    from ..lab.experiments.burst_tail import STUDY_QUEUE, burst_tail
    config = queue_config(args, base=STUDY_QUEUE)
    if args.quick:
        args.windows = min(args.windows, QUICK_WINDOWS)
        config = config.replace(spill_blocks=min(config.spill_blocks, QUICK_SPILL_BLOCKS))
    res = burst_tail(classes=[c for c in args.classes.split(",") if c], rounds=args.rounds,
                     windows=args.windows, msg_size=args.msg_size, send_bytes=args.send_bytes,
                     config=config, consumer_loop=not args.verify_only,
                     warmup_queries=args.warmup_queries, groups=args.groups,
                     group_queries=args.group_queries, data_kib=args.data_kib,
                     backlog_target=args.backlog_target,
                     writer_cpu=args.writer_cpu, consumer_cpu=args.consumer_cpu,
                     slice_windows=args.slice_windows, pmu=args.pmu, pmu_windows=args.pmu_windows,
                     seed=args.seed, out=args.out, overwrite=args.overwrite,
                     progress=not args.no_progress)
    print(res.table(markdown=args.markdown))
    print("\nstatus: %s%s" % (res.status, "; output folder: %s" % res.out if res.out else ""))
    print(command_line())
    # A class that left the protocol ran a different experiment: a failed check.
    return exit_code(res.status, ok=not res.summary.get("protocol_not_met"))
