#!/usr/bin/env python3
"""The lever table of a burst-tail run (DESIGN §6.1): every class's p50/p99/p999
of the first group after the send and of all groups, each divided by the same
percentile of a reference class of the same run, beside the send's median time
and its page faults per window.

    python -m pyqueue burst-tail --classes yield1024,yield1024+hugepages=0,none \\
        --writer-cpu 0 --consumer-cpu 1 --out DIR
    python benchmarks/burst/lever_table.py DIR [--ref yield1024] [--markdown]

The figures are the run's own summary (nearest rank per round, mean over rounds):
this script only lines them up, so the ratios are those of one interleaved run.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from pyqueue.lab.common.stats import NOT_MEASURED  # noqa: E402
from pyqueue.table import render  # noqa: E402


def _mean(d, i):
    v = d["mean"][i] if d else None
    return None if v is None or v != v else float(v)


def _cells(d, ref):
    """'a/b/c' ns and 'x/y/z' ratios to ref, for the three percentiles."""
    ns = "/".join(NOT_MEASURED if _mean(d, i) is None else "%.1f" % _mean(d, i) for i in range(3))
    ratios = []
    for i in range(3):
        a, b = _mean(d, i), _mean(ref, i)
        ratios.append(NOT_MEASURED if a is None or not b else "%.2f" % (a / b))
    return ns, "/".join(ratios)


def lever_rows(summary, ref):
    """(head, rows) of the lever table; ref is the class every ratio divides by."""
    classes = summary["classes"]
    if ref not in classes:
        raise SystemExit("reference class %r is not in the run (classes: %s)"
                         % (ref, ", ".join(classes)))
    r = classes[ref]
    head = ["class", "1st group p50/p99/p999 ns", "÷ %s" % ref, "all groups p50/p99/p999 ns",
            "÷ %s" % ref, "x none (all groups)", "send µs (median)", "faults/window"]
    rows = []
    for name, d in classes.items():
        first = _cells(d["first_group_latency_ns_per_query"], r["first_group_latency_ns_per_query"])
        every = _cells(d["latency_ns_per_query"], r["latency_ns_per_query"])
        x = d.get("x_no_burst")
        send = d.get("send_ns_median")
        faults = d.get("page_faults_per_window")
        rows.append([name + (" (protocol NOT MET)" if d.get("protocol_problems") else ""),
                     first[0], first[1], every[0], every[1],
                     NOT_MEASURED if not x else "/".join(
                         NOT_MEASURED if v is None else "%.1f" % v for v in x),
                     NOT_MEASURED if send is None else "%.0f" % (send / 1e3),
                     NOT_MEASURED if faults is None else "%.2f" % faults])
    return head, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="output folder of a burst-tail run (--out)")
    ap.add_argument("--ref", default="yield1024", help="the class every ratio divides by")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    import pyqueue.lab as lab
    res = lab.load(args.run)
    head, rows = lever_rows(res.summary, args.ref)
    p = res.params
    print(render(head, rows, markdown=args.markdown))
    print("\n%d round(s) x %d windows per class, writer CPU %s, consumer CPU %s; status: %s"
          % (p["rounds"], p["windows"], p["writer_cpu"], p["consumer_cpu"], res.status))
    print("command: python benchmarks/burst/lever_table.py %s" % " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
