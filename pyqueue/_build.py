"""cffi build script (API mode, out-of-line): compiles every layer of csrc/ into pyqueue._pyq.

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
HEADERS = [os.path.join(CSRC, h) for h in _LISTS["PYQ_CDEF"]]
SOURCES = [os.path.join(CSRC, c) for c in _LISTS["PYQ_ALL"]]

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


ffibuilder = FFI()
for h in HEADERS:
    ffibuilder.cdef(cdef_text(h))

ffibuilder.set_source(
    "pyqueue._pyq",
    "\n".join('#include "%s"' % os.path.relpath(h, CSRC) for h in HEADERS),
    # setuptools wants sources relative to setup.py (the build's working directory).
    sources=[os.path.relpath(p, ROOT) for p in SOURCES],
    include_dirs=[INCLUDE, CSRC],
    extra_compile_args=compile_args(),
    extra_link_args=["-pthread"] + os.environ.get("PYQ_LDFLAGS", "").split(),
    libraries=["dl", "m"],
)

if __name__ == "__main__":
    os.chdir(ROOT)
    ffibuilder.compile(tmpdir=os.path.join(ROOT, "build", "cffi"), verbose=True)
