"""The Python rows' ratios as the bench reports them: which rows each ratio divides,
its goal, and the table it prints.  Nothing here measures (experiments/bench_python.py
runs the rows)."""
from pyqueue import table

__all__ = ["RATIOS", "ratios", "format_ratios"]

# The ratios this module's rows exist for, (name, numerator, denominator, goal)
# as issue targets: printed by report() beside the bench's own table.
RATIOS = [
    ("one thread write+poll(1) / SimpleQueue put+get", "py_write_poll", "simplequeue", 1.0),
    ("one thread put_nowait+get_nowait / SimpleQueue", "py_put_get", "simplequeue", 1.0),
    ("one thread write+poll(1) / deque", "py_write_poll", "deque", None),
    ("1 KiB write+poll(1) / SimpleQueue", "py_write_poll_1k", "simplequeue_1k", None),
    ("1 KiB put_nowait+get_nowait / SimpleQueue", "py_put_get_1k", "simplequeue_1k", None),
    # A timeout= that need not wait costs at most 1.15x the call without one: the
    # rate with it at least 1 / 1.15 of the rate without.
    ("get(timeout=5) / get(), rates (cost <= 1.15x)", "py_get_timeout", "py_get", 1 / 1.15),
    ("put(m, timeout=5) / put(m), rates (cost <= 1.15x)", "py_put_timeout", "py_put", 1 / 1.15),
    ("SimpleQueue get(timeout=5) / get(), rates", "simplequeue_timeout", "simplequeue", None),
    ("poll() of a full block / SimpleQueue.get loop", "py_poll_block", "simplequeue_get_block", 3.0),
    # Par under the GIL (the two loops run one at a time; 2x was withdrawn).
    ("two threads / SimpleQueue", "py_threads", "simplequeue_threads", 1.0),
    ("two threads, publish 'each' / SimpleQueue", "py_threads_each", "simplequeue_threads", 1.0),
    ("two threads, get() / SimpleQueue", "py_threads_get", "simplequeue_threads", 1.0),
    ("two threads, get(timeout=5) / SimpleQueue's", "py_threads_get_timeout",
     "simplequeue_threads_timeout", 1.0),
    ("two threads / queue.Queue", "py_threads", "queue_threads", None),
    ("two threads 1 KiB / SimpleQueue", "py_threads_1k", "simplequeue_threads_1k", None),
    ("two threads' floor under the GIL / SimpleQueue", "py_threads_floor",
     "simplequeue_threads", None),
    ("producer loop alone / SimpleQueue two threads", "py_produce_alone",
     "simplequeue_threads", None),
    ("consumer loop alone / SimpleQueue two threads", "py_consume_alone",
     "simplequeue_threads", None),
    ("two threads / their floor under the GIL", "py_threads", "py_threads_floor", None),
    ("write_batch+poll_into / SimpleQueue", "py_batch_local", "simplequeue", 4.0),
]


def ratios(summary):
    """The RATIOS rows of a bench summary, {place: [(name, ratio or None, goal)]}:
    its ``python_ratios`` (the median of per-round ratios, as bench's targets are
    taken), or, for a summary of medians alone (the standalone run), the ratio
    of the medians."""
    if "python_ratios" in summary:
        return {place: [(n, r, g) for n, r, g, _ in rows]
                for place, rows in summary["python_ratios"].items()}
    out = {}
    for place, rows in summary.get("python_mmsg_s", {}).items():
        med = {k: v["median"] for k, v in rows.items()}
        out[place] = [(name, med[a] / med[b] if med.get(a) and med.get(b) else None, goal)
                      for name, a, b, goal in RATIOS]
    return out


def format_ratios(summary, markdown=False):
    """The ratios as one table per placement (the one table formatter),
    "met"/"missed" where a goal exists."""
    how = ("median of per-round ratios" if "python_ratios" in summary
           else "ratio of medians over rounds")
    blocks = []
    for place, rows in sorted(ratios(summary).items()):
        body = [[name, "-" if r is None else "%.2fx" % r,
                 "" if goal is None else "goal >= %.3gx%s"
                 % (goal, "" if r is None else (" met" if r >= goal else " missed"))]
                for name, r, goal in rows]
        blocks.append("Python rows (%s), %s:\n" % (place, how)
                      + table.render(["ratio", "measured", "goal"], body, markdown=markdown))
    return "\n\n".join(blocks)
