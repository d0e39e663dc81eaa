/*
 * writer.c - the writer side's per-message calls: write,
 * try_write, put, put_nowait.  With room in the queue a write is one core
 * call with the GIL held; only a write that must wait owns the side and
 * releases the GIL, in slices that see Ctrl-C and close().
 */
#include "pyext/pyext_pvt.h"

/* The message as a pointer and a length: bytes directly, any other
 * C-contiguous buffer through the buffer protocol (view released by the caller
 * when *viewed).  0, or -1 with TypeError / ValueError. */
static inline int message(PyObject *data, Py_buffer *view, int *viewed, const char **p,
                          Py_ssize_t *n)
{
    *viewed = 0;
    if (PYEXT_LIKELY(PyBytes_CheckExact(data))) { /* inline, unlike PyBytes_Check */
        *p = pyext_bytes_ptr(data);
        *n = Py_SIZE(data);
        return 0;
    }
    if (PyUnicode_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "a message is bytes-like, not str: encode it first");
        return -1;
    }
    if (PyObject_GetBuffer(data, view, PyBUF_SIMPLE) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError)) { /* as numpy says it: a value problem */
            PyObject *t, *v, *tb;
            PyErr_Fetch(&t, &v, &tb);
            PyErr_Format(PyExc_ValueError, "a message must be a C-contiguous buffer (%S); copy it "
                         "with bytes(...) first", v ? v : Py_None);
            Py_XDECREF(t);
            Py_XDECREF(v);
            Py_XDECREF(tb);
        }
        return -1;
    }
    *viewed = 1;
    *p = view->buf;
    *n = view->len;
    return 0;
}

#define TRY_WRITE PYEXT_TRY_WRITE

/* Every write spelling's hot path: exact bytes, a bound side nobody owns,
 * room now.  1: written; 0: nothing done, take the general path (which words
 * every refusal). */
static inline __attribute__((always_inline)) int fast_write(pyext_side_t *s, PyObject *data)
{
    Py_ssize_t n;

    if (PYEXT_UNLIKELY(!PyBytes_CheckExact(data) || !s->h || s->busy))
        return 0;
    n = Py_SIZE(data);
    /* A message past a block's worth goes to the large region: do_write
     * copies it without the GIL. */
    if (PYEXT_UNLIKELY(n > (Py_ssize_t)s->block_size - 8))
        return 0;
    return TRY_WRITE(s, pyext_bytes_ptr(data), (uint32_t)n) == 0;
}

/* MessageTooLarge for an n-byte message, raised through the side's Python
 * _too_large() (which words it); returns NULL. */
PyObject *pyext_too_large(pyext_side_t *s, Py_ssize_t n)
{
    PyObject *e = PyObject_CallMethod((PyObject *)s, "_too_large", "n", n);
    if (e) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

/* Wait for room, owning the side: timeout_ns -1 = no limit.  The message is
 * written or the call ends with an exception. */
PyObject *pyext_write_wait(pyext_side_t *s, const char *p, uint32_t n, int64_t timeout_ns,
                           const char *what)
{
    pyq_queue_t *h = s->h;
    int64_t deadline = timeout_ns < 0 ? 0 : pyext_now_ns() + timeout_ns;
    int rc;

    if (pyext_side_own(s, 0, 1) != 1)
        return pyext_side_in_use(s);
    for (;;) {
        int64_t slice = PYEXT_SLICE_NS;
        if (timeout_ns >= 0) {
            int64_t left = deadline - pyext_now_ns();
            slice = left < 0 ? 0 : (left < slice ? left : slice);
        }
        /* h stays valid: close() waits for this owner before it unmaps. */
        Py_BEGIN_ALLOW_THREADS
        rc = pyext_core.writer_write(h, p, n, slice);
        Py_END_ALLOW_THREADS
        if (rc != PYQ_EAGAIN)
            break;
        if (PyErr_CheckSignals() < 0) {
            pyext_side_disown(s);
            return NULL;
        }
        if (timeout_ns >= 0 && slice < PYEXT_SLICE_NS && pyext_now_ns() >= deadline)
            break;
    }
    pyext_side_disown(s);
    if (rc < 0)
        return pyext_raise(rc, what);
    Py_RETURN_NONE;
}

/* The common body of write() and put(): try first with the GIL held, then wait
 * for at most tns ns (-1: no limit) when block. */
static PyObject *do_write(pyext_side_t *s, PyObject *data, int64_t tns, int block,
                          const char *what)
{
    Py_buffer view;
    int viewed, rc;
    const char *p;
    Py_ssize_t n;
    PyObject *res = NULL;

    if (message(data, &view, &viewed, &p, &n) < 0)
        return NULL;
    if (PYEXT_UNLIKELY(n > (Py_ssize_t)s->max_message)) {
        pyext_too_large(s, n);
        goto out;
    }
    if (PYEXT_UNLIKELY(!s->h) && pyext_side_need(s) < 0)
        goto out;
    if (PYEXT_UNLIKELY(s->busy)) {
        pyext_side_in_use(s);
        goto out;
    }
    if (PYEXT_UNLIKELY(n > (Py_ssize_t)s->block_size - 8 && n >= (Py_ssize_t)PYEXT_GIL_COPY)) {
        /* A large message: copied in C without the GIL, the side owned
         * (close() waits for it), whether or not it must wait for room. */
        res = pyext_write_wait(s, p, (uint32_t)n, block ? tns : 0, what);
        goto out;
    }
    rc = TRY_WRITE(s, p, (uint32_t)n);
    if (PYEXT_LIKELY(rc == 0)) {
        res = Py_None;
        Py_INCREF(res);
    } else if (rc != PYQ_EAGAIN) {
        pyext_raise(rc, what);
    } else if (!block || tns == 0) {
        pyext_raise(PYQ_EAGAIN, what);
    } else {
        res = pyext_write_wait(s, p, (uint32_t)n, tns, what);
    }
out:
    if (viewed)
        PyBuffer_Release(&view);
    return res;
}

/* A write that may wait tns ns (-1: no limit): the timeout is parsed already,
 * and the hot path comes first, as for a call without one. */
static inline __attribute__((always_inline)) PyObject *write_within(pyext_side_t *s, PyObject *data,
                                                                    int64_t tns, const char *what)
{
    if (fast_write(s, data))
        Py_RETURN_NONE;
    return do_write(s, data, tns, 1, what);
}

static pyext_params_t WRITE_PARAMS = {"write", 1, 2, {"data", "timeout"}, {NULL}};

/* write() with a timeout or keywords: out of line, so that the per-message
 * call's frame stays small. */
static __attribute__((noinline)) PyObject *write_parsed(PyObject *self, PyObject *const *args,
                                                        Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[2];
    int64_t tns;

    if (nargs == 1 && pyext_only_kw(&WRITE_PARAMS, 1, kwnames)) { /* write(m, timeout=t) */
        if (pyext_timeout(args[1], &tns) < 0)
            return NULL;
        return write_within((pyext_side_t *)self, args[0], tns, "write");
    }
    if (pyext_args(&WRITE_PARAMS, args, nargs, kwnames, a) < 0 || pyext_timeout(a[1], &tns) < 0)
        return NULL;
    return write_within((pyext_side_t *)self, a[0], tns, "write");
}

static PyObject *writer_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    if (nargs == 1 && !kwnames) /* the per-message path: no parsing */
        return write_within((pyext_side_t *)self, args[0], -1, "write");
    return write_parsed(self, args, nargs, kwnames);
}

static PyObject *writer_try_write(PyObject *self, PyObject *data)
{
    pyext_side_t *s = (pyext_side_t *)self;
    Py_buffer view;
    int viewed, rc;
    const char *p;
    Py_ssize_t n;
    PyObject *res = NULL;

    if (fast_write(s, data))
        Py_RETURN_TRUE;
    if (message(data, &view, &viewed, &p, &n) < 0)
        return NULL;
    if (n > (Py_ssize_t)s->max_message)
        pyext_too_large(s, n);
    else if (!s->h && pyext_side_need(s) < 0)
        ;
    else if (s->busy)
        pyext_side_in_use(s);
    else if ((rc = TRY_WRITE(s, p, (uint32_t)n)) == 0)
        res = Py_True;
    else if (rc == PYQ_EAGAIN)
        res = Py_False;
    else
        pyext_raise(rc, "try_write");
    Py_XINCREF(res);
    if (viewed)
        PyBuffer_Release(&view);
    return res;
}

/* put's body once its arguments are parsed: the item serialized when the queue
 * has a serializer, then written as write() would, waiting for at most tns ns
 * when block (-1: no limit). */
static inline __attribute__((always_inline)) PyObject *put_item(pyext_side_t *s, PyObject *item,
                                                                int block, int64_t tns,
                                                                const char *what)
{
    PyObject *data, *res;

    if (PYEXT_LIKELY(!s->dumps)) {
        if (fast_write(s, item))
            Py_RETURN_NONE;
        return do_write(s, item, block ? tns : 0, block, what);
    }
    if (!(data = pyext_dumps(s, item)))
        return NULL;
    res = fast_write(s, data) ? (Py_INCREF(Py_None), Py_None)
                              : do_write(s, data, block ? tns : 0, block, what);
    Py_DECREF(data);
    return res;
}

/* put_item out of line: the general path of the per-message calls, whose
 * frames stay small that way. */
static __attribute__((noinline)) PyObject *put_general(pyext_side_t *s, PyObject *item, int block,
                                                       int64_t tns, const char *what)
{
    return put_item(s, item, block, tns, what);
}

static pyext_params_t PUT_PARAMS = {"put", 1, 3, {"item", "block", "timeout"}, {NULL}};

/* put() with a timeout, block or keywords: out of line (see write_parsed). */
static __attribute__((noinline)) PyObject *put_parsed(PyObject *self, PyObject *const *args,
                                                      Py_ssize_t nargs, PyObject *kwnames)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[3];
    int block = 1;
    int64_t tns = -1;

    if ((nargs == 1 && pyext_only_kw(&PUT_PARAMS, 2, kwnames)) || /* put(m, timeout=t) */
        (nargs == 3 && !kwnames && args[1] == Py_True)) {          /* put(m, True, t) */
        if (pyext_timeout(args[nargs == 3 ? 2 : 1], &tns) < 0)
            return NULL;
        return put_item(s, args[0], 1, tns, "put");
    }
    if (pyext_args(&PUT_PARAMS, args, nargs, kwnames, a) < 0)
        return NULL;
    if (a[1] && (block = PyObject_IsTrue(a[1])) < 0)
        return NULL;
    /* As queue.Queue.put: without block the timeout is ignored, unparsed. */
    if (block && pyext_timeout(a[2], &tns) < 0)
        return NULL;
    return put_item(s, a[0], block, tns, "put");
}

static PyObject *writer_put(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    pyext_side_t *s = (pyext_side_t *)self;

    if (nargs == 1 && !kwnames) { /* the per-message path: no parsing */
        if (PYEXT_LIKELY(!s->dumps) && fast_write(s, args[0]))
            Py_RETURN_NONE;
        return put_general(s, args[0], 1, -1, "put");
    }
    return put_parsed(self, args, nargs, kwnames);
}

static PyObject *writer_put_nowait(PyObject *self, PyObject *item)
{
    pyext_side_t *s = (pyext_side_t *)self;

    if (PYEXT_LIKELY(!s->dumps) && fast_write(s, item)) /* the per-message path */
        Py_RETURN_NONE;
    return put_general(s, item, 0, 0, "put_nowait");
}

static PyObject *writer_flush(PyObject *self, PyObject *unused)
{
    pyext_side_t *s = (pyext_side_t *)self;
    int rc;

    if (!s->h && pyext_side_need(s) < 0)
        return NULL;
    if (s->busy)
        return pyext_side_in_use(s);
    rc = pyext_core.writer_flush(s->h); /* wait-free: the GIL stays */
    if (rc < 0)
        return pyext_raise(rc, "flush");
    Py_RETURN_NONE;
}

static PyObject *writer_written(PyObject *self, PyObject *unused)
{
    return pyext_side_counter((pyext_side_t *)self, 1);
}

static PyMethodDef writer_methods[] = {
    {"write", (PyCFunction)(void (*)(void))writer_write, METH_FASTCALL | METH_KEYWORDS,
     "write($self, data, timeout=None)\n--\n\n"
     "Write one message (bytes-like).  Waits while the queue is full, for at\n"
     "most ``timeout`` seconds (None = no limit); raises QueueFull after.\n"
     "With room it returns without releasing the GIL; a wait releases it and\n"
     "marks the writer side busy (a second thread's call is a QueueError).\n"
     "The timeout is queue.Queue's: a real number >= 0 (negative or NaN:\n"
     "ValueError), parsed in C; inf or a huge one is no limit."},
    {"try_write", writer_try_write, METH_O,
     "try_write($self, data, /)\n--\n\n"
     "Write one message if a block has room now; return False when full.\n"
     "Never waits and never releases the GIL."},
    {"put", (PyCFunction)(void (*)(void))writer_put, METH_FASTCALL | METH_KEYWORDS,
     "put($self, item, block=True, timeout=None)\n--\n\n"
     "queue.Queue.put: write(item, timeout) when block, else put_nowait(item)\n"
     "(the timeout ignored, as queue.Queue does).  QueueFull (a queue.Full)\n"
     "when the queue stays full.  With a serializer (Queue(serializer=...)),\n"
     "item is any object, written as the serializer's dumps(item)."},
    {"put_nowait", writer_put_nowait, METH_O,
     "put_nowait($self, item, /)\n--\n\n"
     "queue.Queue.put_nowait: write without waiting; QueueFull (a queue.Full)\n"
     "when the queue is full.  Any object with a serializer."},
    {"claim", (PyCFunction)(void (*)(void))pyext_writer_claim, METH_FASTCALL | METH_KEYWORDS,
     "claim($self, /, n, timeout=None)\n--\n\n"
     "Reserve a message of exactly ``n`` bytes in the queue and return it as a\n"
     "Claim, a writable buffer (memoryview(c), numpy.frombuffer(c, ...),\n"
     "f.readinto(c)): fill it, then c.commit() -- or ``with w.claim(n) as c:``,\n"
     "which commits on a normal exit and aborts on an exception.  Waits for\n"
     "room as write() does (QueueFull when ``timeout`` runs out).  n larger\n"
     "than Queue.max_message: MessageTooLarge (a ValueError).  One claim at a\n"
     "time: writes raise while it is open."},
    {"put_many", (PyCFunction)(void (*)(void))pyext_writer_put_many, METH_FASTCALL | METH_KEYWORDS,
     "put_many($self, items, block=True, timeout=None)\n--\n\n"
     "faster-fifo's put_many: put every item of a list, a tuple or another\n"
     "iterable, in order, all or none.  When the batch can fit in the queue at\n"
     "once, it waits until it does (for at most ``timeout`` seconds; without\n"
     "block, not at all) and then writes every item without waiting; QueueFull\n"
     "means none was written.  A batch too big for the whole queue is written\n"
     "as room comes, and QueueFull then says how many went in (``written``).\n"
     "Every item is checked (and serialized) before any is written."},
    {"_set_framing", (PyCFunction)(void (*)(void))pyext_writer_set_framing, METH_FASTCALL,
     "_set_framing(block_size, record_align, blocks): what put_many's room check counts with."},
    {"flush", writer_flush, METH_NOARGS,
     "flush($self, /)\n--\n\n"
     "Publish every message written so far (with publish='max').  Wait-free:\n"
     "it keeps the GIL."},
    {"_messages_written", writer_written, METH_NOARGS,
     "_messages_written() -> int: the queue's messages_written counter."},
    PYEXT_SIDE_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyType_Slot writer_slots[] = {
    {Py_tp_doc, "The writer side's per-message calls, in C (pyqueue.Writer derives from it)."},
    {Py_tp_methods, writer_methods},
    {Py_tp_dealloc, pyext_side_dealloc},
    {Py_tp_traverse, pyext_side_traverse},
    {Py_tp_clear, pyext_side_tp_clear},
    {0, NULL},
};

PyType_Spec pyext_writer_spec = {
    .name = "pyqueue._pyext.WriterCore",
    .basicsize = sizeof(pyext_side_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = writer_slots,
};
