"""pip install . : builds the C core into pyqueue._pyq with cffi (API, out-of-line).

Peer queues (ck_ring, DPDK rte_ring, moodycamel ReaderWriterQueue, boost) are built
as separate small shared objects by pyqueue/_build_peers.py when their Debian
headers are present; a missing peer is recorded, never an install failure.
"""
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyqueue"))


class BuildExtWithPeers(build_ext):
    def run(self):
        super().run()
        import _build_peers  # pyqueue/_build_peers.py; imported lazily: needs the compiler
        _build_peers.build_all(self)


setup(
    cffi_modules=["pyqueue/_build.py:ffibuilder"],
    cmdclass={"build_ext": BuildExtWithPeers},
)
