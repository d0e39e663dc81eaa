# core.mk - the queue core's sources (what csrc/include/pyqueue.h declares), in
# one place for every Makefile that builds it: the C library (../Makefile), the
# sanitizer tests (tests/c) and the fuzzer (tests/fuzz).  The Python extension
# compiles every csrc/*.c (pyqueue/_build.py).
PYQ_CORE := pool queue writer writer_block reader reader_wait
