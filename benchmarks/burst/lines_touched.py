#!/usr/bin/env python3
"""Count the cache lines one 1 MiB send touches on the writer core, by kind, and
the lines the reader then loads that the writer stored (DESIGN §6.1).

Software means only (this project's VMs have no PMU): lines_touched.c runs under
valgrind's lackey, which traces every load and store; each address is classified
by the regions the program prints (pool tiers, rings, the queue's lines, its own
message buffer, the stack).  The counts are exact for this build and
configuration; what a line costs is the model's part: a line the writer stored
in the send and the reader loads later is one the reader must pull from the
writer's caches (or memory), which no cache simulator is needed to know.

    python benchmarks/burst/lines_touched.py [--spill-blocks N] [--cached]

Needs valgrind and a C compiler; builds the queue core with `make lib` into a
temporary folder.  Prints one table per phase and the command.
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINE = 64


def build(tmp):
    lib = os.path.join(tmp, "clib")
    subprocess.run(["make", "-s", "-C", ROOT, "lib", "BUILD=" + lib], check=True)
    exe = os.path.join(tmp, "lines_touched")
    subprocess.run(["cc", "-O2", "-std=gnu11", "-I" + os.path.join(ROOT, "csrc"),
                    "-I" + os.path.join(ROOT, "csrc", "include"),
                    os.path.join(ROOT, "benchmarks", "burst", "lines_touched.c"),
                    os.path.join(lib, "libpyqueue.a"), "-pthread", "-o", exe], check=True)
    return exe


def trace(exe, tmp, spill, nontemporal):
    log = os.path.join(tmp, "trace.txt")
    p = subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=" + log,
                        exe, str(spill), str(nontemporal)], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("lines_touched failed (rc %d): %s" % (p.returncode, p.stderr[-2000:]))
    regions, marker = [], None
    for line in p.stdout.splitlines():
        f = line.split()
        if f[0] == "marker":
            marker = int(f[1], 16)
        elif f[0] == "region":
            regions.append((f[1], int(f[2], 16), int(f[3], 16)))
    phases = [l.split()[1] for l in p.stderr.splitlines() if l.startswith("phase ")]
    return log, regions, marker, phases


def classify(regions):
    regions = sorted(regions, key=lambda r: r[1])

    def kind(addr):
        for name, lo, hi in regions:
            if lo <= addr < hi:
                return name
        return "other (libc, program data)"
    return kind


def count(log, regions, marker, phases):
    """{phase: {region: [accesses, stores, set(lines), set(stored lines)]}}"""
    kind = classify(regions)
    cache = {}
    out = collections.OrderedDict()
    cur = None
    index = -1
    with open(log) as f:
        for line in f:
            if len(line) < 4 or line[0] == "I" or line[0] == "=":
                continue
            op = line[1]
            if op not in "LSM":
                continue
            addr_s, _, size_s = line[3:].partition(",")
            addr = int(addr_s, 16)
            if op in "SM" and addr == marker:
                index += 1
                cur = phases[index] if index < len(phases) else None
                if cur:
                    out.setdefault(cur, {})
                continue
            if cur is None:
                continue
            ln = addr // LINE
            name = cache.get(ln)
            if name is None:
                name = cache[ln] = kind(ln * LINE)
            d = out[cur].setdefault(name, [0, 0, set(), set()])
            d[0] += 1
            d[2].add(ln)
            if op in "SM":
                d[1] += 1
                d[3].add(ln)
    return out


def table(rows, head):
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = "  ".join(("%%-%ds" if i == 0 else "%%%ds") % w[i] for i in range(len(head)))
    lines = [fmt % tuple(head), "  ".join("-" * x for x in w)]
    lines += [fmt % tuple(r) for r in rows]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spill-blocks", type=int, default=1024,
                    help="spill tier (blocks of 4 KiB; the send needs >= 330)")
    ap.add_argument("--cached", action="store_true",
                    help="ordinary stores into spill blocks (default: the configuration's)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pyq_lines_") as tmp:
        exe = build(tmp)
        log, regions, marker, phases = trace(exe, tmp, args.spill_blocks, 0 if args.cached else -1)
        got = count(log, regions, marker, phases)
    send = {}
    for ph in ("send", "flush"):
        for name, d in got.get(ph, {}).items():
            s = send.setdefault(name, [0, 0, set(), set()])
            s[0] += d[0]
            s[1] += d[1]
            s[2] |= d[2]
            s[3] |= d[3]
    read = got.get("read", {})
    rows = []
    for name in sorted(set(send) | set(read)):
        s = send.get(name, [0, 0, set(), set()])
        r = read.get(name, [0, 0, set(), set()])
        pulled = r[2] & s[3]
        rows.append([name, s[0], s[1], len(s[2]), len(s[3]), r[0], len(r[2]), len(pulled)])
    head = ["region", "send: accesses", "stores", "lines", "lines stored",
            "read: accesses", "lines", "lines the send stored"]
    print(table(rows, head))
    non_payload = [r for r in rows if not r[0].startswith("pool.") and r[0] not in
                   ("stack", "program.message", "other (libc, program data)")]
    print("\nqueue lines the send touched that are not payload (rings, queue state, stats): %d "
          "(%d stored); the reader then loaded %d lines the send stored, %d of them not payload"
          % (sum(r[3] for r in non_payload), sum(r[4] for r in non_payload),
             sum(r[7] for r in rows), sum(r[7] for r in non_payload)))
    print("command: python benchmarks/burst/lines_touched.py %s" % " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
