"""The output folder (DESIGN §6.8), shared by every experiment.

Layout (format ``pyqueue-output/1``)::

    <folder>/
      summary.json         experiment, status, progress, params, results, notes
      environment.json     CPU, kernel, cores, pinning, governor, versions, git, argv
      samples/<group>/<name>.npy.gz   raw samples, unfiltered: gzip of a .npy file
      <other>.txt / .json  optional extras (save_text / save_json)
      index.json           every other file with its SHA-256 and size

A sample file loads back with plain numpy::

    import gzip, numpy as np
    arr = np.load(gzip.open("samples/yield0/group_ns.npy.gz"), allow_pickle=False)

Every file is written to a temporary name and renamed into place, and index.json
is rewritten after each file, so the folder verifies after every write: a run
stopped by Ctrl-C between checkpoints leaves a valid partial folder whose
summary says how far it got.  ``status`` uses the words of status.py: "complete"
only for a finished run, else "interrupted after K of N <unit>" (also what a
checkpoint writes, so a killed run's folder says how far it got) or
"failed: <why>"; ``progress`` holds K, N and the unit.

NaN and infinities are not JSON: summary values that are NaN or ±inf are written
as null, and ``notes`` in summary.json lists where and what they were.
"""
import dataclasses
import errno
import gzip
import hashlib
import json
import math
import os
import re
import signal
import stat
import threading
import time
import zlib
from collections import Counter
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import numpy as np

from . import status as _status
from .environment import collect_environment

__all__ = ["OutputFolder", "LoadedOutput", "verify", "load", "load_array", "to_jsonable",
           "FORMAT", "read_json", "read_text", "read_bytes", "enclosing_output"]

FORMAT = "pyqueue-output/1"
SUMMARY, ENVIRONMENT, INDEX, SAMPLES = "summary.json", "environment.json", "index.json", "samples"
# Safe in a path on every filesystem: no separator, no leading dot; "+" and "="
# spell burst-tail levers (yield1024+hugepages).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")
# The temporary names _commit writes before renaming; a crash may leave one.
_TMP = re.compile(r"^\..+\.tmp-\d+$")
INVALID = "not a valid pyqueue output folder"
# An output folder is untrusted input (it may come from anyone, or be edited):
# it is read through regular files only, never a link, never out of the folder,
# with the sizes bounded.  A JSON file of the folder is at most this large ...
MAX_JSON_BYTES = 256 << 20
# ... and a sample array's data at most what its index entry declares (raw_size), or, in
# a folder written before that was recorded, GZIP_RATIO times its compressed size
# (deflate cannot expand beyond ~1032:1), and never more than MAX_ARRAY_BYTES.
GZIP_RATIO = 1032
MAX_ARRAY_BYTES = 16 << 30


def _inside(rel):
    """True if index entry ``rel`` names a file inside the folder: relative,
    no '..', no empty or '.' part (the index is data; never follow it out)."""
    if not isinstance(rel, str) or not rel or "\\" in rel:
        return False
    p = PurePosixPath(rel)
    return not p.is_absolute() and all(part not in ("", ".", "..") for part in p.parts)


def _open_inside(folder, rel):
    """A binary file object of ``rel`` inside ``folder``: every part of the path a
    real directory (no link), the file itself a regular file, opened without
    following a link and without blocking (a FIFO is refused, not waited on).
    ValueError names what is wrong; OSError (ENOENT ...) passes through."""
    folder = Path(folder)
    if not _inside(rel):
        raise ValueError("%r: not a path inside the folder" % (rel,))
    here = folder
    for part in PurePosixPath(rel).parts[:-1]:
        here = here / part
        st = os.lstat(here)
        if stat.S_ISLNK(st.st_mode):
            raise ValueError("%s: a link, not a folder of its own" % here.relative_to(folder))
        if not stat.S_ISDIR(st.st_mode):
            raise ValueError("%s: not a folder" % here.relative_to(folder))
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder / rel, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError("%s: a link, not a file of the folder" % rel) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("%s: not a regular file" % rel)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(folder, rel, limit=MAX_JSON_BYTES):
    """The bytes of file ``rel`` of output folder ``folder`` (see _open_inside),
    refused past ``limit`` bytes."""
    with _open_inside(folder, rel) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError("%s: larger than %d bytes" % (rel, limit))
    return data


def read_json(folder, rel):
    """File ``rel`` of output folder ``folder`` as JSON, bounded in size and in
    depth (a nesting deeper than Python's recursion limit is a ValueError)."""
    data = read_bytes(folder, rel)
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("%s: JSON nested too deep" % rel) from None
    except UnicodeDecodeError as e:
        raise ValueError("%s: not UTF-8 text (%s)" % (rel, e)) from None


def read_text(folder, rel):
    """File ``rel`` of output folder ``folder`` as text (bounded like read_json)."""
    try:
        return read_bytes(folder, rel).decode()
    except UnicodeDecodeError as e:
        raise ValueError("%s: not UTF-8 text (%s)" % (rel, e)) from None


def _read_index(path):
    """The ``files`` of ``path``/index.json if it parses as a pyqueue output
    index (format, algorithm, a dict of entries inside the folder), else None."""
    try:
        index = read_json(path, INDEX)
    except (OSError, ValueError):
        return None
    if not (isinstance(index, dict) and index.get("format") == FORMAT
            and isinstance(index.get("files"), dict)):
        return None
    files = index["files"]
    if not all(_inside(rel) and isinstance(e, dict) for rel, e in files.items()):
        return None
    return files


def enclosing_output(path):
    """The pyqueue output folder ``path`` would sit inside (an ancestor holding a
    pyqueue index.json), or None."""
    p = Path(os.path.abspath(path)).parent
    while True:
        if (p / INDEX).exists() and _read_index(p) is not None:
            return p
        if p.parent == p:
            return None
        p = p.parent


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _check_name(kind, name):
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ValueError("%s must be letters, digits, '_', '-', '+', '=' or '.', not starting "
                         "with '.' (got %r)" % (kind, name))


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def _sigint_deferred():
    """Hold a Ctrl-C that arrives while a file and the index are being updated.

    The KeyboardInterrupt is raised once both are consistent again, so even an
    un-guarded Ctrl-C (a notebook, a second Ctrl-C) cannot tear the folder.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except ValueError:              # not possible here (e.g. embedded interpreter)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            if callable(previous):
                previous(signal.SIGINT, None)
            elif previous != signal.SIG_IGN:
                raise KeyboardInterrupt


def to_jsonable(obj, notes=None, where="$"):
    """``obj`` as plain JSON types: numpy scalars/arrays, tuples, dataclasses converted.

    NaN and ±inf become None; each occurrence is recorded in ``notes`` (a Counter
    keyed by (path with indices as [*], kind)).  Objects with ``to_dict()`` are
    converted through it.  Anything else raises TypeError naming its path.
    """
    if notes is None:
        notes = Counter()
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        if math.isfinite(value):
            return value
        kind = "NaN" if math.isnan(value) else ("+inf" if value > 0 else "-inf")
        notes[(re.sub(r"\[\d+\]", "[*]", where), kind)] += 1
        return None
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biuf":
            raise TypeError("%s: cannot write a %s array to JSON" % (where, obj.dtype))
        obj = obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, notes, "%s[%d]" % (where, i)) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, (np.integer, np.floating, int, float)) and not isinstance(k, bool):
                k = str(k.item() if hasattr(k, "item") else k)
            if not isinstance(k, str):
                raise TypeError("%s: dict key %r is not a string" % (where, k))
            out[k] = to_jsonable(v, notes, "%s.%s" % (where, k))
        return out
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict(), notes, where)
    if hasattr(obj, "as_dict"):          # pyqueue.QueueConfig
        return to_jsonable(obj.as_dict(), notes, where)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)},
                           notes, where)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError("%s: %s is not JSON-serialisable" % (where, type(obj).__name__))


def _notes_text(notes):
    return ["%s: %d %s value%s written as null" % (path, count, kind, "" if count == 1 else "s")
            for (path, kind), count in sorted(notes.items())]


class OutputFolder:
    """One experiment's output folder (see the module doc for the layout).

    ``OutputFolder(path, experiment, params, total=N, unit="rounds")`` creates the
    folder and writes environment.json and a first summary.json ("interrupted
    after 0 of N rounds": nothing measured yet).  A non-empty folder is refused
    unless ``overwrite=True``, and even then only if it is a pyqueue output folder
    (has index.json) — nothing else is ever deleted.
    """

    def __init__(self, path, experiment, params=None, *, total, unit="rounds",
                 overwrite=False, pinning=None, argv=None):
        self.path = Path(path)
        self.experiment = str(experiment)
        self.total, self.unit = int(total), str(unit)
        self._check_progress(0, self.total)
        self._param_notes = Counter()
        self._params = to_jsonable(params or {}, self._param_notes, "params")
        self._files = {}
        self._started = _now()
        self._prepare(overwrite)
        self._argv = argv
        self.set_pinning(pinning)
        self.checkpoint({}, 0)

    def _prepare(self, overwrite):
        outer = enclosing_output(self.path)
        if outer is not None:
            raise FileExistsError("%s is inside the output folder %s: a run's folder is never "
                                  "written into another's" % (self.path, outer))
        if self.path.exists() and not self.path.is_dir():
            raise FileExistsError("%s exists and is not a folder" % self.path)
        if self.path.is_dir() and any(self.path.iterdir()):
            if not overwrite:
                raise FileExistsError("%s is not empty; choose a new folder or pass "
                                      "overwrite=True (--overwrite)" % self.path)
            self._delete_previous()
        self.path.mkdir(parents=True, exist_ok=True)

    def _delete_previous(self):
        """Delete a previous output folder's files, and only those: the folder
        must hold a pyqueue output index and nothing it does not list (our own
        leftover temporary files aside); anything else is refused untouched."""
        files = _read_index(self.path)
        if files is None:
            raise FileExistsError("%s is not empty and its %s is not a pyqueue output index: "
                                  "refusing to delete it" % (self.path, INDEX))
        root = self.path.resolve()
        listed = set(files) | {INDEX}
        foreign = []
        for target in self.path.rglob("*"):
            rel = target.relative_to(self.path).as_posix()
            if target.is_symlink() or (target.is_file() and rel not in listed
                                       and not _TMP.match(target.name)):
                foreign.append(rel)
            elif target.is_file() and root not in target.resolve().parents:
                foreign.append(rel)
        if foreign:
            raise FileExistsError("%s holds files its %s does not list (%s): refusing to "
                                  "delete it" % (self.path, INDEX, ", ".join(sorted(foreign)[:5])))
        for target in sorted(self.path.rglob("*"), key=lambda t: -len(t.parts)):
            if target.is_dir():
                target.rmdir()      # empty by now: only listed files were inside
            else:
                target.unlink()

    # -- writing: every file goes through _commit, which keeps index.json true --

    def _commit(self, rel, write, **declared):
        """Write ``rel`` via ``write(fileobj)`` to a temp name, rename, re-index;
        ``declared``: more fields of its index entry (a sample's raw_size)."""
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(".%s.tmp-%d" % (target.name, os.getpid()))
        try:
            with open(tmp, "wb") as f:
                write(f)
            entry = dict({"sha256": _sha256(tmp), "size": tmp.stat().st_size}, **declared)
            with _sigint_deferred():
                # Any crash point (or a full disk) leaves a folder that verifies:
                # the index first accepts the old or the new file, then the file
                # is renamed in, then the index names only the new one.  If the
                # last index write fails, the one before is still true.
                old = self._files.get(rel)
                self._files[rel] = dict(entry, previous=old)
                try:
                    self._write_index()
                except BaseException:
                    if old is None:
                        self._files.pop(rel, None)
                    else:
                        self._files[rel] = old
                    raise
                os.replace(tmp, target)
                self._files[rel] = entry
                self._write_index()
        finally:
            if tmp.exists():
                tmp.unlink()
        return rel

    def _write_index(self):
        index = {"format": FORMAT, "algorithm": "sha256",
                 "files": {k: self._files[k] for k in sorted(self._files)}}
        data = (json.dumps(index, indent=1) + "\n").encode()
        target = self.path / INDEX
        tmp = target.with_name(".%s.tmp-%d" % (INDEX, os.getpid()))
        try:
            tmp.write_bytes(data)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()

    def _json(self, rel, obj):
        data = (json.dumps(obj, indent=1, allow_nan=False) + "\n").encode()
        return self._commit(rel, lambda f: f.write(data))

    def set_pinning(self, pinning):
        """(Re)write environment.json recording ``pinning`` (e.g. CPU ids per thread)."""
        env = to_jsonable(collect_environment(pinning, self._argv), Counter(), "environment")
        self._json(ENVIRONMENT, env)

    def save_samples(self, group, **arrays):
        """Write each array, unfiltered, to samples/<group>/<name>.npy.gz; return paths.

        Calling again with the same names replaces those files (e.g. cumulative
        arrays at each checkpoint).  Object arrays are refused.
        """
        _check_name("group", group)
        written = []
        for name, arr in arrays.items():
            _check_name("sample name", name)
            arr = np.asarray(arr)
            if arr.dtype.hasobject:
                raise TypeError("sample %r: object arrays cannot be stored" % name)

            raw = arr.nbytes     # the data's bytes: what a reader may be made to allocate

            def write(f, arr=arr):
                # mtime=0: identical samples give identical bytes and checksums
                with gzip.GzipFile(fileobj=f, mode="wb", compresslevel=6, mtime=0) as gz:
                    np.save(gz, arr, allow_pickle=False)
            written.append(self._commit("%s/%s/%s.npy.gz" % (SAMPLES, group, name), write,
                                        raw_size=raw))
        return written

    def save_text(self, name, text):
        """Write a text file (e.g. the printed table) at the top of the folder."""
        _check_name("file name", name)
        if name in (SUMMARY, ENVIRONMENT, INDEX):
            raise ValueError("file name %r is reserved" % name)
        data = text.encode()
        return self._commit(name, lambda f: f.write(data))

    def save_json(self, name, obj):
        """Write an extra JSON file (NaN/inf as null); returns its notes list."""
        _check_name("file name", name)
        if name in (SUMMARY, ENVIRONMENT, INDEX):
            raise ValueError("file name %r is reserved" % name)
        notes = Counter()
        body = to_jsonable(obj, notes, name)
        self._json(name, {"data": body, "notes": _notes_text(notes)})
        return _notes_text(notes)

    def _write_summary(self, results, status, done):
        notes = Counter(self._param_notes)
        body = to_jsonable(results, notes, "results")
        summary = {"format": FORMAT, "experiment": self.experiment, "status": status,
                   "complete": _status.is_complete(status),
                   "progress": {"done": int(done), "total": self.total, "unit": self.unit},
                   "params": self._params, "results": body, "notes": _notes_text(notes),
                   "started_utc": self._started, "updated_utc": _now()}
        self._json(SUMMARY, summary)
        return status

    @staticmethod
    def _check_progress(done, total):
        if int(total) < 0 or not 0 <= int(done) <= int(total):
            raise ValueError("done must be in [0, total], got done=%r total=%r" % (done, total))

    def checkpoint(self, results, done):
        """Record results after ``done`` of ``total`` units; returns the status
        ("interrupted after K of N <unit>": what the run is if it ends here)."""
        self._check_progress(done, self.total)
        return self._write_summary(results, _status.interrupted(done, self.total, self.unit),
                                   done)

    def finish(self, results, done, error=None):
        """Final summary; returns its status: "complete" when done == total, else
        interrupted, or "failed: <why>" when ``error`` (an exception or a text)
        ended the run."""
        self._check_progress(done, self.total)
        return self._write_summary(results, self.final_status(done, error), done)

    def final_status(self, done, error=None):
        """The status finish() writes: a full disk is said in words, not as an errno."""
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            error = "no space left on device (%s)" % (error.filename or self.path)
        return _status.final(done, self.total, self.unit, error)


def verify(path):
    """Recompute every checksum in index.json; return the problems ([] = valid).

    Reports files missing, changed (size or SHA-256) and present but not indexed.
    """
    path = Path(path)
    try:
        index = read_json(path, INDEX)
        files = index["files"]
        if not isinstance(files, dict):
            raise TypeError("'files' is not a mapping")
    except FileNotFoundError:
        return ["%s: missing" % INDEX]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return ["%s: unreadable (%s)" % (INDEX, e)]
    problems = []
    for required in (SUMMARY, ENVIRONMENT):
        if required not in files:
            problems.append("%s: not in index" % required)
    for rel, entry in sorted(files.items()):
        if not _inside(rel):
            problems.append("%r: not a path inside the folder" % (rel,))
            continue
        if not isinstance(entry, dict):
            problems.append("%s: index entry is not a mapping" % rel)
            continue
        # An entry written just before its file was renamed in (the write
        # stopped there) also accepts the file it replaces, or none.
        prev = entry.get("previous")
        accept = [entry] + ([prev] if isinstance(prev, dict) else [])
        try:
            with _open_inside(path, rel) as f:
                size = os.fstat(f.fileno()).st_size
                if not any(size == e.get("size") for e in accept):
                    problems.append("%s: size %d, index says %s" % (rel, size, entry.get("size")))
                    continue
                h = hashlib.sha256()
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        except FileNotFoundError:
            if "previous" not in entry or prev is not None:
                problems.append("%s: missing" % rel)
            continue
        except (OSError, ValueError) as e:
            problems.append("%s: %s" % (rel, e))
            continue
        if h.hexdigest() not in [e.get("sha256") for e in accept]:
            problems.append("%s: SHA-256 mismatch" % rel)
    for target in sorted(path.rglob("*")):
        rel = target.relative_to(path).as_posix()
        if target.is_symlink():
            problems.append("%s: a link (an output folder holds none)" % rel)
        elif (not target.is_dir() and rel != INDEX and rel not in files
                and not _TMP.match(target.name)):
            problems.append("%s: not in index" % rel)
    return problems


def _read_npy(f, limit, what):
    """An array from .npy stream ``f`` whose header may declare at most ``limit``
    bytes of data: the header is read first, so a header that claims a huge
    array is refused before anything is allocated."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise ValueError("%s: .npy version %s" % (what, version))
    if dtype.hasobject:
        raise ValueError("%s: an object array" % what)
    count = 1
    for n in shape:
        count *= n
    nbytes = count * dtype.itemsize
    if nbytes > limit:
        raise ValueError("%s: its header declares %d bytes, more than the %d its folder allows"
                         % (what, nbytes, limit))
    data = f.read(nbytes)
    if len(data) != nbytes:
        raise ValueError("%s: %d bytes of data, its header declares %d" % (what, len(data), nbytes))
    arr = np.frombuffer(data, dtype=dtype, count=count)
    arr = arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
    return arr.copy() if not arr.flags.writeable else arr


def load_array(path, raw_size=None):
    """Load one .npy.gz sample file.  Its decompressed data is bounded by
    ``raw_size`` (the index's declaration) or by what deflate could expand the
    file to, and never more than MAX_ARRAY_BYTES."""
    path = Path(path)
    with _open_inside(path.parent, path.name) as raw:
        size = os.fstat(raw.fileno()).st_size
        limit = min(MAX_ARRAY_BYTES, raw_size if raw_size is not None else GZIP_RATIO * size + 1024)
        with gzip.GzipFile(fileobj=raw, mode="rb") as f:
            return _read_npy(f, limit, path.name)


@dataclasses.dataclass
class LoadedOutput:
    """An output folder read back: summary, environment and samples[group][name]."""
    path: Path
    summary: dict
    environment: dict
    samples: dict
    problems: list

    @property
    def status(self):
        """The run's status in today's words (status.normalize reads older folders)."""
        return _status.normalize(self.summary.get("status"))

    @property
    def complete(self):
        return bool(self.summary.get("complete"))

    @property
    def results(self):
        return self.summary.get("results", {})

    @property
    def params(self):
        return self.summary.get("params", {})


def load(path, samples=True, check=True):
    """Read an output folder back.

    ``check``: verify checksums first and raise ValueError listing any problem
    (with ``check=False`` the problems are returned in ``.problems`` instead).
    ``samples=False`` skips loading the arrays.
    """
    path = Path(path)
    problems = verify(path)
    if check and problems:
        raise ValueError("%s: %s does not verify: %s" % (INVALID, path, "; ".join(problems)))
    try:
        summary = read_json(path, SUMMARY)
        environment = read_json(path, ENVIRONMENT)
        if not (isinstance(summary, dict) and isinstance(environment, dict)):
            raise TypeError("%s or %s is not a JSON object" % (SUMMARY, ENVIRONMENT))
        arrays = {}
        if samples:
            # The arrays the index lists, and only those (never a glob: a link or
            # a file slipped in beside them is not the run's).
            files = _read_index(path) or {}
            for rel in sorted(files):
                parts = PurePosixPath(rel).parts
                if len(parts) == 3 and parts[0] == SAMPLES and parts[2].endswith(".npy.gz") \
                        and (path / rel).exists():
                    raw = files[rel].get("raw_size")
                    raw = raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 \
                        else None
                    arrays.setdefault(parts[1], {})[parts[2][:-len(".npy.gz")]] = \
                        load_array(path / rel, raw)
    except (OSError, ValueError, TypeError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        # Corrupt or hand-made files: one error, whatever broke inside.
        raise ValueError("%s: %s: %s" % (INVALID, path, e)) from e
    return LoadedOutput(path=path, summary=summary, environment=environment,
                        samples=arrays, problems=problems)
