"""python -m pyqueue bench-xproc: a shared queue across processes vs in-process and vs the
cross-process peers (multiprocessing, faster-fifo, pyzmq, iceoryx2), DESIGN §3.9.

The flags are BenchXprocParams' fields (pyqueue.lab.experiments.bench_xproc), one each.

Exit status (cli/common.py): 0 complete; 2 bad arguments or CPUs; 130 interrupted (the
partial output folder is valid).
"""
import sys

from .common import exit_code
from .options import add_run_options, emit_json

NAME = "bench-xproc"
HELP = "cross-process throughput, round trip and futex wake-up: shared pyqueue vs in-process " \
       "and the IPC peers"


def add_arguments(parser):
    from ..experiments.bench_xproc import BenchXprocParams
    BenchXprocParams.add_arguments(parser)
    add_run_options(parser, quick="%d round of small slices (a few seconds)"
                                  % BenchXprocParams.quick().rounds)


def run(args):
    from ..experiments.bench_xproc import BenchXprocParams, bench_xproc
    r = bench_xproc(BenchXprocParams.from_args(args), out=args.out, overwrite=args.overwrite,
                    progress=not args.no_progress)
    if not emit_json(args, r):
        print(r.text(markdown=args.markdown))
        if args.out:
            print("\noutput folder: %s" % args.out)
    if not r.complete:
        print("pyqueue bench-xproc: %s" % r.status, file=sys.stderr)
    return exit_code(r.status)
