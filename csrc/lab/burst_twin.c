/* burst_twin.c - finding a peer's burst-tail twin (adapters/burst_twin_pvt.h)
 * in the very library its adapter came from, through the adapter's own
 * address, so the two cannot come from different builds. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "lab/burst_twin_pvt.h"

int pyq_burst_twin_find(const pyq_adapter_t *a, const pyq_burst_twin_t **out)
{
    Dl_info info;
    pyq_peer_burst_twin_fn entry = NULL;
    const pyq_burst_twin_t *t;
    void *lib;

    *out = NULL;
    /* A built-in adapter lives in this library, which exports no twin. */
    if (!dladdr(a, &info) || !info.dli_fname)
        return PYQ_ENOTSUP;
    /* RTLD_NOLOAD: pyq_adapter_get() loaded it and keeps it open. */
    if (!(lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)))
        return PYQ_ENOTSUP;
    *(void **)&entry = dlsym(lib, "pyq_peer_burst_twin");
    dlclose(lib); /* drops only the reference NOLOAD took */
    if (!entry || !(t = entry()) || t->abi != PYQ_BURST_TWIN_ABI)
        return PYQ_ENOTSUP;
    *out = t;
    return 0;
}
