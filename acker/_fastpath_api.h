/*
 * The acker's C API: every layout and call that acker._fastpath shares with the compiled
 * loops of the runtime (topology.runtime._basic, a BasicBolt task's loop and emit, and
 * topology.runtime._spout, a spout's emit), exported in the capsule
 * "acker._fastpath._C_API".  Both sides include this header and nothing else of the
 * other's.
 *
 * The acker owns every piece of acking state: a tuple's ack value, the XOR of a tree's
 * edges, the outbox's inits and combined acks, the pending trees.  The runtime's loops
 * never compute an XOR or write into those objects: they pick tasks and push values, and
 * call the functions below for everything that touches a tree.  Their pure-Python
 * reference is acker.anchoring.BoltAcking (emit_child, ack) and acker.spout.SpoutAcking
 * (track).
 */
#ifndef SPARKSTORM_FASTPATH_API_H
#define SPARKSTORM_FASTPATH_API_H

#include <Python.h>
#include <stdint.h>

#define FASTPATH_CAPSULE "acker._fastpath._C_API"
#define FASTPATH_API_VERSION 5

/* The acks of one run of a BasicBolt's loop over a received group: consecutive inputs of
 * one tree (a sentence's words, in order) fold into ``value`` and reach the outbox's
 * combined acks once, when the tree changes or the run ends.  The runtime holds one on its
 * stack (RUN_ACKS_INIT) and hands it to run_ack and run_flush; only they read or write
 * its fields. */
typedef struct {
    PyObject *root; /* owned, or NULL */
    uint64_t value;
} RunAcks;

#define RUN_ACKS_INIT {NULL, 0}

/* Where start_tree sends one edge of a new tree: ``meta`` ((edge, root), borrowed) and the
 * caller's values on the lane of ``task``; 0, or -1 with an error set. */
typedef int (*PushEdge)(void *ctx, PyObject *task, PyObject *meta);

typedef struct {
    int version;
    /* TupleBase (topology.Tuple subclasses it) */
    PyTypeObject *tuple_type;
    /* type(values, source, id, anchors) for a subclass of TupleBase, ack_val 0 */
    PyObject *(*new_tuple)(PyTypeObject *type, PyObject *values, PyObject *source,
                           PyObject *id, PyObject *anchors);
    /* a TupleBase's anchors (borrowed; None when unset) */
    PyObject *(*anchors_of)(PyObject *tup);
    /* (edge, root) of a new edge of a TupleBase in exactly one tree (anchors an exact
     * int: the caller checks), the edge XORed into its ack_val (BoltAcking.emit_child's
     * one-tree, one-task case) */
    PyObject *(*new_edge_meta)(PyObject *parent);
    /* The ack of ``tup`` once a BasicBolt processed it (BoltAcking.ack within a run): a
     * one-tree tuple folds into ``run`` (and ``run`` into ``acks``, the outbox's combined
     * acks, when its tree changes); another tracked one goes to ``general(tup)`` after
     * ``run`` is flushed; an untracked one is left alone.  0, or -1 with an error set. */
    int (*run_ack)(PyObject *acks, PyObject *general, PyObject *tup, RunAcks *run);
    /* ``run``'s folded ack into ``acks`` (nothing when empty); 0, or -1 with an error set. */
    int (*run_flush)(PyObject *acks, RunAcks *run);
    /* acker._fastpath.SpoutTrees: one spout task's tree registry (SpoutAcking.compiled_trees) */
    PyTypeObject *spout_trees_type;
    /* SpoutAcking.track compiled: a new tree for ``msg_id`` (its root drawn so that an
     * acker of this worker owns it), one new edge per task of ``tasks`` (a list) handed to
     * ``push``, then its init queued for its acker and the tree pending since ``now``.
     * 1: started; 0: no tree (no task, or the edges' XOR is 0: the caller acks msg_id at
     * emit); -1: an error is set. */
    int (*start_tree)(PyObject *trees, PyObject *tasks, PyObject *msg_id, PyObject *now,
                      PushEdge push, void *ctx);
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
