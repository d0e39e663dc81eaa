"""python -m pyqueue bench: pyqueue against its peers, interleaved slices.

The flags are BenchParams' fields (pyqueue.lab.experiments.bench), one each."""
from .common import command_line, exit_code
from .options import add_run_options, emit_json

NAME = "bench"
HELP = ("throughput and round trip of pyqueue vs its peers, the yardstick ring and the "
        "ping-pong floor, plus the Python API rows")


def add_arguments(p):
    from ..experiments.bench import BenchParams
    BenchParams.add_arguments(p)
    q = BenchParams.quick()
    add_run_options(p, quick="%d rounds of small slices (%d streaming and %d chasing messages, "
                             "%d round trips, %d Python messages), no settle pass"
                             % (q.rounds, q.messages, q.chasing_messages, q.trips,
                                q.py_messages))


def run(args):
    from ..experiments.bench import BenchParams, bench, format_markdown
    res = bench(BenchParams.from_args(args), progress=not args.no_progress, out=args.out,
                overwrite=args.overwrite)
    if emit_json(args, res):
        return exit_code(res.status)
    print(res.table())
    if args.markdown:
        print("\n" + format_markdown(res.summary, res.params))
    if res.out:
        print("\noutput folder: %s" % res.out)
    if res.status != "complete":
        print("\nstatus: %s" % res.status)
    print("\n" + command_line())
    return exit_code(res.status)
