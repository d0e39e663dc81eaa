// rwq_burst.cpp - moodycamel's adapter (rwq.cpp, included whole) and its
// burst-tail twin in one translation unit: the study's send loop and consumer
// poll (adapters/burst_twin_pvt.h) with try_enqueue / try_dequeue inlined.  The
// peer's shared object is built from this file when it exists.
#include "peers/rwq.cpp"
#include "adapters/burst_twin_pvt.h"

PYQ_BURST_TWIN_DEFINE(rwq, "rwq", rwq_try_write, rwq_poll,
                      "ReaderWriterQueue<Msg32> try_enqueue / try_dequeue inlined")
