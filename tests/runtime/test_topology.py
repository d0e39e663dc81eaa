"""Topology from /sys: the machine's own tree and a fake one (4 CPUs, 2 SMT
pairs, two L3 domains, one or two NUMA nodes)."""
import os

import pytest

from pyqueue.lab.runtime import topology
from pyqueue.lab.runtime.topology import RelationUnavailable, parse_cpulist


def make_sysfs(root, cores=((0, 2), (1, 3)), l3=((0, 2), (1, 3)), nodes=((0, 1, 2, 3),), offline=()):
    cpu_dir = root / "devices" / "system" / "cpu"
    for core_id, siblings in enumerate(cores):
        for c in siblings:
            d = cpu_dir / ("cpu%d" % c)
            if c in offline:
                d.mkdir(parents=True)
                continue
            t = d / "topology"
            t.mkdir(parents=True)
            (t / "core_id").write_text("%d\n" % core_id)
            (t / "physical_package_id").write_text("0\n")
            (t / "thread_siblings_list").write_text(topology.format_cpulist(siblings) + "\n")
            for idx, (level, shared) in enumerate([(1, siblings), (2, siblings),
                                                   (3, next(d3 for d3 in l3 if c in d3))]):
                i = d / "cache" / ("index%d" % idx)
                i.mkdir(parents=True)
                (i / "level").write_text("%d\n" % level)
                (i / "shared_cpu_list").write_text(topology.format_cpulist(shared) + "\n")
    for n, cpus in enumerate(nodes):
        nd = root / "devices" / "system" / "node" / ("node%d" % n)
        nd.mkdir(parents=True)
        (nd / "cpulist").write_text(topology.format_cpulist(cpus) + "\n")
    return root


def test_parse_cpulist():
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
    assert topology.format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    with pytest.raises(ValueError):
        parse_cpulist("0-x")


def test_fake_tree(tmp_path):
    topo = topology.read(make_sysfs(tmp_path))
    assert sorted(topo.cpus) == [0, 1, 2, 3]
    assert topo.cores == [(0, 2), (1, 3)] and topo.smt
    assert topo.l3_domains == [(0, 2), (1, 3)]
    assert topo.numa_nodes == {0: (0, 1, 2, 3)}
    assert topo.allowed == (0, 1, 2, 3)
    assert topo.relation(0, 0) == "same_cpu"
    assert topo.relation(0, 2) == "smt_sibling"
    assert topo.relation(0, 1) == "other_l3"
    assert topo.pick_pair("smt_sibling") == (0, 2)
    assert topo.pick_pair("same_core") == (0, 2)
    assert topo.pick_pair("other_l3") == (0, 1)
    assert topo.pairs("other_l3") == [(0, 1), (0, 3), (1, 2), (2, 3)]
    # Each L3 holds one core only: no two distinct cores share an L3.
    assert topo.pick_pair("same_l3", required=False) is None
    with pytest.raises(RelationUnavailable, match="other_numa"):
        topo.pick_pair("other_numa")
    with pytest.raises(ValueError, match="relation must be one of"):
        topo.pick_pair("near")
    with pytest.raises(ValueError, match="not an online CPU"):
        topo.relation(0, 9)


def test_fake_tree_numa_and_shared_l3(tmp_path):
    topo = topology.read(make_sysfs(tmp_path, cores=((0, 4), (1, 5), (2, 6), (3, 7)),
                                    l3=((0, 1, 4, 5), (2, 3, 6, 7)),
                                    nodes=((0, 1, 4, 5), (2, 3, 6, 7))))
    assert topo.relation(0, 1) == "same_l3"
    assert topo.relation(0, 2) == "other_numa"
    assert topo.pick_pair("same_l3") == (0, 1)
    assert topo.pick_pair("other_numa") == (0, 2)
    assert topo.pick_pair("other_l3") == (0, 2)  # other L3 includes other nodes
    assert topo.pick_pair("smt_sibling", cpus=[1, 2, 5]) == (1, 5)
    assert topo.to_dict()["numa_nodes"] == {"0": [0, 1, 4, 5], "1": [2, 3, 6, 7]}


def test_offline_cpu(tmp_path):
    topo = topology.read(make_sysfs(tmp_path, offline=(3,)))
    assert sorted(topo.cpus) == [0, 1, 2]   # cpu3 has no topology directory
    assert topo.cores == [(0, 2), (1, 3)]   # siblings as the kernel lists them


def test_no_l3_information(tmp_path):
    root = make_sysfs(tmp_path)
    for lvl in (root / "devices" / "system" / "cpu").glob("cpu*/cache/index2/level"):
        lvl.write_text("2\n")  # index2 was the L3
    topo = topology.read(root)
    assert topo.l3_domains == []
    assert topo.relation(0, 1) == "same_package"
    assert topo.pick_pair("same_l3", required=False) is None


def test_missing_tree(tmp_path):
    with pytest.raises(FileNotFoundError):
        topology.read(tmp_path)


def test_this_machine():
    topo = topology.read()
    assert set(topo.allowed) <= set(topo.cpus)
    assert set(topo.allowed) == set(os.sched_getaffinity(0)) & set(topo.cpus)
    for core in topo.cores:
        for c in core:
            assert topo.cpus[c].smt_siblings == core
    a = topo.allowed[0]
    assert topo.relation(a, a) == "same_cpu"
    for rel in ("smt_sibling", "same_l3", "other_l3", "other_numa"):
        pair = topo.pick_pair(rel, required=False)
        if pair is not None:
            assert topo.relation(*pair) in (rel, "other_numa")
