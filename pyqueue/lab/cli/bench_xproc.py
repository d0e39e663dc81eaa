"""python -m pyqueue bench-xproc: a shared queue across processes vs in-process and vs the
cross-process peers (multiprocessing, faster-fifo, pyzmq, iceoryx2), DESIGN §3.9.

Exit status (cli/common.py): 0 complete; 2 bad arguments or CPUs; 130 interrupted (the
partial output folder is valid).
"""
import sys

from .common import exit_code
from .options import add_cpu_options, add_run_options, emit_json

NAME = "bench-xproc"
HELP = "cross-process throughput, round trip and futex wake-up: shared pyqueue vs in-process " \
       "and the IPC peers"


def _counts(text):
    """'N' or 'N32,N1K': one count, or one for 32-byte and one for 1 KiB messages."""
    parts = [int(p, 0) for p in text.split(",")]
    if len(parts) not in (1, 2):
        raise ValueError("needs one count or two separated by ','")
    return parts[0] if len(parts) == 1 else tuple(parts)


def add_arguments(parser):
    from ..experiments.bench_xproc import DEFAULTS, QUICK
    add_cpu_options(parser, writer="writer (or echo, or sleeping) process",
                    reader="reader process")
    show = lambda name: ",".join(map(str, DEFAULTS[name]))
    g = parser.add_argument_group("slices (one count, or 32-byte,1-KiB)")
    g.add_argument("--rounds", type=int, default=None,
                   help="interleaved rounds (%d; --quick %d)"
                   % (DEFAULTS["rounds"], QUICK["rounds"]))
    g.add_argument("--messages", type=_counts, default=None, metavar="N[,N]",
                   help="messages a slice of the Python per-message rows and the peers (%s)"
                   % show("messages"))
    g.add_argument("--c-messages", type=_counts, default=None, metavar="N[,N]",
                   help="messages a slice of the C per-message rows (%s)" % show("c_messages"))
    g.add_argument("--batch-messages", type=_counts, default=None, metavar="N[,N]",
                   help="messages a slice of the batch rows, numpy and C (%s)"
                   % show("batch_messages"))
    g.add_argument("--round-trips", type=_counts, default=None, metavar="N[,N]",
                   help="round trips a slice (%s)" % show("round_trips"))
    g.add_argument("--wakeups", type=_counts, default=None, metavar="N",
                   help="futex wake-ups a slice, each after a 1 ms gap (%s)" % show("wakeups"))
    g.add_argument("--only", default=None,
                   help="comma-separated substrings of row ids or names (e.g. 'c-,mp-queue')")
    add_run_options(parser, quick="one round of small slices (a few seconds)")


def run(args):
    from ..experiments.bench_xproc import DEFAULTS, QUICK, bench_xproc
    base = QUICK if args.quick else DEFAULTS
    pick = lambda name: getattr(args, name) if getattr(args, name) is not None else base[name]
    r = bench_xproc(writer_cpu=args.writer_cpu, reader_cpu=args.reader_cpu,
                    rounds=pick("rounds"), messages=pick("messages"),
                    c_messages=pick("c_messages"), batch_messages=pick("batch_messages"),
                    round_trips=pick("round_trips"),
                    wakeups=pick("wakeups"),
                    only=[s.strip() for s in args.only.split(",")] if args.only else None,
                    out=args.out, overwrite=args.overwrite, progress=not args.no_progress,
                    argv=sys.argv)
    if not emit_json(args, r):
        print(r.text(markdown=args.markdown))
        if args.out:
            print("\noutput folder: %s" % args.out)
    if not r.complete:
        print("pyqueue bench-xproc: %s" % r.status, file=sys.stderr)
    return exit_code(r.status)
