/*
 * reader.c - the reader side's per-message calls: poll, read,
 * get, get_nowait and iteration.  Messages go from the block straight into new
 * bytes objects (pyq_reader_poll's callback), with the GIL held; a read that
 * must wait owns the side and waits in C without the GIL, in slices.
 * Iteration takes everything visible (up to PYEXT_PENDING) in one core call
 * into the side's pending array and hands it out one by one; every other
 * reader call serves the pending messages first.
 *
 * Nothing consumed is dropped: pending signal handlers run before a call
 * returns (PyErr_CheckSignals), and if one raises, what the call consumed
 * rides on the exception as .messages (RELIABILITY.md, "Object lifetime").
 */
#include <string.h>

#include "pyext/pyext_pvt.h"

/* Messages per core call of a long poll: between two, Ctrl-C is looked at. */
#define POLL_CHUNK 1024

typedef struct collect {
    pyext_side_t *side;
    PyObject *one;   /* poll(1) / read: the message */
    PyObject **arr;  /* iteration and poll(n): the array being filled */
    uint32_t n;      /* messages in arr */
    uint64_t bytes;  /* their payload bytes */
    uint64_t stop;   /* a fill stops once it holds this many bytes */
    int owned;       /* this call owns the side (a wait, or a big copy) */
    int failed;      /* an exception is set */
} collect_t;

#define HAS_PENDING(s) ((s)->pending_at < (s)->pending_n)

/* A fill's poll: the core's inline loop with fn inlined (no call a message), or,
 * for a scanning reader, whose records the inline loop hands to the library
 * anyway, the library at once (one call instead of a look and a call).  A
 * one-message read calls the library: its loop would gain nothing. */
#define POLL(s, max, fn, ctx)                                                                 \
    ((s)->scan || (s)->shared ? pyext_core.reader_poll((s)->h, max, fn, ctx)                  \
                              : pyq_reader_poll_inline((s)->h, max, fn, ctx))

/* The next pending message (the reference moves to the caller). */
static inline PyObject *pending_take(pyext_side_t *s)
{
    PyObject *m = s->pending[s->pending_at++];
    if (s->pending_at == s->pending_n)
        s->pending_at = s->pending_n = 0;
    return m;
}

PyObject *pyext_reader_pending_take(pyext_side_t *s)
{
    return HAS_PENDING(s) ? pending_take(s) : NULL;
}

/* A big message as bytes, copied without the GIL, the side owned. */
static __attribute__((noinline)) PyObject *as_bytes_big(collect_t *c, const void *msg,
                                                        uint32_t len)
{
    PyObject *b = PyBytes_FromStringAndSize(NULL, len);

    if (!b)
        return NULL;
    /* Owned until the core call has returned (the caller disowns), so close()
     * cannot unmap the block being copied.  A side another thread just took
     * (a blocking own() waiting for the GIL) is copied with the GIL held. */
    if (c->owned || (c->owned = pyext_side_own(c->side, 0, 1)) == 1) {
        char *dst = PyBytes_AsString(b);
        Py_BEGIN_ALLOW_THREADS
        memcpy(dst, msg, len);
        Py_END_ALLOW_THREADS
    } else {
        c->owned = 0;
        memcpy(PyBytes_AsString(b), msg, len);
    }
    return b;
}

/* A small message as bytes: a spare of its size refilled, if only this side
 * still holds one, else a new object that becomes a spare in place of the
 * older one.  A bytes object nobody else references cannot be seen by anyone
 * -- no variable, container, view or borrowed pointer of a live owner reaches
 * it (each holds a reference) -- so rewriting it is a new object in all but
 * its allocation, which a 32-byte read otherwise pays twice (PyObject_Malloc
 * here, PyObject_Free when the caller drops it), as much as the queue's own
 * work.  Its cached hash is reset; what a debug build (or a layout not
 * verified at init) could object to makes pyext_bytes_direct 0, and then no
 * object is ever reused.  Sizes 0 and 1 are CPython's shared objects. */
static inline PyObject *recycled(pyext_side_t *s, const void *msg, uint32_t len)
{
    PyObject *b;
    uint32_t i;

    for (i = 0; i < PYEXT_SPARES; i++) {
        b = s->spare[i];
        if (b && Py_REFCNT(b) == 1 && Py_SIZE(b) == (Py_ssize_t)len) {
            char *o = (char *)b;
            *(Py_hash_t *)(void *)(o + PYEXT_BYTES_HASH_AT) = -1;
            pyext_bytes_fill(o + PYEXT_BYTES_DATA_AT, msg, len); /* its NUL stays */
            Py_INCREF(b);
            return b;
        }
    }
    b = pyext_bytes_new(msg, len);
    if (PYEXT_LIKELY(b != NULL)) {
        PyObject *old = s->spare[s->spare_next];
        Py_INCREF(b);
        s->spare[s->spare_next] = b;
        s->spare_next = (s->spare_next + 1) % PYEXT_SPARES;
        Py_XDECREF(old); /* a bytes object's release runs no Python code */
    }
    return b;
}

/* One message as bytes; spare: it may be a spare (see recycled). */
static inline PyObject *as_bytes(collect_t *c, const void *msg, uint32_t len, int spare)
{
    if (PYEXT_LIKELY(spare && len <= PYEXT_SPARE_MAX && len >= 2 && pyext_bytes_direct))
        return recycled(c->side, msg, len);
    if (PYEXT_LIKELY(len < PYEXT_GIL_COPY))
        return pyext_bytes_new(msg, len);
    return as_bytes_big(c, msg, len);
}

static int take_one(void *ctx, const void *msg, uint32_t len)
{
    collect_t *c = ctx;
    c->one = as_bytes(c, msg, len, 1);
    if (!c->one) {
        c->failed = 1;
        return -1;
    }
    return 0;
}

/* A fill's callback, inlined into the inline poll's loop. */
static inline __attribute__((always_inline)) int take_pending(void *ctx, const void *msg, uint32_t len)
{
    collect_t *c = ctx;
    /* Only a fill's first messages: the arrays hold the others, and a spare
     * replaced per message would cost a fill of many what it saves. */
    PyObject *b = as_bytes(c, msg, len, c->n < PYEXT_SPARES);
    if (!b) {
        c->failed = 1;
        return -1;
    }
    c->arr[c->n++] = b;
    c->bytes += len;
    return c->bytes >= c->stop; /* 1: enough for one fill, stop */
}

/* Iteration's fill: what is visible, up to PYEXT_PENDING messages or about
 * PYEXT_PENDING_BYTES, into the (empty) pending array, in one core call.  The
 * count (0: nothing visible), or -1 with an exception (what was taken stays
 * pending). */
static int64_t fill_pending(pyext_side_t *s, int owned)
{
    collect_t c;
    int64_t n;

    if (!s->pending) {
        s->pending = PyMem_Malloc(PYEXT_PENDING * sizeof(PyObject *));
        if (!s->pending) {
            PyErr_NoMemory();
            return -1;
        }
    }
    c.side = s;
    c.arr = s->pending;
    c.n = 0;
    c.bytes = 0;
    c.stop = PYEXT_PENDING_BYTES;
    c.owned = owned;
    c.failed = 0;
    /* Off the side while filling: a big message is copied without the GIL,
     * and close() (which drops pending) must not free the array meanwhile. */
    s->pending = NULL;
    n = POLL(s, PYEXT_PENDING, take_pending, &c);
    if (c.owned && !owned)
        pyext_side_disown(s);
    s->pending = c.arr;
    s->pending_at = 0;
    s->pending_n = c.n;
    if (!s->h) /* a big copy let close() run: what nobody read is discarded */
        pyext_side_drop_pending(s);
    if (c.failed)
        return -1; /* MemoryError for a message's bytes */
    if (n < 0) {
        pyext_raise((int)n, "poll");
        return -1;
    }
    return n;
}

/* The next visible message into c->one (1), nothing visible (0), or -1. */
static int poll_one(pyext_side_t *s, collect_t *c, int owned)
{
    int64_t n;

    c->side = s;
    c->one = NULL;
    c->owned = owned;
    c->failed = 0;
    n = pyext_core.reader_poll(s->h, 1, take_one, c);
    if (c->owned && !owned)
        pyext_side_disown(s);
    if (c->failed)
        return -1; /* MemoryError for the message's bytes */
    if (n < 0) {
        pyext_raise((int)n, "poll");
        return -1;
    }
    return n == 1;
}

/* Every one-message read's hot path: a bound side nobody owns, nothing
 * pending, a message visible.  1 with *msg, 0 when nothing was consumed (take
 * the general path, which words every refusal and waits), -1 with an
 * exception. */
static inline int fast_read(pyext_side_t *s, PyObject **msg)
{
    collect_t c;
    int64_t n;

    if (PYEXT_UNLIKELY(!s->h || s->busy || HAS_PENDING(s) || s->frame))
        return 0;
    c.side = s;
    c.one = NULL;
    c.owned = 0;
    c.failed = 0;
    n = pyext_core.reader_poll(s->h, 1, take_one, &c);
    if (PYEXT_UNLIKELY(c.owned))
        pyext_side_disown(s);
    if (PYEXT_LIKELY(n == 1)) {
        *msg = c.one;
        return 1;
    }
    if (c.failed)
        return -1;
    if (n < 0) {
        pyext_raise((int)n, "poll");
        return -1;
    }
    return 0;
}

/* poll(1)'s list of one: the list the last poll(1) returned when its caller
 * let go of it unchanged (only this side holds it: a reference count of 1,
 * one item), its item replaced, else a new one, kept for the next call.  A
 * list of one costs an allocation of its item array and its release, more
 * than the rest of the call.  The list is visible to the garbage collector
 * through the side (tp_traverse); a big message's list is not kept. */
static PyObject *list_of_one(pyext_side_t *s, PyObject *msg)
{
    PyObject *l = s->last;

    if (PYEXT_LIKELY(l && Py_REFCNT(l) == 1 && Py_SIZE(l) == 1)) {
        Py_INCREF(l); /* the caller's; the old item's release may run any code */
        if (PYEXT_LIKELY(pyext_list_items)) {
            PyObject **item = *(PyObject ***)(void *)((char *)l + PYEXT_LIST_ITEMS_AT);
            PyObject *old = *item;
            *item = msg;
            Py_XDECREF(old); /* last: the list is whole when its release runs */
        } else {
            PyList_SetItem(l, 0, msg); /* steals msg, releases the old item */
        }
        return l;
    }
    l = PyList_New(1);
    if (!l) {
        Py_DECREF(msg);
        return NULL;
    }
    PyList_SetItem(l, 0, msg);
    if (Py_SIZE(msg) < (Py_ssize_t)PYEXT_GIL_COPY) {
        PyObject *old = s->last;
        Py_INCREF(l);
        s->last = l;
        Py_XDECREF(old);
    }
    return l;
}

/* A handler raised while a message was being handed over: the message rides
 * on the exception (.messages). */
static __attribute__((noinline, cold)) PyObject *deliver_interrupted(PyObject *msg)
{
    PyObject *list = PyList_New(1);

    if (list) {
        PyList_SetItem(list, 0, msg); /* steals msg */
        pyext_attach_messages(list);
        Py_DECREF(list);
    } else {
        Py_DECREF(msg);
    }
    return NULL;
}

/* Hand a consumed message over: run pending signal handlers first, so a
 * KeyboardInterrupt raised by one carries the message instead of losing it.
 * Inlined: every one-message read ends here. */
static inline __attribute__((always_inline)) PyObject *deliver(pyext_side_t *s, PyObject *msg,
                                                              int as_list)
{
    if (PYEXT_UNLIKELY(PyErr_CheckSignals() < 0))
        return deliver_interrupted(msg);
    return as_list ? list_of_one(s, msg) : msg;
}

/* read()'s wait: own the side, wait in slices without the GIL, take the
 * message.  timeout_ns -1 = no limit. */
static PyObject *read_wait(pyext_side_t *s, int64_t timeout_ns, PyObject *timeout, int fill)
{
    pyq_queue_t *h = s->h;
    int64_t deadline = timeout_ns < 0 ? 0 : pyext_now_ns() + timeout_ns;
    collect_t c;

    if (pyext_side_own(s, 0, 1) != 1)
        return pyext_side_in_use(s);
    for (;;) {
        int64_t slice = PYEXT_SLICE_NS;
        int rc, got;
        if (timeout_ns >= 0) {
            int64_t left = deadline - pyext_now_ns();
            slice = left < 0 ? 0 : (left < slice ? left : slice);
        }
        /* h stays valid: close() waits for this owner before it unmaps. */
        Py_BEGIN_ALLOW_THREADS
        rc = pyext_core.reader_wait(h, slice);
        Py_END_ALLOW_THREADS
        if (!s->h) { /* close() began while we waited */
            pyext_side_disown(s);
            return pyext_side_closed(s);
        }
        if (PyErr_CheckSignals() < 0) {
            pyext_side_disown(s);
            return NULL;
        }
        if (!s->h) { /* a signal handler closed the queue */
            pyext_side_disown(s);
            return pyext_side_closed(s);
        }
        if (rc == 0) {
            pyext_side_disown(s);
            return pyext_side_end_of_stream(s);
        }
        if (rc < 0 && rc != PYQ_EAGAIN) { /* a shared segment found corrupt */
            pyext_side_disown(s);
            return pyext_raise(rc, "read");
        }
        if (rc == 1 && fill) { /* iteration: take everything visible */
            int64_t k = fill_pending(s, 1);
            if (k != 0) {
                pyext_side_disown(s);
                if (k < 0)
                    return NULL;
                return HAS_PENDING(s) ? deliver(s, pending_take(s), 0) : pyext_side_closed(s);
            }
        } else if (rc == 1) {
            got = poll_one(s, &c, 1);
            if (got != 0) {
                pyext_side_disown(s);
                return got < 0 ? NULL : deliver(s, c.one, 0);
            }
        }
        if (timeout_ns >= 0 && slice < PYEXT_SLICE_NS && pyext_now_ns() >= deadline) {
            pyext_side_disown(s);
            PyObject *m = PyUnicode_FromFormat("read: no message within %R s", timeout);
            if (m) {
                pyext_raise_queue(pyext_QueueEmpty, PYQ_EAGAIN, PyUnicode_AsUTF8AndSize(m, NULL));
                Py_DECREF(m);
            }
            return NULL;
        }
    }
}

/* read(timeout) and its spellings get / get_nowait; with fill, iteration
 * (which takes everything visible into the pending array).  tns: the timeout
 * parsed (-1: no limit), timeout: as given, for the message. */
static PyObject *do_read(pyext_side_t *s, int64_t tns, PyObject *timeout, int nowait, int fill)
{
    collect_t c;
    int got, rc;

    if (nowait)
        tns = 0;
    if (PYEXT_UNLIKELY(!s->h) && pyext_side_need(s) < 0)
        return NULL;
    if (PYEXT_UNLIKELY(s->busy))
        return pyext_side_in_use(s);
    if (PYEXT_UNLIKELY(s->frame))
        return pyext_frame_held(s, 0);
    if (HAS_PENDING(s))
        return deliver(s, pending_take(s), 0);
    if (fill) {
        int64_t k = fill_pending(s, 0);
        if (k < 0)
            return NULL;
        if (k > 0)
            return HAS_PENDING(s) ? deliver(s, pending_take(s), 0) : pyext_side_closed(s);
    } else {
        got = poll_one(s, &c, 0);
        if (got)
            return got < 0 ? NULL : deliver(s, c.one, 0);
    }
    if (tns != 0)
        return read_wait(s, tns, timeout ? timeout : Py_None, fill);
    /* Nothing there and no time to wait: one look tells empty from ended. */
    rc = pyext_core.reader_wait(s->h, 0);
    if (rc == 0)
        return pyext_side_end_of_stream(s);
    if (rc < 0 && rc != PYQ_EAGAIN)
        return pyext_raise(rc, nowait ? "get_nowait" : "read");
    if (rc == 1 && (got = poll_one(s, &c, 0)) != 0)
        return got < 0 ? NULL : deliver(s, c.one, 0);
    if (nowait)
        return pyext_raise_queue(pyext_QueueEmpty, PYQ_EAGAIN, "get_nowait: no message");
    {
        PyObject *m = PyUnicode_FromFormat("read: no message within %R s", timeout);
        if (m) {
            pyext_raise_queue(pyext_QueueEmpty, PYQ_EAGAIN, PyUnicode_AsUTF8AndSize(m, NULL));
            Py_DECREF(m);
        }
    }
    return NULL;
}

/* read() / get() / get_nowait(), the timeout parsed (tns -1: no limit, the
 * object for the message): the hot path, else the general one. */
static inline __attribute__((always_inline)) PyObject *read_within(pyext_side_t *s, int64_t tns,
                                                                   PyObject *timeout, int nowait)
{
    PyObject *m;
    int got = fast_read(s, &m);
    if (got)
        return got < 0 ? NULL : deliver(s, m, 0);
    return do_read(s, tns, timeout, nowait, 0);
}

static pyext_params_t READ_PARAMS = {"read", 0, 1, {"timeout"}, {NULL}};

static PyObject *reader_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    PyObject *a[1];
    int64_t tns;

    if (nargs == 0 && !kwnames)
        return read_within((pyext_side_t *)self, -1, NULL, 0);
    if (nargs == 0 && pyext_only_kw(&READ_PARAMS, 0, kwnames)) { /* read(timeout=t) */
        if (pyext_timeout(args[0], &tns) < 0)
            return NULL;
        return read_within((pyext_side_t *)self, tns, args[0], 0);
    }
    if (pyext_args(&READ_PARAMS, args, nargs, kwnames, a) < 0 || pyext_timeout(a[0], &tns) < 0)
        return NULL;
    return read_within((pyext_side_t *)self, tns, a[0], 0);
}

static pyext_params_t GET_PARAMS = {"get", 0, 2, {"block", "timeout"}, {NULL}};

static PyObject *reader_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[2];
    int block = 1;
    int64_t tns = -1;

    if (nargs == 0 && !kwnames)
        return pyext_loaded(s, read_within(s, -1, NULL, 0));
    if ((nargs == 0 && pyext_only_kw(&GET_PARAMS, 1, kwnames)) || /* get(timeout=t) */
        (nargs == 2 && !kwnames && args[0] == Py_True)) {          /* get(True, t) */
        PyObject *t = args[nargs ? 1 : 0];
        if (pyext_timeout(t, &tns) < 0)
            return NULL;
        return pyext_loaded(s, read_within(s, tns, t, 0));
    }
    if (pyext_args(&GET_PARAMS, args, nargs, kwnames, a) < 0)
        return NULL;
    if (a[0] && (block = PyObject_IsTrue(a[0])) < 0)
        return NULL;
    /* As queue.Queue.get: without block the timeout is ignored, unparsed. */
    if (block && pyext_timeout(a[1], &tns) < 0)
        return NULL;
    return pyext_loaded(s, read_within(s, tns, block ? a[1] : NULL, !block));
}

/* METH_FASTCALL, not METH_NOARGS: CPython 3.11 specializes a call of a bound
 * FASTCALL builtin (r.get_nowait held in a variable), not one of NOARGS. */
static PyObject *reader_get_nowait(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyext_side_t *s = (pyext_side_t *)self;

    if (PYEXT_UNLIKELY(nargs != 0)) {
        PyErr_Format(PyExc_TypeError, "get_nowait() takes no arguments (%zd given)", nargs);
        return NULL;
    }
    return pyext_loaded(s, read_within(s, 0, NULL, 1));
}

static PyObject *reader_iter(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *reader_next(PyObject *self)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *m;

    /* What the last fill took, one per next(): no core call, no argument. */
    if (PYEXT_LIKELY(HAS_PENDING(s) && s->h && !s->busy))
        return pyext_loaded(s, deliver(s, pending_take(s), 0));
    m = pyext_loaded(s, do_read(s, -1, NULL, 0, 1));
    if (!m && PyErr_ExceptionMatches(pyext_EndOfStream))
        PyErr_Clear(); /* the end of the loop: StopIteration */
    return m;
}

/* Move arr[0 .. k) (references) to the end of *list, made on first use. */
static int to_list(PyObject **list, PyObject **arr, uint32_t k)
{
    PyObject *part = pyext_list_of(arr, k);
    int rc;

    if (!part)
        return -1;
    if (!*list) {
        *list = part;
        return 0;
    }
    rc = PyList_SetSlice(*list, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, part);
    Py_DECREF(part);
    return rc;
}

/* poll(n) for n != 1: iteration's pending messages, then up to max messages
 * (or, with no limit, at most the count written-and-unread when the call
 * began, so a faster writer cannot keep it going) in chunks of POLL_CHUNK,
 * each collected into an array and turned into list items at once; Ctrl-C is
 * looked at between chunks. */
static PyObject *poll_many(pyext_side_t *s, uint64_t max, int unlimited)
{
    PyObject *arr[POLL_CHUNK], *list = NULL;
    collect_t c;
    uint64_t left;
    int64_t n = 0;

    c.side = s;
    c.arr = arr;
    c.n = 0;
    c.bytes = 0;
    c.stop = UINT64_MAX;
    c.owned = 0;
    c.failed = 0;
    /* PYEXT_PENDING < POLL_CHUNK: every pending message fits. */
    while (HAS_PENDING(s) && (unlimited || c.n < max))
        arr[c.n++] = pending_take(s);
    if (unlimited) {
        /* The budget ends the call between chunks, never inside one: a chunk
         * that asks for more than is there also looks past the last message,
         * and so hands a drained block back to the writer at once. */
        pyq_stats_t st;
        pyext_core.queue_stats(s->h, &st);
        left = st.messages_written - st.messages_read;
    } else {
        left = max - c.n;
    }
    for (int first = 1; left > 0 || (unlimited && first); first = 0) {
        uint64_t room = POLL_CHUNK - c.n;
        uint64_t want = !unlimited && left < room ? left : room;
        n = POLL(s, want, take_pending, &c);
        if (c.owned) {
            pyext_side_disown(s);
            c.owned = 0;
        }
        if (n > 0)
            left = (uint64_t)n < left ? left - (uint64_t)n : 0;
        if (to_list(&list, arr, c.n) < 0 || c.failed || n < 0) {
            if (!PyErr_Occurred())
                pyext_raise((int)n, "poll");
            c.n = 0;
            goto fail;
        }
        c.n = 0;
        if (PyErr_CheckSignals() < 0)
            goto fail;
        if ((uint64_t)n < want || !s->h) /* drained, or a handler closed the queue */
            break;
    }
    if (c.n) { /* only pending messages: the core was not asked */
        if (to_list(&list, arr, c.n) < 0)
            goto fail;
        if (PyErr_CheckSignals() < 0)
            goto fail;
    }
    return list ? list : PyList_New(0);
fail:
    if (list) {
        pyext_attach_messages(list);
        Py_DECREF(list);
    }
    return NULL;
}

/* poll() found nothing on a shared queue: the core's non-blocking look, which
 * also looks at the writer's process (rate-limited there): 1 when a dead
 * writer's last messages became visible (poll again), -1 with EndOfStream when
 * it died and everything was read (a writer that detached leaves poll() its
 * empty list), or another error; 0: nothing. */
static int poll_found_nothing(pyext_side_t *s)
{
    int rc;

    /* Every 8th: an empty-poll loop pays an increment (the core looks at the
     * writer at most every 10 ms anyway). */
    if (s->empty_polls++ % 8)
        return 0;
    rc = pyext_core.reader_wait(s->h, 0);

    if (rc == 1)
        return 1;
    if (rc == 0 && pyext_core.queue_dead_peer(s->h, PYQ_SIDE_WRITER)) {
        pyext_side_end_of_stream(s);
        return -1;
    }
    if (rc < 0 && rc != PYQ_EAGAIN) {
        pyext_raise(rc, "poll");
        return -1;
    }
    return 0;
}

static PyObject *reader_poll(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    static pyext_params_t POLL_PARAMS = {"poll", 0, 1, {"max_messages"}, {NULL}};
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[1] = {NULL}, *lim;
    unsigned long long max = 0;
    int unlimited;

    if (nargs == 1 && !kwnames) {
        a[0] = args[0];
        if (a[0] == pyext_one) { /* poll(1): the per-message path */
            PyObject *m;
            int got = fast_read(s, &m);
            if (got)
                return got < 0 ? NULL : deliver(s, m, 1);
        }
    } else if (pyext_args(&POLL_PARAMS, args, nargs, kwnames, a) < 0)
        return NULL;
    lim = a[0];
    unlimited = lim == NULL || lim == Py_None;
    if (!unlimited) {
        int overflow = 0;
        if (PyLong_CheckExact(lim))
            max = (unsigned long long)PyLong_AsLongLongAndOverflow(lim, &overflow);
        if (!PyLong_CheckExact(lim) || overflow || (long long)max < 0) {
            /* the package's one validator words the error (or accepts a bool-free int) */
            PyObject *v = PyObject_CallFunctionObjArgs(pyext_max_messages, lim, NULL);
            if (!v)
                return NULL;
            max = PyLong_AsUnsignedLongLong(v);
            Py_DECREF(v);
            if (PyErr_Occurred())
                return NULL;
        }
    }
    if (PYEXT_UNLIKELY(!s->h) && pyext_side_need(s) < 0)
        return NULL;
    if (PYEXT_UNLIKELY(s->busy))
        return pyext_side_in_use(s);
    if (PYEXT_UNLIKELY(s->frame))
        return pyext_frame_held(s, 0);
    if (max == 1 && !unlimited) { /* the per-message path */
        collect_t c;
        int got;
        if (HAS_PENDING(s))
            return deliver(s, pending_take(s), 1);
        got = poll_one(s, &c, 0);
        if (got == 0 && s->shared && (got = poll_found_nothing(s)) > 0)
            got = poll_one(s, &c, 0);
        if (got < 0)
            return NULL;
        return got ? deliver(s, c.one, 1) : PyList_New(0);
    }
    {
        PyObject *l = poll_many(s, max, unlimited);
        int more;
        if (!l || !s->shared || PyList_Size(l) != 0 || (!unlimited && max == 0))
            return l;
        more = poll_found_nothing(s);
        if (more == 0)
            return l;
        Py_DECREF(l);
        return more < 0 ? NULL : poll_many(s, max, unlimited);
    }
}

/* A limit of get_many: None (no limit: UINT64_MAX) or an integer >= lo.
 * 0, or -1 with TypeError / ValueError naming it. */
static int many_limit(PyObject *v, const char *name, long long lo, uint64_t *out)
{
    PyObject *i;
    long long x;
    int overflow;

    if (!v || v == Py_None) {
        *out = UINT64_MAX;
        return 0;
    }
    if (PyBool_Check(v) || !PyIndex_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be None or an integer >= %lld, got %R", name, lo, v);
        return -1;
    }
    if (!(i = PyNumber_Index(v)))
        return -1;
    x = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow < 0 || (!overflow && x < lo)) {
        PyErr_Format(PyExc_ValueError, "%s must be None or an integer >= %lld, got %R", name, lo, v);
        return -1;
    }
    *out = overflow ? UINT64_MAX : (uint64_t)x;
    return 0;
}

/* The serializer's loads of every message of list, in place.  0, or -1 with
 * the exception carrying the list as .messages: objects before the one that
 * failed, bytes from it on (every message the call consumed). */
static int loads_all(pyext_side_t *s, PyObject *list)
{
    Py_ssize_t i, n = PyList_Size(list);

    for (i = 0; i < n; i++) {
        PyObject *obj = PyObject_CallFunctionObjArgs(s->loads, PyList_GetItem(list, i), NULL);
        if (!obj) {
            pyext_attach_messages(list);
            return -1;
        }
        PyList_SetItem(list, i, obj); /* steals obj, releases the bytes */
    }
    return 0;
}

static pyext_params_t GET_MANY_PARAMS = {
    "get_many", 0, 4, {"block", "timeout", "max_messages_to_get", "max_bytes_to_get"}, {NULL}};

/* faster-fifo's get_many: the first message as get() takes it (waiting as
 * block and timeout say), then what else is visible, up to max_messages_to_get
 * messages whose payload stays within max_bytes_to_get (the first is returned
 * whatever its size), at most what was there when the first came.  Messages are
 * taken as iteration takes them, a fill of the pending array per core call, and
 * what the limits leave stays pending for the next reader call. */
static PyObject *reader_get_many(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[4], *first, *list = NULL, *arr[POLL_CHUNK];
    int block = 1;
    int64_t tns = -1;
    uint64_t max_n, max_b, count, bytes;
    uint32_t k = 0;

    if (pyext_args(&GET_MANY_PARAMS, args, nargs, kwnames, a) < 0)
        return NULL;
    if (a[0] && (block = PyObject_IsTrue(a[0])) < 0)
        return NULL;
    if (block && pyext_timeout(a[1], &tns) < 0)
        return NULL;
    if (many_limit(a[2], "max_messages_to_get", 1, &max_n) < 0 ||
        many_limit(a[3], "max_bytes_to_get", 0, &max_b) < 0)
        return NULL;
    first = do_read(s, tns, block ? a[1] : NULL, !block, 1);
    if (!first)
        return NULL;
    arr[k++] = first;
    count = 1;
    bytes = (uint64_t)Py_SIZE(first);
    if (max_n == UINT64_MAX) { /* no limit: what is there now, so a faster writer cannot keep it going */
        uint64_t there = s->pending_n - s->pending_at;
        if (s->h) {
            pyq_stats_t st;
            pyext_core.queue_stats(s->h, &st);
            there += st.messages_written - st.messages_read;
        }
        max_n = 1 + there;
    }
    while (count < max_n) {
        uint64_t len;
        if (!HAS_PENDING(s)) {
            int64_t got;
            if (!s->h || s->busy)
                break;
            if ((got = fill_pending(s, 0)) < 0)
                goto fail;
            if (got == 0 || !HAS_PENDING(s))
                break;
        }
        len = (uint64_t)Py_SIZE(s->pending[s->pending_at]);
        if (bytes + len > max_b) /* it stays pending (the sum is far from overflowing) */
            break;
        arr[k++] = pending_take(s);
        count++;
        bytes += len;
        if (k == POLL_CHUNK) {
            int rc = to_list(&list, arr, k);
            k = 0;
            if (rc < 0)
                goto fail;
        }
    }
    if (k) {
        int rc = to_list(&list, arr, k);
        k = 0;
        if (rc < 0)
            goto fail;
    }
    if (PyErr_CheckSignals() < 0 || (s->loads && loads_all(s, list) < 0))
        goto fail;
    return list;
fail:
    if (k && to_list(&list, arr, k) < 0)
        PyErr_Clear(); /* MemoryError over the first error: the messages are lost with it */
    if (list) {
        pyext_attach_messages(list);
        Py_DECREF(list);
    }
    return NULL;
}

/* _pending_into(address, n, size): poll_into's first part, the pending
 * messages of exactly size bytes copied into n rows at address.  The count,
 * or -1 - len when the first pending message is len bytes, not size. */
static PyObject *reader_pending_into(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyext_side_t *s = (pyext_side_t *)self;
    unsigned long long n, size, k = 0;
    char *dst;

    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_pending_into(address, n, size)");
        return NULL;
    }
    dst = PyLong_AsVoidPtr(args[0]);
    n = PyLong_AsUnsignedLongLong(args[1]);
    size = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (s->busy)
        return pyext_side_in_use(s);
    if (s->frame)
        return pyext_frame_held(s, 0);
    while (HAS_PENDING(s) && k < n) {
        PyObject *m = s->pending[s->pending_at];
        Py_ssize_t len = Py_SIZE(m);
        if ((unsigned long long)len != size) {
            if (k == 0)
                return PyLong_FromLongLong(-1 - (long long)len);
            break;
        }
        memcpy(dst + k * size, pyext_bytes_ptr(m), (size_t)size);
        Py_DECREF(pending_take(s));
        k++;
    }
    return PyLong_FromUnsignedLongLong(k);
}

static PyObject *reader_read_count(PyObject *self, PyObject *unused)
{
    return pyext_side_counter((pyext_side_t *)self, 0);
}

static PyMethodDef reader_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))reader_poll, METH_FASTCALL | METH_KEYWORDS,
     "poll($self, /, max_messages=None)\n--\n\n"
     "Return up to ``max_messages`` visible messages as a list of bytes, FIFO\n"
     "(None: every message there when the call began).  Never waits; keeps\n"
     "the GIL except while copying a message of 16 KiB or more.  Interrupted\n"
     "(Ctrl-C), the exception's ``messages`` holds what the call consumed.\n"
     "On a shared queue whose writer's process died, EndOfStream once every\n"
     "message it committed was read."},
    {"read", (PyCFunction)(void (*)(void))reader_read, METH_FASTCALL | METH_KEYWORDS,
     "read($self, /, timeout=None)\n--\n\n"
     "The next message as bytes, waiting for one for at most ``timeout``\n"
     "seconds (None = no limit).  A message already there is returned without\n"
     "releasing the GIL; the wait runs in C without it (spin, then sleeps up to\n"
     "50 us), marking the reader side busy.  Raises QueueEmpty (a queue.Empty)\n"
     "when the time runs out, and EndOfStream once the writer has detached\n"
     "(Writer.detach()) and every message was read.  The timeout is\n"
     "queue.Queue's: a real number >= 0 (negative or NaN: ValueError), parsed\n"
     "in C; inf or a huge one is no limit."},
    {"get", (PyCFunction)(void (*)(void))reader_get, METH_FASTCALL | METH_KEYWORDS,
     "get($self, /, block=True, timeout=None)\n--\n\n"
     "queue.Queue.get: read(timeout) when block, else get_nowait() (the\n"
     "timeout ignored, as queue.Queue does).  With a serializer\n"
     "(Queue(serializer=...)), the object: the serializer's loads(message)."},
    {"get_nowait", (PyCFunction)(void (*)(void))reader_get_nowait, METH_FASTCALL,
     "get_nowait($self, /)\n--\n\n"
     "queue.Queue.get_nowait: the next message without waiting; QueueEmpty\n"
     "(a queue.Empty) when none is there, EndOfStream once the writer has\n"
     "detached and every message was read.  An object with a serializer."},
    {"get_many", (PyCFunction)(void (*)(void))reader_get_many, METH_FASTCALL | METH_KEYWORDS,
     "get_many($self, /, block=True, timeout=None, max_messages_to_get=None,\n"
     "         max_bytes_to_get=None)\n--\n\n"
     "faster-fifo's get_many: a list of the next messages, at least one.  The\n"
     "first is waited for as get(block, timeout) waits (QueueEmpty on timeout,\n"
     "EndOfStream once the writer has detached and all was read); then what\n"
     "else is there now, up to max_messages_to_get messages (None: no limit)\n"
     "whose payload stays within max_bytes_to_get bytes (None: no limit; the\n"
     "first message is returned whatever its size).  Objects with a serializer.\n"
     "What the limits leave stays for the next call."},
    {"get_view", (PyCFunction)(void (*)(void))pyext_reader_get_view,
     METH_FASTCALL | METH_KEYWORDS,
     "get_view($self, /, block=True, timeout=None)\n--\n\n"
     "The next message in place, without a copy: a View, a read-only buffer\n"
     "(memoryview(v), numpy.frombuffer(v)) into the queue, valid until\n"
     "v.release() or the end of ``with r.get_view() as v:``; its space goes\n"
     "back to the writer then.  Waits as get(block, timeout) does\n"
     "(QueueEmpty, EndOfStream).  One view at a time: other reader calls\n"
     "raise QueueError while it is held."},
    {"_messages_read", reader_read_count, METH_NOARGS,
     "_messages_read() -> int: the queue's messages_read counter."},
    {"_pending_into", (PyCFunction)(void (*)(void))reader_pending_into, METH_FASTCALL,
     "_pending_into(address, n, size) -> int: poll_into's pending part (see Reader.poll_into)."},
    PYEXT_SIDE_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyType_Slot reader_slots[] = {
    {Py_tp_doc, "The reader side's per-message calls, in C (pyqueue.Reader derives from it)."},
    {Py_tp_methods, reader_methods},
    {Py_tp_iter, reader_iter},
    {Py_tp_iternext, reader_next},
    {Py_tp_dealloc, pyext_side_dealloc},
    {Py_tp_traverse, pyext_side_traverse},
    {Py_tp_clear, pyext_side_tp_clear},
    {0, NULL},
};

PyType_Spec pyext_reader_spec = {
    .name = "pyqueue._pyext.ReaderCore",
    .basicsize = sizeof(pyext_side_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = reader_slots,
};
