"""CPU pair relations for the core-to-core matrix (SPEC §4 topology).

``read_topology(sysfs_root)`` returns pyqueue.topology's Topology when that
module exists (the runtime's /sys reader), else the small reader below, which
gives the same relation names from the same /sys files:

    same_cpu, smt_sibling, same_l3, other_l3, other_numa
    (without L3 information: same_package / other_package)

Both accept a fake sysfs root, so tests can label a machine they do not run on.
"""
import glob
import os
import re

RELATION_NAMES = {"same_cpu": "same CPU", "smt_sibling": "SMT sibling (same core)",
                  "same_l3": "same L3", "other_l3": "other L3", "other_numa": "other NUMA node",
                  "same_package": "same package", "other_package": "other package"}


def parse_cpulist(text):
    """'0-3,8' -> [0, 1, 2, 3, 8]."""
    cpus = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError("bad cpulist %r" % text)
        cpus.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return sorted(cpus)


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


class SysTopology:
    """Just what the matrix needs: relation(a, b), allowed, to_dict()."""

    def __init__(self, cpus, allowed, source):
        self.cpus = cpus            # id -> dict(package, siblings, l3, node)
        self.allowed = tuple(allowed)
        self.source = source

    def relation(self, a, b):
        if a not in self.cpus or b not in self.cpus:
            raise ValueError("CPU %r is not an online CPU of this topology (%s)"
                             % (a if a not in self.cpus else b, sorted(self.cpus)))
        ca, cb = self.cpus[a], self.cpus[b]
        if a == b:
            return "same_cpu"
        if b in ca["siblings"]:
            return "smt_sibling"
        if ca["node"] >= 0 and cb["node"] >= 0 and ca["node"] != cb["node"]:
            return "other_numa"
        if ca["l3"] and cb["l3"]:
            return "same_l3" if b in ca["l3"] else "other_l3"
        return "same_package" if ca["package"] == cb["package"] else "other_package"

    def to_dict(self):
        return {"source": self.source, "cpus": sorted(self.cpus), "allowed": list(self.allowed),
                "cpu": {str(c): {"package": v["package"], "siblings": list(v["siblings"]),
                                 "l3": list(v["l3"]), "node": v["node"]}
                        for c, v in sorted(self.cpus.items())}}


def _read_sys(sysfs_root):
    base = os.path.join(str(sysfs_root), "devices", "system", "cpu")
    cpus = {}
    for d in glob.glob(os.path.join(base, "cpu[0-9]*")):
        topo = os.path.join(d, "topology")
        if not os.path.isdir(topo):
            continue
        cid = int(os.path.basename(d)[3:])
        sib = _read(os.path.join(topo, "thread_siblings_list"))
        l3 = ()
        for idx in sorted(glob.glob(os.path.join(d, "cache", "index[0-9]*"))):
            if _read(os.path.join(idx, "level")) == "3":
                text = _read(os.path.join(idx, "shared_cpu_list"))
                l3 = tuple(parse_cpulist(text)) if text else ()
        cpus[cid] = {"package": int(_read(os.path.join(topo, "physical_package_id")) or 0),
                     "siblings": tuple(parse_cpulist(sib)) if sib else (cid,),
                     "l3": l3, "node": -1}
    for d in glob.glob(os.path.join(str(sysfs_root), "devices", "system", "node", "node[0-9]*")):
        text = _read(os.path.join(d, "cpulist")) or ""
        for c in parse_cpulist(text):
            if c in cpus:
                cpus[c]["node"] = int(os.path.basename(d)[4:])
    if not cpus:
        raise FileNotFoundError("no CPU topology under %s" % base)
    real = os.path.realpath(str(sysfs_root)) == "/sys"
    allowed = sorted(set(os.sched_getaffinity(0)) & set(cpus)) if real else sorted(cpus)
    return SysTopology(cpus, allowed, str(sysfs_root))


def read_topology(sysfs_root="/sys"):
    """The topology under sysfs_root (pyqueue.topology's reader when present)."""
    try:
        from .. import topology as runtime_topology
    except ImportError:
        return _read_sys(sysfs_root)
    return runtime_topology.read(sysfs_root=sysfs_root)
