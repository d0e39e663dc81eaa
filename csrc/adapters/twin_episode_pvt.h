/*
 * twin_episode_pvt.h - the streaming episodes (pyq_twin_episode_t, DESIGN
 * §8.4) of the throughput loops (twin_throughput_pvt.h): the writer's and the
 * reader's halves of the protocol that holds the reader while the writer gets
 * a backlog ahead.  Never installed.
 */
#ifndef PYQ_TWIN_EPISODE_PVT_H
#define PYQ_TWIN_EPISODE_PVT_H

#include <stdint.h>
#include <string.h>

#include "adapters/twin_base_pvt.h"

/* The reader is held while the writer gets `backlog` messages ahead of it (or
 * fills the queue), then both run flat out until the reader's first empty
 * poll, and the reader is held again.  The writer and the reader of one run
 * meet here once per episode; per message the writer compares its count with
 * `next` only, everything else is on rare paths.  ST-L1 / ST-L2: the
 * release; ST-L3 / ST-L4: the hold; ST-L5 / ST-L6: the writer's end. */
struct pyq_twin_stream {
    uint64_t backlog;              /* 0: no episodes (the protocol is off) */
    pyq_twin_episode_t *ep;
    uint32_t max_ep;
    PYQ_TWIN_LINE uint32_t go;     /* writer -> reader: episodes released */
    uint32_t done;                 /* writer -> reader: it wrote its last message */
    PYQ_TWIN_LINE uint32_t held;   /* reader -> writer: episodes the reader ended */
    uint32_t recorded;             /* reader: episodes whose records are complete */
    uint32_t open;                 /* reader: episode `recorded` is released and running */
};

/* The writer's side: a local of its loop. */
struct pyq_twin_stream_w {
    uint64_t next;      /* written count at which to look again (UINT64_MAX: never) */
    uint32_t k;         /* episodes released */
    int filling;        /* the reader is held and the backlog is being written */
};

/* How often (in messages) a writer that waits for the reader's hold looks. */
#define PYQ_TWIN_STREAM_LOOK 64

/* How long a writer that waits inside its library waits for room before it
 * comes out to look at the hold (pyq_twin_stream_full): rare, as a full queue
 * with a held reader is. */
#define PYQ_TWIN_WAIT_NS 1000000

static inline void pyq_twin_stream_init(struct pyq_twin_stream *s, uint64_t backlog,
                                        pyq_twin_episode_t *ep, uint32_t max_ep)
{
    memset(s, 0, sizeof *s);
    s->backlog = ep && max_ep ? backlog : 0;
    s->ep = ep;
    s->max_ep = max_ep;
}

PYQ_TWIN_INLINE void pyq_twin_stream_w_init(const struct pyq_twin_stream *s,
                                            struct pyq_twin_stream_w *w)
{
    w->k = 0;
    w->filling = s->backlog != 0;      /* episode 0: the reader starts held */
    w->next = s->backlog ? s->backlog : UINT64_MAX;
}

PYQ_TWIN_RARE void
pyq_twin_stream_release(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w, uint64_t written)
{
    s->ep[w->k].go_ns = pyq_twin_now_ns();
    s->ep[w->k].go_written = written;
    w->k++;
    w->filling = 0;
    /* ST-L1: the record above before the release; pairs with ST-L2. */
    __atomic_store_n(&s->go, w->k, __ATOMIC_RELEASE);
    w->next = w->k < s->max_ep ? written + PYQ_TWIN_STREAM_LOOK : UINT64_MAX;
}

/* The writer has written `written` messages and reached w->next: release the
 * reader, or look whether it is held again (then fill the next backlog). */
PYQ_TWIN_RARE void
pyq_twin_stream_step(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w, uint64_t written)
{
    if (w->filling) {
        pyq_twin_stream_release(s, w, written);
    } else if (__atomic_load_n(&s->held, __ATOMIC_ACQUIRE) == w->k) {
        /* ST-L4: pairs with ST-L3 -- the reader read all it saw and is held. */
        w->filling = 1;
        w->next = written + s->backlog;
    } else {
        w->next = written + PYQ_TWIN_STREAM_LOOK;
    }
}

/* After each write (burst): `written` messages so far. */
PYQ_TWIN_INLINE void pyq_twin_stream_wrote(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                           uint64_t written)
{
    if (__builtin_expect(written >= w->next, 0))
        pyq_twin_stream_step(s, w, written);
}

/* The queue is full.  While the reader is held, that is the backlog: release
 * it now, or the writer would wait for a reader that waits for it.  The writer
 * may not know yet that the reader is held -- it looks every
 * PYQ_TWIN_STREAM_LOOK messages, and a reader that loses its CPU between its
 * empty poll and ST-L3 for as long as the writer takes to fill the queue is
 * held only once the writer can write no more -- so it looks here too.  Not
 * once the reader's records ran out: it reads freely then (w->k == max_ep). */
PYQ_TWIN_RARE void pyq_twin_stream_room(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                        uint64_t written)
{
    /* ST-L4 (as in pyq_twin_stream_step): pairs with ST-L3. */
    if (w->filling ||
        (w->k < s->max_ep && __atomic_load_n(&s->held, __ATOMIC_ACQUIRE) == w->k))
        pyq_twin_stream_release(s, w, written);
}

/* At every failed retry of a full queue (a writer that waits inside the
 * library must come out to call it: PYQ_TWIN_WAIT_NS). */
PYQ_TWIN_INLINE void pyq_twin_stream_full(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                          uint64_t written)
{
    if (s->backlog)
        pyq_twin_stream_room(s, w, written);
}

/* The writer's last message is written (and flushed). */
PYQ_TWIN_INLINE void pyq_twin_stream_end(struct pyq_twin_stream *s, struct pyq_twin_stream_w *w,
                                         uint64_t written)
{
    if (!s->backlog)
        return;
    if (w->filling)
        pyq_twin_stream_release(s, w, written);
    /* ST-L5: every message written and flushed; pairs with ST-L6. */
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
}

/* Reader: wait to be released (episode s->recorded), then stamp its start.
 * Returns 0 when released, 1 when the writer is done without a release (read
 * the rest freely), -1 when the run failed (err). */
PYQ_TWIN_RARE int
pyq_twin_stream_hold(struct pyq_twin_stream *s, uint64_t got, const int *err)
{
    uint32_t k = s->recorded;

    /* ST-L2: pairs with ST-L1 -- the episode's writer fields are written. */
    while (__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) <= k) {
        if (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) /* ST-L6: pairs with ST-L5 */
            break;
        if (pyq_twin_failed(err))
            return -1;
        pyq_twin_relax();
    }
    /* The writer may have released episode k just before its end (ST-L2 again). */
    if (__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) <= k)
        return 1;
    s->ep[k].start_ns = pyq_twin_now_ns();
    s->ep[k].start_read = got;
    s->open = 1;
    return 0;
}

/* Reader: the protocol is on and it has not run out of records. */
PYQ_TWIN_INLINE int pyq_twin_stream_on(const struct pyq_twin_stream *s)
{
    return s->backlog && s->recorded < s->max_ep;
}

/* Reader: its first empty poll after messages (a catch-up) at `got` read, or the
 * end of the run (caught_up 0).  Ends the open episode; after a catch-up holds
 * the reader until the next release.  Returns as pyq_twin_stream_hold (0 also
 * when no episode is open: the protocol is off or out of records). */
PYQ_TWIN_RARE int
pyq_twin_stream_caught(struct pyq_twin_stream *s, uint64_t got, int caught_up, const int *err)
{
    uint32_t k = s->recorded;

    if (!s->open)
        return 0;
    s->open = 0;
    s->ep[k].end_ns = pyq_twin_now_ns();
    s->ep[k].end_read = got;
    s->ep[k].caught_up = (uint32_t)caught_up;
    s->recorded = k + 1;
    /* ST-L3: the reader is held (it read everything visible); pairs with ST-L4. */
    __atomic_store_n(&s->held, k + 1, __ATOMIC_RELEASE);
    if (!caught_up || !pyq_twin_stream_on(s))
        return 0;
    return pyq_twin_stream_hold(s, got, err);
}

#endif /* PYQ_TWIN_EPISODE_PVT_H */
