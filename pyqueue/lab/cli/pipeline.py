"""python -m pyqueue pipeline: producer -> stage -> consumer latency per variant (DESIGN §6.4).

The flags are PipelineParams' fields (pyqueue.lab.experiments.pipeline), one each."""
from .common import exit_code
from .options import CpuPairAction, add_run_options, emit_json

NAME = "pipeline"
HELP = "producer -> stage -> consumer at a set rate: mutex+condvar vs pyqueue variants"


def add_arguments(parser):
    from ..experiments.pipeline import PipelineParams
    PipelineParams.add_arguments(parser)
    # The old 'P,S,C' spelling of the three CPUs, hidden.
    parser.add_argument("--placement", action=CpuPairAction,
                        targets=("writer_cpu", "stage_cpu", "reader_cpu"))
    quick = PipelineParams.quick()
    add_run_options(parser, quick="%d slices of %d messages per variant: seconds"
                                  % (quick.slices, quick.messages))


def run(args):
    from ..experiments.pipeline import PipelineParams, pipeline
    r = pipeline(PipelineParams.from_args(args), out=args.out, overwrite=args.overwrite,
                 progress=not args.no_progress)
    if not emit_json(args, r):
        print(r.text(markdown=args.markdown))
    return exit_code(r.status)
