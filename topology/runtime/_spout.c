/*
 * topology.runtime._spout: a spout's emit, compiled; selected by
 * topology/runtime/spout_path.py.  The reference is the pure-Python path
 * (SpoutCollector.emit, acker.SpoutAcking.track); tests/unit/test_spout_path.py runs both
 * on the same topologies and checks that what they push, count, start and ack agree.
 *
 *   SpoutEmit(routes, general, acked_at_emit, clock, trees)
 *       ``emit(values, msg_id=None, stream="default")``: a spout's emit on a stream of
 *       ``routes`` (stream -> FastRoute, see _basic.c) with a list of the declared arity
 *       whose values are str (ASCII), int (64 bits), float, bool, None or bytes; anything
 *       else goes to ``general`` (the collector's Python emit, which checks, raises and
 *       counts) with the same arguments.  It returns the chosen tasks.  A msg id that
 *       starts no tree (no ackers, or nobody received the tuple) is appended to
 *       ``acked_at_emit`` (the task acks it after ``next_tuple``).  ``trees`` is None
 *       without ackers, else what acker.SpoutAcking.compiled_trees gives:
 *         (task, ackers, local, inits, buckets, rotation, add)
 *       ``task`` this spout task's id; ``ackers`` the acker task ids in the outbox's order
 *       (``ackers[root % len(ackers)]`` owns a root); ``local`` the positions in
 *       ``ackers`` of this worker's ackers, one of which must own every root (empty: any);
 *       ``inits`` the outbox's dict acker -> list of ``[root, edges, task]`` (looked up
 *       per emit: the outbox swaps the lists); ``buckets`` the pending trees' generations,
 *       newest first (a new tree goes into ``buckets[0]`` as ``[msg_id, now]``, ``now``
 *       from ``clock()``); ``rotation`` None, or an object whose float ``next_rotation``
 *       says when rotations are due: from then on a tree goes to ``add(root, msg_id, now)``
 *       (acker.PendingTrees.add, which rotates first).
 *
 * Roots and edges come from acker._fastpath's generator (its C API, next_id).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "../../acker/_fastpath_api.h"
#include "_route.h"
#include "../../acker/_ids.h"

static FastpathApi *api = NULL;
static PyTypeObject *RouteType = NULL; /* topology.runtime._basic.FastRoute */
static PyObject *str_default = NULL, *str_stream = NULL, *str_msg_id = NULL,
                *str_next_rotation = NULL;

typedef struct {
    PyObject_HEAD
    PyObject *routes; /* dict stream -> FastRoute */
    PyObject *default_route;
    PyObject *general;
    PyObject *acked_at_emit;
    PyObject *clock;
    /* trees (NULL task: no ackers) */
    PyObject *task;
    PyObject *ackers; /* tuple of acker task ids */
    Py_ssize_t *local; /* positions of this worker's ackers (n_local of them) */
    Py_ssize_t n_local;
    PyObject *inits;
    PyObject *buckets;
    PyObject *rotation; /* NULL: no timeouts */
    PyObject *add;
} SpoutEmitObject;

static PyTypeObject *SpoutEmitType = NULL;

/* The trees tuple into self (0), or -1 with an error set. */
static int set_trees(SpoutEmitObject *self, PyObject *trees) {
    PyObject *task, *ackers, *local, *inits, *buckets, *rotation, *add;
    if (!PyTuple_Check(trees) ||
        !PyArg_ParseTuple(trees, "O!O!O!O!OOO:SpoutEmit trees", &PyLong_Type, &task,
                          &PyTuple_Type, &ackers, &PyTuple_Type, &local, &PyDict_Type, &inits,
                          &buckets, &rotation, &add)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "SpoutEmit: trees must be None or a tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(ackers), n_local = PyTuple_GET_SIZE(local);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "SpoutEmit: trees without ackers");
        return -1;
    }
    if (!PyCallable_Check(add) || !PySequence_Check(buckets)) {
        PyErr_SetString(PyExc_TypeError, "SpoutEmit: buckets a sequence, add callable");
        return -1;
    }
    self->local = PyMem_Calloc(n_local ? n_local : 1, sizeof(Py_ssize_t));
    if (self->local == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n_local; i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(local, i));
        if (at == -1 && PyErr_Occurred()) return -1;
        if (at < 0 || at >= n) {
            PyErr_SetString(PyExc_ValueError, "SpoutEmit: a local acker position out of range");
            return -1;
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
    return 0;
}

static PyObject *spout_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *routes, *general, *acked_at_emit, *clock, *trees;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "SpoutEmit takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OO!OO:SpoutEmit", &PyDict_Type, &routes, &general,
                          &PyList_Type, &acked_at_emit, &clock, &trees))
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(routes, &pos, &k, &v)) {
        if (!PyObject_TypeCheck(v, RouteType)) {
            PyErr_SetString(PyExc_TypeError, "SpoutEmit: routes maps streams to FastRoutes");
            return NULL;
        }
    }
    SpoutEmitObject *self = (SpoutEmitObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->routes = PyDict_Copy(routes);
    if (self->routes == NULL) goto error;
    self->default_route = Py_XNewRef(PyDict_GetItemWithError(routes, str_default));
    if (self->default_route == NULL && PyErr_Occurred()) goto error;
    self->general = Py_NewRef(general);
    self->acked_at_emit = Py_NewRef(acked_at_emit);
    self->clock = Py_NewRef(clock);
    if (trees != Py_None && set_trees(self, trees) < 0) goto error;
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

static int spout_traverse(SpoutEmitObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->routes);
    Py_VISIT(self->default_route);
    Py_VISIT(self->general);
    Py_VISIT(self->acked_at_emit);
    Py_VISIT(self->clock);
    Py_VISIT(self->task);
    Py_VISIT(self->ackers);
    Py_VISIT(self->inits);
    Py_VISIT(self->buckets);
    Py_VISIT(self->rotation);
    Py_VISIT(self->add);
    return 0;
}

static int spout_clear(SpoutEmitObject *self) {
    Py_CLEAR(self->routes);
    Py_CLEAR(self->default_route);
    Py_CLEAR(self->general);
    Py_CLEAR(self->acked_at_emit);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->task);
    Py_CLEAR(self->ackers);
    Py_CLEAR(self->inits);
    Py_CLEAR(self->buckets);
    Py_CLEAR(self->rotation);
    Py_CLEAR(self->add);
    return 0;
}

static void spout_dealloc(SpoutEmitObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    spout_clear(self);
    PyMem_Free(self->local);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* A fresh root id: random and non-zero; with local ackers, one of them owns it
 * (acker.SpoutAcking.track draws it the same way). */
static uint64_t new_root(SpoutEmitObject *self) {
    if (self->n_local == 0) {
        uint64_t root = api->next_id();
        return root ? root : 1;
    }
    uint64_t n = (uint64_t)PyTuple_GET_SIZE(self->ackers);
    uint64_t r = api->next_id() >> 1;
    uint64_t root = r - r % n + (uint64_t)self->local[r % (uint64_t)self->n_local];
    return root ? root : n;
}

/* [root, edges, spout task]: a tree's init for its acker. */
static PyObject *init_entry(PyObject *root, uint64_t edges, PyObject *task) {
    PyObject *edges_obj = PyLong_FromUnsignedLongLong(edges);
    if (edges_obj == NULL) return NULL;
    PyObject *entry = list3(root, edges_obj, task);
    Py_DECREF(edges_obj);
    return entry;
}

/* Values on every task as edges of a new tree for msg_id, registered with its acker and
 * pending: 1; 0 when no edge was sent (the tree is complete at once); -1 on error. */
static int start_tree(SpoutEmitObject *self, RouteObject *route, PyObject *tasks,
                      PyObject *values, PyObject *msg_id) {
    PyObject *now = PyObject_CallNoArgs(self->clock);
    if (now == NULL) return -1;
    uint64_t root = new_root(self), edges = 0;
    PyObject *root_obj = PyLong_FromUnsignedLongLong(root);
    PyObject *entry = NULL, *result = NULL;
    int status = -1;
    if (root_obj == NULL) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tasks); i++) {
        uint64_t edge = api->next_id(); /* (drawn before the value is pushed) */
        PyObject *meta = envelope_of(edge, root_obj);
        if (meta == NULL) goto done;
        edges ^= edge;
        int pushed = push_lane(route, PyList_GET_ITEM(tasks, i), values, meta);
        Py_DECREF(meta);
        if (pushed < 0) goto done;
    }
    if (edges == 0) {
        status = 0;
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(self->ackers);
    PyObject *acker = PyTuple_GET_ITEM(self->ackers, (Py_ssize_t)(root % (uint64_t)n));
    PyObject *inits = PyDict_GetItemWithError(self->inits, acker); /* borrowed */
    if (inits == NULL || !PyList_Check(inits)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "SpoutEmit: no inits list");
        goto done;
    }
    Py_INCREF(inits); /* (building the entry may run a finalizer) */
    entry = init_entry(root_obj, edges, self->task);
    int appended = entry == NULL ? -1 : PyList_Append(inits, entry);
    Py_DECREF(inits);
    if (appended < 0) goto done;
    Py_CLEAR(entry);
    int due = 0;
    if (self->rotation != NULL) {
        PyObject *next = PyObject_GetAttr(self->rotation, str_next_rotation);
        if (next == NULL) goto done;
        due = PyObject_RichCompareBool(now, next, Py_GE);
        Py_DECREF(next);
        if (due < 0) goto done;
    }
    if (due) { /* rotations are due: pending.add applies them first */
        PyObject *call[3] = {root_obj, msg_id, now};
        result = PyObject_Vectorcall(self->add, call, 3, NULL);
        if (result == NULL) goto done;
    } else {
        PyObject *newest = PySequence_GetItem(self->buckets, 0);
        if (newest == NULL) goto done;
        entry = PyList_New(2);
        if (entry == NULL || !PyDict_Check(newest)) {
            if (entry != NULL) PyErr_SetString(PyExc_TypeError, "SpoutEmit: a bucket is a dict");
            Py_DECREF(newest);
            goto done;
        }
        PyList_SET_ITEM(entry, 0, Py_NewRef(msg_id));
        PyList_SET_ITEM(entry, 1, Py_NewRef(now));
        int stored = PyDict_SetItem(newest, root_obj, entry);
        Py_DECREF(newest);
        if (stored < 0) goto done;
    }
    status = 1;
done:
    Py_XDECREF(result);
    Py_XDECREF(entry);
    Py_XDECREF(root_obj);
    Py_DECREF(now);
    return status;
}

static PyObject *call_general(SpoutEmitObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
}

/* The route of emit's stream (borrowed), NULL to take the Python path, or NULL with an
 * error set; *msg_id (borrowed, NULL: none) from the arguments. */
static PyObject *route_of(SpoutEmitObject *self, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames, PyObject **msg_id) {
    PyObject *stream = nargs == 3 ? args[2] : NULL;
    *msg_id = nargs >= 2 ? args[1] : NULL;
    if (kwnames != NULL) { /* msg_id= and stream=, each once; else Python raises */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (name == str_msg_id && *msg_id == NULL)
                *msg_id = args[nargs + i];
            else if (name == str_stream && stream == NULL)
                stream = args[nargs + i];
            else
                return NULL;
        }
    }
    if (*msg_id == Py_None) *msg_id = NULL;
    if (stream == NULL) return self->default_route;
    return PyUnicode_CheckExact(stream) ? PyDict_GetItemWithError(self->routes, stream) : NULL;
}

static PyObject *spout_emit(SpoutEmitObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1 || nargs > 3) return call_general(self, args, nargsf, kwnames);
    PyObject *msg_id;
    PyObject *route_obj = route_of(self, args, nargs, kwnames, &msg_id);
    if (route_obj == NULL && PyErr_Occurred()) return NULL;
    PyObject *values = args[0];
    if (route_obj == NULL || !PyList_CheckExact(values))
        return call_general(self, args, nargsf, kwnames);
    RouteObject *route = (RouteObject *)route_obj;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (n != route->arity) return call_general(self, args, nargsf, kwnames);
    if (route->choose == NULL) { /* nobody subscribes: the values go nowhere */
        route->emitted++;
        if (msg_id != NULL && PyList_Append(self->acked_at_emit, msg_id) < 0) return NULL;
        return PyList_New(0);
    }
    if (!plain_values(values, n)) return call_general(self, args, nargsf, kwnames);
    Py_INCREF(route); /* user code (a custom choose) could drop the routes */
    Py_XINCREF(msg_id);
    int started = 0;
    route->emitted++; /* (counted before the grouping runs, as _Collector._chosen does) */
    PyObject *tasks = chosen(route, values);
    if (tasks == NULL) goto error;
    if (msg_id != NULL && self->task != NULL) {
        started = start_tree(self, route, tasks, values, msg_id);
        if (started < 0) goto error;
    } else {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tasks); i++)
            if (push_lane(route, PyList_GET_ITEM(tasks, i), values, Py_None) < 0) goto error;
    }
    if (msg_id != NULL && !started && PyList_Append(self->acked_at_emit, msg_id) < 0)
        goto error;
    Py_XDECREF(msg_id);
    Py_DECREF(route);
    return tasks;
error:
    Py_XDECREF(tasks);
    Py_XDECREF(msg_id);
    Py_DECREF(route);
    return NULL;
}

static PyMethodDef spout_methods[] = {
    {"emit", (PyCFunction)(void (*)(void))spout_emit, METH_FASTCALL | METH_KEYWORDS,
     "emit($self, values, msg_id=None, stream='default')\n--\n\n"
     "A spout's emit (a tree per msg id with ackers); returns the tasks."},
    {NULL},
};

static PyType_Slot spout_slots[] = {
    {Py_tp_doc, "A spout task's compiled emit (see the module)."},
    {Py_tp_new, spout_new},
    {Py_tp_dealloc, spout_dealloc},
    {Py_tp_traverse, spout_traverse},
    {Py_tp_clear, spout_clear},
    {Py_tp_methods, spout_methods},
    {0, NULL},
};

static PyType_Spec spout_spec = {
    "topology.runtime._spout.SpoutEmit", sizeof(SpoutEmitObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, spout_slots,
};

static struct PyModuleDef spout_module = {
    PyModuleDef_HEAD_INIT, "topology.runtime._spout",
    "Compiled twin of a spout's emit (see topology.runtime.spout_path).", -1, NULL,
};

PyMODINIT_FUNC PyInit__spout(void) {
    api = (FastpathApi *)PyCapsule_Import(FASTPATH_CAPSULE, 0);
    if (api == NULL || api->version != FASTPATH_API_VERSION) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ImportError, "acker._fastpath: no C API of this version");
        return NULL;
    }
    PyObject *basic = PyImport_ImportModule("topology.runtime._basic");
    if (basic == NULL) return NULL;
    RouteType = (PyTypeObject *)PyObject_GetAttrString(basic, "FastRoute");
    Py_DECREF(basic);
    if (RouteType == NULL) return NULL;
    if (!PyType_Check(RouteType) || RouteType->tp_basicsize != sizeof(RouteObject)) {
        PyErr_SetString(PyExc_ImportError, /* (a _basic built from another _route.h) */
                        "topology.runtime._basic.FastRoute is not the FastRoute of _route.h");
        return NULL;
    }
    str_default = PyUnicode_InternFromString("default");
    str_stream = PyUnicode_InternFromString("stream");
    str_msg_id = PyUnicode_InternFromString("msg_id");
    str_next_rotation = PyUnicode_InternFromString("next_rotation");
    if (str_default == NULL || str_stream == NULL || str_msg_id == NULL ||
        str_next_rotation == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&spout_module);
    if (module == NULL) return NULL;
    SpoutEmitType = (PyTypeObject *)PyType_FromSpec(&spout_spec);
    if (SpoutEmitType == NULL ||
        PyModule_AddObjectRef(module, "SpoutEmit", (PyObject *)SpoutEmitType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
