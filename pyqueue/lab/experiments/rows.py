"""What the bench's C rows and its Python rows (bench.py, bench_python.py) share:
pinning the calling thread for a while, the sequence-numbered messages of a batch
row, and the queue a row runs on.  Public here so that neither imports the other."""
import os

import numpy as np

from ..common.twins import MSG

__all__ = ["Pinned", "seq_rows", "row_queue", "ROW_SET"]


class Pinned:
    """Pin the calling thread for the duration, then restore its affinity (the C
    round-trip loops pin the calling thread themselves)."""

    def __init__(self, cpu):
        self.cpu = cpu

    def __enter__(self):
        self.old = os.sched_getaffinity(0)
        if self.cpu >= 0:
            os.sched_setaffinity(0, {self.cpu})

    def __exit__(self, *exc):
        os.sched_setaffinity(0, self.old)


def seq_rows(n):
    """n messages of MSG bytes, each starting with its index (uint64, little-endian)."""
    arr = np.zeros((n, MSG), np.uint8)
    arr[:, :8] = np.arange(n, dtype=np.uint64).view(np.uint8).reshape(n, 8)
    return arr


# The pyqueue fields of the rows' queues come from the base config; the tiers
# (and the fields a row sets itself) come from the row (common/twins.py), so
# the bench and the twins build one queue from one formula.
_TIER_FIELDS = ("hot_blocks", "spill_blocks")
# The QueueConfig fields every pyqueue row sets itself (its tiers from the budget,
# its publish policy in common/twins.py): a base config that changes them changes
# no row.
ROW_SET = _TIER_FIELDS + ("publish",)


def row_queue(spec, base):
    """The pyqueue fields of ``base`` (a QueueConfig) that row ``spec`` does not set."""
    return {k: v for k, v in base.as_dict().items()
            if k not in _TIER_FIELDS and k not in spec.kw}
