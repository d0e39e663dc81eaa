"""What the hostile cases share: the segment's layout (compiled from the core's
own header, seglayout.c), a view of a segment file to read and rewrite its
words, and the runner that puts each case in its own process -- under
``unshare -m`` with a small private tmpfs over /dev/shm where this is root --
with a timeout, so that a crash, a hang or a leftover in /dev/shm is seen.

A case prints one line ``RESULT <json>`` and exits 0; anything else (a signal,
a traceback, a timeout) fails the test that ran it."""
import json
import mmap
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 90

_layout = None


def layout():
    """{field: offset in the segment} for the fields seglayout.c names."""
    global _layout
    if _layout is None and os.environ.get("PYQ_SEGLAYOUT"):
        _layout = json.loads(os.environ["PYQ_SEGLAYOUT"])
    if _layout is None:
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            raise RuntimeError("no C compiler to read the segment's layout")
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "seglayout")
            subprocess.run([cc, "-std=gnu11", "-I", os.path.join(ROOT, "csrc", "include"),
                            "-I", os.path.join(ROOT, "csrc"), "-o", exe,
                            os.path.join(HERE, "seglayout.c")], check=True)
            _layout = json.loads(subprocess.run([exe], check=True, capture_output=True,
                                                text=True).stdout)
    return _layout


class Segment:
    """A shared queue's file in /dev/shm, mapped read-write by this process:
    what a process that may write the segment (its owner, a damaged peer) can
    do to it."""

    def __init__(self, name, path=None):
        self.path = path or os.path.join("/dev/shm", name)
        self.fd = os.open(self.path, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.map = mmap.mmap(self.fd, self.size)
        self.lay = layout()

    def close(self):
        self.map.close()
        os.close(self.fd)

    def off(self, field):
        return self.lay[field] if isinstance(field, str) else field

    def u32(self, field, value=None, at=0):
        o = self.off(field) + at
        if value is None:
            return struct.unpack_from("<I", self.map, o)[0]
        struct.pack_into("<I", self.map, o, value & 0xFFFFFFFF)

    def u64(self, field, value=None, at=0):
        o = self.off(field) + at
        if value is None:
            return struct.unpack_from("<Q", self.map, o)[0]
        struct.pack_into("<Q", self.map, o, value & 0xFFFFFFFFFFFFFFFF)

    @property
    def block_size(self):
        return self.u32("rec.cfg.block_size")

    def ring_slot(self, seq):
        """Offset of the full ring's slot for ring position seq."""
        ctl = self.u64("rec.seg.ctl_off")
        n = self.u32("rec.cfg.hot_blocks") + self.u32("rec.cfg.spill_blocks")
        size = 1
        while size < n:
            size <<= 1
        return ctl + 4 * (seq & (size - 1))

    def free_slot(self, tier, pos):
        ctl = self.u64("rec.seg.ctl_off")
        first = self.u64("rec.seg.free_off", at=8 * tier)
        return ctl + first + 4 * pos

    def block_at(self, idx):
        """Offset of block idx of the pool."""
        return self.u64("rec.seg.pool_off") + idx * self.block_size

    def block(self, seq):
        """Offset of the block at ring position seq (its index read from the ring)."""
        idx = self.u32(self.ring_slot(seq))
        return self.u64("rec.seg.pool_off") + idx * self.block_size


def have_private_shm():
    """Whether a case can run with its own small /dev/shm: root and unshare."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None \
        and shutil.which("mount") is not None


def run(case, *args, shm_mib=16, private=True, timeout=TIMEOUT, env=None, pre=None):
    """Run hostile_cases.<case>(*args) in a fresh interpreter -- with its own
    tmpfs of shm_mib MiB over /dev/shm when private and root allows it -- and
    return its RESULT dict.  Fails (AssertionError) on a signal, a traceback,
    a non-zero exit or a timeout; the output is in the message."""
    code = "import sys, hostile_cases; hostile_cases.main(sys.argv[1:])"
    argv = [sys.executable, "-c", code, case, *map(str, args)]
    if private and have_private_shm():
        mount = "mount -t tmpfs -o size=%dm,mode=1777 tmpfs /dev/shm" % shm_mib
        argv = ["unshare", "-m", "sh", "-c", "%s && exec \"$@\"" % mount, "sh", *argv]
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([ROOT, HERE] + [p for p in e.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    e["PYTHONFAULTHANDLER"] = "1"
    e["PYQ_SEGLAYOUT"] = json.dumps(layout())
    e.update(env or {})
    try:
        p = subprocess.run((pre or []) + argv, capture_output=True, text=True, timeout=timeout,
                           env=e)
    except subprocess.TimeoutExpired as t:
        raise AssertionError("case %s hung (no end within %d s)\nstdout: %s\nstderr: %s"
                             % (case, timeout, t.stdout, t.stderr))
    assert p.returncode == 0, "case %s ended with %d\nstdout: %s\nstderr: %s" % (
        case, p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    assert lines, "case %s printed no RESULT\nstdout: %s\nstderr: %s" % (case, p.stdout,
                                                                          p.stderr[-3000:])
    return json.loads(lines[-1][len("RESULT "):])
