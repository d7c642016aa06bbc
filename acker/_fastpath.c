/*
 * acker._fastpath: the compiled per-word steps of a tracked tuple, selected by
 * acker/fastpath.py.  The reference is the pure-Python path (fastpath.PyTupleBase and the
 * methods of acker.anchoring.BoltAcking); tests/unit/test_speedups.py and the acking tests
 * check that the two agree.
 *
 * What it owns, and why C pays here when compiling the Python unchanged did not
 * (docs/BENCHMARKS.md): a received tuple's acking state sits in a C struct, so the two
 * per-word steps of a tracked tuple run without attribute lookups, integer allocations
 * or interpreter dispatch:
 *
 *   TupleBase(values, source, id=None, anchors=None)  the base of topology.Tuple; its
 *       ack_val is an unsigned 64-bit field (0 at creation);
 *   edge_meta(parent) -> (edge, parent.anchors)        a new random 64-bit edge of the
 *       parent's single tree, XORed into parent.ack_val (a BasicBolt's anchored emit);
 *       TypeError unless the parent is a TupleBase, ValueError unless it is in exactly
 *       one tree;
 *   ack_one(acks, tup) -> bool                          fold a single-tree tuple's ack
 *       (id ^ ack_val) into acks[root] and clear its anchors; False (nothing done) when
 *       the tuple is untracked, in several trees or not a TupleBase (the caller's own
 *       path takes it); an id outside 0 .. 2**64 - 1 raises;
 *   ack(acks, general, tup)                             ack_one, else general(tup) for a
 *       tuple that is still tracked (BoltAcking.ack, bound once with functools.partial);
 *   emit_child(general, push, tasks, values, parent)    a BasicBolt's emit to one task in
 *       the parent's single tree: values and edge_meta(parent) on the task's lane (push
 *       maps a task to its lane's (append value, append meta)); anything else goes to
 *       general(push, tasks, values, parent) (BoltAcking.emit_child, bound once);
 *   ignore(obj)                                         nothing (NoBoltAcking.ack);
 *   seed(bytes32)                                       the edge generator's state;
 *   SpoutTrees(task, ackers, ...)                       a spout task's trees for a
 *       compiled emit (SpoutAcking.compiled_trees).
 *
 * Its C API (acker/_fastpath_api.h, the capsule) is how the runtime's compiled loops
 * (topology.runtime._basic and _spout) reach acking: they build tuples through it, and
 * every change of acking state — a new edge XORed into its parent (new_edge_meta), an ack
 * folded into the outbox's combined acks (run_ack, run_flush), a spout's new tree with its
 * root, edges, init and pending entry (start_tree) — happens here, never in them.
 *
 * Edge ids come from xoshiro256** (not a cryptographic generator: ids only have to be
 * uniform so that XORs of distinct edges are not zero by accident, as with
 * random.getrandbits).  The state is per process; acker/fastpath.py seeds it from
 * os.urandom at import and again in every forked child.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_fastpath_api.h"
#include "_ids.h"

typedef struct {
    PyObject_HEAD
    PyObject *values;
    PyObject *source;
    PyObject *id;
    PyObject *anchors;
    uint64_t ack_val;
} TupleObject;

static PyTypeObject *TupleType = NULL;
/* The subclass of TupleBase seen last (instance_of, _fastpath_api.h). */
static PyTypeObject *seen_subtype = NULL;

/* A field deleted from Python (``del tup.anchors``) is NULL here; C reads it as None. */
#define FIELD(obj) ((obj) != NULL ? (obj) : Py_None)

/* -- edge ids: xoshiro256** ------------------------------------------------------------- */

static uint64_t state[4] = {0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL,
                            0x94d049bb133111ebULL, 0x2545f4914f6cdd1dULL};

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t next_edge(void) {
    const uint64_t result = rotl(state[1] * 5, 7) * 9;
    const uint64_t t = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 45);
    return result;
}

static PyObject *fastpath_seed(PyObject *module, PyObject *arg) {
    char *bytes;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(arg, &bytes, &size) < 0) return NULL;
    if (size != (Py_ssize_t)sizeof(state)) {
        PyErr_Format(PyExc_ValueError, "seed takes %zu bytes, got %zd", sizeof(state), size);
        return NULL;
    }
    uint64_t fresh[4];
    memcpy(fresh, bytes, sizeof(fresh));
    if ((fresh[0] | fresh[1] | fresh[2] | fresh[3]) == 0) {
        PyErr_SetString(PyExc_ValueError, "seed must not be all zero bytes");
        return NULL;
    }
    memcpy(state, fresh, sizeof(state));
    Py_RETURN_NONE;
}

/* -- TupleBase ------------------------------------------------------------------------- */

static PyObject *tuple_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *values, *source, *id = Py_None, *anchors = Py_None;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n == 0 && (kwds == NULL || PyDict_GET_SIZE(kwds) == 0)) {
        /* Tuple.__new__(Tuple), as unpickling copyreg's form does (pickles of the earlier
         * pure-Python Tuple): every field unset, then set from the pickled state */
        TupleObject *bare = (TupleObject *)type->tp_alloc(type, 0);
        if (bare != NULL) bare->ack_val = 0;
        return (PyObject *)bare;
    }
    if (kwds == NULL && n >= 2 && n <= 4) { /* the hot path: positional only */
        values = PyTuple_GET_ITEM(args, 0);
        source = PyTuple_GET_ITEM(args, 1);
        if (n > 2) id = PyTuple_GET_ITEM(args, 2);
        if (n > 3) anchors = PyTuple_GET_ITEM(args, 3);
    } else {
        static char *names[] = {"values", "source", "id", "anchors", NULL};
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|OO:Tuple", names, &values, &source,
                                         &id, &anchors))
            return NULL;
    }
    TupleObject *self = (TupleObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(values);
    self->values = values;
    Py_INCREF(source);
    self->source = source;
    Py_INCREF(id);
    self->id = id;
    Py_INCREF(anchors);
    self->anchors = anchors;
    self->ack_val = 0;
    return (PyObject *)self;
}

static int tuple_traverse(TupleObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->values);
    Py_VISIT(self->source);
    Py_VISIT(self->id);
    Py_VISIT(self->anchors);
    return 0;
}

static int tuple_clear(TupleObject *self) {
    Py_CLEAR(self->values);
    Py_CLEAR(self->source);
    Py_CLEAR(self->id);
    Py_CLEAR(self->anchors);
    return 0;
}

static void tuple_dealloc(TupleObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    tuple_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type); /* instances of heap types hold a reference to their type */
}

static PyMemberDef tuple_members[] = {
    {"values", T_OBJECT_EX, offsetof(TupleObject, values), 0, "the tuple's values"},
    {"source", T_OBJECT_EX, offsetof(TupleObject, source), 0, "its TupleSource"},
    {"id", T_OBJECT_EX, offsetof(TupleObject, id), 0, "its edge id, None when untracked"},
    {"anchors", T_OBJECT_EX, offsetof(TupleObject, anchors), 0, "its root id(s), or None"},
    {NULL},
};

/* ack_val through a getter and setter, not a T_ULONGLONG member: that member's setter
 * stores 2**64 - 1 before it reports a bad value. */
static PyObject *tuple_get_ack_val(TupleObject *self, void *closure) {
    return PyLong_FromUnsignedLongLong(self->ack_val);
}

static int tuple_set_ack_val(TupleObject *self, PyObject *value, void *closure) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "ack_val cannot be deleted");
        return -1;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "ack_val must be an int, got %.80s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    uint64_t ack_val = PyLong_AsUnsignedLongLong(value); /* OverflowError: < 0 or >= 2**64 */
    if (ack_val == (uint64_t)-1 && PyErr_Occurred()) return -1;
    self->ack_val = ack_val;
    return 0;
}

/* tup[key]: by field name through the source's index (a missing name: the source's
 * no_field(key) raises the KeyError that names the stream's fields), else by position. */
static PyObject *str_index = NULL, *str_tick = NULL, *str_no_field = NULL;

static PyObject *tuple_subscript(TupleObject *self, PyObject *key) {
    PyObject *values = FIELD(self->values);
    if (!PyUnicode_Check(key)) return PyObject_GetItem(values, key);
    PyObject *index = PyObject_GetAttr(FIELD(self->source), str_index);
    if (index == NULL) return NULL;
    PyObject *position;
    if (PyDict_CheckExact(index)) {
        position = PyDict_GetItemWithError(index, key); /* borrowed */
        Py_XINCREF(position);
    } else {
        position = PyObject_GetItem(index, key);
        if (position == NULL && PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
    }
    Py_DECREF(index);
    if (position == NULL) {
        if (PyErr_Occurred()) return NULL;
        PyObject *raised = PyObject_CallMethodOneArg(FIELD(self->source), str_no_field, key);
        if (raised == NULL) return NULL;
        Py_DECREF(raised); /* (no_field always raises) */
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    PyObject *value = PyObject_GetItem(values, position);
    Py_DECREF(position);
    return value;
}

/* tup[i] through the sequence protocol (reversed, bisect, numpy see a sequence). */
static PyObject *tuple_item(TupleObject *self, Py_ssize_t i) {
    return PySequence_GetItem(FIELD(self->values), i);
}

/* tup.is_tick(): the source's ``tick`` flag. */
static PyObject *tuple_is_tick(TupleObject *self, PyObject *unused) {
    return PyObject_GetAttr(FIELD(self->source), str_tick);
}

static PyMethodDef tuple_methods[] = {
    {"is_tick", (PyCFunction)tuple_is_tick, METH_NOARGS,
     "True for the tick tuples the runtime sends (the source's tick flag)."},
    {NULL},
};

static PyGetSetDef tuple_getset[] = {
    {"ack_val", (getter)tuple_get_ack_val, (setter)tuple_set_ack_val,
     "XOR of the edges anchored to it (unsigned 64-bit)", NULL},
    {NULL},
};

static PyType_Slot tuple_slots[] = {
    {Py_tp_doc, "Storage of topology.Tuple: values, source, id, anchors, ack_val."},
    {Py_tp_new, tuple_new},
    {Py_tp_dealloc, tuple_dealloc},
    {Py_tp_traverse, tuple_traverse},
    {Py_tp_clear, tuple_clear},
    {Py_tp_members, tuple_members},
    {Py_tp_getset, tuple_getset},
    {Py_tp_methods, tuple_methods},
    {Py_mp_subscript, tuple_subscript},
    {Py_sq_item, tuple_item},
    {0, NULL},
};

static PyType_Spec tuple_spec = {
    "acker._fastpath.TupleBase",
    sizeof(TupleObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    tuple_slots,
};


/* -- the two per-word steps ------------------------------------------------------------ */

/* (edge, root) for a new edge of parent's single tree, XORed into parent.ack_val; parent
 * is a TupleObject whose anchors is an exact int (checked by the callers). */
static PyObject *new_edge_meta(TupleObject *parent) {
    uint64_t edge = next_edge();
    PyObject *meta = envelope_of(edge, parent->anchors);
    if (meta == NULL) return NULL;
    parent->ack_val ^= edge;
    return meta;
}

static PyObject *fastpath_edge_meta(PyObject *module, PyObject *arg) {
    if (!instance_of(arg, TupleType, &seen_subtype)) { /* the runtime's current input always is */
        PyErr_Format(PyExc_TypeError, "edge_meta: expected a topology.Tuple, got %.80s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    TupleObject *parent = (TupleObject *)arg;
    PyObject *roots = FIELD(parent->anchors);
    if (!PyLong_CheckExact(roots)) { /* the collector calls it for one tree only */
        PyErr_Format(PyExc_ValueError,
                     "edge_meta: the parent must be in exactly one tree (anchors %.80s)",
                     Py_TYPE(roots)->tp_name);
        return NULL;
    }
    return new_edge_meta(parent);
}

/* An edge id or ack value as 64 bits: an int in 0 .. 2**64 - 1, else TypeError or
 * OverflowError (only a forged envelope carries another; its group is dropped and counted).
 * Exact ints are read digit by digit (_ids.h); the sign and size checks plus the mask
 * form serve int subclasses: both skip the byte-array conversion of
 * PyLong_AsUnsignedLongLong, a third of an ack's instructions. */
static int as_u64(PyObject *obj, uint64_t *out) {
    if (exact_u64(obj, out)) return 0;
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "an edge id or ack value must be an int, got %.80s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (_PyLong_Sign(obj) < 0 || _PyLong_NumBits(obj) > 64) {
        PyErr_SetString(PyExc_OverflowError,
                        "an edge id or ack value must be in 0 .. 2**64 - 1");
        return -1;
    }
    *out = PyLong_AsUnsignedLongLongMask(obj);
    return 0;
}

/* acks[root] ^= value; 0, or -1 with an error set (a previous value that is not a 64-bit
 * int: only forged traffic). */
static int fold_ack(PyObject *acks, PyObject *root, uint64_t value) {
    uint64_t combined;
    /* Our own reference to root: the dict's lookups may run a key's __eq__ (only for keys
     * of int subclasses, which the runtime never puts there). */
    Py_INCREF(root);
    Py_hash_t hash = PyObject_Hash(root); /* (once, for the lookup and the store) */
    if (hash == -1) goto error;
    PyObject *previous = DICT_GET_H(acks, root, hash); /* borrowed */
    if (previous != NULL) {
        Py_INCREF(previous);
        int bad = as_u64(previous, &combined);
        Py_DECREF(previous);
        if (bad < 0) goto error;
        value ^= combined;
    } else if (PyErr_Occurred()) {
        goto error;
    }
    PyObject *value_obj = PyLong_FromUnsignedLongLong(value);
    if (value_obj == NULL) goto error;
    int failed = DICT_SET_H(acks, root, value_obj, hash); /* the dict takes its own refs */
    Py_DECREF(value_obj);
    if (failed) goto error;
    Py_DECREF(root);
    return 0;
error:
    Py_DECREF(root);
    return -1;
}

/* 1: a one-tree tuple's root moved out to *root (its anchors now None) and its ack value
 * in *value; 0: nothing done (untracked, several trees or not a TupleBase); -1: error. */
static int take_ack(PyObject *obj, PyObject **root, uint64_t *value) {
    if (!instance_of(obj, TupleType, &seen_subtype)) return 0; /* the caller's own path */
    TupleObject *tup = (TupleObject *)obj;
    PyObject *anchors = tup->anchors;
    if (anchors == NULL || !PyLong_CheckExact(anchors)) return 0; /* untracked or several */
    uint64_t id;
    if (as_u64(FIELD(tup->id), &id) < 0) return -1;
    *value = id ^ tup->ack_val;
    *root = anchors; /* the tuple's reference, moved */
    tup->anchors = Py_NewRef(Py_None);
    return 1;
}

/* 1: the ack of tup, in exactly one tree, folded into acks[root] and its anchors cleared;
 * 0: nothing done (untracked, several trees or not a TupleBase); -1: an error is set. */
static int ack_one(PyObject *acks, PyObject *obj) {
    if (!PyDict_CheckExact(acks)) {
        PyErr_SetString(PyExc_TypeError, "ack_one: acks must be a dict");
        return -1;
    }
    PyObject *root;
    uint64_t value;
    int taken = take_ack(obj, &root, &value);
    if (taken <= 0) return taken;
    int failed = fold_ack(acks, root, value);
    Py_DECREF(root);
    return failed ? -1 : 1;
}

static PyObject *fastpath_ack_one(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "ack_one takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    int done = ack_one(args[0], args[1]);
    if (done < 0) return NULL;
    return PyBool_FromLong(done);
}

/* -- the bolt side's two per-word calls (BoltAcking.ack and .emit_child, compiled) ------- */

static PyObject *fastpath_ack(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "ack takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *tup = args[2];
    int done = ack_one(args[0], tup);
    if (done < 0) return NULL;
    if (done) Py_RETURN_NONE;
    /* not one tree here: still tracked? then the general path (several trees, any type) */
    PyObject *anchors;
    if (instance_of(tup, TupleType, &seen_subtype)) {
        anchors = FIELD(((TupleObject *)tup)->anchors);
        Py_INCREF(anchors);
    } else {
        anchors = PyObject_GetAttrString(tup, "anchors");
        if (anchors == NULL) return NULL;
    }
    int tracked = anchors != Py_None;
    Py_DECREF(anchors);
    if (!tracked) Py_RETURN_NONE;
    return PyObject_CallOneArg(args[1], tup);
}

static PyObject *fastpath_emit_child(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "emit_child takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *push = args[1], *tasks = args[2], *values = args[3], *parent = args[4];
    if (instance_of(parent, TupleType, &seen_subtype) && PyDict_CheckExact(push) &&
        PyList_CheckExact(tasks) && PyList_GET_SIZE(tasks) == 1) {
        TupleObject *tup = (TupleObject *)parent;
        PyObject *lane = NULL;
        if (tup->anchors != NULL && PyLong_CheckExact(tup->anchors)) {
            lane = PyDict_GetItemWithError(push, PyList_GET_ITEM(tasks, 0)); /* borrowed */
            if (lane == NULL && PyErr_Occurred()) return NULL;
        }
        if (lane != NULL && PyTuple_CheckExact(lane) && PyTuple_GET_SIZE(lane) == 2) {
            Py_INCREF(lane); /* the calls below may change push */
            PyObject *meta = new_edge_meta(tup); /* (before the value is pushed) */
            PyObject *result = NULL;
            if (meta != NULL) {
                result = PyObject_CallOneArg(PyTuple_GET_ITEM(lane, 0), values);
                if (result != NULL) {
                    Py_DECREF(result);
                    result = PyObject_CallOneArg(PyTuple_GET_ITEM(lane, 1), meta);
                }
                Py_DECREF(meta);
            }
            Py_DECREF(lane);
            if (result == NULL) return NULL;
            Py_DECREF(result);
            Py_RETURN_NONE;
        }
    }
    return PyObject_Vectorcall(args[0], args + 1, 4, NULL);
}

/* Nothing: the ack of a topology without ackers, once per word, costs a C call this way
 * instead of a Python frame. */
static PyObject *fastpath_ignore(PyObject *module, PyObject *arg) { Py_RETURN_NONE; }

/* -- a BasicBolt run's acks (RunAcks, _fastpath_api.h) ---------------------------------- */

static int run_flush(PyObject *acks, RunAcks *run) {
    if (run->root == NULL) return 0;
    int failed = fold_ack(acks, run->root, run->value);
    Py_CLEAR(run->root);
    return failed ? -1 : 0;
}

static int run_ack(PyObject *acks, PyObject *general, PyObject *tup, RunAcks *run) {
    PyObject *root;
    uint64_t value;
    int taken = take_ack(tup, &root, &value);
    if (taken < 0) return -1;
    if (taken) {
        if (run->root != NULL) {
            int same = root == run->root ? 1 : PyObject_RichCompareBool(root, run->root, Py_EQ);
            if (same < 0) {
                Py_DECREF(root);
                return -1;
            }
            if (same) {
                run->value ^= value;
                Py_DECREF(root);
                return 0;
            }
            if (run_flush(acks, run) < 0) {
                Py_DECREF(root);
                return -1;
            }
        }
        run->root = root; /* (the reference take_ack gave) */
        run->value = value;
        return 0;
    }
    /* not one tree here: still tracked? then the general path (several trees, any type) */
    PyObject *anchors;
    if (instance_of(tup, TupleType, &seen_subtype)) {
        anchors = Py_NewRef(FIELD(((TupleObject *)tup)->anchors));
    } else {
        anchors = PyObject_GetAttrString(tup, "anchors");
        if (anchors == NULL) return -1;
    }
    int tracked = anchors != Py_None;
    Py_DECREF(anchors);
    if (!tracked) return 0;
    if (run_flush(acks, run) < 0) return -1;
    PyObject *result = PyObject_CallOneArg(general, tup);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

/* -- a spout task's trees (SpoutTrees; SpoutAcking.track, compiled) ---------------------- */

/*
 *   SpoutTrees(task, ackers, local, inits, buckets, rotation, add)
 *       What acker.SpoutAcking.compiled_trees gives a compiled spout emit: ``task`` this
 *       spout task's id; ``ackers`` the acker task ids in the outbox's order
 *       (``ackers[root % len(ackers)]`` owns a root); ``local`` the positions in
 *       ``ackers`` of this worker's ackers, one of which must own every root (empty: any);
 *       ``inits`` the outbox's dict acker -> list of ``[root, edges, task]`` (looked up
 *       per tree: the outbox swaps the lists); ``buckets`` the pending trees' generations,
 *       newest first (a new tree goes into ``buckets[0]`` as ``[msg_id, now]``);
 *       ``rotation`` None, or the RotationClock whose ``next_rotation`` says when
 *       rotations are due: from then on a tree goes to ``add(root, msg_id, now)``
 *       (acker.PendingTrees.add, which rotates first).
 */
typedef struct {
    PyObject_HEAD
    PyObject *task;
    PyObject *ackers;  /* tuple of acker task ids */
    Py_ssize_t *local; /* positions of this worker's ackers (n_local of them) */
    Py_ssize_t n_local;
    PyObject *inits;
    PyObject *buckets;
    PyObject *rotation; /* NULL: no timeouts */
    PyObject *add;
} SpoutTreesObject;

static PyTypeObject *SpoutTreesType = NULL;
static PyObject *str_next_rotation = NULL;

static PyObject *trees_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *task, *ackers, *local, *inits, *buckets, *rotation, *add;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "SpoutTrees takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOO:SpoutTrees", &PyLong_Type, &task, &PyTuple_Type,
                          &ackers, &PyTuple_Type, &local, &PyDict_Type, &inits, &buckets,
                          &rotation, &add))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(ackers), n_local = PyTuple_GET_SIZE(local);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "SpoutTrees: no ackers");
        return NULL;
    }
    if (!PyCallable_Check(add) || !PySequence_Check(buckets)) {
        PyErr_SetString(PyExc_TypeError, "SpoutTrees: buckets a sequence, add callable");
        return NULL;
    }
    SpoutTreesObject *self = (SpoutTreesObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->local = PyMem_Calloc(n_local ? n_local : 1, sizeof(Py_ssize_t));
    if (self->local == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n_local; i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(local, i));
        if (at == -1 && PyErr_Occurred()) goto error;
        if (at < 0 || at >= n) {
            PyErr_SetString(PyExc_ValueError, "SpoutTrees: a local acker position out of range");
            goto error;
        }
        self->local[i] = at;
    }
    self->n_local = n_local;
    self->task = Py_NewRef(task);
    self->ackers = Py_NewRef(ackers);
    self->inits = Py_NewRef(inits);
    self->buckets = Py_NewRef(buckets);
    self->rotation = rotation == Py_None ? NULL : Py_NewRef(rotation);
    self->add = Py_NewRef(add);
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

static int trees_traverse(SpoutTreesObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->task);
    Py_VISIT(self->ackers);
    Py_VISIT(self->inits);
    Py_VISIT(self->buckets);
    Py_VISIT(self->rotation);
    Py_VISIT(self->add);
    return 0;
}

static int trees_clear(SpoutTreesObject *self) {
    Py_CLEAR(self->task);
    Py_CLEAR(self->ackers);
    Py_CLEAR(self->inits);
    Py_CLEAR(self->buckets);
    Py_CLEAR(self->rotation);
    Py_CLEAR(self->add);
    return 0;
}

static void trees_dealloc(SpoutTreesObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    trees_clear(self);
    PyMem_Free(self->local);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyType_Slot trees_slots[] = {
    {Py_tp_doc, "SpoutTrees(task, ackers, local, inits, buckets, rotation, add): a spout "
                "task's tree registry for its compiled emit (SpoutAcking.compiled_trees)."},
    {Py_tp_new, trees_new},
    {Py_tp_dealloc, trees_dealloc},
    {Py_tp_traverse, trees_traverse},
    {Py_tp_clear, trees_clear},
    {0, NULL},
};

static PyType_Spec trees_spec = {
    "acker._fastpath.SpoutTrees", sizeof(SpoutTreesObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, trees_slots,
};

/* A fresh root id: random and non-zero; with local ackers, one of them owns it
 * (SpoutAcking.track draws it the same way). */
static uint64_t new_root(SpoutTreesObject *trees) {
    if (trees->n_local == 0) {
        uint64_t root = next_edge();
        return root ? root : 1;
    }
    uint64_t n = (uint64_t)PyTuple_GET_SIZE(trees->ackers);
    uint64_t r = next_edge() >> 1;
    uint64_t root = r - r % n + (uint64_t)trees->local[r % (uint64_t)trees->n_local];
    return root ? root : n;
}

/* The new tree's init on its acker's list: 0, or -1 with an error set. */
static int queue_init(SpoutTreesObject *trees, uint64_t root, PyObject *root_obj,
                      uint64_t edges) {
    Py_ssize_t n = PyTuple_GET_SIZE(trees->ackers);
    PyObject *acker = PyTuple_GET_ITEM(trees->ackers, (Py_ssize_t)(root % (uint64_t)n));
    PyObject *inits = PyDict_GetItemWithError(trees->inits, acker); /* borrowed */
    if (inits == NULL || !PyList_Check(inits)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "SpoutTrees: no inits list");
        return -1;
    }
    Py_INCREF(inits); /* (building the entry may run a finalizer) */
    PyObject *edges_obj = PyLong_FromUnsignedLongLong(edges);
    PyObject *entry = edges_obj == NULL ? NULL : list3(root_obj, edges_obj, trees->task);
    Py_XDECREF(edges_obj);
    int appended = entry == NULL ? -1 : PyList_Append(inits, entry);
    Py_XDECREF(entry);
    Py_DECREF(inits);
    return appended;
}

/* The new tree among the pending ones (PendingTrees.add): 0, or -1 with an error set. */
static int add_pending(SpoutTreesObject *trees, PyObject *root_obj, PyObject *msg_id,
                       PyObject *now) {
    int due = 0;
    if (trees->rotation != NULL) {
        PyObject *next = PyObject_GetAttr(trees->rotation, str_next_rotation);
        if (next == NULL) return -1;
        due = PyObject_RichCompareBool(now, next, Py_GE);
        Py_DECREF(next);
        if (due < 0) return -1;
    }
    if (due) { /* rotations are due: pending.add applies them first */
        PyObject *call[3] = {root_obj, msg_id, now};
        PyObject *result = PyObject_Vectorcall(trees->add, call, 3, NULL);
        if (result == NULL) return -1;
        Py_DECREF(result);
        return 0;
    }
    PyObject *newest = PySequence_GetItem(trees->buckets, 0);
    if (newest == NULL) return -1;
    if (!PyDict_Check(newest)) {
        PyErr_SetString(PyExc_TypeError, "SpoutTrees: a bucket is a dict");
        Py_DECREF(newest);
        return -1;
    }
    PyObject *entry = PyList_New(2);
    int stored = -1;
    if (entry != NULL) {
        PyList_SET_ITEM(entry, 0, Py_NewRef(msg_id));
        PyList_SET_ITEM(entry, 1, Py_NewRef(now));
        stored = PyDict_SetItem(newest, root_obj, entry);
        Py_DECREF(entry);
    }
    Py_DECREF(newest);
    return stored;
}

static int start_tree(PyObject *obj, PyObject *tasks, PyObject *msg_id, PyObject *now,
                      PushEdge push, void *ctx) {
    SpoutTreesObject *trees = (SpoutTreesObject *)obj;
    if (PyList_GET_SIZE(tasks) == 0) return 0; /* nobody received it: no tree, no id drawn */
    uint64_t root = new_root(trees), edges = 0;
    PyObject *root_obj = PyLong_FromUnsignedLongLong(root);
    if (root_obj == NULL) return -1;
    int status = -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tasks); i++) {
        uint64_t edge = next_edge(); /* (drawn before the value is pushed) */
        PyObject *meta = envelope_of(edge, root_obj);
        if (meta == NULL) goto done;
        edges ^= edge;
        int pushed = push(ctx, PyList_GET_ITEM(tasks, i), meta);
        Py_DECREF(meta);
        if (pushed < 0) goto done;
    }
    if (edges == 0) {
        status = 0;
    } else if (queue_init(trees, root, root_obj, edges) == 0 &&
               add_pending(trees, root_obj, msg_id, now) == 0) {
        status = 1;
    }
done:
    Py_DECREF(root_obj);
    return status;
}

/* -- the C API of the capsule (acker/_fastpath_api.h) ---------------------------------- */

static PyObject *api_new_tuple(PyTypeObject *type, PyObject *values, PyObject *source,
                               PyObject *id, PyObject *anchors) {
    TupleObject *self = (TupleObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->values = Py_NewRef(values);
    self->source = Py_NewRef(source);
    self->id = Py_NewRef(id);
    self->anchors = Py_NewRef(anchors);
    self->ack_val = 0;
    return (PyObject *)self;
}

static PyObject *api_new_edge_meta(PyObject *parent) {
    return new_edge_meta((TupleObject *)parent);
}

static PyObject *api_anchors_of(PyObject *tup) { return FIELD(((TupleObject *)tup)->anchors); }

static FastpathApi fastpath_api = {
    .version = FASTPATH_API_VERSION,
    .new_tuple = api_new_tuple,
    .anchors_of = api_anchors_of,
    .new_edge_meta = api_new_edge_meta,
    .run_ack = run_ack,
    .run_flush = run_flush,
    .start_tree = start_tree,
};

static PyMethodDef fastpath_methods[] = {
    {"edge_meta", fastpath_edge_meta, METH_O,
     "edge_meta(parent) -> (edge, parent.anchors); XORs the new edge into parent.ack_val."},
    {"ack_one", (PyCFunction)(void (*)(void))fastpath_ack_one, METH_FASTCALL,
     "ack_one(acks, tup) -> bool: fold a single-tree ack into acks[root]."},
    {"ack", (PyCFunction)(void (*)(void))fastpath_ack, METH_FASTCALL,
     "ack(acks, general, tup): ack_one, else general(tup) for a tuple still tracked."},
    {"emit_child", (PyCFunction)(void (*)(void))fastpath_emit_child, METH_FASTCALL,
     "emit_child(general, push, tasks, values, parent): a one-tree, one-task anchored emit, "
     "else general(push, tasks, values, parent)."},
    {"ignore", fastpath_ignore, METH_O, "ignore(obj): nothing (NoBoltAcking.ack)."},
    {"seed", fastpath_seed, METH_O, "seed(32 bytes): the edge id generator's state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fastpath_module = {
    PyModuleDef_HEAD_INIT, "acker._fastpath",
    "Compiled twin of acker.fastpath (see there).", -1, fastpath_methods,
};

PyMODINIT_FUNC PyInit__fastpath(void) {
    str_index = PyUnicode_InternFromString("index");
    str_tick = PyUnicode_InternFromString("tick");
    str_no_field = PyUnicode_InternFromString("no_field");
    str_next_rotation = PyUnicode_InternFromString("next_rotation");
    if (str_index == NULL || str_tick == NULL || str_no_field == NULL ||
        str_next_rotation == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&fastpath_module);
    if (module == NULL) return NULL;
    TupleType = (PyTypeObject *)PyType_FromSpec(&tuple_spec);
    if (TupleType == NULL) {
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(TupleType); /* one reference kept in TupleType, one given to the module */
    if (PyModule_AddObject(module, "TupleBase", (PyObject *)TupleType) < 0) {
        Py_DECREF(TupleType);
        Py_CLEAR(TupleType);
        Py_DECREF(module);
        return NULL;
    }
    fastpath_api.tuple_type = TupleType;
    SpoutTreesType = (PyTypeObject *)PyType_FromSpec(&trees_spec);
    if (SpoutTreesType == NULL ||
        PyModule_AddObjectRef(module, "SpoutTrees", (PyObject *)SpoutTreesType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    fastpath_api.spout_trees_type = SpoutTreesType;
    PyObject *capsule = PyCapsule_New(&fastpath_api, FASTPATH_CAPSULE, NULL);
    if (capsule == NULL || PyModule_AddObject(module, "_C_API", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
