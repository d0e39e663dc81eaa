"""The pacing model's table (DESIGN §6.5) for a drain rate D, a burst of N messages
and delay targets T: pure arithmetic over pyqueue.pacing, nothing measured.

    import pyqueue.lab as lab
    print(lab.pacing_table(drain_rate=1.2e6, burst=20_000))

Its parameters are one list, PacingTableParams, from which ``python -m pyqueue
pacing-table``'s flags, this function's keywords and the ``params`` its --json
prints all come.  D is what ``pacing`` or ``drain-rate`` measured; N and T are
spelt as there.
"""
import math
from dataclasses import dataclass
from typing import Tuple

from pyqueue import pacing as model
from ..common.params import Params, param

__all__ = ["PacingTableParams", "pacing_table"]


@dataclass(frozen=True)
class PacingTableParams(Params):
    """pacing-table's parameters; the defaults are the pacing article's (D = 1.6 M msg/s,
    N = 90,000, T = 0.5 to 25 ms)."""

    EXPERIMENT, COMMAND, FUNCTION = "pacing_table", "pacing-table", "pacing_table"
    ALIASES = {"d": "drain_rate", "n": "burst"}        # pyqueue.pacing's names

    drain_rate: float = param(1.6e6, "D, the consumer's drain rate in messages/s (measure it "
                              "with python -m pyqueue drain-rate; default: 1.6e6)", lo=0.0, lo_open=True,
                              hi=math.inf, hi_open=True, metavar="D", cli_aliases=("--drain",))
    burst: float = param(90_000.0, "N, messages per burst (default: 90000)", lo=0.0, lo_open=True, hi=math.inf,
                         hi_open=True, metavar="N")
    targets: Tuple[float, ...] = param(
        (0.5e-3, 1e-3, 5e-3, 10e-3, 25e-3), "queueing-delay targets T, comma-separated "
        "(default: 0.5ms,1ms,5ms,10ms,25ms)", kind="durations", lo=0.0, lo_open=True)


def pacing_table(params=None, **kwargs):
    """The pyqueue.pacing.PacingTable of ``params`` (a PacingTableParams, None for the
    defaults) and/or its fields as keywords; print it, or ``.to_text(markdown=True)``."""
    p = PacingTableParams.of(params, **kwargs)
    return model.pacing_table(p.drain_rate, p.burst, p.targets)
