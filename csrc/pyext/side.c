/*
 * side.c - what the writer and the reader types share: owning a side while a
 * call runs without the GIL, the errors of a side without a handle, argument
 * and timeout parsing.
 */
#include <time.h>

#include "pyext/pyext_pvt.h"

#define OWN_SLICE_US 50000 /* a blocking own() looks at Ctrl-C this often */

int pyext_side_own(pyext_side_t *s, int blocking, int as_call)
{
    if (!s->lock)
        return 0; /* never bound: nothing to own (h is NULL too) */
    /* Not busy, yet the lock may be taken: a blocking own() got it and waits
     * for the GIL to say so.  Then the side is busy. */
    if (s->busy || !PyThread_acquire_lock(s->lock, NOWAIT_LOCK)) {
        PyThread_type_lock lock = s->lock;
        if (!blocking)
            return 0;
        for (;;) {
            PyLockStatus r;
            Py_BEGIN_ALLOW_THREADS
            r = PyThread_acquire_lock_timed(lock, OWN_SLICE_US, 0);
            Py_END_ALLOW_THREADS
            if (r == PY_LOCK_ACQUIRED)
                break;
            if (PyErr_CheckSignals() < 0)
                return -1;
        }
        if (lock != s->lock) { /* _forked() replaced it meanwhile: not ours */
            PyThread_release_lock(lock);
            return 0;
        }
    }
    s->busy = 1;
    s->owner = as_call ? PyThread_get_thread_ident() : 0;
    return 1;
}

void pyext_side_disown(pyext_side_t *s)
{
    s->busy = 0;
    s->owner = 0;
    PyThread_release_lock(s->lock);
}

/* Raise the exception the Python class's method ``method`` words (it knows the
 * queue: closed, a fork() child, a dead writer process, a busy side). */
static PyObject *raise_worded(pyext_side_t *s, const char *method)
{
    PyObject *e = PyObject_CallMethod((PyObject *)s, method, NULL);
    if (e) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

PyObject *pyext_side_closed(pyext_side_t *s)
{
    return raise_worded(s, "_closed_error");
}

int pyext_side_need(pyext_side_t *s)
{
    /* A shared queue's side is bound on its first use in this process
     * (Queue.take); the Python class decides, and words the error if not. */
    PyObject *r = PyObject_CallMethod((PyObject *)s, "_claim", NULL);
    int ok;

    if (!r)
        return -1;
    ok = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (ok < 0)
        return -1;
    if (!ok || !s->h) {
        pyext_side_closed(s);
        return -1;
    }
    return 0;
}

PyObject *pyext_side_end_of_stream(pyext_side_t *s)
{
    return raise_worded(s, "_end_of_stream");
}

PyObject *pyext_side_in_use(pyext_side_t *s)
{
    return raise_worded(s, "_in_use_error");
}

PyObject *pyext_raise(int code, const char *what)
{
    PyObject *e = PyObject_CallFunction(pyext_error_for, "is", code, what);
    if (e) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

PyObject *pyext_raise_queue(PyObject *cls, int code, const char *message)
{
    PyObject *e = PyObject_CallFunction(cls, "si", message, code);
    if (e) {
        PyErr_SetObject(cls, e);
        Py_DECREF(e);
    }
    return NULL;
}

/* Beyond this many seconds (2**62 ns, 146 years) a wait has no limit: int64 ns
 * would overflow, and threading.TIMEOUT_MAX is far below it anyway. */
#define FOREVER_S 4611686018.427387904

/* Seconds as ns, rounded up as the standard library rounds a timeout (a tiny
 * positive one still waits), or -1: no limit. */
static int64_t seconds_ns(double sec)
{
    double ns;

    if (sec >= FOREVER_S) /* inf too */
        return -1;
    ns = sec * 1e9;
    return (int64_t)ns + ((double)(int64_t)ns < ns);
}

static int timeout_refused(PyObject *t)
{
    /* queue.Queue's words for a negative timeout; NaN is refused with them
     * too (SimpleQueue refuses it; queue.Queue's get would spin on it). */
    PyErr_Format(PyExc_ValueError, "'timeout' must be a non-negative number, got %R", t);
    return -1;
}

/* The last float or int timeout parsed and its ns, the object held: while it
 * lives no other object has its address, and an exact float or int never
 * changes, so the same object is the same value.  A call site passes the same
 * constant every time (get(timeout=5)): one compare then. */
PyObject *pyext_last_timeout;
int64_t pyext_last_timeout_ns;

static void remember_timeout(PyObject *t, int64_t ns)
{
    PyObject *old = pyext_last_timeout;
    Py_INCREF(t);
    pyext_last_timeout = t;
    pyext_last_timeout_ns = ns;
    Py_XDECREF(old); /* a float's or an int's release runs no Python code */
}

int pyext_timeout_parse(PyObject *t, int64_t *ns)
{
    PyObject *r;

    if (t == NULL || t == Py_None) {
        *ns = -1;
        return 0;
    }
    /* float and int parsed here: a timeout must cost nothing when no wait is
     * needed.  pyqueue.queue._timeout_ns states the same rules for the rest. */
    if (PyFloat_CheckExact(t)) {
        double sec = PyFloat_AsDouble(t);
        if (PYEXT_UNLIKELY(!(sec >= 0))) /* NaN too */
            return timeout_refused(t);
        *ns = seconds_ns(sec);
        remember_timeout(t, *ns);
        return 0;
    }
    if (PyLong_CheckExact(t)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(t, &overflow);
        if (overflow < 0 || (!overflow && v < 0))
            return timeout_refused(t);
        *ns = overflow > 0 || v >= (long long)FOREVER_S ? -1 : v * 1000000000LL;
        remember_timeout(t, *ns);
        return 0;
    }
    /* Any other real number (bool, numpy's, Fraction), or a clear error. */
    r = PyObject_CallFunctionObjArgs(pyext_timeout_ns, t, NULL);
    if (!r)
        return -1;
    if (r == Py_None) {
        *ns = -1;
    } else {
        long long v = PyLong_AsLongLong(r);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(r);
            return -1;
        }
        *ns = v;
    }
    Py_DECREF(r);
    return 0;
}

int64_t pyext_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int pyext_args(pyext_params_t *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
               PyObject **out)
{
    const char *fname = p->fname;
    const char *const *names = p->names;
    int nreq = p->nreq, nmax = p->nmax;
    Py_ssize_t i, k, nkw = kwnames ? PyTuple_Size(kwnames) : 0;

    for (i = 0; i < nmax; i++)
        out[i] = NULL;
    if (nargs > nmax) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname,
                     nmax, nargs);
        return -1;
    }
    for (i = 0; i < nargs; i++)
        out[i] = args[i];
    if (nkw && !p->interned[0]) {
        for (i = 0; i < nmax; i++)
            if (!(p->interned[i] = PyUnicode_InternFromString(names[i])))
                return -1;
    }
    for (k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GetItem(kwnames, k);
        for (i = 0; i < nmax; i++)
            if (key == p->interned[i])
                break;
        if (i == nmax) /* a keyword made at run time: compare the text */
            for (i = 0; i < nmax; i++)
                if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0)
                    break;
        if (i == nmax) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname,
                         key);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname,
                         names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (i = 0; i < nreq; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, names[i]);
            return -1;
        }
    return 0;
}

void pyext_attach(const char *name, PyObject *value)
{
    PyObject *t, *v, *tb;

    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v && PyObject_SetAttrString(v, name, value) < 0)
        PyErr_Clear(); /* an exception without a __dict__: it stays as raised */
    PyErr_Restore(t, v, tb);
}

void pyext_attach_messages(PyObject *messages)
{
    pyext_attach("messages", messages);
}

/* --- the serializer ------------------------------------------------------ */

PyObject *pyext_dumps(pyext_side_t *s, PyObject *item)
{
    PyObject *data;
    int gc;

    if (!s->dumps) {
        Py_INCREF(item);
        return item;
    }
    /* No collection while dumps runs: a finalizer it would run may put()
     * (bpo-14976's case), and that message would go in before this one, whose
     * item the caller made first. */
    gc = PyGC_Disable();
    data = PyObject_CallFunctionObjArgs(s->dumps, item, NULL);
    if (gc)
        PyGC_Enable();
    if (!data || PyBytes_CheckExact(data) || PyObject_CheckBuffer(data))
        return data;
    PyErr_Format(PyExc_TypeError, "the serializer's dumps() returned %s; it must return bytes "
                 "or another bytes-like object", Py_TYPE(data) == &PyUnicode_Type ? "str (encode "
                 "it)" : "an object that is not bytes-like");
    Py_DECREF(data);
    return NULL;
}

PyObject *pyext_loads_of(pyext_side_t *s, PyObject *msg)
{
    PyObject *obj = PyObject_CallFunctionObjArgs(s->loads, msg, NULL);

    if (!obj) { /* consumed: the message rides on the exception */
        PyObject *list = PyList_New(1);
        if (list) {
            Py_INCREF(msg);
            PyList_SetItem(list, 0, msg);
            pyext_attach_messages(list);
            Py_DECREF(list);
        }
    }
    Py_DECREF(msg);
    return obj;
}

PyObject *pyext_side_set_serializer(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *old[2] = {s->dumps, s->loads};

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_set_serializer(dumps, loads)");
        return NULL;
    }
    s->dumps = args[0] == Py_None ? NULL : args[0];
    s->loads = args[1] == Py_None ? NULL : args[1];
    Py_XINCREF(s->dumps);
    Py_XINCREF(s->loads);
    Py_XDECREF(old[0]);
    Py_XDECREF(old[1]);
    Py_RETURN_NONE;
}

/* --- the methods every side has ----------------------------------------- */

/* Whether the queue's reader scans (scan_current, publish 'each'): the gate
 * bit the core sets at creation and never changes (pyqueue_inline.h). */
static int gate_has(pyq_queue_t *h, uint32_t bit)
{
    const struct pyq_writer_view *w =
        (const struct pyq_writer_view *)(const void *)((const char *)h + PYQ_WRITER_VIEW_OFFSET);
    return (__atomic_load_n(&w->gate, __ATOMIC_RELAXED) & bit) != 0;
}

static int scans(pyq_queue_t *h)
{
    return gate_has(h, PYQ_GATE_SCAN);
}

PyObject *pyext_side_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyext_side_t *s = (pyext_side_t *)self;
    void *h;
    unsigned long max;

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_bind(handle, max_message)");
        return NULL;
    }
    if (!pyext_core.writer_write) {
        PyErr_SetString(PyExc_RuntimeError, "pyqueue._pyext.setup() was not called");
        return NULL;
    }
    if (s->lock) { /* once: a side never moves to another queue */
        PyErr_SetString(PyExc_TypeError, "this side is already bound to its queue");
        return NULL;
    }
    h = PyLong_AsVoidPtr(args[0]);
    max = PyLong_AsUnsignedLong(args[1]);
    if (PyErr_Occurred())
        return NULL;
    if (!h) {
        PyErr_SetString(PyExc_ValueError, "_bind: NULL handle");
        return NULL;
    }
    s->lock = PyThread_allocate_lock();
    if (!s->lock)
        return PyErr_NoMemory();
    s->h = h;
    s->max_message = (uint32_t)max;
    s->scan = scans(h);
    s->shared = gate_has(h, PYQ_GATE_XPROC);
    Py_RETURN_NONE;
}

PyObject *pyext_side_rebind(PyObject *self, PyObject *arg)
{
    pyext_side_t *s = (pyext_side_t *)self;
    void *h = PyLong_AsVoidPtr(arg);

    if (PyErr_Occurred())
        return NULL;
    if (!s->lock || !h) {
        PyErr_SetString(PyExc_ValueError, "_rebind: a bound side and a handle");
        return NULL;
    }
    s->h = h;
    s->scan = scans(h);
    s->shared = gate_has(h, PYQ_GATE_XPROC);
    Py_RETURN_NONE;
}

PyObject *pyext_side_counter(pyext_side_t *s, int writer)
{
    pyq_stats_t st;

    if (!s->h)
        return pyext_side_closed(s);
    pyext_core.queue_stats(s->h, &st);
    return PyLong_FromUnsignedLongLong(writer ? st.messages_written : st.messages_read);
}

void pyext_side_drop_pending(pyext_side_t *s)
{
    PyObject **p = s->pending;
    uint32_t at = s->pending_at, n = s->pending_n;

    /* Emptied before the decrefs: a finalizer they run sees no pending. */
    s->pending = NULL;
    s->pending_at = s->pending_n = 0;
    if (!p)
        return;
    for (; at < n; at++)
        Py_DECREF(p[at]);
    PyMem_Free(p);
}

int pyext_side_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self)); /* a heap type's instances hold it */
    Py_VISIT(((pyext_side_t *)self)->last);
    Py_VISIT(((pyext_side_t *)self)->dumps);
    Py_VISIT(((pyext_side_t *)self)->loads);
    return 0;
}

/* The collector's tp_clear: what close() drops (pyext_side_clear), and the
 * serializer, which close() keeps (a closed side's calls raise anyway). */
int pyext_side_tp_clear(PyObject *self)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *d = s->dumps, *l = s->loads;

    s->dumps = s->loads = NULL;
    pyext_side_clear(self);
    Py_XDECREF(d);
    Py_XDECREF(l);
    return 0;
}

int pyext_side_clear(PyObject *self)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *old[1 + PYEXT_SPARES];
    uint32_t i;

    /* Emptied before the decrefs, as drop_pending does. */
    old[0] = s->last;
    s->last = NULL;
    for (i = 0; i < PYEXT_SPARES; i++) {
        old[1 + i] = s->spare[i];
        s->spare[i] = NULL;
    }
    for (i = 0; i < 1 + PYEXT_SPARES; i++)
        Py_XDECREF(old[i]);
    return 0;
}

PyObject *pyext_side_frame_exports(PyObject *self, PyObject *unused)
{
    return PyLong_FromSsize_t(pyext_frame_exports((pyext_side_t *)self));
}

PyObject *pyext_side_close(PyObject *self, PyObject *unused)
{
    pyext_side_t *s = (pyext_side_t *)self;
    s->h = NULL;
    pyext_frame_orphan(s); /* its buffer is the queue's: no more of it */
    /* close() discards what nobody read: the pending messages too. */
    pyext_side_drop_pending(s);
    pyext_side_clear(self);
    Py_RETURN_NONE;
}

PyObject *pyext_side_forked(PyObject *self, PyObject *unused)
{
    pyext_side_t *s = (pyext_side_t *)self;
    /* The old lock may be held by a thread that does not exist here: leave it. */
    s->h = NULL;
    s->busy = 0;
    s->owner = 0;
    pyext_frame_orphan(s); /* the parent's claim or view: never ended here */
    pyext_side_drop_pending(s); /* the parent's messages: never delivered here */
    pyext_side_clear(self);
    if (s->lock) {
        s->lock = PyThread_allocate_lock();
        if (!s->lock)
            return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

PyObject *pyext_side_own_py(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int blocking, as_call, r;

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_own(blocking, as_call)");
        return NULL;
    }
    blocking = PyObject_IsTrue(args[0]);
    as_call = PyObject_IsTrue(args[1]);
    if (blocking < 0 || as_call < 0)
        return NULL;
    r = pyext_side_own((pyext_side_t *)self, blocking, as_call);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

PyObject *pyext_side_disown_py(PyObject *self, PyObject *unused)
{
    pyext_side_t *s = (pyext_side_t *)self;
    if (!s->busy) {
        PyErr_SetString(PyExc_RuntimeError, "release of a side that is not owned");
        return NULL;
    }
    pyext_side_disown(s);
    Py_RETURN_NONE;
}

PyObject *pyext_side_owned_here(PyObject *self, PyObject *unused)
{
    pyext_side_t *s = (pyext_side_t *)self;
    return PyBool_FromLong(s->busy && s->owner && s->owner == PyThread_get_thread_ident());
}

PyObject *pyext_side_is_closed(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(((pyext_side_t *)self)->h == NULL);
}

PyObject *pyext_side_is_busy(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(((pyext_side_t *)self)->busy);
}

PyObject *pyext_side_pending_count(PyObject *self, PyObject *unused)
{
    pyext_side_t *s = (pyext_side_t *)self;
    return PyLong_FromUnsignedLong(s->pending_n - s->pending_at);
}

void pyext_side_dealloc(PyObject *self)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);

    PyObject_GC_UnTrack(self);
    /* Only an unowned lock may be freed; an owned one (a frozen daemon thread
     * at exit) is left to the process. */
    if (s->lock && !s->busy)
        PyThread_free_lock(s->lock);
    pyext_side_drop_pending(s);
    pyext_side_tp_clear(self);
    tp_free(self);
    Py_DECREF(tp);
}
