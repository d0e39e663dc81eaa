/*
 * idle.c - what a consumer does when a poll finds nothing: busy spin,
 * spin with relax, yield every N, or backoff (relax N times, then nanosleep
 * doubling to a cap).  The stats say how often each stage was reached, so a
 * latency tail can be matched with sleeps or yields.  Owner thread only; the
 * yields and sleeps are the only system calls of a consumer loop.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <time.h>

#include "common/atomic.h"
#include "runtime/pyq_runtime.h"

void pyq_idle_config_init(pyq_idle_config_t *cfg, int strategy)
{
    cfg->strategy = strategy;
    cfg->spins = PYQ_IDLE_DEFAULT_SPINS;
    cfg->yield_every = PYQ_IDLE_DEFAULT_YIELD_EVERY;
    cfg->sleep_min_ns = PYQ_IDLE_DEFAULT_SLEEP_MIN_NS;
    cfg->sleep_cap_ns = PYQ_IDLE_DEFAULT_SLEEP_CAP_NS;
}

int pyq_idle_init(pyq_idle_t *idle, const pyq_idle_config_t *cfg)
{
    if (cfg->strategy < PYQ_IDLE_SPIN || cfg->strategy > PYQ_IDLE_BACKOFF)
        return PYQ_EINVAL;
    if (cfg->strategy == PYQ_IDLE_YIELD && cfg->yield_every == 0)
        return PYQ_EINVAL;
    if (cfg->strategy == PYQ_IDLE_BACKOFF &&
        (cfg->sleep_min_ns == 0 || cfg->sleep_cap_ns < cfg->sleep_min_ns ||
         cfg->sleep_cap_ns > 1000000000u))
        return PYQ_EINVAL;
    memset(idle, 0, sizeof *idle);
    idle->cfg = *cfg;
    idle->sleep_ns = cfg->sleep_min_ns;
    return 0;
}

static void backoff_sleep(pyq_idle_t *idle)
{
    uint64_t ns = idle->sleep_ns;
    struct timespec req = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};

    nanosleep(&req, NULL);
    idle->stats.sleeps++;
    idle->stats.sleep_ns += ns;
    if (ns >= idle->cfg.sleep_cap_ns) {
        idle->stats.sleeps_at_cap++;
    } else {
        ns *= 2;
        idle->sleep_ns = ns < idle->cfg.sleep_cap_ns ? ns : idle->cfg.sleep_cap_ns;
    }
}

void pyq_idle_wait(pyq_idle_t *idle)
{
    if (idle->run++ == 0)
        idle->stats.periods++;
    idle->stats.empty_polls++;
    switch (idle->cfg.strategy) {
    case PYQ_IDLE_SPIN:
        idle->stats.spins++;
        break;
    case PYQ_IDLE_RELAX:
        pyq_cpu_relax();
        idle->stats.relaxes++;
        break;
    case PYQ_IDLE_YIELD:
        if (idle->run % idle->cfg.yield_every == 0) {
            sched_yield();
            idle->stats.yields++;
        } else {
            pyq_cpu_relax();
            idle->stats.relaxes++;
        }
        break;
    default: /* PYQ_IDLE_BACKOFF */
        if (idle->run <= idle->cfg.spins) {
            pyq_cpu_relax();
            idle->stats.relaxes++;
        } else {
            backoff_sleep(idle);
        }
        break;
    }
}

void pyq_idle_reset(pyq_idle_t *idle)
{
    idle->run = 0;
    idle->sleep_ns = idle->cfg.sleep_min_ns;
}
