"""Builds the optional peer-queue adapters (DESIGN §7.3) as separate shared objects.

setup.py's build_ext loads this file by path and calls ``build_all(cmd)`` after
the cffi extension.  For every peer of pyqueue/lab/peers/table.py it first compiles
and links a tiny probe against the peer's packaged headers (and libraries); only
when the probe succeeds is the adapter in csrc/peers/ built into ``pyqueue/lab/peers/libpyq_peer_<name>.so``.  The outcome of
every peer goes into ``pyqueue/lab/peers/manifest.json``:

    built          the library is there
    not installed  the probe failed: headers/libraries/compiler missing (why, which package)
    build failed   the probe passed but the adapter did not compile (compiler excerpt)

A peer never fails the install.  Environment: CC / CXX pick the compilers,
PYQ_PEERS=ck,dpdk (or "none") limits the peers built, PYQ_PEER_CFLAGS adds flags.

Run by hand: ``python pyqueue/lab/_build_peers.py [out_dir]`` (default pyqueue/lab/peers).
"""
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEER_SRC = os.path.join(ROOT, "csrc", "peers")
CSRC = os.path.join(ROOT, "csrc")
INCLUDE = os.path.join(CSRC, "include")
ADAPTER_H = os.path.join(CSRC, "adapters", "pyq_adapter.h")


def _table():
    """pyqueue.lab.peers.table, by path under its own name: setup.py runs this script
    before the lab package (whose peers/__init__ needs the extension) can be imported."""
    name = "pyqueue.lab.peers.table"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "peers", "table.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_peer_table = _table()
Peer, PEERS = _peer_table.Peer, _peer_table.PEERS
APT_PACKAGES, LIB_PATTERN, MANIFEST = (_peer_table.APT_PACKAGES, _peer_table.LIB_PATTERN,
                                       _peer_table.MANIFEST)
PEER_NAMES = [p.name for p in PEERS]


def adapter_abi(header=ADAPTER_H):
    """PYQ_ADAPTER_ABI as the header defines it (the peers are compiled against it)."""
    with open(header) as f:
        m = re.search(r"^#define\s+PYQ_ADAPTER_ABI\s+(\d+)\b", f.read(), re.M)
    if not m:
        raise LookupError("no #define PYQ_ADAPTER_ABI in %s" % header)
    return int(m.group(1))


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
    sources, rc, out = _burst_twin_sources(peer, tmp)
    if rc != 0:
        entry["status"] = "build failed"
        entry["reason"] = _excerpt(out)
        return entry
    rc, out = _run(cc + cflags + ["-I" + INCLUDE, "-I" + CSRC] + sources +
                   ["-o", tmp_lib] + LD_FLAGS + libs)
    if rc != 0:
        entry["status"] = "build failed"
        entry["reason"] = _excerpt(out)
        return entry
    shutil.move(tmp_lib, os.path.join(out_dir, lib))
    entry.update(status="built", library=lib)
    return entry


def _burst_twin_sources(peer, tmp):
    """(sources, rc, compiler output): the adapter alone, or -- when
    csrc/peers/<name>_burst.<ext> exists -- that file (the adapter included whole
    beside its burst-tail twin, DESIGN §6.1) and the message pattern it checks,
    compiled as C (the peer may be C++)."""
    ext = os.path.splitext(peer.source)[1]
    burst = os.path.join(PEER_SRC, "%s_burst%s" % (os.path.splitext(peer.source)[0], ext))
    if not os.path.exists(burst):
        return [os.path.join(PEER_SRC, peer.source)], 0, ""
    obj = os.path.join(tmp, "pattern_%s.o" % peer.name)
    rc, out = _run(_compiler("c") + C_FLAGS + ["-I" + INCLUDE, "-I" + CSRC, "-c",
                                               os.path.join(CSRC, "common", "pattern.c"), "-o", obj])
    return [burst, obj], rc, out


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
    manifest = {"abi": adapter_abi(), "apt_packages": list(APT_PACKAGES), "peers": peers}
    with open(os.path.join(out_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return manifest


def build_all(cmd):
    """setup.py hook: build the peers next to the cffi extension (in place or in build_lib)."""
    out_dir = os.path.join(os.path.dirname(cmd.get_ext_fullpath("pyqueue.lab._lab")), "peers")

    def log(msg):
        cmd.announce(msg, level=3)  # distutils WARN: visible without -v

    return build_into(out_dir, log)


if __name__ == "__main__":
    build_into(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "pyqueue", "lab", "peers"))
