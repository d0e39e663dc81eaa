"""python -m pyqueue compare OLD NEW: two output folders of one experiment, figure by
figure, with the regressions beyond --threshold flagged: exit 1 if any (a CI gate)."""
from .common import EXIT_CHECK_FAILED, EXIT_OK
from .options import add_output_options, emit_json

NAME = "compare"
HELP = ("compare two output folders of one experiment (burst-tail, bench, pipeline, c2c, "
        "pacing): each figure old -> new, exit 1 on a regression beyond --threshold")


def _fraction(text):
    value = float(text.rstrip("%")) / (100.0 if text.endswith("%") or float(text.rstrip("%")) > 1
                                       else 1.0)
    if not 0 < value < 10:
        raise ValueError("--threshold: must be a positive fraction or percentage, got %r" % text)
    return value


def add_arguments(p):
    p.add_argument("old", metavar="OLD", help="the reference output folder")
    p.add_argument("new", metavar="NEW", help="the output folder to judge against it")
    p.add_argument("--threshold", type=_fraction, default=0.15,
                   help="a figure that moved the bad way by more than this is a regression: "
                        "0.15 or 15%% (default: 15%%)")
    p.add_argument("--force", action="store_true",
                   help="compare even when machine, pinning or parameters differ")
    add_output_options(p, what="the table")


def run(args):
    from ..reports.compare import LOWER, compare, format_changes
    changes, only = compare(args.old, args.new, threshold=args.threshold, force=args.force)
    body = {"old": args.old, "new": args.new, "threshold": args.threshold,
            "regressions": sum(c.regression for c in changes), "only_in_one": only,
            "changes": [{"figure": c.name, "old": c.old, "new": c.new, "change": c.change,
                         "higher_is_better": c.better != LOWER, "regression": c.regression}
                        for c in changes]}
    if not emit_json(args, body):
        print(format_changes(changes, only, args.threshold, markdown=args.markdown))
    return EXIT_CHECK_FAILED if any(c.regression for c in changes) else EXIT_OK
