"""python -m pyqueue pacing-table: print the pacing model table of DESIGN §6.5.

Pure arithmetic (no measurement): give the drain rate D you measured (e.g. with
``python -m pyqueue pacing``), the burst size N and the delay targets T.
"""
from pyqueue import pacing
from .common import parse_duration
from .options import add_output_options, emit_json

NAME = "pacing-table"
HELP = "print the pacing model table (P_max per delay target) for a drain rate and burst"


def add_arguments(parser):
    parser.add_argument("--drain", type=float, default=1.6e6, metavar="D",
                        help="consumer drain rate, messages/s (default 1.6e6)")
    parser.add_argument("--burst", type=float, default=90_000, metavar="N",
                        help="burst size, messages (default 90000)")
    parser.add_argument("--targets", default="0.5ms,1ms,5ms,10ms,25ms", metavar="T,...",
                        help="queueing-delay targets, comma separated (default: %(default)s)")
    add_output_options(parser, what="the table")


def run(args):
    targets = [parse_duration(t, "--targets") for t in args.targets.split(",") if t.strip()]
    table = pacing.pacing_table(args.drain, args.burst, targets)
    if not emit_json(args, table):
        print(table.to_text(markdown=args.markdown))
    return 0
