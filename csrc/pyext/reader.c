/*
 * reader.c - the reader side's per-message calls (DESIGN §5.3): poll, read,
 * get, get_nowait and iteration.  Messages go from the block straight into new
 * bytes objects (pyq_reader_poll's callback), with the GIL held; a read that
 * must wait owns the side and waits in C without the GIL, in slices.
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
    PyObject *list; /* poll(n): where messages go */
    PyObject *one;  /* poll(1) / read: the message */
    int owned;      /* this call owns the side (a wait, or a big copy) */
    int failed;     /* an exception is set */
} collect_t;

/* One message as bytes; a big one copied without the GIL, the side owned. */
static PyObject *as_bytes(collect_t *c, const void *msg, uint32_t len)
{
    PyObject *b;

    if (len < PYEXT_GIL_COPY)
        return PyBytes_FromStringAndSize(msg, len);
    b = PyBytes_FromStringAndSize(NULL, len);
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

static int take_one(void *ctx, const void *msg, uint32_t len)
{
    collect_t *c = ctx;
    c->one = as_bytes(c, msg, len);
    if (!c->one) {
        c->failed = 1;
        return -1;
    }
    return 0;
}

static int take_many(void *ctx, const void *msg, uint32_t len)
{
    collect_t *c = ctx;
    PyObject *b = as_bytes(c, msg, len);
    if (!b || PyList_Append(c->list, b) < 0) {
        Py_XDECREF(b);
        c->failed = 1;
        return -1;
    }
    Py_DECREF(b);
    return 0;
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

/* Hand a consumed message over: run pending signal handlers first, so a
 * KeyboardInterrupt raised by one carries the message instead of losing it. */
static PyObject *deliver(PyObject *msg, int as_list)
{
    PyObject *list;

    if (PyErr_CheckSignals() < 0) {
        list = PyList_New(1);
        if (list) {
            PyList_SetItem(list, 0, msg); /* steals msg */
            pyext_attach_messages(list);
            Py_DECREF(list);
        } else {
            Py_DECREF(msg);
        }
        return NULL;
    }
    if (!as_list)
        return msg;
    list = PyList_New(1);
    if (!list) {
        Py_DECREF(msg);
        return NULL;
    }
    PyList_SetItem(list, 0, msg);
    return list;
}

/* read()'s wait: own the side, wait in slices without the GIL, take the
 * message.  timeout_ns -1 = no limit. */
static PyObject *read_wait(pyext_side_t *s, int64_t timeout_ns, PyObject *timeout)
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
        if (rc == 1) {
            got = poll_one(s, &c, 1);
            if (got != 0) {
                pyext_side_disown(s);
                return got < 0 ? NULL : deliver(c.one, 0);
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

/* read(timeout) and its spellings get / get_nowait / iteration. */
static PyObject *do_read(pyext_side_t *s, PyObject *timeout, int nowait)
{
    int64_t tns = -1;
    collect_t c;
    int got, rc;

    if (nowait)
        tns = 0;
    else if (timeout && timeout != Py_None && pyext_timeout(timeout, &tns) < 0)
        return NULL;
    if (!s->h && pyext_side_need(s) < 0)
        return NULL;
    if (s->busy)
        return pyext_side_in_use(s);
    got = poll_one(s, &c, 0);
    if (got)
        return got < 0 ? NULL : deliver(c.one, 0);
    if (tns != 0)
        return read_wait(s, tns, timeout ? timeout : Py_None);
    /* Nothing there and no time to wait: one look tells empty from ended. */
    rc = pyext_core.reader_wait(s->h, 0);
    if (rc == 0)
        return pyext_side_end_of_stream(s);
    if (rc == 1 && (got = poll_one(s, &c, 0)) != 0)
        return got < 0 ? NULL : deliver(c.one, 0);
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

static PyObject *reader_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    static const char *const names[] = {"timeout"};
    PyObject *a[1];

    if (nargs == 0 && !kwnames)
        return do_read((pyext_side_t *)self, NULL, 0);
    if (pyext_args("read", args, nargs, kwnames, names, 0, 1, a) < 0)
        return NULL;
    return do_read((pyext_side_t *)self, a[0], 0);
}

static PyObject *reader_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    static const char *const names[] = {"block", "timeout"};
    PyObject *a[2];
    int block = 1;

    if (pyext_args("get", args, nargs, kwnames, names, 0, 2, a) < 0)
        return NULL;
    if (a[0] && (block = PyObject_IsTrue(a[0])) < 0)
        return NULL;
    return do_read((pyext_side_t *)self, block ? a[1] : NULL, !block);
}

static PyObject *reader_get_nowait(PyObject *self, PyObject *unused)
{
    return do_read((pyext_side_t *)self, NULL, 1);
}

static PyObject *reader_iter(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *reader_next(PyObject *self)
{
    PyObject *m = do_read((pyext_side_t *)self, NULL, 0);
    if (!m && PyErr_ExceptionMatches(pyext_EndOfStream))
        PyErr_Clear(); /* the end of the loop: StopIteration */
    return m;
}

/* poll(n) for n != 1: up to max messages (or, with no limit, at most the
 * count written-and-unread when the call began, so a faster writer cannot keep
 * it going) in chunks, Ctrl-C looked at between chunks. */
static PyObject *poll_many(pyext_side_t *s, uint64_t max, int unlimited)
{
    collect_t c;
    PyObject *list = PyList_New(0);
    uint64_t done = 0;

    if (!list)
        return NULL;
    if (!s->h) { /* PyList_New may collect garbage, and a finalizer may close */
        Py_DECREF(list);
        return pyext_side_closed(s);
    }
    if (unlimited) {
        /* The budget ends the call between chunks, never inside one: a chunk
         * that asks for more than is there also looks past the last message,
         * and so hands a drained block back to the writer at once. */
        pyq_stats_t st;
        pyext_core.queue_stats(s->h, &st);
        max = st.messages_written - st.messages_read;
    }
    c.side = s;
    c.list = list;
    c.owned = 0;
    c.failed = 0;
    for (int first = 1; done < max || (unlimited && first); first = 0) {
        uint64_t want = !unlimited && max - done < POLL_CHUNK ? max - done : POLL_CHUNK;
        int64_t n = pyext_core.reader_poll(s->h, want, take_many, &c);
        if (c.owned) {
            pyext_side_disown(s);
            c.owned = 0;
        }
        if (c.failed || n < 0) {
            if (!c.failed)
                pyext_raise((int)n, "poll");
            pyext_attach_messages(list);
            Py_DECREF(list);
            return NULL;
        }
        done += (uint64_t)n;
        if (PyErr_CheckSignals() < 0) {
            pyext_attach_messages(list);
            Py_DECREF(list);
            return NULL;
        }
        if ((uint64_t)n < want || !s->h) /* drained, or a handler closed the queue */
            break;
    }
    return list;
}

static PyObject *reader_poll(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    static const char *const names[] = {"max_messages"};
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[1] = {NULL}, *lim;
    unsigned long long max = 0;
    int unlimited;

    if (nargs == 1 && !kwnames)
        a[0] = args[0];
    else if (pyext_args("poll", args, nargs, kwnames, names, 0, 1, a) < 0)
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
    if (!s->h && pyext_side_need(s) < 0)
        return NULL;
    if (s->busy)
        return pyext_side_in_use(s);
    if (max == 1 && !unlimited) { /* the per-message path */
        collect_t c;
        int got = poll_one(s, &c, 0);
        if (got < 0)
            return NULL;
        return got ? deliver(c.one, 1) : PyList_New(0);
    }
    return poll_many(s, max, unlimited);
}

static PyMethodDef reader_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))reader_poll, METH_FASTCALL | METH_KEYWORDS,
     "poll($self, /, max_messages=None)\n--\n\n"
     "Return up to ``max_messages`` visible messages as a list of bytes, FIFO\n"
     "(None: every message there when the call began).  Never waits; keeps\n"
     "the GIL except while copying a message of 16 KiB or more.  Interrupted\n"
     "(Ctrl-C), the exception's ``messages`` holds what the call consumed."},
    {"read", (PyCFunction)(void (*)(void))reader_read, METH_FASTCALL | METH_KEYWORDS,
     "read($self, /, timeout=None)\n--\n\n"
     "The next message as bytes, waiting for one for at most ``timeout``\n"
     "seconds (None = no limit).  A message already there is returned without\n"
     "releasing the GIL; the wait runs in C without it (spin, then sleeps up to\n"
     "50 us), marking the reader side busy.  Raises QueueEmpty (a queue.Empty)\n"
     "when the time runs out, and EndOfStream once the writer has detached\n"
     "(Writer.detach()) and every message was read."},
    {"get", (PyCFunction)(void (*)(void))reader_get, METH_FASTCALL | METH_KEYWORDS,
     "get($self, /, block=True, timeout=None)\n--\n\n"
     "queue.Queue.get: read(timeout) when block, else get_nowait()."},
    {"get_nowait", reader_get_nowait, METH_NOARGS,
     "get_nowait($self, /)\n--\n\n"
     "queue.Queue.get_nowait: the next message without waiting; QueueEmpty\n"
     "(a queue.Empty) when none is there, EndOfStream once the writer has\n"
     "detached and every message was read."},
    PYEXT_SIDE_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyType_Slot reader_slots[] = {
    {Py_tp_doc, "The reader side's per-message calls, in C (pyqueue.Reader derives from it)."},
    {Py_tp_methods, reader_methods},
    {Py_tp_iter, reader_iter},
    {Py_tp_iternext, reader_next},
    {Py_tp_dealloc, pyext_side_dealloc},
    {0, NULL},
};

PyType_Spec pyext_reader_spec = {
    .name = "pyqueue._pyext.ReaderCore",
    .basicsize = sizeof(pyext_side_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = reader_slots,
};
