/*
 * many.c - the writer's batch call, faster-fifo's put_many: a list of messages
 * (or of objects, with a serializer) written in order, all or none.
 *
 * All or none is what faster-fifo promises (code that retries a put_many after
 * queue.Full would otherwise write the first items twice), and an SPSC block
 * queue can keep it without a reservation: the writer alone takes blocks, so
 * once the free blocks are at least what the batch needs at the worst framing
 * (room_needed), writing it cannot wait.  Until then the call waits without the
 * GIL, sleeping between looks at the free count (the reader returns blocks as
 * it reads; nothing wakes a writer that has not written).  A batch that needs
 * every block of the pool (the writer's current one is never free) can never
 * be all in at once: it is written as room comes, as a loop of put() would, and
 * QueueFull then carries .written.
 */
#include <time.h>

#include "pyext/pyext_pvt.h"

/* A wait for room sleeps this long at first, doubling up to ROOM_SLEEP_CAP_NS. */
#define ROOM_SLEEP_NS 1000
#define ROOM_SLEEP_CAP_NS 1000000

PyObject *pyext_writer_set_framing(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pyext_side_t *s = (pyext_side_t *)self;
    unsigned long bs, align;
    unsigned long long blocks;

    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_set_framing(block_size, record_align, blocks)");
        return NULL;
    }
    bs = PyLong_AsUnsignedLong(args[0]);
    align = PyLong_AsUnsignedLong(args[1]);
    blocks = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (bs == 0 || align == 0 || (align & (align - 1)) || bs > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "_set_framing: a block size and a power-of-two alignment");
        return NULL;
    }
    s->block_size = (uint32_t)bs;
    s->record_align = (uint32_t)align;
    s->blocks = blocks;
    Py_RETURN_NONE;
}

/* Blocks the messages need, counted from fresh blocks (the writer's current
 * one may have room too: a bonus) at the worst framing: each message a record
 * of its own (8-byte header, padded to record_align; a run takes less), a block
 * sealed when the next record does not fit or, as a scanning queue's early seal
 * does, when the room left is less than the record just written. */
static uint64_t room_needed(const pyext_side_t *s, const Py_ssize_t *len, Py_ssize_t n)
{
    uint64_t blocks = 0, left = 0, a = s->record_align;
    Py_ssize_t i;

    for (i = 0; i < n; i++) {
        /* A large message's record names its slot (16 bytes); the slot's
         * room in the large region is waited for as the batch goes. */
        uint64_t m = (uint64_t)len[i] > s->block_size - 8 ? 16 : (uint64_t)len[i];
        uint64_t rec = (8 + m + a - 1) & ~(a - 1);
        if (rec > left) {
            blocks++;
            left = s->block_size;
        }
        left -= rec;
        if (left < rec)
            left = 0;
    }
    return blocks;
}

/* Blocks not in use now: neither the writer's nor unread. */
static uint64_t free_blocks(pyext_side_t *s)
{
    pyq_stats_t st;
    uint64_t taken;

    pyext_core.queue_stats(s->h, &st);
    taken = st.takes_hot + st.takes_spill - st.returns_hot - st.returns_spill;
    return taken < s->blocks ? s->blocks - taken : 0;
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    nanosleep(&ts, NULL);
}

/* Wait until `need` blocks are free: 1, 0 when tns ran out (-1: no limit), -1
 * with an exception (Ctrl-C, the queue closed, a shared reader's process
 * died).  Waits without the GIL, the side owned, in slices that see Ctrl-C and
 * close(). */
static int wait_for_room(pyext_side_t *s, uint64_t need, int64_t tns)
{
    pyq_queue_t *h = s->h;
    int64_t deadline = tns < 0 ? 0 : pyext_now_ns() + tns, nap = ROOM_SLEEP_NS;
    int room = 0;

    if (pyext_side_own(s, 0, 1) != 1) {
        pyext_side_in_use(s);
        return -1;
    }
    for (;;) {
        int64_t now = pyext_now_ns(), end = now + PYEXT_SLICE_NS;
        if (tns >= 0 && deadline < end)
            end = deadline;
        /* h stays valid: close() waits for this owner before it unmaps. */
        Py_BEGIN_ALLOW_THREADS
        while (!(room = free_blocks(s) >= need) && pyext_now_ns() < end) {
            sleep_ns(nap);
            nap = nap * 2 < ROOM_SLEEP_CAP_NS ? nap * 2 : ROOM_SLEEP_CAP_NS;
        }
        Py_END_ALLOW_THREADS
        if (room)
            break;
        if (PyErr_CheckSignals() < 0)
            goto fail;
        if (!s->h) { /* close() began */
            pyext_side_closed(s);
            goto fail;
        }
        if (pyext_core.queue_dead_peer(h, PYQ_SIDE_READER) > 0) {
            pyext_raise(PYQ_EPEER, "put_many");
            goto fail;
        }
        if (tns >= 0 && pyext_now_ns() >= deadline)
            break;
    }
    pyext_side_disown(s);
    return room;
fail:
    pyext_side_disown(s);
    return -1;
}

/* Raise QueueFull(why) with .written. */
static PyObject *full(Py_ssize_t written, const char *why)
{
    PyObject *w;

    pyext_raise_queue(pyext_QueueFull, PYQ_EAGAIN, why);
    if ((w = PyLong_FromSsize_t(written))) {
        pyext_attach("written", w);
        Py_DECREF(w);
    }
    return NULL;
}

static pyext_params_t PUT_MANY_PARAMS = {"put_many", 1, 3, {"items", "block", "timeout"}, {NULL}};

PyObject *pyext_writer_put_many(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    pyext_side_t *s = (pyext_side_t *)self;
    PyObject *a[3], *items = NULL, *res = NULL;
    PyObject **msg = NULL;
    Py_ssize_t *len = NULL, n = 0, i, done = 0;
    int block = 1, rc;
    int64_t tns = -1, deadline;

    if (pyext_args(&PUT_MANY_PARAMS, args, nargs, kwnames, a) < 0)
        return NULL;
    if (a[1] && (block = PyObject_IsTrue(a[1])) < 0)
        return NULL;
    if (block && pyext_timeout(a[2], &tns) < 0)
        return NULL;
    if (!block)
        tns = 0;
    if (PyUnicode_Check(a[0]) || PyBytes_Check(a[0]) || PyByteArray_Check(a[0])) {
        /* one message, not a batch of its bytes */
        PyErr_Format(PyExc_TypeError, "put_many() takes a list (or another iterable) of "
                     "messages, not one %R", (PyObject *)Py_TYPE(a[0]));
        return NULL;
    }
    if (!(items = PySequence_Tuple(a[0]))) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "put_many() takes a list (or another iterable) of "
                         "messages, not %R", (PyObject *)Py_TYPE(a[0]));
        }
        return NULL;
    }
    n = PyTuple_Size(items);
    if (n == 0) {
        Py_DECREF(items);
        Py_RETURN_NONE;
    }
    msg = PyMem_Calloc((size_t)n, sizeof(*msg));
    len = PyMem_Calloc((size_t)n, sizeof(*len));
    if (!msg || !len) {
        PyErr_NoMemory();
        goto out;
    }
    /* Every message made and checked before any is written: all or none. */
    for (i = 0; i < n; i++) {
        PyObject *m = pyext_dumps(s, PyTuple_GetItem(items, i));
        if (!m)
            goto out;
        if (!PyBytes_CheckExact(m)) { /* another buffer: its bytes, held as they are now */
            PyObject *b = PyUnicode_Check(m) ? NULL : PyBytes_FromObject(m);
            Py_DECREF(m);
            if (!b) {
                if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
                    PyErr_Clear();
                    PyErr_Format(PyExc_TypeError, "put_many: item %zd is not bytes-like (a "
                                 "queue without a serializer carries bytes)", i);
                }
                goto out;
            }
            m = b;
        }
        msg[i] = m;
        len[i] = Py_SIZE(m);
        if (len[i] > (Py_ssize_t)s->max_message) {
            pyext_too_large(s, len[i]);
            goto out;
        }
    }
    if (PYEXT_UNLIKELY(!s->h) && pyext_side_need(s) < 0)
        goto out;
    if (PYEXT_UNLIKELY(s->busy)) {
        pyext_side_in_use(s);
        goto out;
    }
    deadline = tns < 0 ? -1 : pyext_now_ns() + tns;
    if (s->blocks && s->block_size) {
        uint64_t need = room_needed(s, len, n);
        /* The writer's current block stays taken until it is sealed (the
         * reader cannot return a block the writer may still fill): a batch
         * that needs every block can never find them all free. */
        if (need < s->blocks && free_blocks(s) < need) { /* all or none: wait for room */
            if (tns == 0 || (rc = wait_for_room(s, need, tns)) == 0) {
                full(0, "put_many: no room for the whole batch; none of it was written");
                goto out;
            }
            if (rc < 0)
                goto out;
        }
    }
    /* Written in order; with room for all (checked above) no write waits.  A
     * batch bigger than the pool waits as it goes, within the one deadline. */
    for (i = 0; i < n; i++) {
        const char *p = pyext_bytes_ptr(msg[i]);
        int64_t left;
        PyObject *r;
        if (PYEXT_UNLIKELY(!s->h)) { /* a wait let close() begin */
            pyext_side_closed(s);
            goto partial;
        }
        rc = PYEXT_TRY_WRITE(s, p, (uint32_t)len[i]);
        if (PYEXT_LIKELY(rc == 0)) {
            done++;
            continue;
        }
        if (rc != PYQ_EAGAIN) {
            pyext_raise(rc, "put_many");
            goto partial;
        }
        left = deadline < 0 ? -1 : deadline - pyext_now_ns();
        if (deadline >= 0 && left <= 0) {
            full(done, "put_many: the queue stayed full; the first items were written "
                          "(.written says how many)");
            goto out;
        }
        if (!(r = pyext_write_wait(s, p, (uint32_t)len[i], left, "put_many")))
            goto partial;
        Py_DECREF(r);
        done++;
    }
    res = Py_None;
    Py_INCREF(res);
    goto out;
partial: { /* the exception says how many went in */
        PyObject *w = PyLong_FromSsize_t(done);
        if (w) {
            pyext_attach("written", w);
            Py_DECREF(w);
        }
    }
out:
    if (msg)
        for (i = 0; i < n; i++)
            Py_XDECREF(msg[i]);
    PyMem_Free(msg);
    PyMem_Free(len);
    Py_XDECREF(items);
    return res;
}
