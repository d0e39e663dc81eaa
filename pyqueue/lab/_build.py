"""cffi build script (API mode, out-of-line) of the lab: pyqueue.lab._lab.

Every layer of csrc/ but the queue's own extension's: runtime, adapters, the
experiments' loops, the bench drivers and the stress harnesses, over a copy of
csrc/common + csrc/core compiled from the same sources (csrc/layers.mk
PYQ_LAB_EXT).  Its FFI includes pyqueue._pyq's, so ``pyq_queue_t *`` and the
core's constants are one type and one value in both modules: a queue the
product made can be handed to the lab's C code.  Core functions are called
through pyqueue._pyq's ``lib``; this ``lib`` has the lab's.
"""
import os
import runpy

HERE = os.path.dirname(os.path.abspath(__file__))
_core = runpy.run_path(os.path.join(os.path.dirname(HERE), "_build.py"),
                       run_name="pyqueue._build")

HEADERS = [os.path.join(_core["CSRC"], h) for h in _core["_LISTS"]["PYQ_LAB_CDEF"]]
SOURCES = [os.path.join(_core["CSRC"], c) for c in _core["_LISTS"]["PYQ_LAB_EXT"]]

ffibuilder = _core["builder"]("pyqueue.lab._lab", HEADERS, SOURCES, include=_core["ffibuilder"])

if __name__ == "__main__":
    os.chdir(_core["ROOT"])
    ffibuilder.compile(tmpdir=os.path.join(_core["ROOT"], "build", "cffi"), verbose=True)
