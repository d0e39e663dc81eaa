"""python -m pyqueue burst-tail: the 1 MiB burst-tail study (DESIGN §6.1).

Also benchmarks/burst/run_burst_tail_1m.py (the same code)."""
from .common import add_queue_arguments, command_line, exit_code, queue_config
from .options import add_cpu_options, add_run_options, emit_json

NAME = "burst-tail"
QUICK_WINDOWS, QUICK_SPILL_BLOCKS = 100, 16384
HELP = "business tail latency after a 1 MiB send, pyqueue strategies vs open-source queues"


def add_arguments(p):
    from .. import peers
    from ..experiments.burst_tail import DEFAULT_CLASSES
    others = [n for n in peers.BUILTIN if n != "pyqueue"] + list(peers.PEERS)
    p.add_argument("--classes", default=",".join(DEFAULT_CLASSES),
                   help="comma-separated: yieldN (pyqueue retrying with sched_yield every N), "
                        "optionally with levers, yieldN+field[=value] of the queue settings "
                        "(e.g. yield1024+hugepages=0, yield1024+touch_after_write=0), "
                        "none (the same windows with no send; none+gap=G: G µs idle "
                        "instead) and peers %s, each also as "
                        "<peer>-twin (its send loop and consumer with the library's calls "
                        "inlined) (default: %%(default)s)" % ", ".join(others))
    p.add_argument("--rounds", type=int, default=3, help="rounds over every class")
    p.add_argument("--windows", type=int, default=2500, help="windows per class per round")
    p.add_argument("--msg-size", type=int, default=32, help="bytes per message")
    p.add_argument("--send-bytes", type=int, default=1 << 20,
                   help="bytes of the burst sent at the start of each window")
    p.add_argument("--verify-only", action="store_true",
                   help="consumer verifies without the 64-iteration loop")
    p.add_argument("--warmup-queries", type=int, default=512,
                   help="untimed business queries before each window's timed groups")
    p.add_argument("--groups", type=int, default=4, help="timed query groups per window")
    p.add_argument("--group-queries", type=int, default=16, help="queries per timed group")
    p.add_argument("--data-kib", type=int, default=48, help="business data in KiB")
    p.add_argument("--backlog-target", type=float, default=0.8,
                   help="backlog aimed at, as a fraction of the queue's capacity in messages")
    p.add_argument("--slice-windows", type=int, default=50,
                   help="windows per interleaved slice (how soon Ctrl-C is honoured)")
    p.add_argument("--no-pretouch", action="store_true",
                   help="fill each queue only to the backlog target before the study (default: "
                        "write it full once, then let the consumer bring it down to the target, "
                        "so no send meets an untouched page)")
    p.add_argument("--pmu", action="store_true", help="add a pass with counters around the queries")
    p.add_argument("--pmu-windows", type=int, default=500, help="windows per class of the --pmu pass")
    add_cpu_options(p, reader="consumer", aliases=(("--consumer-cpu", "reader_cpu"),))
    add_run_options(p, seed=0x5EED,
                    quick="%d windows per class per round and at most %d spill blocks: well "
                          "under a minute" % (QUICK_WINDOWS, QUICK_SPILL_BLOCKS))
    # The peers' retry cadence is the queue's retry_yield_every; yieldN sets its own.
    from ..experiments.burst_tail import STUDY_QUEUE
    add_queue_arguments(p, rename={"retry_yield_every": "--peer-retry-yield-every"},
                        base=STUDY_QUEUE)


def run(args):
    from ..experiments.burst_tail import STUDY_QUEUE, burst_tail
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
                     writer_cpu=args.writer_cpu, consumer_cpu=args.reader_cpu,
                     slice_windows=args.slice_windows, pmu=args.pmu, pmu_windows=args.pmu_windows,
                     pretouch=not args.no_pretouch,
                     seed=args.seed, out=args.out, overwrite=args.overwrite,
                     progress=not args.no_progress)
    if not emit_json(args, res):
        print(res.table(markdown=args.markdown))
        print("\nstatus: %s%s" % (res.status, "; output folder: %s" % res.out if res.out else ""))
        print(command_line())
    # A class that left the protocol ran a different experiment: a failed check.
    return exit_code(res.status, ok=not res.summary.get("protocol_not_met"))
