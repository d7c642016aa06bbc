/*
 * The C API acker._fastpath exports in its capsule "acker._fastpath._C_API", for
 * topology.runtime._basic (a BasicBolt task's compiled loop and emit) and
 * topology.runtime._spout (a spout's compiled emit) to build, anchor and ack tuples and
 * draw ids without a Python call.
 */
#ifndef SPARKSTORM_FASTPATH_API_H
#define SPARKSTORM_FASTPATH_API_H

#include <Python.h>
#include <stdint.h>

#define FASTPATH_CAPSULE "acker._fastpath._C_API"
#define FASTPATH_API_VERSION 4

typedef struct {
    int version;
    /* TupleBase (topology.Tuple subclasses it) */
    PyTypeObject *tuple_type;
    /* type(values, source, id, anchors) for a subclass of TupleBase, ack_val 0 */
    PyObject *(*new_tuple)(PyTypeObject *type, PyObject *values, PyObject *source,
                           PyObject *id, PyObject *anchors);
    /* (edge, root) of a new edge of a TupleBase in exactly one tree (anchors an exact
     * int: the caller checks), the edge XORed into its ack_val */
    PyObject *(*new_edge_meta)(PyObject *parent);
    /* a TupleBase's anchors (borrowed; None when unset) */
    PyObject *(*anchors_of)(PyObject *tup);
    /* 1: a one-tree tuple's root (a new reference, moved from the tuple, whose anchors
     * become None) and its ack value (id ^ ack_val) in *root and *value; 0: not taken
     * (untracked, several trees, not a TupleBase); -1: an id outside 0 .. 2**64 - 1 */
    int (*take_ack)(PyObject *tup, PyObject **root, uint64_t *value);
    /* acks[root] ^= value (acks a dict; 0 or -1 with an error set) */
    int (*fold_ack)(PyObject *acks, PyObject *root, uint64_t value);
    /* a fresh random 64-bit id (edges and roots: the generator edge_meta draws from) */
    uint64_t (*next_id)(void);
} FastpathApi;

/* PyObject_TypeCheck(o, base) in one comparison when o's type is base or the subtype
 * seen last (topology.Tuple, a subclass of TupleBase: PyType_IsSubtype walks its MRO on
 * every call otherwise).  *seen holds a strong reference, so the type it names stays
 * alive and its address cannot come back as another type's. */
static inline int instance_of(PyObject *o, PyTypeObject *base, PyTypeObject **seen) {
    PyTypeObject *type = Py_TYPE(o);
    if (type == base || type == *seen) return 1;
    if (!PyType_IsSubtype(type, base)) return 0;
    PyTypeObject *previous = *seen;
    Py_INCREF(type);
    *seen = type;
    Py_XDECREF(previous);
    return 1;
}

#endif
