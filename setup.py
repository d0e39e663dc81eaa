"""pip install . : builds the C core into pyqueue._pyq with cffi (API, out-of-line).

Peer queues (ck_ring, DPDK rte_ring, moodycamel ReaderWriterQueue, boost) are built
as separate small shared objects by pyqueue/_build_peers.py when their Debian
headers are present; a missing peer is recorded, never an install failure.
"""
import os
import re
import runpy

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_PEERS = os.path.join(HERE, "pyqueue", "_build_peers.py")


def version():
    """PYQ_VERSION of the public C header: the one place the version is written."""
    with open(os.path.join(HERE, "csrc", "include", "pyqueue.h")) as f:
        return re.search(r'^#define PYQ_VERSION "([^"]+)"', f.read(), re.M).group(1)


class BuildExtWithPeers(build_ext):
    def run(self):
        super().run()
        # By path, under the name the package gives it: pyqueue itself cannot be
        # imported before its extension exists.
        build_peers = runpy.run_path(BUILD_PEERS, run_name="pyqueue._build_peers")
        build_peers["build_all"](self)


setup(
    version=version(),
    cffi_modules=["pyqueue/_build.py:ffibuilder"],
    cmdclass={"build_ext": BuildExtWithPeers},
    # cffi builds _pyq against the stable ABI (Py_LIMITED_API), so one wheel serves
    # every CPython from 3.9 on: tag it abi3.  The peers are plain shared objects
    # opened with dlopen, not Python extensions, so they do not change the tag.
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
