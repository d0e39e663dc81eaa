# Type stub of the lab's compiled extension (cffi, API mode): its ffi and lib objects are
# built from the C headers' cdef (csrc/layers.mk PYQ_QUEUE_CDEF / PYQ_LAB_CDEF), so their members are
# C's names and types, not Python's.
from typing import Any

ffi: Any
lib: Any
