/* ck_burst.c - ck's adapter (ck.c, included whole) and its burst-tail twin in one
 * translation unit: the study's send loop and consumer poll
 * (adapters/burst_twin_pvt.h) with ck_ring_enqueue_spsc_msg32 /
 * ck_ring_dequeue_spsc_msg32 inlined.  The peer's shared object is built from
 * this file when it exists. */
#include "peers/ck.c"
#include "adapters/burst_twin_pvt.h"

PYQ_BURST_TWIN_DEFINE(ck, "ck", ck_try_write, ck_poll,
                      "ck_ring_enqueue_spsc_msg32 / ck_ring_dequeue_spsc_msg32 inlined")
