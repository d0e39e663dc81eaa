"""python -m pyqueue compare OLD NEW: two output folders of one experiment, figure by
figure, each judged from the runs' raw samples: exit 1 if a figure is significantly
slower by more than --threshold (a CI gate), 2 if a figure is missing or not reported
on one side."""
from .common import EXIT_USAGE
from .options import add_output_options, emit_json

NAME = "compare"
HELP = ("compare two output folders of one experiment (burst-tail, bench, pipeline, c2c, "
        "pacing): each figure old -> new with the interval of the change from the raw "
        "samples; exit 1 when one is significantly slower by more than --threshold")


def _fraction(text, what="--threshold", upper=10):
    value = float(text.rstrip("%")) / (100.0 if text.endswith("%") or float(text.rstrip("%")) > 1
                                       else 1.0)
    if not 0 < value < upper:
        raise ValueError("%s: must be a positive fraction or percentage, got %r" % (what, text))
    return value


def _alpha(text):
    return _fraction(text, "--alpha", upper=0.5)


def add_arguments(p):
    p.add_argument("old", metavar="OLD", help="the reference output folder")
    p.add_argument("new", metavar="NEW", help="the output folder to judge against it")
    p.add_argument("--threshold", type=_fraction, default=0.15,
                   help="a figure significantly slower by more than this is a regression: "
                        "0.15 or 15%% (default: 15%%)")
    p.add_argument("--alpha", type=_alpha, default=0.05,
                   help="the chance that two runs of the same code show any significant "
                        "change, shared by all figures (Bonferroni): 0.05 or 5%% (default: 5%%)")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N",
                   help="redraws of each run's samples (default: 2000)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the redraws: the same folders and seed give the same "
                        "answer (default: 0)")
    p.add_argument("--old-run", action="append", default=[], metavar="DIR",
                   help="another run of the OLD code, pooled with OLD: runs are redrawn "
                        "first, so that the machine's drift from run to run is in the "
                        "interval (repeatable)")
    p.add_argument("--new-run", action="append", default=[], metavar="DIR",
                   help="another run of the NEW code, pooled with NEW's (repeatable)")
    p.add_argument("--force", action="store_true",
                   help="compare even when machine, pinning or parameters differ")
    add_output_options(p, what="the table")


def run(args):
    import sys
    from ..reports.compare import compare, format_comparison
    res = compare(args.old, args.new, threshold=args.threshold, force=args.force,
                  alpha=args.alpha, bootstrap=args.bootstrap, seed=args.seed,
                  old_more=args.old_run, new_more=args.new_run)
    if not emit_json(args, res.to_dict()):
        print(format_comparison(res, markdown=args.markdown))
    code = res.exit_code()
    if code == EXIT_USAGE:
        print("pyqueue compare: %s" % res.why_failed(), file=sys.stderr)
    return code
