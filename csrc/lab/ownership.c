/*
 * ownership.c - the ownership control of the burst study (see pyq_ownership.h).
 *
 * Per window, both arms:
 *   SELF:  worker warms the data, then hands the helper a no-op command;
 *   OTHER: worker hands the helper a "warm" command; the helper warms the data;
 *   then, after the helper's acknowledgement, the worker times `queries`
 *   queries.  The handshake is the same in both arms, so the last thing before
 *   the timed window is always the same pair of cache-line transfers, and the
 *   helper is in the same state (polling its command line) while the worker is
 *   timed.  Only who last wrote the business lines differs.
 *
 * Hand-over protocol (one command line, one acknowledgement line; OWN-T<n> on
 * the timed worker's side, OWN-H<n> on the helper's; one number, one edge):
 *   OWN-T1 worker: salt = ...; store-release cmd = seq << 2 | op
 *   OWN-H1 helper: load-acquire cmd until it changes          (pairs with OWN-T1)
 *   OWN-H2 helper: warm (op WARM); store-release ack = seq    (pairs with OWN-T2)
 *   OWN-T2 worker: load-acquire ack until it equals seq       (pairs with OWN-H2)
 * OWN-T1 -> OWN-H1 makes the worker's earlier node writes (its own warm-ups and
 * queries) happen before the helper's warm; OWN-H2 -> OWN-T2 makes the helper's warm
 * happen before the worker's queries.  So every node access is ordered and the
 * data has exactly one owner at a time.  Both threads pin themselves, then meet
 * at the start barrier (MEET-S1/MEET-S2, runtime/start_pvt.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "lab/pyq_ownership.h"
#include "runtime/runtime_pvt.h"
#include "runtime/start_pvt.h"

_Static_assert(PYQ_OWNERSHIP_NCOUNTERS == PYQ_PERF_NEVENTS, "counters per window");

#define OP_NOOP 0u
#define OP_WARM 1u
#define OP_EXIT 2u

struct pyq_ownership {
    pyq_ownership_config_t cfg;
    pyq_business_t data;
    double ticks_per_ns; /* 0: time on CLOCK_MONOTONIC */
};

/* One slice's shared state.  The worker-written and helper-written fields sit
 * on separate lines so polling one never steals the other. */
struct handshake {
    PYQ_ALIGNED_LINE _Atomic uint64_t cmd; /* worker -> helper: seq << 2 | op */
    uint64_t salt;                         /* plain: published by OWN-T1 */
    PYQ_ALIGNED_LINE _Atomic uint64_t ack; /* helper -> worker: seq of the last command done */
    int32_t helper_cpu;                    /* plain: published by OWN-H2 */
    PYQ_ALIGNED_LINE pyq_start_t start;    /* MEET-S1/MEET-S2: both pinned (or one failed) */
};

struct slice_run {
    struct handshake hs;
    pyq_ownership_t *o;
    int32_t arm;
    uint64_t first_window;
    uint32_t n;
    uint32_t perf_mask;
    const pyq_ownership_out_t *out;
    pyq_ownership_slice_t *slice;
    uint64_t seq; /* worker's command counter */
};

_Static_assert(offsetof(struct handshake, ack) % PYQ_CACHELINE == 0, "ack on its own line");
_Static_assert(offsetof(struct handshake, start) % PYQ_CACHELINE == 0, "start on its own line");

static inline uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t z = a ^ (b * 0x9E3779B97F4A7C15ull) ^ 0x6A09E667F3BCC909ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int pyq_ownership_create(const pyq_ownership_config_t *cfg, pyq_ownership_t **out)
{
    pyq_ownership_t *o;
    int rc;

    if (!cfg || !out || cfg->worker_cpu < 0 || cfg->other_cpu < 0 ||
        cfg->worker_cpu == cfg->other_cpu || cfg->queries == 0 || cfg->groups == 0 ||
        cfg->groups > PYQ_OWNERSHIP_MAX_GROUPS || cfg->queries % cfg->groups)
        return PYQ_EINVAL;
    o = calloc(1, sizeof *o);
    if (!o)
        return PYQ_ENOMEM;
    o->cfg = *cfg;
    rc = pyq_business_init(&o->data, NULL, cfg->data_bytes, cfg->seed);
    if (rc) {
        free(o);
        return rc;
    }
    /* Calibrate now (it sleeps ~20 ms), never inside a slice. */
    o->ticks_per_ns = PYQ_HAVE_CYCLES ? pyq_clock_ticks_per_ns() : 0;
    *out = o;
    return 0;
}

void pyq_ownership_destroy(pyq_ownership_t *o)
{
    if (!o)
        return;
    pyq_business_destroy(&o->data);
    free(o);
}

/* ---- helper thread ---------------------------------------------------- */

static void *helper_main(void *arg)
{
    struct slice_run *r = arg;
    struct handshake *hs = &r->hs;
    uint64_t last = 0;

    if (pyq_start_meet(&hs->start, 2, pyq_cpu_pin_self(r->o->cfg.other_cpu)) != 0)
        return NULL; /* the worker reports which CPU failed */
    for (;;) {
        uint64_t c;

        /* OWN-H1: pairs with OWN-T1; salt and the worker's node writes are visible. */
        while ((c = atomic_load_explicit(&hs->cmd, memory_order_acquire)) == last)
            pyq_cpu_relax();
        last = c;
        if ((c & 3u) == OP_EXIT)
            break;
        if ((c & 3u) == OP_WARM)
            pyq_business_warm(&r->o->data, hs->salt);
        hs->helper_cpu = pyq_cpu_current();
        /* OWN-H2: publish the warmed data (and helper_cpu); pairs with OWN-T2. */
        atomic_store_explicit(&hs->ack, c >> 2, memory_order_release);
    }
    return NULL;
}

/* ---- worker thread ---------------------------------------------------- */

/* Worker side of one command: OWN-T1 then wait for OWN-T2. */
static void command(struct slice_run *r, uint32_t op, uint64_t salt)
{
    struct handshake *hs = &r->hs;
    uint64_t seq = ++r->seq;

    hs->salt = salt;
    /* OWN-T1: publish salt and every earlier node write; pairs with OWN-H1. */
    atomic_store_explicit(&hs->cmd, seq << 2 | op, memory_order_release);
    if (op == OP_EXIT)
        return;
    /* OWN-T2: pairs with OWN-H2; the helper's warm-up happens before our queries. */
    while (atomic_load_explicit(&hs->ack, memory_order_acquire) != seq)
        pyq_cpu_relax();
}

static inline uint64_t stamp(int cycles)
{
    return cycles ? pyq_cycles_fenced() : pyq_now_ns();
}

static inline uint64_t to_ns(uint64_t d, double tpn)
{
    return tpn > 0 ? (uint64_t)((double)d / tpn + 0.5) : d;
}

static void run_windows(struct slice_run *r, pyq_perf_t *perf)
{
    pyq_ownership_t *o = r->o;
    const pyq_ownership_out_t *out = r->out;
    pyq_business_t *b = &o->data;
    uint32_t groups = o->cfg.groups, per_group = o->cfg.queries / groups;
    double tpn = o->ticks_per_ns;
    int cycles = tpn > 0;
    uint64_t t[PYQ_OWNERSHIP_MAX_GROUPS + 1];
    uint64_t before[PYQ_PERF_NEVENTS], after[PYQ_PERF_NEVENTS];

    for (uint32_t i = 0; i < r->n; i++) {
        uint64_t w = r->first_window + i;
        uint64_t salt = mix(o->cfg.seed, w);
        pyq_business_state_t st;
        uint64_t probe = UINT64_MAX;
        int32_t cpu0, cpu1;

        /* Placement probe, same in both arms: the fastest no-op round trip. */
        for (int k = 0; k < PYQ_OWNERSHIP_PROBE_TRIPS; k++) {
            uint64_t p0 = stamp(cycles), p1;

            command(r, OP_NOOP, 0);
            p1 = stamp(cycles);
            if (p1 - p0 < probe)
                probe = p1 - p0;
        }
        if (r->arm == PYQ_OWNERSHIP_SELF) {
            pyq_business_warm(b, salt);
            command(r, OP_NOOP, 0);
        } else {
            command(r, OP_WARM, salt);
        }
        /* Same query stream in both arms: it depends on the window only. */
        pyq_business_state_init(&st, mix(salt, 0x51u));
        cpu0 = pyq_cpu_current();
        if (perf)
            pyq_perf_read(perf, before);
        /* ---- timed: `queries` queries, a stamp after each group ---- */
        t[0] = stamp(cycles);
        for (uint32_t g = 0; g < groups; g++) {
            for (uint32_t q = 0; q < per_group; q++)
                pyq_business_query(b, &st);
            t[g + 1] = stamp(cycles);
        }
        /* ---- end of the timed window ---- */
        if (perf)
            pyq_perf_read(perf, after);
        cpu1 = pyq_cpu_current();

        out->window_ns[i] = to_ns(t[groups] - t[0], tpn);
        if (out->group_ns)
            for (uint32_t g = 0; g < groups; g++)
                out->group_ns[(uint64_t)i * groups + g] = to_ns(t[g + 1] - t[g], tpn);
        out->checksum[i] = st.checksum;
        out->data_checksum[i] = pyq_business_checksum(b);
        if (out->worker_cpu) {
            out->worker_cpu[2 * (uint64_t)i] = cpu0;
            out->worker_cpu[2 * (uint64_t)i + 1] = cpu1;
        }
        if (out->probe_ns)
            out->probe_ns[i] = to_ns(probe, tpn);
        if (out->helper_cpu)
            out->helper_cpu[i] = r->hs.helper_cpu; /* published by OWN-H2, read after OWN-T2 */
        if (out->counters)
            for (int k = 0; k < PYQ_PERF_NEVENTS; k++)
                out->counters[(uint64_t)i * PYQ_PERF_NEVENTS + k] = perf ? after[k] - before[k] : 0;
        r->slice->windows = i + 1;
    }
}

static void *worker_main(void *arg)
{
    struct slice_run *r = arg;
    pyq_ownership_slice_t *s = r->slice;
    pyq_perf_t perf;
    int own = pyq_cpu_pin_self(r->o->cfg.worker_cpu);

    if (pyq_start_meet(&r->hs.start, 2, own) != 0) {
        s->error = PYQ_EINVAL;
        s->failed_cpu = own ? r->o->cfg.worker_cpu : r->o->cfg.other_cpu;
        return NULL;
    }
    if (r->perf_mask) {
        pyq_perf_open(&perf, r->perf_mask);
        memcpy(s->perf_status, perf.status, sizeof s->perf_status);
        s->perf_read_ns = pyq_perf_read_cost_ns(&perf, 200);
    }
    s->start_ns = pyq_now_ns();
    run_windows(r, r->perf_mask ? &perf : NULL);
    s->end_ns = pyq_now_ns();
    command(r, OP_EXIT, 0);
    if (r->perf_mask)
        pyq_perf_close(&perf);
    return NULL;
}

int pyq_ownership_run(pyq_ownership_t *o, int32_t arm, uint64_t first_window, uint32_t n,
                      uint32_t perf_mask, const pyq_ownership_out_t *out,
                      pyq_ownership_slice_t *slice)
{
    struct slice_run *r;
    pthread_t helper, worker;
    int rc;

    if (!o || !out || !slice || n == 0 || !out->window_ns || !out->checksum ||
        !out->data_checksum || (arm != PYQ_OWNERSHIP_SELF && arm != PYQ_OWNERSHIP_OTHER))
        return PYQ_EINVAL;
    memset(slice, 0, sizeof *slice);
    slice->failed_cpu = -1;
    slice->arm = arm;
    slice->perf_read_ns = -1;
    slice->ticks_per_ns = o->ticks_per_ns;
    for (int k = 0; k < PYQ_PERF_NEVENTS; k++)
        slice->perf_status[k] = PYQ_EINVAL;
    r = aligned_alloc(PYQ_CACHELINE, (sizeof *r + PYQ_CACHELINE - 1) / PYQ_CACHELINE * PYQ_CACHELINE);
    if (!r)
        return PYQ_ENOMEM;
    memset(r, 0, sizeof *r);
    r->o = o;
    r->arm = arm;
    r->first_window = first_window;
    r->n = n;
    r->perf_mask = perf_mask & PYQ_PERF_ALL;
    r->out = out;
    r->slice = slice;

    rc = -pthread_create(&helper, NULL, helper_main, r);
    if (rc == 0) {
        rc = -pthread_create(&worker, NULL, worker_main, r);
        if (rc != 0)
            pyq_start_arrive(&r->hs.start, rc); /* for the worker: the helper gives up */
        else
            pthread_join(worker, NULL);
        pthread_join(helper, NULL);
    }
    free(r);
    if (rc != 0)
        slice->error = rc == -ENOMEM ? PYQ_ENOMEM : PYQ_EAGAIN;
    return slice->error;
}
