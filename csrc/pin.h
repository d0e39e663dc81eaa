/* pin.h - private: the harness helpers of selftest.c and bench.c, over the
 * runtime's pinning and clock (csrc/cpu.c, csrc/runtime_pvt.h). */
#ifndef PYQ_PIN_H
#define PYQ_PIN_H
#include "pyq_runtime.h"
#include "runtime_pvt.h"

/* Pin the calling thread (-1: leave it alone). */
static inline int pyq_pin_self(int cpu)
{
    return cpu < 0 ? 0 : pyq_cpu_pin_self(cpu);
}

static inline uint64_t pyq_mono_ns(void)
{
    return pyq_now_ns();
}
#endif
