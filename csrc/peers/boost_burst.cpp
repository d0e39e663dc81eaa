// boost_burst.cpp - boost's adapter (boost.cpp, included whole) and its
// burst-tail twin in one translation unit: the study's send loop and consumer
// poll (adapters/burst_twin_pvt.h) with spsc_queue push(const T&) / pop(T*, 32)
// inlined.  The peer's shared object is built from this file when it exists.
#include "peers/boost.cpp"
#include "adapters/burst_twin_pvt.h"

PYQ_BURST_TWIN_DEFINE(boost, "boost", boost_try_write, boost_poll,
                      "spsc_queue<Msg32, capacity<32769>> push(const T&) / pop(T*, 32) inlined")
