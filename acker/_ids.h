/*
 * 64-bit ids in the C modules' hot loops (acker._fastpath, acker._ledger,
 * topology.runtime.net._wire and _spout): reading one out of a Python int without a
 * conversion call (PyLong_AsUnsignedLongLong goes through a byte-array conversion for
 * every int above 2**30: most of the cost of a step that only needs the number), and the
 * one-tree envelope (edge, root) and the three-item entries of inits and the ledger
 * built without Py_BuildValue's per-call format parsing.
 */
#ifndef SPARKSTORM_IDS_H
#define SPARKSTORM_IDS_H

#include <Python.h>
#include <stdint.h>

/* 1 with *out set when ``o`` is an exact int in 0 .. 2**64 - 1; 0 otherwise (int
 * subclasses, other types, out of range), never with an error set. */
static inline int exact_u64(PyObject *o, uint64_t *out) {
    if (!PyLong_CheckExact(o)) return 0;
#if PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
    /* CPython up to 3.11: the sign and digit count in ob_size, 30-bit digits */
    const digit *d = ((PyLongObject *)o)->ob_digit;
    switch (Py_SIZE(o)) {
    case 0: *out = 0; return 1;
    case 1: *out = d[0]; return 1;
    case 2: *out = (uint64_t)d[0] | (uint64_t)d[1] << 30; return 1;
    case 3:
        if (d[2] >> 4) return 0; /* (60 bits below it) */
        *out = (uint64_t)d[0] | (uint64_t)d[1] << 30 | (uint64_t)d[2] << 60;
        return 1;
    default: return 0; /* negative, or over 90 bits */
    }
#else
    if (_PyLong_Sign(o) < 0) return 0;
    size_t bits = _PyLong_NumBits(o);
    if (bits == (size_t)-1) { /* (an overflow of the bit count: far over 64 bits) */
        PyErr_Clear();
        return 0;
    }
    if (bits > 64) return 0;
    *out = PyLong_AsUnsignedLongLongMask(o);
    return 1;
#endif
}

/* (edge, root): a new reference to a fresh 2-tuple holding a new int and root, or NULL. */
static inline PyObject *envelope_of(uint64_t edge, PyObject *root) {
    PyObject *edge_obj = PyLong_FromUnsignedLongLong(edge);
    if (edge_obj == NULL) return NULL;
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(edge_obj);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, edge_obj);
    PyTuple_SET_ITEM(pair, 1, Py_NewRef(root));
    return pair;
}

/* [a, b, c] (new references to each), or NULL: Py_BuildValue parses its format on every
 * call, a thousand instructions for a three-item list. */
static inline PyObject *list3(PyObject *a, PyObject *b, PyObject *c) {
    PyObject *list = PyList_New(3);
    if (list == NULL) return NULL;
    PyList_SET_ITEM(list, 0, Py_NewRef(a));
    PyList_SET_ITEM(list, 1, Py_NewRef(b));
    PyList_SET_ITEM(list, 2, Py_NewRef(c));
    return list;
}

/* Dict steps on a root whose hash was computed once: a tree's root is looked up in a
 * generation, then stored, moved or deleted, and hashing a 64-bit int each time is a
 * loop over its digits.  CPython's known-hash entry points (up to 3.12; the plain calls,
 * which hash again, after). */
#if PY_VERSION_HEX < 0x030D0000
#define DICT_GET_H(d, k, h) _PyDict_GetItem_KnownHash((d), (k), (h))
#define DICT_SET_H(d, k, v, h) _PyDict_SetItem_KnownHash((d), (k), (v), (h))
#define DICT_DEL_H(d, k, h) _PyDict_DelItem_KnownHash((d), (k), (h))
#define DICT_NEXT_H(d, pos, k, v, h) _PyDict_Next((d), (pos), (k), (v), (h))
#else
#define DICT_GET_H(d, k, h) ((void)(h), PyDict_GetItemWithError((d), (k)))
#define DICT_SET_H(d, k, v, h) ((void)(h), PyDict_SetItem((d), (k), (v)))
#define DICT_DEL_H(d, k, h) ((void)(h), PyDict_DelItem((d), (k)))
#define DICT_NEXT_H(d, pos, k, v, h) (*(h) = 0, PyDict_Next((d), (pos), (k), (v)))
#endif

#endif
