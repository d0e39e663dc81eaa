"""The hostile cases, one function each, run by hostile_support.run() in a
process of their own: the queue is used here as its users would, and the
segment is rewritten between calls the way a process that may write it can.
Each prints ``RESULT <json>``: what it delivered, the error it got (class name
and message), and what the test needs to judge."""
import json
import os
import random
import signal
import struct
import sys
import time

import pyqueue as pq
from hostile_support import Segment, layout

SMALL = dict(block_size=4096, hot_blocks=2, spill_blocks=6)


def msg(i, size=32):
    """Message i: its index in the first 8 bytes, then a pattern of it."""
    head = struct.pack("<Q", i)
    body = bytes((i * 7 + k) & 0xFF for k in range(8, max(size, 8)))
    return (head + body)[:size]


def index_of(m):
    """The index a delivered message claims, if its bytes are message i's of
    its length (else None: a message nobody wrote)."""
    if len(m) < 8:
        return None
    i = struct.unpack_from("<Q", m)[0]
    return i if i < 1 << 40 and msg(i, len(m)) == m else None


def result(**kw):
    print("RESULT " + json.dumps(kw), flush=True)


def error(e):
    return None if e is None else [type(e).__name__, str(e)]


def drain(q, limit=100000):
    """Read until an exception or nothing for a while; (messages, exception)."""
    got = []
    try:
        idle = 0
        while len(got) < limit and idle < 50:
            ms = q.reader.poll(64)
            if ms:
                got.extend(ms)
                idle = 0
            else:
                idle += 1
                time.sleep(0.001)
    except pq.QueueError as e:
        return got, e
    return got, None


def written_prefix(got, sizes):
    """Whether got is the first len(got) messages written (sizes[i] bytes each)."""
    return all(m == msg(i, sizes[i]) for i, m in enumerate(got)) and len(got) <= len(sizes)


def fresh(**cfg):
    # publish "max": the cases rewrite the runs a writer forms of several
    # messages (Python's default, "each", publishes one at a time).
    c = dict(SMALL, publish="max")
    c.update(cfg)
    q = pq.Queue(shared=True, **c)
    return q, Segment(q.name)


def report(q, seg, got, err, sizes, **extra):
    prefix = written_prefix(got, sizes)
    seg.close()
    try:
        q.close()
    except pq.QueueError:
        pass
    result(delivered=len(got), prefix=prefix, error=error(err), **extra)


# --- records, runs, positions ------------------------------------------------

def record_len(how):
    """A record's length rewritten: past 4 GiB (what used to crash the reader),
    just past the published end, or past the block."""
    q, seg = fresh()
    sizes = [10, 20, 30, 40]
    for i, n in enumerate(sizes):
        q.writer.write(msg(i, n))
    q.writer.flush()
    blk = seg.block(0)
    second = blk + 8 + 16                      # record 0: header + 10 padded to 16
    hdr = seg.u64(second)
    new = {"huge": 0xFFFFFFFF, "limit": 4096, "past": 4096 - 24 - 7}[how]
    seg.u64(second, (hdr & ~0xFFFFFFFF) | new)
    got, err = drain(q)
    report(q, seg, got, err, sizes)


def run_header(how):
    """A run's header rewritten: a count of 65,535 (1,024 messages from 5
    written, once), 0, 1, a zero length, a length past the block."""
    q, seg = fresh()
    sizes = [32] * 5
    for i in range(5):
        q.writer.write(msg(i))
    q.writer.flush()
    blk = seg.block(0)
    hdr = seg.u64(blk)
    kind = (hdr >> 32) & 0xFFFF
    assert kind == 0x5052, "expected a run header, got %x" % hdr
    count, length = hdr >> 48, hdr & 0xFFFFFFFF
    if how == "count_max":
        count = 0xFFFF
    elif how == "count_zero":
        count = 0
    elif how == "count_one_more":
        count += 1
    elif how == "len_zero":
        length = 0
    elif how == "len_huge":
        length = 0xFFFFFFF0
    seg.u64(blk, (count << 48) | (0x5052 << 32) | length)
    got, err = drain(q)
    report(q, seg, got, err, sizes)


def header_kind(publish):
    """A header of a kind no writer stores (and, scanning, a run's)."""
    q, seg = fresh(publish=publish)
    sizes = [24, 16, 40]                       # no two alike: records, not a run
    for i, n in enumerate(sizes):
        q.writer.write(msg(i, n))
    q.writer.flush()
    blk = seg.block(0)
    kind = 0x5052 if publish == "each" else 0x1234  # scanning: a run is no writer's
    seg.u64(blk + 8 + 24, (2 << 48) | (kind << 32) | 16)  # the second record's header
    got, err = drain(q)
    report(q, seg, got, err, sizes)


def ring_slot(publish):
    """The full ring's first slot names a block past the pool."""
    q, seg = fresh(publish=publish)
    sizes = [32] * 300
    for i in range(300):                     # more than a block: the ring is used
        q.writer.write(msg(i))
    q.writer.flush()
    seg.u32(seg.ring_slot(0), 0xFFFFFFF0)
    got, err = drain(q)
    report(q, seg, got, err, sizes)


def pub_pos(how):
    """pub_pos rewritten: huge (poll() spun in C for ever), backwards, one
    block past what the writer took."""
    q, seg = fresh()
    sizes = [32] * 150
    for i in range(150):
        q.writer.write(msg(i))
    q.writer.flush()
    first = q.reader.poll(10)
    cur = seg.u64("pub_pos")
    new = {"huge": 1 << 62, "backwards": 8, "past_tail": (seg.u64("ring_tail") + 1) * 4096,
           "wrap": (1 << 64) - 4096}[how]
    seg.u64("pub_pos", new)
    t0 = time.monotonic()
    got, err = drain(q)
    took = time.monotonic() - t0
    report(q, seg, first + got, err, sizes, seconds=took, was=cur)


def ring_tail(how):
    """A scanning reader's ring_tail rewritten (publish each)."""
    q, seg = fresh(publish="each")
    sizes = [32] * 150
    for i in range(150):
        q.writer.write(msg(i))
    seg.u64("ring_tail", {"huge": 1 << 62, "pool_ahead": 9}[how])
    got, err = drain(q)
    report(q, seg, got, err, sizes)


def free_ring(how):
    """The writer meets what the reader gives back: a free-ring slot naming a
    block past its tier (the writer computes a block's index from its ring
    position and never reads the slot: nothing changes), or a free_tail that
    returns more blocks than exist (QueueCorrupted)."""
    q, seg = fresh()
    sizes, got = [], []
    err = None
    i = 0
    try:
        for rnd in range(6):
            for _ in range(200):
                q.writer.write(msg(i))
                sizes.append(32)
                i += 1
            q.writer.flush()
            got += q.reader.poll()
            if rnd == 1:
                if how == "slot":
                    for t in (0, 1):
                        for pos in range(8):
                            seg.u32(seg.free_slot(t, pos), 0x7FFFFFF0)
                else:
                    seg.u64("free_tail[0].v", 1 << 40)
    except pq.QueueError as e:
        err = e
    report(q, seg, got, err, sizes, written=i)


def config_after_attach():
    """The segment's configuration record rewritten after attach (block_size
    64, garbage counts): this process goes on with the geometry it fixed,
    and every message arrives."""
    q, seg = fresh()
    sizes = [32] * 2000
    got = []
    for rnd in range(4):
        for i in range(500 * rnd, 500 * (rnd + 1)):
            q.writer.write(msg(i))
        if rnd == 0:
            seg.u32("rec.cfg.block_size", 64)
            seg.u32("rec.cfg.hot_blocks", 0xFFFFFFFF)
            seg.u32("rec.cfg.spill_blocks", 7)
            seg.u64("rec.seg.pool_off", 1 << 40)
            seg.u64("rec.seg.ctl_off", 3)
        q.writer.flush()
        got.extend(q.reader.poll())
    report(q, seg, got, None, sizes, all_delivered=len(got) == 2000)


def random_words(seed, rounds):
    """A peer that rewrites random words -- of the shared part, the rings and
    the blocks' headers -- between the writer's and the reader's calls.  Any
    outcome but these fails: messages the writer wrote, QueueError subclasses,
    and the process alive and answering."""
    rnd = random.Random(int(seed))
    lay = layout()
    shared_words = [v for k, v in lay.items() if k not in (
        "wslot", "rslot", "shared_bytes", "free_tail_stride") and not k.startswith("rec.")]
    bad, errors, delivered, written = [], [], 0, 0
    for r in range(int(rounds)):
        cfg = dict(SMALL, publish=rnd.choice(["max", "each", "bytes:512"]),
                   scan_current=rnd.random() < 0.3)
        q = pq.Queue(shared=True, **cfg)
        seg = Segment(q.name)
        n_written = 0
        try:
            for step in range(rnd.randint(2, 12)):
                for _ in range(rnd.randint(0, 150)):
                    size = rnd.choice([8, 16, 32, 32, 32, 100, 1000])
                    if not q.writer.try_write(msg(n_written, size)):
                        break
                    n_written += 1
                if rnd.random() < 0.5:
                    q.writer.flush()
                for _ in range(rnd.randint(1, 3)):
                    what = rnd.random()
                    if what < 0.85:
                        if what < 0.4:
                            off = rnd.choice(shared_words) + rnd.choice([0, 4])
                        elif what < 0.65:
                            off = seg.ring_slot(rnd.randint(0, 15))
                        else:
                            off = seg.free_slot(rnd.randint(0, 1), rnd.randint(0, 7))
                        val = rnd.choice([0, 1, 0xFFFFFFFF, 1 << 31, 4096, 4095, 65535,
                                          rnd.getrandbits(32)])
                        seg.u32(off, val)
                    else:
                        # A block's first header (always a header), made into one
                        # no writer stores.  A length rewritten to another length
                        # that fits is a forged message, which a peer that may
                        # write the pool can always make: no check can tell.
                        seg.u64(seg.block_at(rnd.randint(0, 7)), rnd.choice([
                            (0x5051 << 32) | rnd.randint(4089, 0xFFFFFFFF),
                            (0xFFFF << 48) | (0x5052 << 32) | 32,
                            (rnd.getrandbits(16) << 32) | 0x1234 << 48 | 8]))
                for m in q.reader.poll(rnd.randint(1, 400)):
                    delivered += 1
                    if index_of(m) is None or index_of(m) >= n_written:
                        bad.append(m[:16].hex())
        except pq.QueueError as e:
            errors.append(type(e).__name__)
        except MemoryError as e:     # a forged length could ask Python for a huge bytes
            bad.append("MemoryError %s" % e)
        written += n_written
        seg.close()
        try:
            q.close()
        except pq.QueueError:
            pass
    result(bad=bad[:10], errors=sorted(set(errors)), delivered=delivered, written=written)


# --- mirrors and dead peers ---------------------------------------------------

def _child(fn):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fn()
            code = 0
        finally:
            os._exit(code)
    return pid


def reader_mirror():
    """A reader process is killed; its mirror is rewritten; the next reader's
    take(dead=True) is refused with QueueCorrupted, not sent into the pool."""
    q, seg = fresh(publish="each")
    for i in range(20):
        q.writer.write(msg(i))
    r, w = os.pipe()

    def child():
        for i in range(5):
            assert q.reader.read(timeout=10) == msg(i)
        os.write(w, b"x")
        time.sleep(60)
    pid = _child(child)
    os.read(r, 1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    for k in range(2):
        base = seg.off("rm.s[0].seq") + k * seg.lay["rslot"]
        seg.u64(base, 1 << 50)
        seg.u32(base + 8, 0xFFFF0000)
    err = None
    try:
        q.take("reader", dead=True)
    except pq.QueueError as e:
        err = e
    report(q, seg, [], err, [])


def writer_mirror(how):
    """A writer process is killed with committed, unpublished messages; its
    mirror is rewritten; the reader ends the stream (or says corrupt) without
    a message nobody wrote."""
    q, seg = fresh(publish="max")
    r, w = os.pipe()

    def child():
        for i in range(50):
            q.writer.write(msg(i))
        os.write(w, b"x")
        time.sleep(60)
    pid = _child(child)
    os.read(r, 1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    g = seg.u64("wm.gen")
    slot = seg.off("wm.s[0].seq") + (g & 1) * seg.lay["wslot"]
    if how == "pos":
        seg.u64(slot + 8, (seg.u64(slot + 8) & ~0xFFFFFFFF) | 4000)
    elif how == "run":
        seg.u64(slot + 8, (60000 << 32) | (seg.u64(slot + 8) & 0xFFFFFFFF))
    elif how == "seq":
        seg.u64(slot, 1 << 45)
    got, err = [], None
    try:
        while True:
            got.append(q.reader.read(timeout=10))
    except pq.QueueError as e:
        err = e
    report(q, seg, got, err, [32] * 50)


# --- trust ----------------------------------------------------------------------

def trust(how):
    """Attach refuses a segment of another uid or of a mode wider than 0600,
    unless trust_other_users=True; creation makes it 0600 whatever the umask."""
    os.umask(0)
    q = pq.Queue(shared=True, **SMALL)
    path = os.path.join("/dev/shm", q.name)
    mode = os.stat(path).st_mode & 0o7777
    if how == "other_uid":
        os.chown(path, 65534, 65534)
    elif how == "mode_0644":
        os.chmod(path, 0o644)
    elif how == "mode_0660":
        os.chmod(path, 0o660)
    elif how == "mode_0400":
        os.chmod(path, 0o400)
    q.writer.write(b"from the creator")
    q.writer.flush()
    out = {"created_mode": mode}
    code = ("import sys, pyqueue as pq\n"
            "try:\n"
            "    a = pq.Queue.attach(sys.argv[1], trust_other_users=sys.argv[2] == '1')\n"
            "    print('OK', a.reader.read(timeout=10)); a.close()\n"
            "except PermissionError as e:\n"
            "    print('REFUSED', e)\n")
    import subprocess
    for trusted in (0, 1):
        p = subprocess.run([sys.executable, "-c", code, q.name, str(trusted)],
                           capture_output=True, text=True, timeout=60)
        out["trusted" if trusted else "default"] = (p.stdout.strip() or p.stderr[-500:])
        if p.stdout.startswith("OK"):    # the message was read: write it again
            q.writer.write(b"from the creator")
            q.writer.flush()
    q.close()
    result(**out)


def main(argv):
    name, args = argv[0], argv[1:]
    globals()[name](*args)


# --- liveness across pid namespaces ---------------------------------------------

PEER = r"""
import sys, time, pyqueue as pq
from hostile_cases import msg
q = pq.Queue.attach(sys.argv[1])
how = sys.argv[2]
if how == "alive":
    for i in range(100):
        q.writer.write(msg(i))
        time.sleep(0.01)
    time.sleep(0.5)                  # alive and quiet: the reader must wait
    q.writer.write(msg(100))
    q.close()
elif how == "killed":
    for i in range(50):
        q.writer.write(msg(i))       # publish max: committed, not published
    print("ready", flush=True)
    time.sleep(120)
elif how == "owner":
    q.close()                        # the container's own queue, made below
    own = pq.Queue(shared=True, name=sys.argv[1] + "-own", **dict(block_size=4096, hot_blocks=2,
                                                               spill_blocks=6))
    print("ready", flush=True)
    time.sleep(120)
elif how == "reader":
    for i in range(300):
        assert q.reader.read(timeout=30) == msg(i)
        time.sleep(0.002)
    q.close()
"""


def pid_namespace(how):
    """A peer in another pid namespace (a container sharing /dev/shm, here
    unshare -p -f): alive, it is judged alive -- the stream does not end,
    cleanup_stale() leaves its queue; killed, its committed messages arrive
    and the stream ends."""
    import subprocess
    q = pq.Queue(shared=True, publish="max" if how == "killed" else "each", **SMALL)
    # --mount-proc: the peer sees its own /proc, as in a container.
    peer = subprocess.Popen(["unshare", "-p", "--mount-proc", "--kill-child", sys.executable, "-c", PEER,
                             q.name, how], stdout=subprocess.PIPE, text=True)
    got, err, removed = [], None, []
    try:
        if how == "owner":
            assert peer.stdout.readline().strip() == "ready"
            removed = pq.cleanup_stale()
            exists = os.path.exists("/dev/shm/%s-own" % q.name)
            peer.kill()
            peer.wait(30)
            deadline = time.monotonic() + 20   # the peer dies once unshare has (pdeathsig)
            while not (gone := pq.cleanup_stale()) and time.monotonic() < deadline:
                time.sleep(0.05)
            q.close()
            result(removed=removed, exists=exists, name=q.name + "-own", then_removed=gone)
            return
        if how == "killed":
            assert peer.stdout.readline().strip() == "ready"
            peer.kill()                 # unshare dies; --kill-child kills the peer
            peer.wait(30)
        if how == "reader":
            for i in range(300):
                q.writer.write(msg(i), timeout=30)
                if i == 150:
                    removed = pq.cleanup_stale()
            q.writer.flush()
        else:
            while True:
                got.append(q.reader.read(timeout=30))
                if len(got) == 20:
                    removed = pq.cleanup_stale()
    except pq.QueueError as e:
        err = e
    peer.wait(60)
    q.close()
    result(delivered=len(got), prefix=written_prefix(got, [32] * 101),
           error=error(err), removed=removed, name=q.name, peer_rc=peer.returncode)


# --- room in /dev/shm --------------------------------------------------------------

def _fill(q, n_blocks):
    """Write until the queue is full (every block of the pool used), then read
    it all back: every page of the segment touched."""
    i = 0
    while q.writer.try_write(msg(i, 4000)):
        i += 1
    q.writer.flush()
    got = q.reader.poll()
    return i, len(got) == i and all(m == msg(k, 4000) for k, m in enumerate(got))


def room(how):
    """/dev/shm is this case's own small tmpfs (hostile_support.run's shm_mib):
    a queue that does not fit fails at creation with MemoryError naming the
    free space; one that was made never dies with SIGBUS, however full the
    tmpfs gets afterwards."""
    out = {}
    if how == "two":                       # 8 MiB: one 5 MiB queue fits, two do not
        a = pq.Queue(shared=True, block_size=4096, hot_blocks=4, spill_blocks=1200)
        try:
            b = pq.Queue(shared=True, block_size=4096, hot_blocks=4, spill_blocks=1200)
            b.close()
            out["second"] = None
        except MemoryError as e:
            out["second"] = ["MemoryError", str(e)]
        out["written"], out["ok"] = _fill(a, 1204)
        a.close()
    elif how == "fills_later":             # 8 MiB: the rest taken by a file afterwards
        a = pq.Queue(shared=True, block_size=4096, hot_blocks=4, spill_blocks=1200)
        with open("/dev/shm/filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\xff" * 65536)
            except OSError as e:
                out["filler"] = e.strerror
        out["written"], out["ok"] = _fill(a, 1204)
        a.close()
        os.unlink("/dev/shm/filler")
    elif how == "default":                 # 64 MiB, Docker's default: two default queues
        a = pq.Queue(shared=True)
        b = pq.Queue(shared=True)
        out["segment"] = os.path.getsize("/dev/shm/" + a.name)
        out["spill_blocks"] = a.config.spill_blocks
        out["written"], out["ok"] = _fill(a, a.config.spill_blocks + 4)
        a.close()
        b.close()
    out["left"] = sorted(os.listdir("/dev/shm"))
    result(**out)


# --- cleanup_stale() against its caller -------------------------------------------

def _stale(name):
    """A shared queue called name whose process is gone (made in a child that
    exits without closing it)."""
    pid = os.fork()
    if pid == 0:
        try:
            pq.Queue(shared=True, name=name, **SMALL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def cleanup(how):
    """What anyone who may write /dev/shm can put there: cleanup_stale() must
    neither block, die, raise, follow, nor remove what is not a dead queue."""
    import threading
    out = {}
    if how == "fifo":
        os.mkfifo("/dev/shm/pyq-fifo")
        os.mkfifo("/dev/shm/not-ours-fifo")
        _stale("pyq-stale-1")
    elif how == "links":
        _stale("pyq-target")
        os.symlink("/dev/shm/pyq-target", "/dev/shm/pyq-link")
        os.symlink("/etc/passwd", "/dev/shm/pyq-passwd")
        os.mkdir("/dev/shm/pyq-dir")
    elif how == "bytes":
        _stale("pyq-stale")                       # renamed b"pyq-stale-\xff\xfe": not UTF-8
        os.rename(b"/dev/shm/pyq-stale", b"/dev/shm/pyq-stale-\xff\xfe")
        open(os.fsencode("/dev/shm/pyq-junk-\udcff"), "wb").write(b"junk" * 100)
    elif how == "huge":
        with open("/dev/shm/pyq-sparse", "wb") as f:
            f.truncate(1 << 40)                       # 1 TiB of holes
        with open("/dev/shm/pyq-short", "wb") as f:
            f.write(b"PyQueue1")                      # a magic, and nothing after it
    elif how == "truncating":
        _stale("pyq-shrinking")
        data = open("/dev/shm/pyq-shrinking", "rb").read()
        stop = False

        def shrink():
            # Cut short and filled again while the cleanups look: a mapped header
            # would be a SIGBUS.
            while not stop:
                with open("/dev/shm/pyq-cut", "wb") as f:
                    f.write(data[:4096])
                    f.truncate(0)
                    f.write(data)
        open("/dev/shm/pyq-cut", "wb").write(data)
        t = threading.Thread(target=shrink)
        t.start()
        out["looks"] = 0
        for _ in range(300):
            out["looks"] += 1
            pq.cleanup_stale()          # may remove it (a whole stale copy): it comes back
        stop = True
        t.join()
    elif how == "dead_creation":
        # Killed while creating: nothing a later creation trips over.
        import subprocess
        code = ("import pyqueue as pq\n"
                "while True:\n"
                "    pq.Queue(shared=True, name='pyq-dying', block_size=4096, hot_blocks=4,"
                " spill_blocks=1500).close()\n")
        for k in range(15):
            p = subprocess.Popen([sys.executable, "-c", code])
            time.sleep(0.2 + 0.03 * k)
            p.kill()
            p.wait()
        out["after_kills"] = sorted(os.listdir("/dev/shm"))
        out["removed_first"] = pq.cleanup_stale()
        q = pq.Queue(shared=True, name="pyq-dying", **SMALL)   # never FileExistsError
        q.close()
    elif how == "zero_creation":
        # What a creation killed before its magic leaves where /dev/shm has no
        # O_TMPFILE: an empty file, and one marked "being made"; a file of
        # zeros is nobody's creation, and another name nobody's business.
        open("/dev/shm/pyq-empty", "wb").close()
        with open("/dev/shm/pyq-making", "wb") as f:
            f.write(b"PyQinit1" + bytes(8184))
        open("/dev/shm/pyq-zeros", "wb").write(bytes(8192))
        open("/dev/shm/other-making", "wb").write(b"PyQinit1" + bytes(8184))
    t0 = time.monotonic()
    out["removed"] = pq.cleanup_stale()
    out["seconds"] = time.monotonic() - t0
    out["left"] = sorted(os.fsdecode(n) for n in os.listdir(b"/dev/shm"))
    out["passwd_ok"] = os.path.getsize("/etc/passwd") > 0
    result(**out)


def truncated(size):
    """The segment cut short (ftruncate by a process that may write it) under a
    live writer and a live reader, each in its own process: both get
    QueueCorrupted, neither dies of SIGBUS."""
    q = pq.Queue(shared=True, publish="each", **SMALL)
    r, w = os.pipe()
    r2, w2 = os.pipe()

    def child():
        for i in range(10):
            assert q.reader.read(timeout=10) == msg(i)
        os.write(w, b"x")
        os.read(r2, 1)                      # cut now
        try:
            while True:
                q.reader.read(timeout=10)
        except pq.QueueCorrupted:
            os.write(w, b"C")
        except pq.QueueError as e:
            os.write(w, type(e).__name__.encode()[:1])
    pid = _child(child)
    for i in range(10):
        q.writer.write(msg(i))
    assert os.read(r, 1) == b"x"
    os.truncate("/dev/shm/" + q.name, int(size))
    os.write(w2, b"x")
    err = None
    try:
        for i in range(10, 100000):
            q.writer.write(msg(i), timeout=10)
    except pq.QueueError as e:
        err = e
    child_said = os.read(r, 1).decode()
    _, status = os.waitpid(pid, 0)
    q.close()
    result(error=error(err), child=child_said, child_status=status)


# --- lifecycle ------------------------------------------------------------------------

def _use_up_fds():
    """Open descriptors until none is left (the soft limit lowered first, so
    this is quick); returns them."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
    fds = []
    try:
        while True:
            fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    return fds


def no_fd(how):
    """No descriptor left: close() still removes the segment; creating and
    attaching say "too many open files", not "no room"; a fork child that
    cannot join says so, not the fork rule of in-process queues."""
    out = {}
    q = pq.Queue(shared=True, **SMALL)
    q.writer.write(b"x")
    if how == "close":
        fds = _use_up_fds()
        q.close()
        out["left"] = sorted(os.listdir("/dev/shm"))
    elif how == "create":
        fds = _use_up_fds()
        try:
            pq.Queue(shared=True, **SMALL)
        except Exception as e:
            out["error"] = error(e)
        try:
            pq.Queue.attach(q.name + "x")
        except Exception as e:
            out["attach"] = error(e)
        for fd in fds[:8]:
            os.close(fd)
        q.close()
        out["left"] = sorted(os.listdir("/dev/shm"))
    elif how == "fork":
        fds = _use_up_fds()
        pid = os.fork()
        if pid == 0:
            try:
                q.writer.write(b"y")
                os.write(1, b'RESULT {"child": "wrote"}\n')
            except Exception as e:
                os.write(1, ("RESULT " + json.dumps({"child": error(e)}) + "\n").encode())
            os._exit(0)
        os.waitpid(pid, 0)
        for fd in fds[:8]:
            os.close(fd)
        q.close()
        return
    result(**out)


EXIT = r"""
import sys, threading, time, pyqueue as pq
how = sys.argv[1]
q = pq.Queue(shared=True, block_size=4096, hot_blocks=1, spill_blocks=0)
print(q.name, flush=True)
if how == "get":
    threading.Thread(target=q.reader.get, daemon=True).start()
elif how == "write":
    def fill():
        while True:
            q.writer.write(b"x" * 1000)       # full after 4: waits for a reader
    threading.Thread(target=fill, daemon=True).start()
elif how == "both":
    threading.Thread(target=q.reader.get, kwargs={"timeout": 600}, daemon=True).start()
    q2 = pq.Queue(shared=True, block_size=4096, hot_blocks=1, spill_blocks=0)
    print(q2.name, flush=True)
    threading.Thread(target=lambda: [q2.writer.write(b"y" * 1000) for _ in range(10)],
                     daemon=True).start()
elif how == "peer":
    sys.stdin.readline()                     # the peer has attached
    threading.Thread(target=q.reader.get, daemon=True).start()
time.sleep(0.3)                              # the threads are inside their calls
"""


def exit_blocked(how):
    """The interpreter exits while daemon threads are blocked in get() or
    write() on a shared queue: the segment goes with the last user."""
    import subprocess
    p = subprocess.Popen([sys.executable, "-c", EXIT, how], stdout=subprocess.PIPE,
                         stdin=subprocess.PIPE, text=True)
    names = [p.stdout.readline().strip()]
    if how == "both":
        names.append(p.stdout.readline().strip())
    peer = None
    if how == "peer":
        peer = pq.Queue.attach(names[0])     # another user: the segment must stay
        p.stdin.write("go\n")
        p.stdin.flush()
    rc = p.wait(60)
    left = sorted(os.listdir("/dev/shm"))
    if peer is not None:
        peer.close()
    result(rc=rc, names=names, left=left, after_peer=sorted(os.listdir("/dev/shm")))


# --- a handle in flight; non-blocking reads and a dead writer --------------------------

def _spawn_reader(q, out):
    """A spawned process's reader: every message, then the end of the stream."""
    got = 0
    try:
        while True:
            m = q.reader.read(timeout=30)
            assert m == msg(got), "wrong message %d" % got
            got += 1
    except pq.EndOfStream:
        pass
    with open(out, "w") as f:
        f.write(str(got))


def handoff(how):
    """A shared queue pickled to a process that has not attached yet keeps its
    segment: the writer may put and close first, and the reader gets every
    message.  One that never arrives is removed by cleanup_stale() once its
    deadline has passed."""
    import multiprocessing as mp
    import pickle
    import pyqueue.queue as pqq
    out = {}
    if how == "spawn":
        ctx = mp.get_context("spawn")
        q = pq.Queue(shared=True, publish="max", **SMALL)
        path = "/tmp/pyq-handoff-%d" % os.getpid()
        p = ctx.Process(target=_spawn_reader, args=(q, path))
        p.start()
        for i in range(150):               # fits the pool: no reader needed yet
            q.writer.write(msg(i))
        q.close()                           # before the child can have attached
        out["after_close"] = sorted(os.listdir("/dev/shm"))
        p.join(120)
        out["exitcode"] = p.exitcode
        out["read"] = int(open(path).read()) if os.path.exists(path) else None
        if os.path.exists(path):
            os.unlink(path)
    elif how == "never":
        pqq.HANDOFF_SECONDS = 0.5
        q = pq.Queue(shared=True, **SMALL)
        blob = pickle.dumps(q)             # never loaded: the child never started
        q.close()
        out["after_close"] = sorted(os.listdir("/dev/shm"))
        out["early"] = pq.cleanup_stale()
        time.sleep(0.7)
        out["late"] = pq.cleanup_stale()
        del blob
    elif how == "same_process":
        q = pq.Queue(shared=True, **SMALL)
        assert pickle.loads(pickle.dumps(q)) is q     # in and out: nothing in flight
        q.close()
        out["after_close"] = sorted(os.listdir("/dev/shm"))
    out["left"] = sorted(os.listdir("/dev/shm"))
    result(**out)


def dead_writer(how, via):
    """The writer's process ends without close() -- os._exit (what
    multiprocessing does to a fork child) or kill -9 -- with messages committed
    and unpublished (publish max): a non-blocking reader gets every one, then
    EndOfStream naming the dead writer, and never "empty" for ever."""
    q = pq.Queue(shared=True, publish="max", **SMALL)
    r, w = os.pipe()

    def child():
        for i in range(120):
            q.writer.write(msg(i))
        if how == "exit":
            os._exit(0)
        os.write(w, b"x")
        time.sleep(60)
    pid = _child(child)
    if how == "kill":
        os.read(r, 1)
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    got, err, looks = [], None, 0
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 20:
            looks += 1
            if via == "get_nowait":
                try:
                    got.append(q.reader.get_nowait())
                except pq.QueueEmpty:
                    pass
            elif via == "get_noblock":
                try:
                    got.append(q.reader.get(block=False))
                except pq.QueueEmpty:
                    pass
            elif via == "poll":
                got.extend(q.reader.poll())
            elif via == "poll1":
                got.extend(q.reader.poll(1))
    except pq.QueueError as e:
        err = e
    q.close()
    result(delivered=len(got), prefix=written_prefix(got, [32] * 120), error=error(err),
           looks=looks, seconds=time.monotonic() - t0)


def many_users(n):
    """More processes than the old table of 64 users held: each fork child
    joins the segment (a description of its own) and uses the queue."""
    n = int(n)
    q = pq.Queue(shared=True, **SMALL)
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    pids = []
    for k in range(n):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                q.stats()                       # a user: the call works
                os.write(w, b"+")
                os.read(go_r, 1)
                code = 0
            except Exception as e:
                os.write(w, b"-")
                sys.stderr.write("child %d: %s\n" % (k, e))
            finally:
                os._exit(code)
        pids.append(pid)
    said = b""
    while len(said) < n:
        said += os.read(r, n - len(said))
    os.write(go_w, b"x" * n)
    codes = [os.waitpid(p, 0)[1] for p in pids]
    q.close()
    result(ok=said.count(b"+"), codes=sorted(set(codes)), left=sorted(os.listdir("/dev/shm")))


def pointer_words(how):
    """What used to be the attack: a root process attaches (trust_other_users)
    to a queue another user owns, and that user rewrites every word of the
    segment's shared part -- where the reader's free-ring pointer once was --
    with an address of its choosing.  The root process's calls fail with
    QueueCorrupted (or see a closed or ended stream); nothing is stored there."""
    import ctypes
    target = ctypes.c_uint64(0x5555)
    addr = ctypes.addressof(target)
    q = pq.Queue(shared=True, publish="each" if how == "each" else "max", **SMALL)
    for i in range(50):
        q.writer.write(msg(i))
    q.writer.flush()
    q.take("reader")                   # both sides this process's, then the rewrite
    os.chown("/dev/shm/" + q.name, 65534, 65534)
    seg = Segment(q.name)
    for off in range(seg.off("ring_tail"), seg.lay["shared_bytes"], 8):
        seg.u64(off, addr)
    errors, got = set(), []
    for _ in range(200):
        for call in (lambda: got.extend(q.reader.poll(16)), lambda: q.writer.write(msg(99)),
                     lambda: q.writer.flush(), q.stats, q.qsize):
            try:
                call()
            except pq.QueueError as e:
                errors.add(type(e).__name__)
    seg.close()
    try:
        q.close()
    except pq.QueueError:
        pass
    result(target=target.value, errors=sorted(errors), delivered=len(got),
           prefix=written_prefix(got, [32] * 50))
