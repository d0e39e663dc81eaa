/*
 * layout_pvt.h - bytes and list objects built in place, past the limited API.
 *
 * The limited API hides PyBytesObject and PyListObject, and its constructors
 * cost more than what they do for a 32-byte message: PyBytes_FromStringAndSize
 * is a call into a call with its size checks, then a libc memcpy.  The layout
 * below is CPython's for 3.11 to 3.14 (default builds): a bytes object is the
 * variable-size header, the cached hash, then the data and a NUL; a list is
 * the header, then a pointer to its item array; a tuple is the header, then
 * its items (read only here: a call's keyword names).  Module init checks each
 * field on live objects (pyext_layout_probe, module.c) and sets
 * pyext_bytes_direct, pyext_list_items and pyext_tuple_items only where all of
 * them agree; elsewhere the public calls are made.  Included by pyext_pvt.h.
 */
#ifndef PYQ_PYEXT_LAYOUT_PVT_H
#define PYQ_PYEXT_LAYOUT_PVT_H

#include <string.h>

#define PYEXT_BYTES_HASH_AT ((Py_ssize_t)sizeof(PyVarObject))
#define PYEXT_BYTES_DATA_AT ((Py_ssize_t)(sizeof(PyVarObject) + sizeof(Py_hash_t)))
#define PYEXT_LIST_ITEMS_AT ((Py_ssize_t)sizeof(PyVarObject))
#define PYEXT_TUPLE_ITEMS_AT ((Py_ssize_t)sizeof(PyVarObject))

/* 1: a bytes object is made here (the layout above was verified at init). */
extern int pyext_bytes_direct;
/* 1: a list's item array is filled here (verified at init). */
extern int pyext_list_items;

/* 1: a tuple's items are read here (verified at init). */
extern int pyext_tuple_items;

/* Check the layout on live objects and set the three flags (module init). */
void pyext_layout_probe(void);

/* msg[0 .. len) into a bytes object's data d, exactly those bytes (its NUL
 * is the caller's): a copy the compiler inlines for 8 to 64 bytes. */
static inline void pyext_bytes_fill(char *d, const void *msg, uint32_t len)
{
    if (PYEXT_LIKELY(len >= 8 && len <= 64))
        pyq_copy_small((uint8_t *)d, msg, len);
    else
        memcpy(d, msg, len);
}

/* A new bytes object holding msg[0 .. len), or NULL with MemoryError.  What
 * PyBytes_FromStringAndSize does -- PyObject_Malloc of the header, data and
 * NUL, PyObject_InitVar, hash not computed (-1), the copy, the NUL -- with a
 * copy the compiler inlines for 8 to 64 bytes.  Sizes 0 and 1 go to CPython,
 * which hands out cached objects for them. */
static inline PyObject *pyext_bytes_new(const void *msg, uint32_t len)
{
    char *o, *d;

    if (PYEXT_UNLIKELY(!pyext_bytes_direct || len < 2))
        return PyBytes_FromStringAndSize(msg, len);
    o = PyObject_Malloc((size_t)PYEXT_BYTES_DATA_AT + 1 + len);
    if (PYEXT_UNLIKELY(!o))
        return PyErr_NoMemory();
    PyObject_InitVar((PyVarObject *)o, &PyBytes_Type, len);
    *(Py_hash_t *)(void *)(o + PYEXT_BYTES_HASH_AT) = -1;
    d = o + PYEXT_BYTES_DATA_AT;
    pyext_bytes_fill(d, msg, len);
    d[len] = '\0';
    return (PyObject *)o;
}

/* A new list of arr[0 .. n) (the references move into it; on failure they
 * are released), or NULL with MemoryError. */
static inline PyObject *pyext_list_of(PyObject **arr, Py_ssize_t n)
{
    PyObject *l = PyList_New(n);
    Py_ssize_t i;

    if (PYEXT_UNLIKELY(!l)) {
        for (i = 0; i < n; i++)
            Py_DECREF(arr[i]);
        return NULL;
    }
    if (PYEXT_LIKELY(pyext_list_items && n > 0)) {
        memcpy(*(PyObject ***)(void *)((char *)l + PYEXT_LIST_ITEMS_AT), arr,
               (size_t)n * sizeof(PyObject *));
    } else {
        for (i = 0; i < n; i++)
            PyList_SetItem(l, i, arr[i]); /* steals */
    }
    return l;
}

/* Item 0 of a non-empty tuple (borrowed). */
static inline PyObject *pyext_tuple_first(PyObject *t)
{
    if (PYEXT_LIKELY(pyext_tuple_items))
        return *(PyObject **)(void *)((char *)t + PYEXT_TUPLE_ITEMS_AT);
    return PyTuple_GetItem(t, 0);
}

#endif /* PYQ_PYEXT_LAYOUT_PVT_H */
