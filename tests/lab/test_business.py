"""The business workload (csrc/lab/business.c): layout, determinism, reachability."""
import numpy as np
import pytest

from pyqueue.lab._lab import ffi, lib


def _business(nbytes=lib.PYQ_BUSINESS_DEFAULT_BYTES, seed=1, mem=None):
    b = ffi.new("pyq_business_t *")
    ptr = ffi.NULL if mem is None else ffi.cast("void *", ffi.from_buffer(mem, require_writable=True))
    rc = lib.pyq_business_init(b, ptr, nbytes, seed)
    assert rc == 0, rc
    return b


def _run(b, state_seed, n=64, salt=None):
    if salt is not None:
        lib.pyq_business_warm(b, salt)
    s = ffi.new("pyq_business_state_t *")
    lib.pyq_business_state_init(s, state_seed)
    return lib.pyq_business_queries(b, s, n), s


def test_48_kib_is_768_nodes_of_one_line():
    assert ffi.sizeof("pyq_business_node_t") == 64
    b = _business()
    try:
        assert lib.pyq_business_nodes(b) == 768
        assert lib.pyq_business_bytes(b) == 48 * 1024
        assert int(ffi.cast("uintptr_t", b.nodes)) % 64 == 0
    finally:
        lib.pyq_business_destroy(b)


@pytest.mark.parametrize("nbytes", [128, 48 * 1024, 64 * 1000, 1 << 20])
def test_every_node_is_on_one_cycle(nbytes):
    b = _business(nbytes, seed=7)
    try:
        n = lib.pyq_business_nodes(b)
        nexts = np.array([b.nodes[i].next for i in range(n)])
        assert sorted(nexts.tolist()) == list(range(n))            # a permutation
        assert all(b.nodes[i].index == i for i in range(n))
        for start in (0, n // 2, n - 1):
            assert lib.pyq_business_cycle_length(b, start) == n     # one cycle: all reachable
        assert lib.pyq_business_cycle_length(b, n) == 0
    finally:
        lib.pyq_business_destroy(b)


def test_same_seeds_same_checksums_different_seeds_differ():
    a, b, c = _business(seed=1), _business(seed=1), _business(seed=2)
    try:
        ra, sa = _run(a, 99, salt=5)
        rb, sb = _run(b, 99, salt=5)
        assert ra == rb and sa.acc == sb.acc and sa.queries == 64
        assert lib.pyq_business_checksum(a) == lib.pyq_business_checksum(b)
        assert _run(c, 99, salt=5)[0] != ra                         # other layout
        assert _run(b, 100, salt=5)[0] != ra                        # other query stream
        assert _run(b, 99, salt=6)[0] != ra                         # other warm salt
    finally:
        for x in (a, b, c):
            lib.pyq_business_destroy(x)


def test_warm_resets_the_data_whatever_happened_before():
    b = _business()
    try:
        lib.pyq_business_warm(b, 11)
        clean = lib.pyq_business_checksum(b)
        first, _ = _run(b, 3)
        assert lib.pyq_business_checksum(b) != clean                # queries modify values
        lib.pyq_business_warm(b, 11)
        assert lib.pyq_business_checksum(b) == clean
        assert _run(b, 3)[0] == first
    finally:
        lib.pyq_business_destroy(b)


def test_a_query_modifies_eight_nodes():
    b = _business(seed=3)
    try:
        n = lib.pyq_business_nodes(b)
        before = np.array([b.nodes[i].value for i in range(n)], dtype=np.uint64)
        _run(b, 42, n=1)
        after = np.array([b.nodes[i].value for i in range(n)], dtype=np.uint64)
        changed = np.flatnonzero(before != after)
        assert len(changed) == 8
        # they are eight consecutive nodes of the cycle: one of them starts a walk
        # of 8 steps that stays inside the set
        members = set(changed.tolist())
        chains = []
        for s in members:
            walk, i = [s], s
            for _ in range(7):
                i = int(b.nodes[i].next)
                walk.append(i)
            chains.append(set(walk) == members)
        assert sum(chains) == 1
    finally:
        lib.pyq_business_destroy(b)


def test_caller_memory_and_bad_arguments():
    mem = np.zeros(4096 // 8 + 8, dtype=np.uint64)
    off = (-mem.ctypes.data) % 64 // 8
    aligned = mem[off:off + 4096 // 8]
    b = _business(4096, seed=1, mem=aligned)
    assert b.owned == 0 and lib.pyq_business_nodes(b) == 64
    assert int(ffi.cast("uintptr_t", b.nodes)) == aligned.ctypes.data
    r1, _ = _run(b, 1, salt=1)
    lib.pyq_business_destroy(b)
    m = _business(4096, seed=1)
    assert _run(m, 1, salt=1)[0] == r1                               # same with mapped memory
    lib.pyq_business_destroy(m)

    x = ffi.new("pyq_business_t *")
    assert lib.pyq_business_init(x, ffi.NULL, 100, 1) == lib.PYQ_EINVAL     # not whole lines
    assert lib.pyq_business_init(x, ffi.NULL, 64, 1) == lib.PYQ_EINVAL      # one node
    bad = ffi.cast("void *", ffi.from_buffer(aligned, require_writable=True))
    assert lib.pyq_business_init(x, ffi.cast("char *", bad) + 8, 1024, 1) == lib.PYQ_EINVAL
