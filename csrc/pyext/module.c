/*
 * module.c - pyqueue._pyext: the Writer and Reader base types, and setup(),
 * which receives the core's function pointers from the cffi module once, so
 * that the process holds one compiled copy of the core.
 */
#include "pyext/pyext_pvt.h"

pyext_core_t pyext_core;
Py_ssize_t pyext_bytes_data;
int pyext_bytes_direct, pyext_list_items, pyext_tuple_items;
PyObject *pyext_one;
PyObject *pyext_error_for, *pyext_timeout_ns, *pyext_max_messages;
PyObject *pyext_QueueError, *pyext_QueueEmpty, *pyext_QueueFull, *pyext_EndOfStream;

/* The core functions setup() wants, by name, and where each goes. */
static const struct {
    const char *name;
    void **slot;
} CORE[] = {
    {"pyq_writer_write", (void **)&pyext_core.writer_write},
    {"pyq_writer_try_write", (void **)&pyext_core.writer_try_write},
    {"pyq_writer_flush", (void **)&pyext_core.writer_flush},
    {"pyq_reader_poll", (void **)&pyext_core.reader_poll},
    {"pyq_reader_next_len", (void **)&pyext_core.reader_next_len},
    {"pyq_reader_wait", (void **)&pyext_core.reader_wait},
    {"pyq_queue_stats", (void **)&pyext_core.queue_stats},
    {"pyq_queue_dead_peer", (void **)&pyext_core.queue_dead_peer},
    {"pyq_writer_claim", (void **)&pyext_core.writer_claim},
    {"pyq_writer_commit", (void **)&pyext_core.writer_commit},
    {"pyq_writer_abort", (void **)&pyext_core.writer_abort},
    {"pyq_reader_view", (void **)&pyext_core.reader_view},
    {"pyq_reader_release", (void **)&pyext_core.reader_release},
    {"pyq_reader_unview", (void **)&pyext_core.reader_unview},
};
#define N_CORE (sizeof(CORE) / sizeof(CORE[0]))

static const char *const HELPERS[] = {"error_for", "timeout_ns", "max_messages", "QueueError",
                                      "QueueEmpty", "QueueFull", "EndOfStream"};
static PyObject **const HELPER_SLOT[] = {&pyext_error_for, &pyext_timeout_ns,
                                         &pyext_max_messages, &pyext_QueueError,
                                         &pyext_QueueEmpty, &pyext_QueueFull, &pyext_EndOfStream};
#define N_HELPERS (sizeof(HELPERS) / sizeof(HELPERS[0]))

static PyObject *setup(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    void *fn[N_CORE];
    PyObject *got[N_HELPERS];
    size_t i;

    if (nargs != 2 || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "setup(functions: dict, helpers: dict)");
        return NULL;
    }
    if (pyext_core.writer_write) { /* once: live sides call through these */
        PyErr_SetString(PyExc_RuntimeError, "pyqueue._pyext.setup() was already called");
        return NULL;
    }
    for (i = 0; i < N_CORE; i++) {
        PyObject *v = PyDict_GetItemString(args[0], CORE[i].name);
        if (!v) {
            PyErr_Format(PyExc_KeyError, "setup: no address for %s", CORE[i].name);
            return NULL;
        }
        fn[i] = PyLong_AsVoidPtr(v);
        if (!fn[i]) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "setup: NULL address for %s", CORE[i].name);
            return NULL;
        }
    }
    for (i = 0; i < N_HELPERS; i++) {
        got[i] = PyDict_GetItemString(args[1], HELPERS[i]);
        if (!got[i]) {
            PyErr_Format(PyExc_KeyError, "setup: no helper %s", HELPERS[i]);
            return NULL;
        }
    }
    for (i = 0; i < N_HELPERS; i++) {
        Py_INCREF(got[i]);
        *HELPER_SLOT[i] = got[i];
    }
    for (i = 0; i < N_CORE; i++)
        *CORE[i].slot = fn[i];
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL,
     "setup(functions, helpers)\n--\n\n"
     "Once, from pyqueue.queue at import: ``functions`` maps each name of\n"
     "CORE_FUNCTIONS to its address in pyqueue._pyq (the one compiled core);\n"
     "``helpers`` gives error_for, timeout_ns, max_messages and the exception\n"
     "classes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pyqueue._pyext",
    .m_doc = "The per-message calls of pyqueue's Writer and Reader as CPython C-API "
             "methods over the core compiled into pyqueue._pyq (DESIGN §5.3).",
    .m_size = -1,
    .m_methods = module_methods,
};

/* The offset of a bytes object's data, the same for two objects of different
 * sizes (a fixed header, then the data), or 0: use PyBytes_AsString. */
static Py_ssize_t bytes_data_offset(PyObject *a, PyObject *b)
{
    Py_ssize_t oa = PyBytes_AsString(a) - (char *)a, ob = PyBytes_AsString(b) - (char *)b;
    return oa == ob && oa > 0 ? oa : 0;
}

/* A type attribute as a C integer, -1 if it is not one. */
static long type_long(PyTypeObject *tp, const char *name)
{
    PyObject *v = PyObject_GetAttrString((PyObject *)tp, name);
    long r = v && PyLong_Check(v) ? PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    return r;
}

/* Whether a bytes object is laid out as layout_pvt.h builds it: the data at
 * PYEXT_BYTES_DATA_AT, its NUL, the hash slot -1 until hash() fills it, the
 * sizes the type states, and PyObject_Free as what releases it. */
static int bytes_as_built(PyObject *a, Py_ssize_t len)
{
    const char *o = (const char *)a;
    Py_hash_t *slot = (Py_hash_t *)(void *)(o + PYEXT_BYTES_HASH_AT);
    Py_hash_t h;

    if (pyext_bytes_data != PYEXT_BYTES_DATA_AT || Py_SIZE(a) != len ||
        o[PYEXT_BYTES_DATA_AT + len] != '\0' || *slot != -1)
        return 0;
    h = PyObject_Hash(a);
    return h != -1 && *slot == h && type_long(&PyBytes_Type, "__basicsize__") ==
        PYEXT_BYTES_DATA_AT + 1 && type_long(&PyBytes_Type, "__itemsize__") == 1 &&
        PyType_GetSlot(&PyBytes_Type, Py_tp_free) == (void *)PyObject_Free;
}

/* Whether a list's item array is a pointer at PYEXT_LIST_ITEMS_AT. */
static int list_as_filled(PyObject *a, PyObject *b)
{
    PyObject *l = PyList_New(2), **items;
    int ok = 0;

    if (!l)
        return 0;
    Py_INCREF(a);
    Py_INCREF(b);
    PyList_SetItem(l, 0, a);
    PyList_SetItem(l, 1, b);
    items = *(PyObject ***)(void *)((char *)l + PYEXT_LIST_ITEMS_AT);
    ok = items && items[0] == a && items[1] == b && Py_SIZE(l) == 2 &&
         type_long(&PyList_Type, "__basicsize__") ==
             (long)(sizeof(PyVarObject) + sizeof(PyObject **) + sizeof(Py_ssize_t));
    Py_DECREF(l);
    return ok;
}

/* Whether a tuple's items follow its header. */
static int tuple_as_filled(PyObject *a, PyObject *b)
{
    PyObject *t = PyTuple_Pack(2, a, b), **items;
    int ok;

    if (!t)
        return 0;
    items = (PyObject **)(void *)((char *)t + PYEXT_TUPLE_ITEMS_AT);
    ok = items[0] == a && items[1] == b && Py_SIZE(t) == 2 &&
         type_long(&PyTuple_Type, "__basicsize__") == (long)sizeof(PyVarObject) &&
         type_long(&PyTuple_Type, "__itemsize__") == (long)sizeof(PyObject *);
    Py_DECREF(t);
    return ok;
}

void pyext_layout_probe(void)
{
    static const char text[] = "pyqueue layout";
    PyObject *a = PyBytes_FromStringAndSize(text, sizeof(text) - 1);
    PyObject *b = PyBytes_FromStringAndSize(NULL, 1000);
    /* The versions whose objects layout_pvt.h describes; the checks below
     * catch a build that differs (a debug build's extra header fields). */
    int known = Py_Version >= 0x030B0000 && Py_Version < 0x030F0000;

    pyext_bytes_data = pyext_bytes_direct = pyext_list_items = pyext_tuple_items = 0;
    if (a && b && Py_SIZE(a) == (Py_ssize_t)sizeof(text) - 1 && Py_SIZE(b) == 1000) {
        pyext_bytes_data = bytes_data_offset(a, b);
        pyext_bytes_direct = known && bytes_as_built(a, sizeof(text) - 1);
        pyext_list_items = known && list_as_filled(a, b);
        pyext_tuple_items = known && tuple_as_filled(a, b);
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    PyErr_Clear();
}

PyMODINIT_FUNC PyInit__pyext(void)
{
    PyObject *m = PyModule_Create(&module_def), *names;
    PyObject *w, *r;
    size_t i;

    if (!m)
        return NULL;
    pyext_layout_probe();
    if (!pyext_one && !(pyext_one = PyLong_FromLong(1)))
        goto fail;
    names = PyTuple_New(N_CORE);
    if (!names)
        goto fail;
    for (i = 0; i < N_CORE; i++) {
        PyObject *s = PyUnicode_FromString(CORE[i].name);
        if (!s) {
            Py_DECREF(names);
            goto fail;
        }
        PyTuple_SetItem(names, (Py_ssize_t)i, s);
    }
    if (PyModule_AddObject(m, "CORE_FUNCTIONS", names) < 0) {
        Py_DECREF(names);
        goto fail;
    }
    w = PyType_FromSpec(&pyext_writer_spec);
    if (!w || PyModule_AddObject(m, "WriterCore", w) < 0) {
        Py_XDECREF(w);
        goto fail;
    }
    r = PyType_FromSpec(&pyext_reader_spec);
    if (!r || PyModule_AddObject(m, "ReaderCore", r) < 0) {
        Py_XDECREF(r);
        goto fail;
    }
    /* The frame types stay referenced here for as long as the process runs. */
    if (!pyext_claim_type &&
        !(pyext_claim_type = (PyTypeObject *)PyType_FromSpec(&pyext_claim_spec)))
        goto fail;
    if (!pyext_view_type &&
        !(pyext_view_type = (PyTypeObject *)PyType_FromSpec(&pyext_view_spec)))
        goto fail;
    Py_INCREF((PyObject *)pyext_claim_type);
    Py_INCREF((PyObject *)pyext_view_type);
    if (PyModule_AddObject(m, "Claim", (PyObject *)pyext_claim_type) < 0 ||
        PyModule_AddObject(m, "View", (PyObject *)pyext_view_type) < 0)
        goto fail;
    if (PyModule_AddIntConstant(m, "GIL_COPY", PYEXT_GIL_COPY) < 0 ||
        PyModule_AddIntConstant(m, "SLICE_NS", (long)PYEXT_SLICE_NS) < 0 ||
        PyModule_AddIntConstant(m, "BYTES_DIRECT", pyext_bytes_direct) < 0 ||
        PyModule_AddIntConstant(m, "LIST_DIRECT", pyext_list_items) < 0 ||
        PyModule_AddIntConstant(m, "TUPLE_DIRECT", pyext_tuple_items) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
