/* dpdk_burst.c - DPDK's adapter (dpdk.c, included whole) and its burst-tail twin
 * in one translation unit: the study's send loop and consumer poll
 * (adapters/burst_twin_pvt.h) with rte_ring_sp_enqueue_elem /
 * rte_ring_sc_dequeue_burst_elem (bursts of 32) inlined.  The peer's shared
 * object is built from this file when it exists. */
#include "peers/dpdk.c"
#include "adapters/burst_twin_pvt.h"

PYQ_BURST_TWIN_DEFINE(dpdk, "dpdk", dpdk_try_write, dpdk_poll,
                      "rte_ring_sp_enqueue_elem / rte_ring_sc_dequeue_burst_elem of 32 inlined")
