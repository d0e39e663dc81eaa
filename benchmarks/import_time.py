#!/usr/bin/env python3
"""How long ``import pyqueue`` takes beside the modules a user compares it with.

Each sample is one fresh interpreter (this one's executable and environment) that
times its own ``import NAME`` with ``time.perf_counter_ns`` around the statement,
so interpreter start-up and ``site`` are outside the figure.  Imports are timed as an
installed package runs them, from cached bytecode: the children run without
PYTHONDONTWRITEBYTECODE, after one untimed warm-up round that writes the .pyc
files (an editable install in a shell that sets that variable would otherwise
compile every module on every import).  The modules are run
in turn, round after round (alternating, so a drift of the machine hits all of
them alike); the table gives each one's median, min and max over the rounds, and
its median as a ratio to ``import multiprocessing``'s.  A module that is not
installed is reported as such.  After the timed import, the child also reports
whether numpy or any ``pyqueue.lab`` module was loaded with it.

    python benchmarks/import_time.py                 # 31 rounds
    python benchmarks/import_time.py --rounds 101 --json import.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

MODULES = ["pyqueue", "multiprocessing", "queue", "faster_fifo", "pyqueue.lab"]
CHILD = r"""
import sys, time
t0 = time.perf_counter_ns()
try:
    import {name}
except ImportError as e:
    print("missing", e)
    raise SystemExit(0)
t1 = time.perf_counter_ns()
loaded = sorted(m for m in sys.modules if m == "numpy" or m.startswith("pyqueue.lab"))
print("ok", t1 - t0, ",".join(loaded) or "-")
"""
REFERENCE = "multiprocessing"


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def sample(name):
    out = subprocess.run([sys.executable, "-c", CHILD.format(name=name)], check=True,
                         capture_output=True, text=True, env=ENV).stdout.split()
    if out[0] == "missing":
        return None, ""
    return int(out[1]), out[2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=31, help="fresh interpreters per module")
    ap.add_argument("--modules", default=",".join(MODULES),
                    help="comma-separated; %s is the reference" % REFERENCE)
    ap.add_argument("--json", help="also write the raw samples (ns) here")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    names = [m for m in args.modules.split(",") if m]
    if REFERENCE not in names:
        names.append(REFERENCE)
    samples = {n: [] for n in names}
    loaded = {}
    for n in names:   # warm-up: bytecode written, files in the page cache
        sample(n)
    for _ in range(args.rounds):
        for n in names:
            ns, mods = sample(n)
            if ns is None:
                samples[n] = None
                continue
            samples[n].append(ns)
            loaded[n] = mods
    ref = statistics.median(samples[REFERENCE])
    print("import time, fresh interpreters, %d rounds alternating (python %s)"
          % (args.rounds, sys.version.split()[0]))
    print("%-16s %10s %10s %10s %10s  %s" % ("module", "median ms", "min ms", "max ms",
                                           "/ " + REFERENCE, "also loaded"))
    for n in names:
        s = samples[n]
        if s is None:
            print("%-16s %s" % (n, "not installed"))
            continue
        med = statistics.median(s)
        print("%-16s %10.2f %10.2f %10.2f %9.2fx  %s" % (n, med / 1e6, min(s) / 1e6, max(s) / 1e6,
                                                       med / ref, loaded[n]))
    print("command: %s %s" % (sys.executable.rsplit("/", 1)[-1], " ".join(sys.argv)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": args.rounds, "unit": "ns", "samples": samples}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
