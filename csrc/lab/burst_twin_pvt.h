/*
 * burst_twin_pvt.h - the lab's side of the burst-tail twins: finding the one
 * a peer library exports (lab/burst_twin.c).  The loops and the twin's type
 * are adapters/burst_twin_pvt.h, which the peers include too.  Never
 * installed, not a cdef.
 */
#ifndef PYQ_LAB_BURST_TWIN_PVT_H
#define PYQ_LAB_BURST_TWIN_PVT_H

#include "adapters/burst_twin_pvt.h"

/* Any thread.  The twin exported by the library that holds adapter a.
 * @return 0 and *out, or PYQ_ENOTSUP (a built-in adapter, or a library
 * without a twin or with another ABI). */
__attribute__((visibility("hidden"))) int pyq_burst_twin_find(const pyq_adapter_t *a,
                                                              const pyq_burst_twin_t **out);

#endif /* PYQ_LAB_BURST_TWIN_PVT_H */
