/*
 * topology.runtime.net._wire: the per-byte and per-tuple checks on frames from the network,
 * selected by topology/runtime/net/codec.py (whose pure-Python twins are the reference;
 * tests/unit/test_wire.py runs both on the same generated input).
 *
 *   decoded_cost(frame, limit) -> int
 *       Walks the msgpack bytes without building anything and returns an estimate of
 *       the bytes of Python objects that decoding them would allocate (containers and
 *       their slots, strings, byte strings, non-cached ints, floats; a byte string whose
 *       length is a multiple of 16 also at what the door's expand_metas would make of
 *       it); it stops as soon
 *       as the estimate passes ``limit`` and returns it (so a result over ``limit`` means
 *       "over budget").  Raises ValueError for truncated input, trailing bytes,
 *       extension types, the never-used byte 0xc1, or a container announcing more
 *       elements than bytes remain.
 *   check_tuples(vals, metas, arity) -> str | None
 *       Every element of ``vals`` a list of ``arity`` values; ``metas`` None or a list as
 *       long as ``vals`` whose elements are None or [edge, roots] with edge an int in
 *       0 .. 2**64 - 1 and roots such an int or a dict of them (to such ints).  None when
 *       all hold, else the reason.
 *   pack_metas(metas) -> bytes | None
 *       A group's envelopes packed for the wire when every one is a 2-item tuple or list
 *       of ints in 0 .. 2**64 - 1 (one tree): 16 bytes each, edge then root, both
 *       little-endian; None when any is not (untracked, several trees, anything else).
 *   expand_metas(packed) -> list
 *       The envelopes back as (edge, root) tuples, consecutive equal roots sharing one
 *       int; ValueError unless the length is a multiple of 16.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../../../acker/_ids.h"

/* Estimated bytes of the Python objects decoding creates (CPython 3.11, 64-bit). */
#define META_BYTES 16       /* one packed envelope: edge and root, 8 bytes each */
#define COST_SLOT 8         /* a pointer in the parent container */
#define COST_LIST 64        /* a list object */
#define COST_DICT 72        /* a dict object ... */
#define COST_DICT_ENTRY 24  /* ... and per entry (keys, values and the index) */
#define COST_STR 49         /* a str header; one-character and empty strs are cached */
#define COST_BYTES 33
#define COST_INT 32         /* ints outside -5 .. 256 */
#define COST_FLOAT 24
/* A byte string of 16 x n bytes may be n packed envelopes the door expands (expand_metas):
 * per 16 bytes a slot, a 2-tuple (56) and two ints (2 x 36), about 8.5 bytes a byte, on
 * top of the byte string itself.  (The door refuses packed envelopes of other lengths.) */
#define COST_BIN_PER_BYTE 10

static inline uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static PyObject *wire_decoded_cost(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "decoded_cost(frame, limit)");
        return NULL;
    }
    unsigned long long limit = PyLong_AsUnsignedLongLong(args[1]);
    if (limit == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    const unsigned char *end = p + view.len;
    uint64_t pending = 1; /* objects still to read (msgpack is prefix notation) */
    uint64_t cost = 0;
    const char *error = NULL;
    while (pending > 0) {
        if (p >= end) {
            error = "truncated frame";
            break;
        }
        unsigned char b = *p++;
        uint64_t remaining = (uint64_t)(end - p);
        uint64_t n = 0;      /* payload bytes to skip */
        uint64_t items = 0;  /* elements a container announces */
        int is_map = -1;     /* -1: not a container; 0: array; 1: map */
        pending--;
        cost += COST_SLOT;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            /* fixints, nil, false, true: cached objects */
        } else if (b >= 0xa0 && b <= 0xbf) {
            n = b & 0x1f;
            if (n > 1) cost += COST_STR + n;
        } else if (b >= 0x90 && b <= 0x9f) {
            items = b & 0x0f;
            is_map = 0;
        } else if (b >= 0x80 && b <= 0x8f) {
            items = b & 0x0f;
            is_map = 1;
        } else {
            int width = 0;
            switch (b) {
            case 0xcc: case 0xd0: n = 1; cost += COST_INT; break;
            case 0xcd: case 0xd1: n = 2; cost += COST_INT; break;
            case 0xce: case 0xd2: n = 4; cost += COST_INT; break;
            case 0xcf: case 0xd3: n = 8; cost += COST_INT; break;
            case 0xca: n = 4; cost += COST_FLOAT; break;
            case 0xcb: n = 8; cost += COST_FLOAT; break;
            case 0xd9: case 0xc4: width = 1; break;
            case 0xda: case 0xc5: width = 2; break;
            case 0xdb: case 0xc6: width = 4; break;
            case 0xdc: width = 2; is_map = 0; break;
            case 0xdd: width = 4; is_map = 0; break;
            case 0xde: width = 2; is_map = 1; break;
            case 0xdf: width = 4; is_map = 1; break;
            default: error = "extension type or reserved byte"; break;
            }
            if (error != NULL) break;
            if (width) {
                if (remaining < (uint64_t)width) {
                    error = "truncated frame";
                    break;
                }
                uint64_t len = be(p, width);
                p += width;
                remaining -= width;
                if (is_map >= 0) {
                    items = len;
                } else {
                    n = len;
                    if (b >= 0xc4 && b <= 0xc6)
                        cost += COST_BYTES + (len > 0 && len % META_BYTES == 0
                                                  ? COST_BIN_PER_BYTE * len
                                                  : len);
                    else
                        cost += len > 1 ? COST_STR + len : 0;
                }
            }
        }
        if (n > remaining) {
            error = "truncated frame";
            break;
        }
        p += n;
        if (is_map >= 0) {
            pending += is_map ? 2 * items : items; /* < 2**34: no overflow */
            cost += is_map ? COST_DICT + COST_DICT_ENTRY * items : COST_LIST + COST_SLOT * items;
        }
        if (pending > (uint64_t)(end - p)) { /* every element takes at least one byte */
            error = "a container announcing more elements than the frame holds";
            break;
        }
        if (cost > limit) break; /* over budget: the caller refuses it, no need to go on */
    }
    if (error == NULL && cost <= limit && p != end) error = "trailing bytes after the frame";
    PyBuffer_Release(&view);
    if (error != NULL) {
        PyErr_SetString(PyExc_ValueError, error);
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(cost);
}

/* 1 when ``o`` is an exact int in 0 .. 2**64 - 1, else 0 (never an exception). */
static int is_u64(PyObject *o) {
    uint64_t ignored;
    return exact_u64(o, &ignored);
}

static PyObject *reason(const char *text) { return PyUnicode_FromString(text); }

static PyObject *wire_check_tuples(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "check_tuples(vals, metas, arity)");
        return NULL;
    }
    PyObject *vals = args[0], *metas = args[1];
    Py_ssize_t arity = PyLong_AsSsize_t(args[2]);
    if (arity == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(vals)) return reason("values are not a list");
    Py_ssize_t n = PyList_GET_SIZE(vals);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(vals, i);
        if (!PyList_CheckExact(v)) return reason("a tuple's values are not a list");
        if (PyList_GET_SIZE(v) != arity)
            return reason("a tuple with another number of values than its stream's fields");
    }
    if (metas == Py_None) Py_RETURN_NONE;
    if (!PyList_CheckExact(metas) || PyList_GET_SIZE(metas) != n)
        return reason("envelopes that do not match the values");
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PyList_GET_ITEM(metas, i);
        if (m == Py_None) continue;
        if (!PyList_CheckExact(m) || PyList_GET_SIZE(m) != 2)
            return reason("an envelope that is not [edge, roots]");
        if (!is_u64(PyList_GET_ITEM(m, 0)))
            return reason("an edge id that is not an int in 0 .. 2**64 - 1");
        PyObject *roots = PyList_GET_ITEM(m, 1);
        if (PyDict_CheckExact(roots)) {
            Py_ssize_t pos = 0;
            PyObject *root, *value;
            while (PyDict_Next(roots, &pos, &root, &value)) {
                if (!is_u64(root) || !is_u64(value))
                    return reason("a root id or ack value that is not an int in 0 .. 2**64 - 1");
            }
        } else if (!is_u64(roots)) {
            return reason("a root id that is not an int in 0 .. 2**64 - 1");
        }
    }
    Py_RETURN_NONE;
}

static void put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static PyObject *wire_pack_metas(PyObject *module, PyObject *metas) {
    if (!PyList_CheckExact(metas)) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(metas);
    if (n > PY_SSIZE_T_MAX / META_BYTES) Py_RETURN_NONE;
    if (n > 0) { /* (a group of another kind is told by its first envelope, mostly) */
        PyObject *first = PyList_GET_ITEM(metas, 0);
        if (!((PyTuple_CheckExact(first) && PyTuple_GET_SIZE(first) == 2) ||
              (PyList_CheckExact(first) && PyList_GET_SIZE(first) == 2)))
            Py_RETURN_NONE;
    }
    PyObject *packed = PyBytes_FromStringAndSize(NULL, n * META_BYTES);
    if (packed == NULL) return NULL;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(packed);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PyList_GET_ITEM(metas, i), *edge, *root;
        if (PyTuple_CheckExact(m) && PyTuple_GET_SIZE(m) == 2) {
            edge = PyTuple_GET_ITEM(m, 0);
            root = PyTuple_GET_ITEM(m, 1);
        } else if (PyList_CheckExact(m) && PyList_GET_SIZE(m) == 2) {
            edge = PyList_GET_ITEM(m, 0);
            root = PyList_GET_ITEM(m, 1);
        } else {
            Py_DECREF(packed);
            Py_RETURN_NONE;
        }
        uint64_t e, r;
        if (!exact_u64(edge, &e) || !exact_u64(root, &r)) {
            Py_DECREF(packed);
            Py_RETURN_NONE;
        }
        put_le64(out + i * META_BYTES, e);
        put_le64(out + i * META_BYTES + 8, r);
    }
    return packed;
}

static PyObject *wire_expand_metas(PyObject *module, PyObject *arg) {
    if (!PyBytes_CheckExact(arg)) {
        PyErr_SetString(PyExc_TypeError, "expand_metas: packed envelopes are bytes");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(arg);
    if (size % META_BYTES != 0) {
        PyErr_SetString(PyExc_ValueError, "expand_metas: not a multiple of 16 bytes");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = size / META_BYTES;
    PyObject *metas = PyList_New(n);
    if (metas == NULL) return NULL;
    PyObject *root_obj = NULL; /* the previous envelope's root, shared while it repeats */
    uint64_t root = 0;
    for (Py_ssize_t i = 0; i < n; i++, p += META_BYTES) {
        uint64_t r = get_le64(p + 8);
        if (root_obj == NULL || r != root) {
            Py_XDECREF(root_obj);
            root_obj = PyLong_FromUnsignedLongLong(r);
            if (root_obj == NULL) goto error;
            root = r;
        }
        PyObject *meta = envelope_of(get_le64(p), root_obj);
        if (meta == NULL) goto error;
        PyList_SET_ITEM(metas, i, meta);
    }
    Py_XDECREF(root_obj);
    return metas;
error:
    Py_XDECREF(root_obj);
    Py_DECREF(metas); /* (unset items are NULL: list_dealloc skips them) */
    return NULL;
}

static PyMethodDef wire_methods[] = {
    {"pack_metas", wire_pack_metas, METH_O,
     "pack_metas(metas) -> 16 bytes per one-tree envelope, or None."},
    {"expand_metas", wire_expand_metas, METH_O,
     "expand_metas(packed) -> [(edge, root), ...]; ValueError unless 16 bytes each."},
    {"decoded_cost", (PyCFunction)(void (*)(void))wire_decoded_cost, METH_FASTCALL,
     "decoded_cost(frame, limit) -> estimated bytes of objects; ValueError past limit."},
    {"check_tuples", (PyCFunction)(void (*)(void))wire_check_tuples, METH_FASTCALL,
     "check_tuples(vals, metas, arity) -> None, or why the group is malformed."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef wire_module = {
    PyModuleDef_HEAD_INIT, "topology.runtime.net._wire",
    "Compiled twin of topology.runtime.net.codec (see there).", -1, wire_methods,
};

PyMODINIT_FUNC PyInit__wire(void) { return PyModule_Create(&wire_module); }
