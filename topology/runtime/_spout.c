/*
 * topology.runtime._spout: a spout's emit, compiled; selected by
 * topology/runtime/spout_path.py.  The reference is the pure-Python path
 * (SpoutCollector.emit, acker.SpoutAcking.track); tests/unit/test_spout_path.py runs both
 * on generated topologies and emits and checks that what they push, count, start and ack
 * agree.
 *
 *   SpoutEmit(routes, general, acked_at_emit, clock, trees)
 *       ``emit(values, msg_id=None, stream="default")``: a spout's emit on a stream of
 *       ``routes`` (stream -> FastRoute, see _basic.c) with a list of the declared arity
 *       whose values are str (ASCII), int (64 bits), float, bool, None or bytes; anything
 *       else goes to ``general`` (the collector's Python emit, which checks, raises and
 *       counts) with the same arguments.  It returns the chosen tasks.  A msg id that
 *       starts no tree (no ackers, or nobody received the tuple) is appended to
 *       ``acked_at_emit`` (the task acks it after ``next_tuple``).  ``trees`` is None
 *       without ackers, else the acker's acker._fastpath.SpoutTrees for this task
 *       (acker.SpoutAcking.compiled_trees), to which every tree's start goes.
 *
 * It owns no acking state: the root, the edges, their XOR, the tree's init for its acker
 * and its place among the pending trees are the acker's (start_tree of its C API,
 * acker/_fastpath_api.h); this module only hands it the tasks and pushes each edge's
 * envelope it is given onto the task's lane.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "../../acker/_fastpath_api.h"
#include "_route.h"

static FastpathApi *api = NULL;
static PyTypeObject *RouteType = NULL; /* topology.runtime._basic.FastRoute */
static PyObject *str_default = NULL, *str_stream = NULL, *str_msg_id = NULL;

typedef struct {
    PyObject_HEAD
    PyObject *routes; /* dict stream -> FastRoute */
    PyObject *default_route;
    PyObject *general;
    PyObject *acked_at_emit;
    PyObject *clock;
    PyObject *trees; /* the acker's SpoutTrees; NULL: no ackers */
} SpoutEmitObject;

static PyTypeObject *SpoutEmitType = NULL;

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
    if (trees != Py_None) {
        if (!PyObject_TypeCheck(trees, api->spout_trees_type)) {
            PyErr_SetString(PyExc_TypeError, "SpoutEmit: trees must be None or a SpoutTrees");
            goto error;
        }
        self->trees = Py_NewRef(trees);
    }
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
    Py_VISIT(self->trees);
    return 0;
}

static int spout_clear(SpoutEmitObject *self) {
    Py_CLEAR(self->routes);
    Py_CLEAR(self->default_route);
    Py_CLEAR(self->general);
    Py_CLEAR(self->acked_at_emit);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->trees);
    return 0;
}

static void spout_dealloc(SpoutEmitObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    spout_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* The lane push start_tree calls for each edge: (route, values) as its context. */
typedef struct {
    RouteObject *route;
    PyObject *values;
} PushContext;

static int push_edge(void *ctx, PyObject *task, PyObject *meta) {
    PushContext *push = (PushContext *)ctx;
    return push_lane(push->route, task, push->values, meta);
}

/* Values on every task as the root of a new tree for msg_id (the acker's start_tree):
 * 1; 0 when no tree started (the caller acks msg_id at emit); -1 on error. */
static int start_tree(SpoutEmitObject *self, RouteObject *route, PyObject *tasks,
                      PyObject *values, PyObject *msg_id) {
    PyObject *now = PyObject_CallNoArgs(self->clock);
    if (now == NULL) return -1;
    PushContext push = {route, values};
    int status = api->start_tree(self->trees, tasks, msg_id, now, push_edge, &push);
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
    if (msg_id != NULL && self->trees != NULL) {
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
    if (str_default == NULL || str_stream == NULL || str_msg_id == NULL) return NULL;
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
