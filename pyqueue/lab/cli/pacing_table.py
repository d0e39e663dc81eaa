"""python -m pyqueue pacing-table: print the pacing model table of DESIGN §6.5.

Pure arithmetic (no measurement): give the drain rate D you measured (e.g. with
``python -m pyqueue drain-rate``), the burst size N and the delay targets T.  The
flags are PacingTableParams' fields (pyqueue.lab.experiments.pacing_table).
"""
from .options import add_output_options, emit_json

NAME = "pacing-table"
HELP = "print the pacing model table (P_max per delay target) for a drain rate and burst"


def add_arguments(parser):
    from ..experiments.pacing_table import PacingTableParams
    PacingTableParams.add_arguments(parser)
    # Every command takes --quick; arithmetic has nothing to shorten.
    parser.add_argument("--quick", action="store_true",
                        help="the same table: it is arithmetic, instant already")
    add_output_options(parser, what="the table")


def run(args):
    from ..experiments.pacing_table import PacingTableParams, pacing_table
    p = PacingTableParams.from_args(args)
    table = pacing_table(p)
    if not emit_json(args, {"params": p.to_json(), "table": table}):
        print(table.to_text(markdown=args.markdown))
    return 0
