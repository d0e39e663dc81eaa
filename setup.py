"""pip install . : two packages in one distribution.

- pyqueue, the queue: the C core into pyqueue._pyq with cffi (API, out-of-line), and
  the per-message Writer/Reader calls into pyqueue._pyext (CPython C API, stable
  ABI), which calls the core of _pyq through pointers instead of a second copy.
- pyqueue.lab, the instrument: runtime, adapters, experiments' loops, bench and
  stress into pyqueue.lab._lab (cffi; pyqueue/lab/_build.py).

Peer queues (ck_ring, DPDK rte_ring, moodycamel ReaderWriterQueue, boost,
atomic_queue) are built as separate small shared objects by
pyqueue/lab/_build_peers.py when their Debian headers are present; a missing peer
is recorded, never an install failure.
"""
import os
import re
import runpy

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_PEERS = os.path.join(HERE, "pyqueue", "lab", "_build_peers.py")
BUILD = os.path.join(HERE, "pyqueue", "_build.py")
# The limited API of 3.11: METH_FASTCALL (3.10) and the buffer protocol (3.11).
LIMITED_API = 0x030B0000


def version():
    """PYQ_VERSION of the public C header: the one place the version is written."""
    with open(os.path.join(HERE, "csrc", "include", "pyqueue.h")) as f:
        return re.search(r'^#define PYQ_VERSION "([^"]+)"', f.read(), re.M).group(1)


class BuildExtWithPeers(build_ext):
    def run(self):
        super().run()
        # By path, under the name the package gives it: pyqueue itself cannot be
        # imported before its extension exists.
        build_peers = runpy.run_path(BUILD_PEERS, run_name="pyqueue.lab._build_peers")
        build_peers["build_all"](self)


def pyext():
    """pyqueue._pyext, from csrc/layers.mk's PYQ_PYEXT: headers only from the
    core (pyqueue.h), none of its sources (DESIGN §5.3)."""
    build = runpy.run_path(BUILD, run_name="pyqueue._build")
    sources = ["csrc/" + s for s in build["make_lists"]()["PYQ_PYEXT"]]
    return Extension(
        "pyqueue._pyext", sources=sources, include_dirs=["csrc/include", "csrc"],
        define_macros=[("Py_LIMITED_API", hex(LIMITED_API))], py_limited_api=True,
        extra_compile_args=["-std=gnu11", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra",
                            "-Wno-unused-parameter", "-Wno-missing-field-initializers",
                            "-Wno-cast-function-type"]
        + os.environ.get("PYQ_CFLAGS", "").split(),
        extra_link_args=os.environ.get("PYQ_LDFLAGS", "").split())


setup(
    version=version(),
    cffi_modules=["pyqueue/_build.py:ffibuilder", "pyqueue/lab/_build.py:ffibuilder"],
    ext_modules=[pyext()],
    cmdclass={"build_ext": BuildExtWithPeers},
    # cffi builds _pyq and _pyext is built against the stable ABI (Py_LIMITED_API,
    # 3.11 for _pyext), so one wheel serves every CPython from 3.11 on: tag it
    # abi3.  The peers are plain shared objects opened with dlopen, not Python
    # extensions, so they do not change the tag.
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
