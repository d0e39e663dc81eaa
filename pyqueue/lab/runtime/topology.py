"""CPU topology from /sys (DESIGN §4.2): cores and SMT siblings, L3 domains, NUMA
nodes, and CPU pairs chosen by their relation, so an experiment can say "same
L3" instead of hard-coding CPU numbers::

    topo = topology.read()               # or read(sysfs_root=tmp_path) in tests
    a, b = topo.pick_pair("other_l3")    # RelationUnavailable if none exists
    topo.relation(0, 1)                  # "smt_sibling"

Relations, from closest to farthest: "same_cpu" (one logical CPU), "smt_sibling"
(two hardware threads of one core; "same_core" is an alias), "same_l3" (other
cores sharing an L3), "other_l3" (no shared L3, same NUMA node), "other_numa".
Without L3 information the middle ones become "same_package"/"other_package".
"""
import glob
import os
from dataclasses import dataclass, field

from pyqueue import validate
from pyqueue.cpulist import format_cpulist, parse_cpulist

# Human-readable labels of the relations (tables, plots).
RELATION_LABELS = {"same_cpu": "same CPU", "smt_sibling": "SMT sibling (same core)",
                   "same_core": "SMT sibling (same core)", "same_l3": "same L3",
                   "other_l3": "other L3", "other_numa": "other NUMA node",
                   "same_package": "same package", "other_package": "other package"}
RELATIONS = ("same_cpu", "smt_sibling", "same_core", "same_l3", "other_l3", "other_numa",
             "same_package", "other_package")


class RelationUnavailable(LookupError):
    """No pair of the (allowed) CPUs has the relation asked for."""


@dataclass(frozen=True)
class Cpu:
    id: int
    package: int
    core_id: int
    smt_siblings: tuple         # every logical CPU of this core, this one included
    l3: tuple                   # CPUs sharing this CPU's L3, or () when unknown
    node: int                   # NUMA node, or -1 when unknown


@dataclass
class Topology:
    cpus: dict                                   # id -> Cpu, online CPUs only
    allowed: tuple = ()                          # CPUs this process may use
    source: str = "/sys"
    cores: list = field(default_factory=list)    # tuples of SMT siblings
    l3_domains: list = field(default_factory=list)
    numa_nodes: dict = field(default_factory=dict)  # node -> tuple of CPUs

    def __post_init__(self):
        self.cores = sorted({c.smt_siblings for c in self.cpus.values()})
        self.l3_domains = sorted({c.l3 for c in self.cpus.values() if c.l3})
        nodes = {}
        for c in self.cpus.values():
            if c.node >= 0:
                nodes.setdefault(c.node, []).append(c.id)
        self.numa_nodes = {n: tuple(sorted(v)) for n, v in sorted(nodes.items())}
        if not self.allowed:
            self.allowed = tuple(sorted(self.cpus))

    @property
    def smt(self):
        """True when some core has more than one hardware thread."""
        return any(len(core) > 1 for core in self.cores)

    def relation(self, a, b):
        """The relation of CPUs a and b (one of RELATIONS, never the alias)."""
        ca, cb = self._cpu(a), self._cpu(b)
        if a == b:
            return "same_cpu"
        if b in ca.smt_siblings:
            return "smt_sibling"
        if ca.node >= 0 and cb.node >= 0 and ca.node != cb.node:
            return "other_numa"
        if ca.l3 and cb.l3:
            return "same_l3" if b in ca.l3 else "other_l3"
        return "same_package" if ca.package == cb.package else "other_package"

    def pairs(self, relation, cpus=None):
        """Every pair (a, b), a < b (a == b for "same_cpu"), of ``cpus`` (default:
        the allowed CPUs) with that relation."""
        want = _canonical(relation)
        cpus = sorted(self.allowed if cpus is None else cpus)
        for c in cpus:
            self._cpu(c)
        if want == "same_cpu":
            return [(c, c) for c in cpus]
        return [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1:]
                if self._matches(want, a, b)]

    def pick_pair(self, relation, cpus=None, required=True):
        """The first pair with ``relation`` among ``cpus`` (default: allowed CPUs).
        When there is none: RelationUnavailable (required) or None."""
        found = self.pairs(relation, cpus)
        if found:
            return found[0]
        if not required:
            return None
        raise RelationUnavailable(
            "no two CPUs of %s are %s on this machine (%s)"
            % (format_cpulist(self.allowed if cpus is None else cpus), relation, self.describe()))

    def describe(self):
        """One line: counts of CPUs, cores, L3 domains and NUMA nodes."""
        return ("%d CPUs, %d cores%s, %s L3 domain(s), %d NUMA node(s)"
                % (len(self.cpus), len(self.cores), " (SMT)" if self.smt else " (no SMT)",
                   len(self.l3_domains) if self.l3_domains else "unknown", len(self.numa_nodes)))

    def to_dict(self):
        return {"source": self.source,
                "cpus": sorted(self.cpus),
                "allowed": list(self.allowed),
                "cores": [list(c) for c in self.cores],
                "l3_domains": [list(d) for d in self.l3_domains],
                "numa_nodes": {str(n): list(c) for n, c in self.numa_nodes.items()},
                "smt": self.smt}

    def _cpu(self, c):
        try:
            return self.cpus[c]
        except KeyError:
            raise ValueError("CPU %r is not an online CPU of this topology (%s)"
                             % (c, format_cpulist(self.cpus))) from None

    def _matches(self, want, a, b):
        rel = self.relation(a, b)
        if want == "other_l3":  # no shared L3, whatever the node
            return rel in ("other_l3", "other_numa") and bool(self.cpus[a].l3)
        return rel == want


def _canonical(relation):
    validate.choice("relation", relation, RELATIONS)
    return "smt_sibling" if relation == "same_core" else relation


def _read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def read(sysfs_root="/sys", allowed=None):
    """The topology under ``sysfs_root`` (a real /sys or a fake tree in tests).
    ``allowed`` defaults to this process's affinity when reading the real /sys,
    and to every CPU of a fake tree."""
    base = os.path.join(str(sysfs_root), "devices", "system", "cpu")
    if not os.path.isdir(base):
        raise FileNotFoundError("no CPU topology under %s" % base)
    cpus = {}
    for d in glob.glob(os.path.join(base, "cpu[0-9]*")):
        cid = int(os.path.basename(d)[3:])
        topo = os.path.join(d, "topology")
        if not os.path.isdir(topo):  # offline CPUs have no topology directory
            continue
        siblings = _read(os.path.join(topo, "thread_siblings_list"))
        cpus[cid] = dict(id=cid,
                         package=int(_read(os.path.join(topo, "physical_package_id"), "0")),
                         core_id=int(_read(os.path.join(topo, "core_id"), str(cid))),
                         smt_siblings=tuple(parse_cpulist(siblings)) if siblings else (cid,),
                         l3=_l3_of(d), node=-1)
    nodes = os.path.join(str(sysfs_root), "devices", "system", "node")
    for d in glob.glob(os.path.join(nodes, "node[0-9]*")):
        text = _read(os.path.join(d, "cpulist"), "")
        for c in parse_cpulist(text) if text else []:
            if c in cpus:
                cpus[c]["node"] = int(os.path.basename(d)[4:])
    if not cpus:
        raise FileNotFoundError("no online CPU with a topology directory under %s" % base)
    if allowed is None:
        real = os.path.realpath(str(sysfs_root)) == "/sys"
        allowed = sorted(set(os.sched_getaffinity(0)) & set(cpus)) if real else sorted(cpus)
    return Topology(cpus={c: Cpu(**v) for c, v in sorted(cpus.items())},
                    allowed=tuple(sorted(allowed)), source=str(sysfs_root))


def _l3_of(cpu_dir):
    for idx in sorted(glob.glob(os.path.join(cpu_dir, "cache", "index[0-9]*"))):
        if _read(os.path.join(idx, "level")) == "3":
            text = _read(os.path.join(idx, "shared_cpu_list"))
            if text:
                return tuple(parse_cpulist(text))
    return ()
