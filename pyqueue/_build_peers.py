"""Builds the optional peer-queue adapters (SPEC §7) as separate shared objects.

setup.py's build_ext calls ``build_all(cmd)`` after the cffi extension.  For every
known peer it first compiles and links a tiny probe against the peer's packaged
headers (and libraries); only when the probe succeeds is the adapter in
csrc/peers/ built into ``pyqueue/peers/libpyq_peer_<name>.so``.  The outcome of
every peer goes into ``pyqueue/peers/manifest.json``:

    built          the library is there
    not installed  the probe failed: headers/libraries/compiler missing (why, which package)
    build failed   the probe passed but the adapter did not compile (compiler excerpt)

A peer never fails the install.  Environment: CC / CXX pick the compilers,
PYQ_PEERS=ck,dpdk (or "none") limits the peers built, PYQ_PEER_CFLAGS adds flags.

Run by hand: ``python pyqueue/_build_peers.py [out_dir]`` (default pyqueue/peers).
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER_SRC = os.path.join(ROOT, "csrc", "peers")
CSRC = os.path.join(ROOT, "csrc")
INCLUDE = os.path.join(CSRC, "include")
MANIFEST = "manifest.json"
LIB_PATTERN = "libpyq_peer_%s.so"

# Must match PYQ_ADAPTER_ABI in csrc/adapters/pyq_adapter.h.
ADAPTER_ABI = 1


class Peer:
    def __init__(self, name, source, package, what, probe, lang="c", pkgconfig=None):
        self.name = name
        self.source = source          # file in csrc/peers/
        self.package = package        # Debian package that provides it
        self.what = what              # what it is, for people
        self.probe = probe            # a tiny program using the packaged headers
        self.lang = lang              # "c" or "c++"
        self.pkgconfig = pkgconfig    # pkg-config module for flags, if any


PEERS = [
    Peer("ck", "ck.c", "libck-dev", "Concurrency Kit ck_ring (SPSC)",
         "#include <ck_ring.h>\n"
         "int main(void) { ck_ring_t r; ck_ring_init(&r, 4); return (int)ck_ring_capacity(&r) != 4; }\n"),
    Peer("dpdk", "dpdk.c", "libdpdk-dev", "DPDK rte_ring (SP/SC, 32-byte elements)",
         "#include <rte_ring.h>\n#include <rte_ring_elem.h>\n"
         "int main(void) { return rte_ring_get_memsize_elem(32, 1024) < 0; }\n",
         pkgconfig="libdpdk"),
    Peer("rwq", "rwq.cpp", "libreaderwriterqueue-dev", "moodycamel::ReaderWriterQueue",
         "#include <readerwriterqueue/readerwriterqueue.h>\n"
         "int main() { moodycamel::ReaderWriterQueue<int> q(4); int v; "
         "return !(q.try_enqueue(1) && q.try_dequeue(v)); }\n",
         lang="c++"),
    Peer("boost", "boost.cpp", "libboost-dev", "boost::lockfree::spsc_queue",
         "#include <boost/lockfree/spsc_queue.hpp>\n"
         "int main() { boost::lockfree::spsc_queue<int> q(4); int v; "
         "return !(q.push(1) && q.pop(v)); }\n",
         lang="c++"),
    Peer("atomic_queue", "atomic_queue.cpp", "libatomic-queue-dev",
         "max0x7ba atomic_queue (AtomicQueue2, SPSC)",
         "#include <atomic_queue/atomic_queue.h>\n"
         "int main() { atomic_queue::AtomicQueueB2<int, std::allocator<int>, false, false, true> q(4096); "
         "int v; return !(q.try_push(1) && q.try_pop(v)); }\n",
         lang="c++"),
]
PEER_NAMES = [p.name for p in PEERS]
APT_PACKAGES = [p.package for p in PEERS]

C_FLAGS = ["-std=gnu11", "-O2", "-fPIC", "-pthread", "-fvisibility=hidden",
           "-Wall", "-Wextra", "-Wno-unused-parameter"]
CXX_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-pthread", "-fvisibility=hidden",
             "-Wall", "-Wextra", "-Wno-unused-parameter"]
# -z defs: an unresolved symbol is a build failure now, not a dlopen() failure later.
LD_FLAGS = ["-shared", "-pthread", "-Wl,-z,defs"]


def _compiler(lang):
    env, var, default = ("CC", "CC", "cc") if lang == "c" else ("CXX", "CXX", "c++")
    cmd = os.environ.get(env) or sysconfig.get_config_var(var) or default
    argv = shlex.split(cmd)
    if lang == "c++" and not os.environ.get(env) and not shutil.which(argv[0]):
        argv = [default]
    return argv


def _run(argv, timeout=600):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=timeout)
    except FileNotFoundError:
        return 127, "%s: command not found" % argv[0]
    except subprocess.TimeoutExpired:
        return 124, "%s: timed out after %d s" % (argv[0], timeout)
    return p.returncode, p.stdout


def _excerpt(text, lines=6):
    """The first compiler error lines (else the last lines), for the manifest."""
    all_lines = [l.rstrip() for l in text.splitlines() if l.strip()]
    errs = [l for l in all_lines if "error" in l.lower() or "not found" in l.lower()]
    pick = (errs or all_lines[-lines:])[:lines]
    return " | ".join(pick)[:600] or "no compiler output"


def _pkgconfig(module):
    """(cflags, libs, version) from pkg-config, or raise LookupError(why)."""
    pc = shutil.which("pkg-config") or shutil.which("pkgconf")
    if not pc:
        raise LookupError("pkg-config not found (needed to locate %s)" % module)
    rc, version = _run([pc, "--modversion", module])
    if rc != 0:
        raise LookupError("pkg-config has no %s module" % module)
    rc1, cflags = _run([pc, "--cflags", module])
    rc2, libs = _run([pc, "--libs", module])
    if rc1 or rc2:
        raise LookupError("pkg-config %s failed: %s" % (module, _excerpt(cflags + libs)))
    return shlex.split(cflags), shlex.split(libs), version.strip()


def _package_version(package):
    if not shutil.which("dpkg-query"):
        return None
    rc, out = _run(["dpkg-query", "-W", "-f=${Version}", package], timeout=30)
    return out.strip() if rc == 0 and out.strip() else None


def _flags(peer):
    """(compiler argv, compile flags, link flags, version) for a peer."""
    cflags, libs, version = [], [], None
    if peer.pkgconfig:
        cflags, libs, version = _pkgconfig(peer.pkgconfig)
    extra = shlex.split(os.environ.get("PYQ_PEER_CFLAGS", ""))
    base = C_FLAGS if peer.lang == "c" else CXX_FLAGS
    return _compiler(peer.lang), base + cflags + extra, libs, version


def build_peer(peer, out_dir, tmp):
    """Probe, then build one peer.  Returns its manifest entry."""
    entry = {"status": "not installed", "package": peer.package, "what": peer.what,
             "library": None, "reason": "", "version": None}
    try:
        cc, cflags, libs, version = _flags(peer)
    except LookupError as e:
        entry["reason"] = "%s headers not found (%s)" % (peer.package, e)
        return entry
    entry["version"] = version or _package_version(peer.package)
    ext = ".c" if peer.lang == "c" else ".cpp"
    probe = os.path.join(tmp, "probe_%s%s" % (peer.name, ext))
    with open(probe, "w") as f:
        f.write(peer.probe)
    rc, out = _run(cc + cflags + [probe, "-o", os.path.join(tmp, "probe_" + peer.name)] + libs)
    if rc != 0:
        if rc == 127:
            entry["reason"] = "no %s compiler (%s)" % ("C" if peer.lang == "c" else "C++", cc[0])
        else:
            entry["reason"] = "%s headers not found or not usable (%s)" % (peer.package, _excerpt(out, 2))
        return entry
    lib = LIB_PATTERN % peer.name
    tmp_lib = os.path.join(tmp, lib)
    rc, out = _run(cc + cflags + ["-I" + INCLUDE, "-I" + CSRC, os.path.join(PEER_SRC, peer.source),
                                  "-o", tmp_lib] + LD_FLAGS + libs)
    if rc != 0:
        entry["status"] = "build failed"
        entry["reason"] = _excerpt(out)
        return entry
    shutil.move(tmp_lib, os.path.join(out_dir, lib))
    entry.update(status="built", library=lib)
    return entry


def selected():
    """Peers to build: all, or those named in PYQ_PEERS ("none" for no peer)."""
    want = os.environ.get("PYQ_PEERS")
    if want is None or want.strip() in ("", "all"):
        return set(PEER_NAMES)
    return {w.strip() for w in want.split(",") if w.strip()} & set(PEER_NAMES)


def build_into(out_dir, log=print):
    """Build every peer into out_dir and write its manifest.  Returns the manifest."""
    os.makedirs(out_dir, exist_ok=True)
    for name in PEER_NAMES:  # no stale library may outlive a failed rebuild
        stale = os.path.join(out_dir, LIB_PATTERN % name)
        if os.path.exists(stale):
            os.remove(stale)
    chosen = selected()
    peers = {}
    with tempfile.TemporaryDirectory(prefix="pyq_peers_") as tmp:
        for peer in PEERS:
            if peer.name not in chosen:
                peers[peer.name] = {"status": "not installed", "package": peer.package,
                                    "what": peer.what, "library": None, "version": None,
                                    "reason": "left out by PYQ_PEERS=%s" % os.environ.get("PYQ_PEERS")}
            else:
                try:
                    peers[peer.name] = build_peer(peer, out_dir, tmp)
                except Exception as e:  # a peer never fails the install
                    peers[peer.name] = {"status": "build failed", "package": peer.package,
                                        "what": peer.what, "library": None, "version": None,
                                        "reason": "%s: %s" % (type(e).__name__, e)}
            e = peers[peer.name]
            log("pyqueue peer %-6s %s%s" % (peer.name, e["status"],
                                            (": " + e["reason"]) if e["reason"] else ""))
    manifest = {"abi": ADAPTER_ABI, "apt_packages": APT_PACKAGES, "peers": peers}
    with open(os.path.join(out_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return manifest


def build_all(cmd):
    """setup.py hook: build the peers next to the cffi extension (in place or in build_lib)."""
    out_dir = os.path.join(os.path.dirname(cmd.get_ext_fullpath("pyqueue._pyq")), "peers")

    def log(msg):
        cmd.announce(msg, level=3)  # distutils WARN: visible without -v

    return build_into(out_dir, log)


if __name__ == "__main__":
    build_into(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "pyqueue", "peers"))
