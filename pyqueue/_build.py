"""cffi build script (API mode, out-of-line) of the queue: csrc/common and csrc/core
into pyqueue._pyq, nothing of the lab (that is pyqueue/lab/_build.py's pyqueue.lab._lab).

setup.py names this file in ``cffi_modules``; ``pip install .`` runs it.  The sources
and the cdef headers are the lists of csrc/layers.mk, the one source list every build
uses.  The cdef is those public headers themselves, minus their preprocessor lines, so
the Python view of the C API cannot drift from the C one.
"""
import os
import re

from cffi import FFI

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")
INCLUDE = os.path.join(CSRC, "include")
LAYERS_MK = os.path.join(CSRC, "layers.mk")


def make_lists(path=LAYERS_MK):
    """The ``NAME := words`` lists of a Makefile fragment, $(REF)s expanded."""
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    lists = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+)\s*:=\s*(.*)$", line.split("#", 1)[0].strip())
        if m:
            words = []
            for w in m.group(2).split():
                ref = re.fullmatch(r"\$\((\w+)\)", w)
                words += lists[ref.group(1)] if ref else [w]
            lists[m.group(1)] = words
    return lists


_LISTS = make_lists()
HEADERS = [os.path.join(CSRC, h) for h in _LISTS["PYQ_QUEUE_CDEF"]]
SOURCES = [os.path.join(CSRC, c) for c in _LISTS["PYQ_QUEUE_EXT"]]

# Integer constants only: a string #define (PYQ_VERSION) has no cdef form.
_DEFINE = re.compile(r"^#define\s+(PYQ_\w+)\s+[^\s\"].*$")


def cdef_text(path):
    """A public header as cffi cdef: integer #defines become '...', other # lines go."""
    out = []
    with open(path) as f:
        for line in f:
            m = _DEFINE.match(line)
            if m:
                out.append("#define %s ..." % m.group(1))
            elif not line.lstrip().startswith("#"):
                out.append(line.rstrip("\n"))
    return "\n".join(out)


def compile_args():
    # -fno-semantic-interposition: calls between our own exported functions (the
    # adapter's try_write -> pyq_writer_try_write -> pyq_writer_write) are direct
    # and may inline, instead of going through the PLT in case another library
    # replaced pyq_* -- which nothing is meant to do.
    args = ["-std=gnu11", "-O2", "-pthread", "-fno-strict-aliasing",
            "-fno-semantic-interposition",
            "-Wall", "-Wextra", "-Wno-unused-parameter"]
    extra = os.environ.get("PYQ_CFLAGS")
    if extra:
        args += extra.split()
    return args


def builder(module, headers, sources, include=None):
    """An out-of-line FFI named ``module``: cdef = ``headers``, compiled from ``sources``
    (paths under csrc/); ``include`` is another such FFI whose types it shares."""
    ffi = FFI()
    if include is not None:
        ffi.include(include)
    for h in headers:
        ffi.cdef(cdef_text(h))
    preamble = list(include_headers(include)) if include is not None else []
    ffi.set_source(
        module,
        "\n".join('#include "%s"' % os.path.relpath(h, CSRC) for h in preamble + headers),
        # setuptools wants sources relative to setup.py (the build's working directory).
        sources=[os.path.relpath(p, ROOT) for p in sources],
        include_dirs=[INCLUDE, CSRC],
        extra_compile_args=compile_args(),
        extra_link_args=["-pthread"] + os.environ.get("PYQ_LDFLAGS", "").split(),
        libraries=["dl", "m"],
    )
    ffi.pyq_headers = headers
    return ffi


def include_headers(ffi):
    """The headers an FFI made by builder() declares (those its C preamble includes)."""
    return ffi.pyq_headers


ffibuilder = builder("pyqueue._pyq", HEADERS, SOURCES)

if __name__ == "__main__":
    os.chdir(ROOT)
    ffibuilder.compile(tmpdir=os.path.join(ROOT, "build", "cffi"), verbose=True)
