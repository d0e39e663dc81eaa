/*
 * pyext_pvt.h - the CPython C-API layer of the Python package (DESIGN §5.3):
 * the per-message calls of Writer and Reader as extension methods that keep
 * the GIL while they cannot wait.
 *
 * The queue core is not compiled into this extension: pyqueue._pyq (the cffi
 * module) holds the one copy, and pyqueue/queue.py hands this module the
 * addresses of the few core functions it calls, once, at import
 * (pyqueue._pyext.setup()).  Built against the stable ABI (Py_LIMITED_API
 * 3.11, set by setup.py).
 */
#ifndef PYQ_PYEXT_PVT_H
#define PYQ_PYEXT_PVT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

/* pyqueue.h without its inline fast paths for now: they are included below,
 * once their calls into the library can be pointed at pyext_core. */
#define PYQUEUE_INLINE_H
#include "pyqueue.h"
#undef PYQUEUE_INLINE_H

/* The core functions this layer calls, through pointers set once by setup(). */
typedef struct pyext_core {
    int (*writer_write)(pyq_queue_t *q, const void *data, uint32_t len, int64_t timeout_ns);
    int (*writer_try_write)(pyq_queue_t *q, const void *data, uint32_t len);
    int (*writer_flush)(pyq_queue_t *q);
    int64_t (*reader_poll)(pyq_queue_t *q, uint64_t max_messages, pyq_message_fn fn, void *ctx);
    int64_t (*reader_next_len)(pyq_queue_t *q);
    int (*reader_wait)(pyq_queue_t *q, int64_t timeout_ns);
    void (*queue_stats)(const pyq_queue_t *q, pyq_stats_t *out);
    int64_t (*queue_dead_peer)(const pyq_queue_t *q, int side);
    int (*writer_claim)(pyq_queue_t *q, uint32_t len, int64_t timeout_ns, void **ptr);
    int (*writer_commit)(pyq_queue_t *q);
    int (*writer_abort)(pyq_queue_t *q);
    int64_t (*reader_view)(pyq_queue_t *q, const void **ptr);
    int (*reader_release)(pyq_queue_t *q);
    int (*reader_unview)(pyq_queue_t *q);
} pyext_core_t;

extern pyext_core_t pyext_core;

/* The core's inline fast paths (pyqueue_inline.h), on the one copy of the queue's
 * state: a write that extends the open run and a poll of the block being
 * drained run here, with no call.  Their fallbacks call the library by name,
 * and this extension has no copy of it: for as long as the header is read,
 * those names are the pointers above (the declarations are parsed already,
 * and function-like macros touch only calls). */
#define pyq_writer_try_write(q, data, len) pyext_core.writer_try_write(q, data, len)
#define pyq_reader_poll(q, max, fn, ctx) pyext_core.reader_poll(q, max, fn, ctx)
#define pyq_reader_next_len(q) pyext_core.reader_next_len(q)
#include "pyqueue_inline.h"
#undef pyq_writer_try_write
#undef pyq_reader_poll
#undef pyq_reader_next_len

/* What Python gives setup(): the one place C codes become exceptions
 * (pyqueue._errors.error_for), the timeout and limit validators, and the
 * exception classes this layer raises itself. */
extern PyObject *pyext_error_for, *pyext_timeout_ns, *pyext_max_messages;
extern PyObject *pyext_QueueError, *pyext_QueueEmpty, *pyext_QueueFull, *pyext_EndOfStream;

/* A blocking call waits in C slices this long, then looks at Ctrl-C and close(). */
#define PYEXT_SLICE_NS 50000000LL
/* A message at least this long is copied with the GIL released. */
#define PYEXT_GIL_COPY 16384u
/* Iteration takes up to this many visible messages (and this many bytes) per
 * core call into the reader's pending array. */
#define PYEXT_PENDING 512u
#define PYEXT_PENDING_BYTES (256u << 10)

#if defined(__GNUC__)
#define PYEXT_LIKELY(x) __builtin_expect(!!(x), 1)
#define PYEXT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define PYEXT_LIKELY(x) (x)
#define PYEXT_UNLIKELY(x) (x)
#endif

/* Where a bytes object's data start, measured on live objects at module init
 * (the limited API has no PyBytes_AS_STRING); 0 when the two samples did not
 * agree, and PyBytes_AsString is called instead. */
extern Py_ssize_t pyext_bytes_data;
#include "pyext/layout_pvt.h"

/* The int 1, for poll(1)'s identity test (a small int: one object). */
extern PyObject *pyext_one;

/* An exact bytes object's data pointer: the hot path's inline read. */
static inline const char *pyext_bytes_ptr(PyObject *b)
{
    return PYEXT_LIKELY(pyext_bytes_data) ? (const char *)b + pyext_bytes_data
                                          : PyBytes_AsString(b);
}

/* Reader only: how many messages handed out are kept for reuse, and up to
 * which size (reader.c, recycled).  Two: a loop that keeps the last message
 * in a variable while it reads the next still finds one free. */
#define PYEXT_SPARES 2u
#define PYEXT_SPARE_MAX 512u

/*
 * One side (writer or reader) of a queue.  Every field is read and written
 * with the GIL held.  `h` is NULL until the queue binds the side and from the
 * moment close() begins (or fork() made this process a child).  `busy` is set
 * while an owner holds `lock`: a call that releases the GIL (a wait, a big
 * copy), a C thread running the side (pyqueue.threads) or close() itself.
 * The calls that keep the GIL need no lock: no other Python thread runs while
 * they do, so they only refuse a busy side.
 */
typedef struct pyext_side {
    PyObject_HEAD
    pyq_queue_t *h;
    int busy;
    unsigned long owner;       /* thread of the call that owns the side; 0: not a call */
    PyThread_type_lock lock;   /* held exactly while busy: what close() waits on */
    uint32_t max_message;
    int scan;                  /* a scanning reader: the library delivers every record */
    int shared;                /* a shared queue: the library delivers every record (each
                                  call ends with the reader's mirror), and an empty poll
                                  looks at the writer's process */
    uint32_t empty_polls;      /* shared: polls that found nothing (reader.c) */
    /* Reader only: messages iteration took from the queue and no call has
     * returned yet, pending[pending_at .. pending_n); every reader call serves
     * them first, so they are delivered once and in order. */
    PyObject **pending;
    uint32_t pending_at, pending_n;
    /* Reader only: the list the last poll(1) returned, reused once its caller
     * has let go of it (reader.c, list_of_one); seen by the collector. */
    PyObject *last;
    /* Reader only: the last PYEXT_SPARES small messages handed out, each
     * refilled in place by a later one of its size once only this side holds
     * it (reader.c, recycled).  Not containers: not traversed. */
    PyObject *spare[PYEXT_SPARES];
    uint32_t spare_next;       /* the slot a new message replaces next */
    /* The serializer (Queue(serializer=...)): the writer's dumps, the
     * reader's loads; NULL: messages are bytes-like.  put, put_nowait,
     * put_many, get, get_nowait, get_many and iteration use it; write,
     * try_write, read and poll never do.  Seen by the collector. */
    PyObject *dumps, *loads;
    /* Writer only: the framing put_many's room check counts with (many.c). */
    uint32_t block_size, record_align;
    uint64_t blocks;
    /* The open Claim (writer) or View (reader) of frame.c, borrowed: the
     * frame holds the side and clears this when it ends.  NULL: none. */
    PyObject *frame;
} pyext_side_t;

/* Own the side (1), or find it busy (0), or fail with an exception (-1:
 * interrupted while waiting).  blocking: wait for the owner, in slices that see
 * Ctrl-C.  as_call: record this thread as the owner (close() from a signal
 * handler on top of the call must not wait for it). */
int pyext_side_own(pyext_side_t *s, int blocking, int as_call);
void pyext_side_disown(pyext_side_t *s);
/* Raise the error of a side without a handle (closed, forked, never bound);
 * return NULL. */
PyObject *pyext_side_closed(pyext_side_t *s);
/* No handle yet: bind a shared queue's side now (0), else raise (-1). */
int pyext_side_need(pyext_side_t *s);
PyObject *pyext_side_end_of_stream(pyext_side_t *s);
PyObject *pyext_side_rebind(PyObject *self, PyObject *arg);
/* Raise "<side> side is in use by another thread"; return NULL. */
PyObject *pyext_side_in_use(pyext_side_t *s);
PyObject *pyext_too_large(pyext_side_t *s, Py_ssize_t n);
/* Raise error_for(code, what); return NULL. */
PyObject *pyext_raise(int code, const char *what);
/* Raise cls(message, code) (a QueueError subclass); return NULL. */
PyObject *pyext_raise_queue(PyObject *cls, int code, const char *message);
/* The timeout argument in ns: -1 for none (None or no limit), else >= 0.
 * 0, or -1 with an exception.  The last float or int parsed is kept (side.c):
 * a call site's constant costs one compare. */
extern PyObject *pyext_last_timeout;
extern int64_t pyext_last_timeout_ns;
int pyext_timeout_parse(PyObject *t, int64_t *ns);
static inline int pyext_timeout(PyObject *t, int64_t *ns)
{
    if (PYEXT_LIKELY(t == pyext_last_timeout && t)) {
        *ns = pyext_last_timeout_ns;
        return 0;
    }
    return pyext_timeout_parse(t, ns);
}
/* CLOCK_MONOTONIC now, ns. */
int64_t pyext_now_ns(void);
/* The parameters of a METH_FASTCALL | METH_KEYWORDS method (a static per
 * method): the first nreq are required.  Their names are interned on first use,
 * so a keyword of a call site (an interned constant of its code) is found by
 * its address, without comparing text. */
#define PYEXT_MAX_PARAMS 4
typedef struct pyext_params {
    const char *fname;
    int nreq, nmax;
    const char *names[PYEXT_MAX_PARAMS];
    PyObject *interned[PYEXT_MAX_PARAMS];
} pyext_params_t;
/* Positional-or-keyword arguments: out[i] = parameter i, or NULL when not
 * given.  0, or -1 with TypeError (MemoryError). */
int pyext_args(pyext_params_t *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
               PyObject **out);
/* Whether kwnames is exactly (name,) for parameter i of p, by address (a call
 * site's interned constant): the one-keyword fast paths' test. */
static inline int pyext_only_kw(pyext_params_t *p, int i, PyObject *kwnames)
{
    return kwnames && Py_SIZE(kwnames) == 1 && p->interned[i] &&
           pyext_tuple_first(kwnames) == p->interned[i];
}
/* The side's own message counter (messages_written or messages_read) with
 * the GIL held: what write_batch and poll_into count from. */
PyObject *pyext_side_counter(pyext_side_t *s, int writer);
/* Drop the reader's pending messages (close, fork, dealloc). */
void pyext_side_drop_pending(pyext_side_t *s);
/* Attach ``name`` = ``value`` to the exception being raised (.written,
 * .messages). */
void pyext_attach(const char *name, PyObject *value);
/* put's item as the message to write: a new reference to the item itself, or
 * to what the serializer's dumps made of it (checked bytes-like); NULL with an
 * exception. */
PyObject *pyext_dumps(pyext_side_t *s, PyObject *item);
/* A message as get returns it: msg itself, or the serializer's loads of it
 * (msg released; if loads raises, msg rides on the exception as .messages).
 * NULL in, NULL out. */
PyObject *pyext_loads_of(pyext_side_t *s, PyObject *msg);
static inline PyObject *pyext_loaded(pyext_side_t *s, PyObject *msg)
{
    return PYEXT_LIKELY(!s->loads) || !msg ? msg : pyext_loads_of(s, msg);
}
/* Attach `messages` to the exception being raised as its .messages. */
void pyext_attach_messages(PyObject *messages);

/* The methods every side has (side.c), for the Python classes in
 * pyqueue/queue.py: bind to a queue, mark closed or forked, own and disown. */
PyObject *pyext_side_bind(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *pyext_side_close(PyObject *self, PyObject *unused);
PyObject *pyext_side_forked(PyObject *self, PyObject *unused);
PyObject *pyext_side_own_py(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *pyext_side_disown_py(PyObject *self, PyObject *unused);
PyObject *pyext_side_owned_here(PyObject *self, PyObject *unused);
PyObject *pyext_side_is_closed(PyObject *self, PyObject *unused);
PyObject *pyext_side_is_busy(PyObject *self, PyObject *unused);
PyObject *pyext_side_pending_count(PyObject *self, PyObject *unused);
PyObject *pyext_side_set_serializer(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
void pyext_side_dealloc(PyObject *self);
/* The garbage collector's view of a side: its type and the reader's last list. */
int pyext_side_traverse(PyObject *self, visitproc visit, void *arg);
int pyext_side_clear(PyObject *self);
int pyext_side_tp_clear(PyObject *self);

#define PYEXT_SIDE_METHODS \
    {"_bind", (PyCFunction)(void (*)(void))pyext_side_bind, METH_FASTCALL, \
     "_bind(handle, max_message): attach the side to its queue's C handle, once."}, \
    {"_rebind", pyext_side_rebind, METH_O, \
     "_rebind(handle): a shared queue's side taken in this process."}, \
    {"_close_side", pyext_side_close, METH_NOARGS, \
     "_close_side(): drop the handle (close() begins); calls in flight keep theirs."}, \
    {"_forked", pyext_side_forked, METH_NOARGS, \
     "_forked(): in a fork() child: no handle, not busy, a fresh lock."}, \
    {"_own", (PyCFunction)(void (*)(void))pyext_side_own_py, METH_FASTCALL, \
     "_own(blocking, as_call) -> bool: mark the side busy (see side_lock)."}, \
    {"_disown", pyext_side_disown_py, METH_NOARGS, "_disown(): the side is free again."}, \
    {"_owned_here", pyext_side_owned_here, METH_NOARGS, \
     "_owned_here() -> bool: a call of this thread owns the side."}, \
    {"_is_closed", pyext_side_is_closed, METH_NOARGS, "_is_closed() -> bool: no handle."}, \
    {"_is_busy", pyext_side_is_busy, METH_NOARGS, "_is_busy() -> bool: an owner holds the side."}, \
    {"_pending_count", pyext_side_pending_count, METH_NOARGS, \
     "_pending_count() -> int: messages iteration took and no call returned yet."}, \
    {"_set_serializer", (PyCFunction)(void (*)(void))pyext_side_set_serializer, METH_FASTCALL, \
     "_set_serializer(dumps, loads): the callables put/get use (None, None: bytes)."}, \
    {"_frame_exports", pyext_side_frame_exports, METH_NOARGS, \
     "_frame_exports() -> int: buffers the open claim or view exported and nobody released."}

/* The core's try_write: inline for a queue that writes runs (pyqueue_inline.h);
 * a scanning reader's queue never has one, so its writes go to the library
 * without the inline path's look first. */
#define PYEXT_TRY_WRITE(s, p, n)                                                              \
    ((s)->scan ? pyext_core.writer_try_write((s)->h, p, n)                                    \
               : pyq_writer_try_write_inline((s)->h, p, n))

/* Write one message, waiting for room, owning the side (writer.c): at most
 * timeout_ns (-1: no limit).  None, or NULL with an exception. */
PyObject *pyext_write_wait(pyext_side_t *s, const char *p, uint32_t n, int64_t timeout_ns,
                           const char *what);

/* The writer's batch call (many.c). */
PyObject *pyext_writer_put_many(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames);
PyObject *pyext_writer_set_framing(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Zero copy (frame.c): Writer.claim and Reader.get_view, their Claim and
 * View types; the side's open frame orphaned (close, fork), its exported
 * buffers counted (Queue.close refuses while any is alive), the error of a
 * call refused while one is open. */
PyObject *pyext_writer_claim(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames);
PyObject *pyext_reader_get_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames);
void pyext_frame_orphan(pyext_side_t *s);
Py_ssize_t pyext_frame_exports(pyext_side_t *s);
PyObject *pyext_frame_held(pyext_side_t *s, int writer);
PyObject *pyext_side_frame_exports(PyObject *self, PyObject *unused);
/* reader.c: the next message iteration took (a new reference), or NULL. */
PyObject *pyext_reader_pending_take(pyext_side_t *s);
extern PyTypeObject *pyext_claim_type, *pyext_view_type;
extern PyType_Spec pyext_claim_spec, pyext_view_spec;

/* The two types, made from their specs at module init. */
extern PyType_Spec pyext_writer_spec, pyext_reader_spec;

#endif /* PYQ_PYEXT_PVT_H */
