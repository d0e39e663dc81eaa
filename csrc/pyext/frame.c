/*
 * frame.c - zero copy from Python (DESIGN §5.6): Writer.claim(n) and
 * Reader.get_view() hand out a Claim or a View, an object that exports the
 * queue's own bytes through the buffer protocol -- a writable buffer of
 * exactly n bytes in the queue for a claim, a read-only one of the message for
 * a view -- until commit()/abort() or release().
 *
 * Lifetimes are enforced here, not documented: the object counts the buffers
 * it exported (bf_getbuffer / bf_releasebuffer), and a commit, an abort or a
 * release while one is alive raises BufferError, as mmap.close() does; a
 * claim or view used after that, after close() or in a fork() child raises;
 * Queue.close() refuses (BufferError) while a buffer is exported, so no
 * memoryview ever outlives the mapping it points into.  At most one claim per
 * writer (the core's rule) and one view per reader: the side holds a borrowed
 * pointer to its open frame, which clears it when it ends.  A frame dropped
 * while open ends as its with-block would: a claim is aborted, a view
 * released (a get_array() result gives its message back when collected).
 */
#include "pyext/pyext_pvt.h"

enum { FRAME_OPEN = 0, FRAME_DONE = 1, FRAME_CLOSED = 2 };

typedef struct pyext_frame {
    PyObject_HEAD
    pyext_side_t *side;  /* strong */
    PyObject *owner;     /* a view of a message iteration took already: its bytes */
    char *ptr;
    Py_ssize_t len;
    Py_ssize_t exports;  /* buffers exported and not yet released */
    int state;           /* FRAME_* */
    int writer;          /* a claim (writable), else a view */
} pyext_frame_t;

PyTypeObject *pyext_claim_type, *pyext_view_type;

static const char *kind(pyext_frame_t *f)
{
    return f->writer ? "claim" : "view";
}

/* Raise why the frame cannot be used; NULL. */
static PyObject *not_open(pyext_frame_t *f)
{
    if (f->state == FRAME_CLOSED)
        return pyext_raise(PYQ_ECLOSED, f->writer ? "this claim's queue was closed (or this "
                                                    "is a fork() child): the claim is gone"
                                                  : "this view's queue was closed (or this "
                                                    "is a fork() child): the view is gone");
    PyErr_Format(PyExc_ValueError, "this %s was %s: its buffer is no longer the queue's", kind(f),
                 f->writer ? "committed or aborted" : "released");
    return NULL;
}

/* The frame ends: no more buffers, the side free for the next one. */
static void end(pyext_frame_t *f, int state)
{
    f->state = state;
    if (f->side && f->side->frame == (PyObject *)f)
        f->side->frame = NULL;
}

void pyext_frame_orphan(pyext_side_t *s)
{
    pyext_frame_t *f = (pyext_frame_t *)s->frame;
    if (f)
        end(f, FRAME_CLOSED);
}

Py_ssize_t pyext_frame_exports(pyext_side_t *s)
{
    pyext_frame_t *f = (pyext_frame_t *)s->frame;
    return f && f->state == FRAME_OPEN ? f->exports : 0;
}

/* The checks before a frame ends: open, no buffer alive, the side usable
 * now (no other thread inside a call on it).  0, or -1 with an exception. */
static int can_end(pyext_frame_t *f, const char *verb)
{
    if (f->state != FRAME_OPEN) {
        not_open(f);
        return -1;
    }
    if (f->exports) {
        PyErr_Format(PyExc_BufferError,
                     "cannot %s this %s: %zd exported buffer%s (a memoryview, an array) still "
                     "point%s into the queue; release them first", verb, kind(f), f->exports,
                     f->exports == 1 ? "" : "s", f->exports == 1 ? "s" : "");
        return -1;
    }
    if (!f->owner && !f->side->h) {
        end(f, FRAME_CLOSED);
        not_open(f);
        return -1;
    }
    if (!f->owner && f->side->busy) {
        pyext_side_in_use(f->side);
        return -1;
    }
    return 0;
}

static PyObject *frame_new(PyTypeObject *tp, pyext_side_t *s, char *ptr, Py_ssize_t len,
                           PyObject *owner)
{
    pyext_frame_t *f = PyObject_New(pyext_frame_t, tp);

    if (!f) {
        Py_XDECREF(owner);
        return NULL;
    }
    Py_INCREF((PyObject *)s);
    f->side = s;
    f->owner = owner; /* stolen */
    f->ptr = ptr;
    f->len = len;
    f->exports = 0;
    f->state = FRAME_OPEN;
    f->writer = tp == pyext_claim_type;
    s->frame = (PyObject *)f;
    return (PyObject *)f;
}

/* ---- the buffer protocol ---------------------------------------------------- */

static int frame_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    pyext_frame_t *f = (pyext_frame_t *)self;

    if (f->state != FRAME_OPEN) {
        not_open(f);
        return -1;
    }
    if (!f->writer && (flags & PyBUF_WRITABLE)) {
        PyErr_SetString(PyExc_BufferError, "a view's buffer is read-only (the message is the "
                                           "queue's; copy it to change it)");
        return -1;
    }
    if (PyBuffer_FillInfo(view, self, f->ptr, f->len, !f->writer, flags) < 0)
        return -1;
    f->exports++;
    return 0;
}

static void frame_releasebuffer(PyObject *self, Py_buffer *view)
{
    ((pyext_frame_t *)self)->exports--;
}

/* ---- Claim -------------------------------------------------------------------- */

static PyObject *claim_commit(PyObject *self, PyObject *unused)
{
    pyext_frame_t *f = (pyext_frame_t *)self;
    int rc;

    if (can_end(f, "commit") < 0)
        return NULL;
    rc = pyext_core.writer_commit(f->side->h);
    end(f, FRAME_DONE);
    if (rc < 0)
        return pyext_raise(rc, "commit");
    Py_RETURN_NONE;
}

static PyObject *claim_abort(PyObject *self, PyObject *unused)
{
    pyext_frame_t *f = (pyext_frame_t *)self;

    if (can_end(f, "abort") < 0)
        return NULL;
    pyext_core.writer_abort(f->side->h);
    end(f, FRAME_DONE);
    Py_RETURN_NONE;
}

static PyObject *frame_enter(PyObject *self, PyObject *unused)
{
    pyext_frame_t *f = (pyext_frame_t *)self;
    if (f->state != FRAME_OPEN)
        return not_open(f);
    Py_INCREF(self);
    return self;
}

static PyObject *claim_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyext_frame_t *f = (pyext_frame_t *)self;

    if (f->state != FRAME_OPEN) /* committed or aborted inside the block */
        Py_RETURN_FALSE;
    if (nargs >= 1 && args[0] != Py_None) {
        PyObject *r = claim_abort(self, NULL);
        if (!r)
            return NULL;
        Py_DECREF(r);
        Py_RETURN_FALSE;
    }
    {
        PyObject *r = claim_commit(self, NULL);
        if (!r)
            return NULL;
        Py_DECREF(r);
    }
    Py_RETURN_FALSE;
}

/* ---- View --------------------------------------------------------------------- */

static PyObject *view_release(PyObject *self, PyObject *unused)
{
    pyext_frame_t *f = (pyext_frame_t *)self;
    int rc = 0;

    if (f->state == FRAME_DONE && !f->exports)
        Py_RETURN_NONE; /* released already: idempotent, as memoryview.release() */
    if (can_end(f, "release") < 0)
        return NULL;
    if (!f->owner)
        rc = pyext_core.reader_release(f->side->h);
    end(f, FRAME_DONE);
    Py_CLEAR(f->owner);
    if (rc < 0)
        return pyext_raise(rc, "release");
    Py_RETURN_NONE;
}

static PyObject *view_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyext_frame_t *f = (pyext_frame_t *)self;
    PyObject *r;

    if (f->state != FRAME_OPEN)
        Py_RETURN_FALSE;
    r = view_release(self, NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

/* ---- both --------------------------------------------------------------------- */

static void frame_dealloc(PyObject *self)
{
    pyext_frame_t *f = (pyext_frame_t *)self;
    PyTypeObject *tp = Py_TYPE(self);

    /* Dropped while open (no buffer can be alive: each holds a reference).
     * Ended as a with-block ends it, when the side can be used now; if
     * another thread is inside a call on it, the core is left as it is (a
     * claim is dropped by the next detach, a view's message read again). */
    if (f->state == FRAME_OPEN && f->side) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (f->owner || (f->side->h && !f->side->busy)) {
            if (f->writer)
                pyext_core.writer_abort(f->side->h);
            else if (!f->owner)
                pyext_core.reader_release(f->side->h);
        }
        end(f, FRAME_DONE);
        PyErr_Restore(type, value, tb);
    }
    Py_CLEAR(f->owner);
    Py_CLEAR(f->side);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static Py_ssize_t frame_len(PyObject *self)
{
    return ((pyext_frame_t *)self)->len;
}

static PyObject *frame_nbytes(PyObject *self, void *unused)
{
    return PyLong_FromSsize_t(((pyext_frame_t *)self)->len);
}

/* The buffer's address in this process: where its bytes start, for a caller
 * that aligns what it writes (frames.py, put_array).  Only while it is open. */
static PyObject *frame_address(PyObject *self, void *unused)
{
    pyext_frame_t *f = (pyext_frame_t *)self;

    if (f->state != FRAME_OPEN)
        return not_open(f);
    return PyLong_FromVoidPtr(f->ptr);
}

static PyObject *frame_closed(PyObject *self, void *unused)
{
    return PyBool_FromLong(((pyext_frame_t *)self)->state != FRAME_OPEN);
}

static PyObject *frame_repr(PyObject *self)
{
    pyext_frame_t *f = (pyext_frame_t *)self;
    static const char *const states[] = {"open", "done", "closed"};
    return PyUnicode_FromFormat("<pyqueue %s of %zd bytes, %s>", kind(f), f->len,
                                states[f->state]);
}

static PyGetSetDef frame_getset[] = {
    {"nbytes", frame_nbytes, NULL, "The buffer's size in bytes.", NULL},
    {"address", frame_address, NULL,
     "The buffer's address in this process, an int (e.g. to align what is written into "
     "it); only while it is open.", NULL},
    {"closed", frame_closed, NULL,
     "True once committed, aborted or released (or its queue closed).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef claim_methods[] = {
    {"commit", claim_commit, METH_NOARGS,
     "commit($self, /)\n--\n\n"
     "Make the bytes written into the buffer a message (visible per the queue's\n"
     "publish policy).  BufferError while a buffer exported from the claim (a\n"
     "memoryview, a numpy array) is still alive: release it first."},
    {"abort", claim_abort, METH_NOARGS,
     "abort($self, /)\n--\n\n"
     "Drop the claim: nothing is written, its space goes back to the writer.\n"
     "BufferError while an exported buffer is alive."},
    {"__enter__", frame_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))claim_exit, METH_FASTCALL,
     "Commit on a normal exit, abort when the block raised."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef view_methods[] = {
    {"release", view_release, METH_NOARGS,
     "release($self, /)\n--\n\n"
     "Consume the message: its space goes back to the writer and the buffer is\n"
     "no longer valid.  BufferError while an exported buffer (a memoryview, a\n"
     "numpy array) is still alive.  Idempotent."},
    {"__enter__", frame_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))view_exit, METH_FASTCALL,
     "Release the view (whether or not the block raised)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot claim_slots[] = {
    {Py_tp_doc, "A claim: n writable bytes in the queue (Writer.claim).  A buffer object\n"
                "(memoryview(c), numpy.frombuffer(c, ...), f.readinto(c)); commit() makes\n"
                "it a message, abort() drops it; ``with`` commits, or aborts on an\n"
                "exception."},
    {Py_tp_methods, claim_methods},
    {Py_tp_getset, frame_getset},
    {Py_tp_dealloc, frame_dealloc},
    {Py_tp_repr, frame_repr},
    {Py_sq_length, frame_len},
    {Py_bf_getbuffer, frame_getbuffer},
    {Py_bf_releasebuffer, frame_releasebuffer},
    {0, NULL},
};

static PyType_Slot view_slots[] = {
    {Py_tp_doc, "A view: the next message in place, read-only (Reader.get_view).  A buffer\n"
                "object valid until release() or the end of its ``with`` block."},
    {Py_tp_methods, view_methods},
    {Py_tp_getset, frame_getset},
    {Py_tp_dealloc, frame_dealloc},
    {Py_tp_repr, frame_repr},
    {Py_sq_length, frame_len},
    {Py_bf_getbuffer, frame_getbuffer},
    {Py_bf_releasebuffer, frame_releasebuffer},
    {0, NULL},
};

PyType_Spec pyext_claim_spec = {
    .name = "pyqueue._pyext.Claim",
    .basicsize = sizeof(pyext_frame_t),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = claim_slots,
};

PyType_Spec pyext_view_spec = {
    .name = "pyqueue._pyext.View",
    .basicsize = sizeof(pyext_frame_t),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = view_slots,
};

/* ---- Writer.claim, Reader.get_view --------------------------------------------- */

/* Raise "a <kind> is open" for a side whose frame is open; NULL. */
PyObject *pyext_frame_held(pyext_side_t *s, int writer)
{
    return pyext_raise_queue(pyext_QueueError, PYQ_EBUSY,
                             writer ? "a claim is open on this writer: commit() or abort() it "
                                      "first (one claim at a time)"
                                    : "a view is held on this reader: release() it first (one "
                                      "view at a time; a get_array(copy=False) result holds "
                                      "its view until it is collected)");
}

/* Wait in slices without the GIL, the side owned, until call() says other
 * than PYQ_EAGAIN or tns (-1: no limit) runs out.  The last result, or
 * PYQ_EINTR with an exception (Ctrl-C, close()). */
typedef int64_t (*frame_call_fn)(pyext_side_t *s, int64_t slice, void *arg);

static int64_t wait_for(pyext_side_t *s, int64_t tns, frame_call_fn call, void *arg)
{
    int64_t deadline = tns < 0 ? 0 : pyext_now_ns() + tns, rc;

    if (pyext_side_own(s, 0, 1) != 1) {
        pyext_side_in_use(s);
        return PYQ_EINTR;
    }
    for (;;) {
        int64_t slice = PYEXT_SLICE_NS;
        if (tns >= 0) {
            int64_t left = deadline - pyext_now_ns();
            slice = left < 0 ? 0 : (left < slice ? left : slice);
        }
        rc = call(s, slice, arg);
        if (rc != PYQ_EAGAIN)
            break;
        if (PyErr_CheckSignals() < 0) {
            rc = PYQ_EINTR;
            break;
        }
        if (!s->h) {
            pyext_side_closed(s);
            rc = PYQ_EINTR;
            break;
        }
        if (tns >= 0 && slice < PYEXT_SLICE_NS && pyext_now_ns() >= deadline)
            break;
    }
    pyext_side_disown(s);
    return rc;
}

typedef struct {
    uint32_t n;
    void *ptr;
} claim_arg_t;

static int64_t claim_slice(pyext_side_t *s, int64_t slice, void *arg)
{
    claim_arg_t *a = arg;
    pyq_queue_t *h = s->h;
    int rc;

    Py_BEGIN_ALLOW_THREADS
    rc = pyext_core.writer_claim(h, a->n, slice, &a->ptr);
    Py_END_ALLOW_THREADS
    return rc;
}

static pyext_params_t CLAIM_PARAMS = {"claim", 1, 2, {"n", "timeout"}, {NULL}};

PyObject *pyext_writer_claim(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[2];
    claim_arg_t c = {0, NULL};
    Py_ssize_t n;
    int64_t tns = -1, rc;

    if (pyext_args(&CLAIM_PARAMS, args, nargs, kwnames, a) < 0)
        return NULL;
    if (!PyLong_Check(a[0])) {
        PyErr_Format(PyExc_TypeError, "claim: n must be an int, got %R",
                     (PyObject *)Py_TYPE(a[0]));
        return NULL;
    }
    n = PyLong_AsSsize_t(a[0]);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "claim: n must be in [0, %lu], got %zd",
                     (unsigned long)s->max_message, n);
        return NULL;
    }
    if (n > (Py_ssize_t)s->max_message)
        return pyext_too_large(s, n);
    if (pyext_timeout(a[1], &tns) < 0)
        return NULL;
    if (PYEXT_UNLIKELY(!s->h) && pyext_side_need(s) < 0)
        return NULL;
    if (PYEXT_UNLIKELY(s->busy))
        return pyext_side_in_use(s);
    if (s->frame)
        return pyext_frame_held(s, 1);
    c.n = (uint32_t)n;
    rc = pyext_core.writer_claim(s->h, c.n, 0, &c.ptr);
    if (rc == PYQ_EAGAIN && tns != 0)
        rc = wait_for(s, tns, claim_slice, &c);
    if (rc == PYQ_EINTR && PyErr_Occurred())
        return NULL;
    if (rc < 0)
        return pyext_raise((int)rc, "claim");
    return frame_new(pyext_claim_type, s, c.ptr, n, NULL);
}

typedef struct {
    const void *ptr;
} view_arg_t;

/* Wait for a message (the GIL released), then view it (with the GIL: the
 * side is owned all along). */
static int64_t view_slice(pyext_side_t *s, int64_t slice, void *arg)
{
    view_arg_t *a = arg;
    pyq_queue_t *h = s->h;
    int rc;

    Py_BEGIN_ALLOW_THREADS
    rc = pyext_core.reader_wait(h, slice);
    Py_END_ALLOW_THREADS
    if (!s->h)
        return PYQ_EAGAIN; /* close() began: wait_for() raises */
    if (rc == 0)
        return PYQ_ECLOSED; /* the end of the stream */
    if (rc < 0)
        return rc;
    return pyext_core.reader_view(h, &a->ptr);
}

static pyext_params_t VIEW_PARAMS = {"get_view", 0, 2, {"block", "timeout"}, {NULL}};

PyObject *pyext_reader_get_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[2], *pending;
    view_arg_t v = {NULL};
    int block = 1;
    int64_t tns = -1, rc;

    if (pyext_args(&VIEW_PARAMS, args, nargs, kwnames, a) < 0)
        return NULL;
    if (a[0] && (block = PyObject_IsTrue(a[0])) < 0)
        return NULL;
    if (block && pyext_timeout(a[1], &tns) < 0)
        return NULL;
    if (!block)
        tns = 0;
    if (PYEXT_UNLIKELY(!s->h) && pyext_side_need(s) < 0)
        return NULL;
    if (PYEXT_UNLIKELY(s->busy))
        return pyext_side_in_use(s);
    if (s->frame)
        return pyext_frame_held(s, 0);
    /* Messages iteration took come first: a view of its bytes (in order). */
    if ((pending = pyext_reader_pending_take(s)))
        return frame_new(pyext_view_type, s, (char *)pyext_bytes_ptr(pending),
                         PyBytes_Size(pending), pending);
    rc = pyext_core.reader_view(s->h, &v.ptr);
    if (rc == PYQ_EAGAIN) {
        if (tns != 0) {
            rc = wait_for(s, tns, view_slice, &v);
        } else {
            /* One look tells empty from ended (and a dead writer). */
            int w = pyext_core.reader_wait(s->h, 0);
            rc = w == 1 ? pyext_core.reader_view(s->h, &v.ptr) : w == 0 ? PYQ_ECLOSED : w;
        }
    }
    if (rc == PYQ_EINTR && PyErr_Occurred())
        return NULL;
    if (rc == PYQ_ECLOSED)
        return pyext_side_end_of_stream(s);
    if (rc == PYQ_EAGAIN)
        return pyext_raise_queue(pyext_QueueEmpty, PYQ_EAGAIN,
                                 block ? "get_view: no message within the timeout"
                                       : "get_view: no message");
    if (rc < 0)
        return pyext_raise((int)rc, "get_view");
    return frame_new(pyext_view_type, s, (char *)v.ptr, (Py_ssize_t)rc, NULL);
}
