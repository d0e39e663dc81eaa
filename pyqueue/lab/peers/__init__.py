"""The queues the lab compares (DESIGN §7), by name, behind one C adapter interface.

    import pyqueue.lab.peers as peers
    peers.available()        # {'pyqueue': 'built', 'mutex': 'built', 'ck': 'built',
                             #  'dpdk': 'not installed: libdpdk-dev headers not found (...)', ...}
    a = peers.get("ck")      # const pyq_adapter_t * for the C drivers (burst study, bench)
    peers.verify("ck", 2_000_000, writer_cpu=0, reader_cpu=1)

The built-in adapters come from the C library (pyq_adapter_builtin): "pyqueue"
and "mutex", and "ring_floor", a round-trip yardstick rather than a peer (a
minimal ring of 64-byte slots, see csrc/adapters/ring_floor.c), which ``get``
accepts but ``available`` does not list.  Every other adapter is a peer of
pyqueue/lab/peers/table.py: a library in this package's folder, built at
install time when the peer's Debian package was there (see
``pyqueue/lab/_build_peers.py`` and ``manifest.json`` here).
"""
import json
import os

from pyqueue import validate
from pyqueue.config import QueueConfig
from pyqueue.errors import UnsupportedError, VerificationError, check

from .._lab import ffi, lib
from .table import APT_PACKAGES, BUILD_PACKAGES, LIB_PATTERN, MANIFEST
from .table import PEERS as _PEER_TABLE


def _builtins():
    """(contenders, yardsticks): the built-in adapter names, as C lists them."""
    out, yardstick = ([], []), ffi.new("int *")
    i = 0
    while True:
        name = lib.pyq_adapter_builtin(i, yardstick)
        if name == ffi.NULL:
            return tuple(out[0]), tuple(out[1])
        out[yardstick[0] != 0].append(ffi.string(name).decode())
        i += 1


BUILTIN, YARDSTICKS = _builtins()   # a yardstick is measured beside the peers, never one
PEERS = tuple(p.name for p in _PEER_TABLE)
NAMES = BUILTIN + PEERS
PACKAGES = {p.name: p.package for p in _PEER_TABLE}

INSTALL_HINT = ("sudo apt-get install -y %s && pip install --force-reinstall --no-deps ."
                % " ".join(APT_PACKAGES + BUILD_PACKAGES))


def install_hint():
    """One shell line that installs every peer and rebuilds pyqueue (for the README)."""
    return INSTALL_HINT


def peer_dir():
    """The folder the installed package keeps its peer libraries in."""
    return os.path.dirname(os.path.abspath(__file__))


def manifest(peer_dir_=None):
    """The build manifest as a dict, or None when there is none."""
    path = os.path.join(peer_dir_ or peer_dir(), MANIFEST)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _peer_status(name, man, folder):
    """(status, reason) of one peer from the manifest and the folder."""
    entry = ((man or {}).get("peers") or {}).get(name)
    if entry is None:
        return ("not installed", "no build record in %s (pyqueue was built without its peer step)"
                % os.path.join(folder, MANIFEST))
    status = entry.get("status", "not installed")
    if status == "built":
        if man.get("abi") != lib.PYQ_ADAPTER_ABI:
            return ("build failed", "built for adapter ABI %s, this pyqueue has %d: reinstall pyqueue"
                    % (man.get("abi"), lib.PYQ_ADAPTER_ABI))
        so = os.path.join(folder, LIB_PATTERN % name)
        if not os.path.exists(so):
            return "not installed", "%s is missing" % so
        return "built", ""
    return status, entry.get("reason") or "no reason recorded"


def available(peer_dir=None):
    """Every known adapter -> "built", "not installed: <why>" or "build failed: <why>".

    Built-ins are always "built"; peers come from the manifest written at install
    time (a missing peer is listed, never dropped)."""
    folder = peer_dir or globals()["peer_dir"]()
    man = manifest(folder)
    out = {name: "built" for name in BUILTIN}
    for name in PEERS:
        status, why = _peer_status(name, man, folder)
        out[name] = status if status == "built" else "%s: %s" % (status, why)
    return out


def _check_name(name):
    if not isinstance(name, str):
        raise TypeError("adapter name must be a str, got %s" % type(name).__name__)
    if name not in NAMES + YARDSTICKS:
        raise ValueError("unknown adapter %r; known adapters: %s"
                         % (name, ", ".join(NAMES + YARDSTICKS)))


def get(name, peer_dir=None):
    """The C adapter (``const pyq_adapter_t *``) for name; raises UnsupportedError
    when a peer is not installed or failed to build, ValueError for unknown names."""
    _check_name(name)
    folder = peer_dir or globals()["peer_dir"]()
    if name in PEERS:
        status, why = _peer_status(name, manifest(folder), folder)
        if status != "built":
            raise UnsupportedError("peer %r is %s: %s; apt-get install %s and reinstall pyqueue"
                                   % (name, status, why, PACKAGES[name]), lib.PYQ_ENOTSUP)
    out = ffi.new("const pyq_adapter_t **")
    rc = lib.pyq_adapter_get(name.encode(), folder.encode(), out)
    if rc != 0:
        why = ffi.string(lib.pyq_adapter_error()).decode(errors="replace")
        check(rc, "get(%r): %s" % (name, why), {
            lib.PYQ_ENOTSUP: "peer %r cannot be used: %s; apt-get install %s and reinstall pyqueue"
                             % (name, why, PACKAGES.get(name, "?"))})
    return out[0]


def params(msg_size=32, capacity_bytes=None, adapter="pyqueue", config=None, **queue):
    """A ``pyq_adapter_params_t *``: the message size, the memory budget every
    contender gets, and pyqueue's own configuration (``config``, a QueueConfig,
    and/or ``queue``: the keyword arguments of ``pyqueue.Queue``).  Without
    capacity_bytes the budget is the pyqueue pool (block_size * (hot_blocks +
    spill_blocks)); with it and no spill_blocks given, spill_blocks is derived
    so the pool has that budget (for another ``adapter`` a budget below the hot
    tier is fine: it does not use the pool)."""
    msg_size = validate.integer("msg_size", msg_size, 1, 65536)
    cfg = QueueConfig.of(config, **queue)
    if capacity_bytes is not None:
        capacity_bytes = validate.integer("capacity_bytes", capacity_bytes, msg_size, 2**48)
        if config is None and "spill_blocks" not in queue:
            blocks = capacity_bytes // cfg.block_size
            if blocks < cfg.hot_blocks and adapter == "pyqueue":
                raise ValueError("capacity_bytes %d is less than hot_blocks * block_size = %d"
                                 % (capacity_bytes, cfg.hot_blocks * cfg.block_size))
            cfg = cfg.replace(spill_blocks=max(0, blocks - cfg.hot_blocks))
    return adapter_params(msg_size, cfg, capacity_bytes)


def adapter_params(msg_size, config, capacity_bytes=None):
    """A ``pyq_adapter_params_t *`` of values already checked (an experiment's
    Params): ``msg_size``, ``config`` (a QueueConfig) and the budget (None: the
    pyqueue pool).  The adapters check what they accept when they create a queue."""
    p = ffi.new("pyq_adapter_params_t *")
    lib.pyq_adapter_params_init(p)
    p.msg_size = msg_size
    p.queue = config.to_c()[0]
    p.capacity_bytes = capacity_bytes if capacity_bytes is not None else config.pool_bytes
    return p


def verify(name, n_messages, msg_size=32, writer_cpu=-1, reader_cpu=-1, burst=0,
           capacity_bytes=None, peer_dir=None, **queue):
    """Move n_messages pattern messages through a fresh queue of adapter ``name``
    between a writer and a reader pthread (C, GIL released) and check FIFO order,
    length and every byte.  ``burst`` > 0 writes with try_write_burst (adapters
    that have it).  Returns a dict of counts; raises VerificationError when a
    message was lost, duplicated, reordered or corrupted.  Not a benchmark:
    ``elapsed_ns`` includes generating and checking every byte."""
    a = get(name, peer_dir)
    n_messages = validate.integer("n_messages", n_messages, 0, 2**63 - 1)
    burst = validate.integer("burst", burst, 0, 65536)
    if burst and a.try_write_burst == ffi.NULL:
        raise ValueError("adapter %r has no burst write; use burst=0" % name)
    writer_cpu = validate.cpu("writer_cpu", writer_cpu)
    reader_cpu = validate.cpu("reader_cpu", reader_cpu)
    p = params(msg_size, capacity_bytes, name, **queue)
    res = ffi.new("pyq_adapter_verify_result_t *")
    rc = lib.pyq_adapter_verify(a, p, n_messages, burst, writer_cpu, reader_cpu, res)
    out = {"adapter": name, "messages": n_messages, "msg_size": msg_size, "burst": burst,
           "written": res.written, "verified": res.verified, "write_retries": res.write_retries,
           "elapsed_ns": res.elapsed_ns, "writer_cpu_seen": res.writer_cpu_seen,
           "reader_cpu_seen": res.reader_cpu_seen}
    try:
        check(rc, "verify(%r)" % name, {
            lib.PYQ_EBADMSG: "adapter %r: message %d of %d was lost, reordered or corrupted "
                             "(%d verified, %d written)"
                             % (name, res.first_bad, n_messages, res.verified, res.written),
            lib.PYQ_EINVAL: "verify(%r): the adapter refused msg_size=%d / capacity_bytes=%d "
                            "(ck, rwq and boost carry %d-byte messages; dpdk a multiple of 4)"
                            % (name, msg_size, p.capacity_bytes, lib.PYQ_ADAPTER_MSG_SIZE)})
    except VerificationError as err:
        err.result = out
        raise
    return out
