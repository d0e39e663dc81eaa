// atomic_queue_burst.cpp - atomic_queue's adapter (atomic_queue.cpp, included
// whole) and its burst-tail twin in one translation unit: the study's send loop
// and consumer poll (adapters/burst_twin_pvt.h) with try_push / try_pop inlined.
// The peer's shared object is built from this file when it exists.
#include "peers/atomic_queue.cpp"
#include "adapters/burst_twin_pvt.h"

PYQ_BURST_TWIN_DEFINE(aq, "atomic_queue", aq_try_write, aq_poll,
                      "AtomicQueue2<Msg32, 32768, SPSC=true> try_push / try_pop inlined")
