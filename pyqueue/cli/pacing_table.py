"""python -m pyqueue pacing-table: print the pacing model table of SPEC §6.5 / seed 004.

Pure arithmetic (no measurement): give the drain rate D you measured (e.g. with
``python -m pyqueue pacing``), the burst size N and the delay targets T.
"""
import re
import sys

from .. import pacing

NAME = "pacing-table"
HELP = "print the pacing model table (P_max per delay target) for a drain rate and burst"

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text):
    """'0.5ms' / '25 ms' / '1s' / '100us' -> seconds (a bare number is seconds)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|µs|ns)?\s*", text)
    if not m:
        raise ValueError("not a duration: %r (use e.g. 0.5ms, 25ms, 1s)" % text)
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def add_arguments(parser):
    parser.add_argument("--drain", type=float, default=1.6e6, metavar="D",
                        help="consumer drain rate, messages/s (default 1.6e6, seed 004)")
    parser.add_argument("--burst", type=float, default=90_000, metavar="N",
                        help="burst size, messages (default 90000, seed 004)")
    parser.add_argument("--targets", default="0.5ms,1ms,5ms,10ms,25ms", metavar="T,...",
                        help="queueing-delay targets, comma separated (default: the seed's)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")


def run(args):
    try:
        targets = [parse_duration(t) for t in args.targets.split(",") if t.strip()]
        table = pacing.pacing_table(args.drain, args.burst, targets)
    except ValueError as e:
        print("pacing-table: %s" % e, file=sys.stderr)
        return 2
    print(table.to_text(markdown=args.markdown))
    return 0
