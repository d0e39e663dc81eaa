#!/usr/bin/env python3
"""Reproduce the original 1 MiB burst-tail study (DESIGN §6.1).

Business p50/p99/p999 ns/query right after each 1 MiB send, for the pyqueue
retry strategies yield1024 / yield0 / yield65536 and the open-source queues
(every peer of pyqueue/peer_table.py that is installed), with the migration
evidence.  Every default is the original study's; every parameter can be changed:

    python benchmarks/burst/run_burst_tail_1m.py --out results/burst-1m
    python benchmarks/burst/run_burst_tail_1m.py --help

This is the same implementation as ``python -m pyqueue burst-tail``.
"""
import sys

from pyqueue.__main__ import main

if __name__ == "__main__":
    sys.exit(main(["burst-tail"] + sys.argv[1:]))
