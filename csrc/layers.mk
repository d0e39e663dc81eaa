# layers.mk - the C sources of each layer, in one place for every build: the
# Python extensions (pyqueue/_build.py and pyqueue/lab/_build.py read this file), the C library
# (../Makefile), the sanitizer tests (tests/c), the fuzzer (tests/fuzz) and the
# instruction counts (benchmarks/peers).  Paths are relative to csrc/.
#
# Each layer uses only the layers above it in this file; its private headers
# (*_pvt.h) and its public header (pyq_<layer>.h, also the cffi cdef) sit
# beside its sources.  Only include/pyqueue.h, the queue core's API, is
# installed.  Peers (peers/) are not listed: each is its own shared object,
# built by pyqueue/_build_peers.py against adapters/pyq_adapter.h.

# Shared by every layer: ordering helpers, the clock read, the message pattern.
PYQ_COMMON   := common/pattern.c
# The queue core: what include/pyqueue.h declares.
PYQ_CORE     := core/pool.c core/queue.c core/writer.c core/writer_batch.c core/writer_block.c \
                core/writer_large.c core/reader.c core/reader_wait.c core/bell_wait.c \
                core/shared.c core/shared_owner.c core/shared_mirror.c core/shared_wait.c \
                core/shared_fault.c
# Threads, pinning, clocks, perf counters, idle strategies, the pacer.
PYQ_RUNTIME  := runtime/clock.c runtime/cpu.c runtime/perf.c runtime/idle.c \
                runtime/pacer.c runtime/threads.c runtime/producer.c runtime/consumer.c
# One interface in front of every queue the lab compares, and its validator.
PYQ_ADAPTERS := adapters/registry.c adapters/pyqueue.c adapters/mutex.c \
                adapters/ring_floor.c adapters/record_ring.c adapters/verify.c adapters/twin_registry.c
# The experiments' measured loops.
PYQ_LAB      := lab/business.c lab/burst_tail.c lab/burst_twin.c lab/ownership.c lab/c2c.c \
                lab/false_sharing.c lab/pipeline.c lab/pipeline_run.c
# The benchmark drivers.
PYQ_BENCH    := bench/bench.c bench/bench_adapter.c bench/twins.c \
                bench/xproc.c
# Stress harnesses: the two-thread self-test and the soak.
PYQ_STRESS   := stress/selftest.c stress/soak.c

# The CPython C-API types of the per-message calls (pyqueue._pyext): no core
# inside, they call the one in the cffi extension through pointers: one copy a process.
PYQ_PYEXT    := pyext/module.c pyext/side.c pyext/writer.c pyext/many.c pyext/reader.c \
                pyext/frame.c

# The two Python extensions.  pyqueue._pyq is the queue: the core alone, and
# its cdef the one installed header.  pyqueue.lab._lab is the instrument: every
# other layer, over its own copy of the core compiled from the same sources
# (its cffi FFI includes _pyq's, so a queue made by either is one C type).
PYQ_QUEUE_EXT  := $(PYQ_COMMON) $(PYQ_CORE)
PYQ_QUEUE_CDEF := include/pyqueue.h
PYQ_LAB_EXT    := $(PYQ_COMMON) $(PYQ_CORE) $(PYQ_RUNTIME) $(PYQ_ADAPTERS) $(PYQ_LAB) \
                  $(PYQ_BENCH) $(PYQ_STRESS)
# The lab's public headers, its cdef, in include order.
PYQ_LAB_CDEF   := common/pyq_pattern.h runtime/pyq_runtime.h \
                  adapters/pyq_adapter.h adapters/pyq_twin.h lab/pyq_business.h lab/pyq_burst_tail.h \
                  lab/pyq_ownership.h lab/pyq_c2c.h lab/pyq_pipeline.h bench/pyq_bench.h \
                  bench/pyq_twins.h bench/pyq_xproc.h \
                  stress/pyq_selftest.h stress/pyq_soak.h
# Every layer, for the builds that want them all (tests/c, tests/fuzz).
PYQ_ALL      := $(PYQ_LAB_EXT)
