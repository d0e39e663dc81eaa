"""python -m pyqueue burst-tail: the 1 MiB burst-tail study (DESIGN §6.1).

Also benchmarks/burst/run_burst_tail_1m.py (the same code).  The flags are
BurstTailParams' fields (pyqueue.lab.experiments.burst_tail), one each."""
from .common import command_line, exit_code
from .options import add_run_options, emit_json

NAME = "burst-tail"
HELP = "business tail latency after a 1 MiB send, pyqueue strategies vs open-source queues"


def add_arguments(p):
    from ..experiments.burst_tail import BurstTailParams
    BurstTailParams.add_arguments(p)
    quick = BurstTailParams.quick()
    add_run_options(p, quick="%d windows per class per round (enough groups for p50 and p99, "
                             "not p999) and at most %d spill blocks: a few minutes"
                             % (quick.windows, quick.queue.spill_blocks))


def run(args):
    from ..experiments.burst_tail import BurstTailParams, burst_tail
    res = burst_tail(BurstTailParams.from_args(args), out=args.out, overwrite=args.overwrite,
                     progress=not args.no_progress)
    if not emit_json(args, res):
        print(res.table(markdown=args.markdown))
        print("\nstatus: %s%s" % (res.status, "; output folder: %s" % res.out if res.out else ""))
        print(command_line())
    # A class that left the protocol ran a different experiment: a failed check.
    return exit_code(res.status, ok=not res.summary.get("protocol_not_met"))
