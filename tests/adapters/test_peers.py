"""The adapters of DESIGN §7: every built one delivers every message, FIFO, every byte;
a missing peer is reported, never dropped; bad names fail clearly.  No timings.

Set PYQ_REQUIRE_PEERS=1 (CI, where the Debian packages are installed) to make a
peer that is not built a failure instead of a skip.
"""
import json
import os
import shutil

import pytest

import pyqueue as pq
import pyqueue.lab.peers as peers
from pyqueue.lab import _build_peers
from pyqueue.lab._lab import ffi, lib

import support

N = 2_000_000
STATUS = peers.available()
REQUIRE = os.environ.get("PYQ_REQUIRE_PEERS") == "1"


def _need(name):
    status = STATUS[name]
    if status == "built":
        return
    assert status.startswith(("not installed: ", "build failed: ")), status
    if REQUIRE:
        pytest.fail("PYQ_REQUIRE_PEERS=1 but %s is %s" % (name, status))
    pytest.skip("%s: %s" % (name, status))


def _burst_capable(name):
    return peers.get(name).try_write_burst != ffi.NULL


# --- every built adapter delivers every message --------------------------------

def test_every_known_adapter_is_listed():
    assert set(STATUS) == set(peers.NAMES) == {"pyqueue", "mutex", "ck", "dpdk", "rwq", "boost",
                                               "atomic_queue"}
    assert STATUS["pyqueue"] == STATUS["mutex"] == "built"
    for name, status in STATUS.items():
        assert status == "built" or status.startswith(("not installed: ", "build failed: ")), status


@pytest.mark.parametrize("name", peers.NAMES)
def test_fifo_every_byte_small_ring(name):
    """A 64 KiB budget: the ring wraps ~1000 times and the writer meets 'full' often."""
    _need(name)
    r = peers.verify(name, N, capacity_bytes=65536)
    assert r["written"] == r["verified"] == N


@pytest.mark.parametrize("name", peers.NAMES)
def test_fifo_every_byte_default_budget_pinned(name):
    """The study's budget (4 x 4 KiB + 65,536 x 4 KiB), writer and reader pinned apart."""
    _need(name)
    w, r = (0, 1) if support.TWO_CPUS else (-1, -1)
    res = peers.verify(name, N // 4, writer_cpu=w, reader_cpu=r)
    assert res["written"] == res["verified"] == N // 4
    if support.TWO_CPUS:
        assert (res["writer_cpu_seen"], res["reader_cpu_seen"]) == (0, 1)


@pytest.mark.parametrize("name", peers.NAMES)
def test_fifo_every_byte_burst_writes(name):
    _need(name)
    if not _burst_capable(name):
        with pytest.raises(ValueError, match="no burst write"):
            peers.verify(name, 10, burst=32)
        return
    for burst in (1, 32, 1000):
        r = peers.verify(name, N // 2, burst=burst, capacity_bytes=65536)
        assert r["written"] == r["verified"] == N // 2


@pytest.mark.parametrize("name", ["pyqueue", "mutex", "dpdk"])
def test_other_message_sizes(name):
    _need(name)
    for size in (8, 64, 200):
        r = peers.verify(name, 100_000, msg_size=size, capacity_bytes=65536)
        assert r["verified"] == 100_000


@pytest.mark.parametrize("name", ["ck", "rwq", "boost", "atomic_queue"])
def test_fixed_size_peers_refuse_other_sizes(name):
    _need(name)
    with pytest.raises(ValueError, match="msg_size=64"):
        peers.verify(name, 10, msg_size=64)


# --- the operations one by one, from the writer's and reader's seats -----------

class _Handle:
    """Drive one adapter's ops directly (single thread: write, then read)."""

    def __init__(self, name, capacity_bytes=8192):
        self.a = peers.get(name)
        self.p = peers.params(32, capacity_bytes, adapter=name,
                              **({"block_size": 512, "hot_blocks": 4} if name == "pyqueue" else {}))
        h = ffi.new("void **")
        assert self.a.create(self.p, h) == 0
        self.h = h[0]
        self.got = []
        self.stop_after = None

        @ffi.callback("int(void *, const void *, uint32_t)")
        def on_message(ctx, msg, length):
            self.got.append(bytes(ffi.buffer(msg, length)))
            return 1 if self.stop_after is not None and len(self.got) >= self.stop_after else 0

        self.cb = on_message

    def write(self, seq):
        buf = ffi.new("uint8_t[32]")
        lib.pyq_pattern_fill(buf, 32, seq)
        return self.a.try_write(self.h, buf, 32)

    def close(self):
        self.a.destroy(self.h)


@pytest.mark.parametrize("name", peers.NAMES)
def test_full_is_eagain_and_capacity_holds(name):
    _need(name)
    q = _Handle(name)
    try:
        cap = q.a.capacity(q.h)
        n = 0
        while q.write(n) == 0:
            n += 1
            assert n <= cap + 1000, "never full"
        assert q.write(n) == lib.PYQ_EAGAIN
        if name == "pyqueue":  # an estimate from its blocks; the current block is the writer's
            assert cap - 4096 // 32 <= n <= cap
        else:
            assert n == cap
        q.a.flush(q.h)
        assert q.a.poll(q.h, 2**63, q.cb, ffi.NULL) == n
        assert all(lib.pyq_pattern_check(m, 32, i) == 0 for i, m in enumerate(q.got))
        assert q.write(n) == 0  # room again
    finally:
        q.close()


@pytest.mark.parametrize("kw, per_block", [({"publish": "max"}, 1 + (512 - 40) // 32),
                                           ({"publish": "each"}, 512 // 40),
                                           ({"publish": "max", "scan_current": True}, 512 // 64)])
def test_pyqueue_capacity_follows_its_framing(kw, per_block):
    """32-byte messages take 40-byte records, 64-byte ones with scan_current, and
    32 bytes each after the first of a block's run under publish max (DESIGN
    §3.1): the adapter's capacity (the burst study's backlog target) must say so."""
    _need("pyqueue")
    a = peers.get("pyqueue")
    p = peers.params(32, 8192, adapter="pyqueue", block_size=512, hot_blocks=4, **kw)
    h = ffi.new("void **")
    assert a.create(p, h) == 0
    try:
        cap = a.capacity(h[0])
        assert cap == per_block * 16
        buf = ffi.new("uint8_t[32]")
        n = 0
        while a.try_write(h[0], buf, 32) == 0:
            n += 1
            assert n <= cap, "more messages than the capacity"
        assert cap - per_block <= n <= cap
    finally:
        a.destroy(h[0])


@pytest.mark.parametrize("name", peers.NAMES)
def test_callback_stop_keeps_the_rest_in_order(name):
    """A callback's nonzero return stops poll after that message; nothing is lost
    (dpdk dequeues bursts of 32 and must keep what the callback did not see)."""
    _need(name)
    q = _Handle(name)
    try:
        for i in range(100):
            assert q.write(i) == 0
        q.a.flush(q.h)
        q.stop_after = 10
        assert q.a.poll(q.h, 1000, q.cb, ffi.NULL) == 10
        q.stop_after = None
        assert q.a.poll(q.h, 7, q.cb, ffi.NULL) == 7
        assert q.a.poll(q.h, 1000, q.cb, ffi.NULL) == 83
        assert q.a.poll(q.h, 1000, q.cb, ffi.NULL) == 0
        assert [lib.pyq_pattern_check(m, 32, i) for i, m in enumerate(q.got)] == [0] * 100
    finally:
        q.close()


def test_mutex_wait_readable_times_out_when_empty():
    q = _Handle("mutex")
    try:
        assert q.a.wait_readable != ffi.NULL
        assert q.a.wait_readable(q.h, 1_000_000) == lib.PYQ_EAGAIN
        assert q.write(0) == 0
        assert q.a.wait_readable(q.h, 1_000_000) == 0
    finally:
        q.close()


# --- missing peers are reported, never dropped ---------------------------------

def _copy_manifest(tmp_path, **changes):
    man = peers.manifest() or {"abi": lib.PYQ_ADAPTER_ABI, "peers": {}}
    for name, entry in changes.items():
        man.setdefault("peers", {})[name] = entry
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    return str(tmp_path)


def test_no_manifest_means_every_peer_not_installed(tmp_path):
    st = peers.available(peer_dir=str(tmp_path))
    assert st["pyqueue"] == st["mutex"] == "built"
    for name in peers.PEERS:
        assert st[name].startswith("not installed: no build record"), st[name]
        with pytest.raises(pq.UnsupportedError, match="peer %r is not installed.*apt-get install %s"
                           % (name, peers.PACKAGES[name])):
            peers.get(name, peer_dir=str(tmp_path))


def test_manifest_says_built_but_library_missing(tmp_path):
    d = _copy_manifest(tmp_path, dpdk={"status": "built", "library": "libpyq_peer_dpdk.so",
                                       "package": "libdpdk-dev", "reason": ""})
    assert peers.available(peer_dir=d)["dpdk"].startswith("not installed: ")
    with pytest.raises(pq.UnsupportedError, match="libpyq_peer_dpdk.so is missing"):
        peers.verify("dpdk", 10, peer_dir=d)


def test_not_installed_and_build_failed_are_reported(tmp_path):
    d = _copy_manifest(
        tmp_path,
        ck={"status": "not installed", "package": "libck-dev",
            "reason": "libck-dev headers not found (fatal error: ck_ring.h: No such file)"},
        rwq={"status": "build failed", "package": "libreaderwriterqueue-dev",
             "reason": "rwq.cpp:3: error: something"})
    st = peers.available(peer_dir=d)
    assert st["ck"] == "not installed: libck-dev headers not found (fatal error: ck_ring.h: No such file)"
    assert st["rwq"] == "build failed: rwq.cpp:3: error: something"
    with pytest.raises(pq.UnsupportedError, match="apt-get install libck-dev and reinstall pyqueue"):
        peers.get("ck", peer_dir=d)
    with pytest.raises(pq.UnsupportedError, match="build failed"):
        peers.get("rwq", peer_dir=d)


def test_a_library_that_is_not_a_peer_is_refused(tmp_path):
    d = _copy_manifest(tmp_path, boost={"status": "built", "library": "libpyq_peer_boost.so",
                                        "package": "libboost-dev", "reason": ""})
    (tmp_path / "libpyq_peer_boost.so").write_bytes(b"not an ELF file")
    with pytest.raises(pq.UnsupportedError, match="does not load"):
        peers.get("boost", peer_dir=d)


def test_a_peer_library_under_another_name_is_refused(tmp_path):
    _need("ck")
    shutil.copy(os.path.join(peers.peer_dir(), "libpyq_peer_ck.so"), tmp_path / "libpyq_peer_rwq.so")
    out = ffi.new("const pyq_adapter_t **")
    assert lib.pyq_adapter_get(b"rwq", str(tmp_path).encode(), out) == lib.PYQ_ENOTSUP
    assert "names itself 'ck'" in ffi.string(lib.pyq_adapter_error()).decode()


def test_bad_names_raise_clearly():
    with pytest.raises(ValueError, match="unknown adapter 'nope'; known adapters: pyqueue, mutex"):
        peers.get("nope")
    with pytest.raises(ValueError, match="unknown adapter"):
        peers.get("../../etc/x")
    with pytest.raises(TypeError, match="must be a str"):
        peers.get(None)
    out = ffi.new("const pyq_adapter_t **")
    assert lib.pyq_adapter_get(b"../x", b"/tmp", out) == lib.PYQ_EINVAL
    assert "not an adapter name" in ffi.string(lib.pyq_adapter_error()).decode()


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="n_messages"):
        peers.verify("mutex", -1)
    with pytest.raises(ValueError, match="msg_size"):
        peers.verify("mutex", 10, msg_size=0)
    with pytest.raises(ValueError, match="writer_cpu"):
        peers.verify("mutex", 10, writer_cpu=10_000)
    with pytest.raises(ValueError, match="burst"):
        peers.verify("pyqueue", 10, burst=-1)
    with pytest.raises(ValueError, match="capacity_bytes"):
        peers.verify("pyqueue", 10, capacity_bytes=4096)  # below the 4-block hot tier


# --- each list is written once --------------------------------------------------

ROOT = support.ROOT


def test_the_peers_come_from_the_table():
    from pyqueue.lab.peers import table as peer_table
    assert peers.PEERS == tuple(p.name for p in peer_table.PEERS) == tuple(_build_peers.PEER_NAMES)
    assert peers.PACKAGES == {p.name: p.package for p in peer_table.PEERS}
    assert _build_peers.PEERS is peer_table.PEERS       # one module, not a copy
    for p in peer_table.PEERS:
        assert os.path.exists(os.path.join(_build_peers.PEER_SRC, p.source)) or \
            not os.path.isdir(_build_peers.PEER_SRC), p.source


def test_the_builtins_and_the_abi_come_from_c():
    assert peers.BUILTIN == ("pyqueue", "mutex") and peers.YARDSTICKS == ("ring_floor", "record_ring")
    for name in peers.BUILTIN + peers.YARDSTICKS:
        assert ffi.string(peers.get(name).name).decode() == name
    assert lib.pyq_adapter_builtin(-1, ffi.NULL) == ffi.NULL
    if os.path.exists(_build_peers.ADAPTER_H):  # a source tree
        assert _build_peers.adapter_abi() == lib.PYQ_ADAPTER_ABI


def test_readme_and_ci_install_the_table_s_packages():
    from pyqueue.lab.peers import table as peer_table
    line = "apt-get install -y " + " ".join(peer_table.APT_PACKAGES + peer_table.BUILD_PACKAGES)
    readme = os.path.join(ROOT, "README.md")
    if not os.path.exists(readme):
        pytest.skip("not a source tree")
    with open(readme) as f:
        assert line in f.read()
    assert line in peers.install_hint()
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        assert "$(python3 pyqueue/lab/peers/table.py)" in f.read()


def test_the_table_runs_alone_and_the_runtime_does_not_import_the_build():
    import subprocess
    import sys
    table = os.path.join(os.path.dirname(peers.__file__), "table.py")
    out = subprocess.run([sys.executable, "-I", table], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [p for p in peers.PACKAGES.values()]
    code = ("import sys, pyqueue.lab.peers, pyqueue.lab\n"
            "print(sorted(m for m in sys.modules if '._build' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --- the build decides from a probe ------------------------------------------------

def test_build_records_a_missing_header_as_not_installed(tmp_path):
    fake = _build_peers.Peer("ghost", "ck.c", "libghost-dev", "a peer that is not there",
                             "#include <pyq_no_such_header.h>\nint main(void) { return 0; }\n")
    entry = _build_peers.build_peer(fake, str(tmp_path), str(tmp_path))
    assert entry["status"] == "not installed"
    assert "libghost-dev headers not found" in entry["reason"]
    assert "pyq_no_such_header.h" in entry["reason"]
    assert not os.path.exists(tmp_path / "libpyq_peer_ghost.so")


def test_build_records_a_failing_adapter_as_build_failed(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text("this is not C;\n")
    fake = _build_peers.Peer("broken", str(src), "libc6-dev", "an adapter that does not compile",
                             "int main(void) { return 0; }\n")
    entry = _build_peers.build_peer(fake, str(tmp_path), str(tmp_path))
    assert entry["status"] == "build failed"
    assert "error" in entry["reason"]


def test_build_into_writes_a_manifest_for_every_peer(tmp_path, monkeypatch):
    monkeypatch.setenv("PYQ_PEERS", "ck")
    (tmp_path / "libpyq_peer_dpdk.so").write_bytes(b"stale")
    man = _build_peers.build_into(str(tmp_path), log=lambda msg: None)
    assert set(man["peers"]) == set(peers.PEERS)
    assert man["peers"]["dpdk"]["status"] == "not installed"
    assert "PYQ_PEERS" in man["peers"]["dpdk"]["reason"]
    assert not (tmp_path / "libpyq_peer_dpdk.so").exists()  # stale libraries go
    st = peers.available(peer_dir=str(tmp_path))
    if STATUS["ck"] == "built" and os.path.isdir(_build_peers.PEER_SRC):  # a source tree
        assert man["peers"]["ck"]["status"] == "built", man["peers"]["ck"]
    if man["peers"]["ck"]["status"] == "built":
        assert st["ck"] == "built"
        assert peers.verify("ck", 10_000, peer_dir=str(tmp_path))["verified"] == 10_000
    else:
        assert st["ck"].startswith(("not installed: ", "build failed: "))


# --- the verifier itself catches loss and corruption ---------------------------

def _faulty_adapter(drop=None, corrupt=None):
    """The mutex adapter with one message dropped or one byte flipped on write.
    Python callbacks on C threads: slow, but the verifier must notice either."""
    base = peers.get("mutex")
    seq = [0]

    @ffi.callback("int(void *, const void *, uint32_t)")
    def try_write(h, msg, length):
        s = seq[0]
        if s == drop:
            seq[0] += 1
            return 0  # "written", but gone
        if s == corrupt:
            bad = ffi.new("uint8_t[]", bytes(ffi.buffer(msg, length)))
            bad[length - 1] ^= 0xFF
            msg = bad
        rc = base.try_write(h, msg, length)
        if rc == 0:
            seq[0] += 1
        return rc

    a = ffi.new("pyq_adapter_t *")
    a.abi, a.name, keep_name = lib.PYQ_ADAPTER_ABI, ffi.NULL, ffi.new("char[]", b"faulty")
    a.name = keep_name
    a.create, a.destroy, a.capacity = base.create, base.destroy, base.capacity
    a.try_write, a.try_write_burst, a.flush = try_write, ffi.NULL, base.flush
    a.poll, a.wait_readable = base.poll, base.wait_readable
    return a, (try_write, keep_name)


@pytest.mark.parametrize("drop, corrupt, first_bad", [(5, None, 5), (999, None, 999), (None, 7, 7)])
def test_verifier_catches_loss_and_corruption(drop, corrupt, first_bad):
    a, keep = _faulty_adapter(drop, corrupt)
    p = peers.params(32, 4096, adapter="faulty")
    res = ffi.new("pyq_adapter_verify_result_t *")
    rc = lib.pyq_adapter_verify(a, p, 1000, 0, -1, -1, res)
    assert rc == lib.PYQ_EBADMSG == res.error
    assert res.first_bad == first_bad
    assert res.verified == first_bad
