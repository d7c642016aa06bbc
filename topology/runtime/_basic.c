/*
 * topology.runtime._basic: a BasicBolt task's per-tuple loop and its emit, compiled;
 * selected by topology/runtime/basic_path.py.  The reference is the pure-Python path
 * (BoltTask._run and BoltCollector.emit_anchored); tests/unit/test_basic_path.py runs both
 * on the same topologies and input and checks that what they push, count and ack agree.
 *
 *   FastRoute(arity, choose=None, push=None, key=-1, cache=None)
 *       One stream of the task that the compiled emit takes: ``choose`` None when nobody
 *       subscribes, else the only subscriber's built-in grouping (``choose(values)`` -> a
 *       list of tasks) and ``push`` (task -> (append value, append meta)); ``key`` >= 0
 *       and ``cache`` (the fields grouping's own dict: value -> [task]) let a single-field
 *       fields grouping's hits skip the call.  ``emitted`` counts the emits it took.
 *   Basic(routes, general, emit_child, acks, ack_general, on_error, tuple_type)
 *       ``emit(values, anchors=None, stream="default")``: a BasicBolt's emit (anchored to
 *       ``current``) on a stream of ``routes`` (stream -> FastRoute) with a list of the
 *       declared arity whose values are str (ASCII), int (64 bits), float, bool, None or
 *       bytes; anything else goes to ``general(values, anchors, stream)`` (the collector's
 *       Python emit, which checks, raises and counts).  ``run(execute, source, vals,
 *       metas)``: every tuple of one received group through ``execute`` (the bolt's
 *       ``process``, given as ``tuple_type``'s instances), acked after, or
 *       ``on_error(tup, exc)`` when it raised an Exception; ``acked`` counts the inputs
 *       acked.  ``acks`` and ``ack_general`` are the acker's (the outbox's combined acks
 *       and BoltAcking.ack; None acks without ackers), handed to its run_ack;
 *       ``emit_child(push, tasks, values, parent)`` takes an anchored emit the inline path
 *       does not (several trees or tasks).
 *
 * It owns no acking state: a new edge of the input's tree (new_edge_meta), the ack of an
 * input and the folding of a run's acks (run_ack, run_flush) are the acker's C API
 * (acker/_fastpath_api.h); this module only builds tuples, calls the bolt and pushes
 * values with the envelopes it is given.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "../../acker/_fastpath_api.h"
#include "_route.h"

static FastpathApi *api = NULL;
/* The subclass of TupleBase seen last (instance_of). */
static PyTypeObject *seen_subtype = NULL;

/* -- FastRoute (its struct and reads: _route.h) ---------------------------------------- */

static PyTypeObject *RouteType = NULL;

static PyObject *route_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *names[] = {"arity", "choose", "push", "key", "cache", NULL};
    Py_ssize_t arity, key = -1;
    PyObject *choose = Py_None, *push = Py_None, *cache = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n|OOnO:FastRoute", names, &arity, &choose,
                                     &push, &key, &cache))
        return NULL;
    if (choose != Py_None && (!PyCallable_Check(choose) || !PyDict_CheckExact(push))) {
        PyErr_SetString(PyExc_TypeError, "FastRoute: choose must be callable, push a dict");
        return NULL;
    }
    if (cache != Py_None && !PyDict_CheckExact(cache)) {
        PyErr_SetString(PyExc_TypeError, "FastRoute: cache must be a dict or None");
        return NULL;
    }
    RouteObject *self = (RouteObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->arity = arity;
    self->choose = choose == Py_None ? NULL : Py_NewRef(choose);
    self->push = choose == Py_None ? NULL : Py_NewRef(push);
    self->key = cache == Py_None ? -1 : key;
    self->cache = cache == Py_None || key < 0 ? NULL : Py_NewRef(cache);
    self->emitted = 0;
    return (PyObject *)self;
}

static int route_traverse(RouteObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->choose);
    Py_VISIT(self->push);
    Py_VISIT(self->cache);
    return 0;
}

static int route_clear(RouteObject *self) {
    Py_CLEAR(self->choose);
    Py_CLEAR(self->push);
    Py_CLEAR(self->cache);
    return 0;
}

static void route_dealloc(RouteObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    route_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef route_members[] = {
    {"emitted", T_PYSSIZET, offsetof(RouteObject, emitted), 0, "emits this route took"},
    {"arity", T_PYSSIZET, offsetof(RouteObject, arity), READONLY, "declared fields"},
    {NULL},
};

static PyType_Slot route_slots[] = {
    {Py_tp_doc, "One stream a compiled emit takes (a BasicBolt's or a spout's; see the module)."},
    {Py_tp_new, route_new},
    {Py_tp_dealloc, route_dealloc},
    {Py_tp_traverse, route_traverse},
    {Py_tp_clear, route_clear},
    {Py_tp_members, route_members},
    {0, NULL},
};

static PyType_Spec route_spec = {
    "topology.runtime._basic.FastRoute", sizeof(RouteObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, route_slots,
};

/* -- Basic ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *routes;      /* dict stream -> FastRoute */
    PyObject *default_route;
    PyObject *general;     /* emit(values, anchors, stream), the Python path */
    PyObject *emit_child;  /* acking.emit_child(push, tasks, values, parent) */
    PyObject *acks;        /* NULL: no ackers */
    PyObject *ack_general;
    PyObject *on_error;
    PyObject *tuple_type;
    PyObject *current;     /* the input being processed, or NULL */
    Py_ssize_t acked;      /* inputs acked by run (the task moves them to its stats) */
} BasicObject;

static PyTypeObject *BasicType = NULL;
static PyObject *str_default = NULL, *str_stream = NULL, *str_anchors = NULL;

static PyObject *basic_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *routes, *general, *emit_child, *acks, *ack_general, *on_error, *tuple_type;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Basic takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!OOOOOO!:Basic", &PyDict_Type, &routes, &general,
                          &emit_child, &acks, &ack_general, &on_error, &PyType_Type,
                          &tuple_type))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)tuple_type, api->tuple_type)) {
        PyErr_SetString(PyExc_TypeError, "Basic: tuple_type must subclass TupleBase");
        return NULL;
    }
    if (acks != Py_None && !PyDict_CheckExact(acks)) {
        PyErr_SetString(PyExc_TypeError, "Basic: acks must be a dict or None");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(routes, &pos, &k, &v)) {
        if (!PyObject_TypeCheck(v, RouteType)) {
            PyErr_SetString(PyExc_TypeError, "Basic: routes maps streams to FastRoutes");
            return NULL;
        }
    }
    BasicObject *self = (BasicObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->routes = PyDict_Copy(routes); /* (its values stay FastRoutes) */
    if (self->routes == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->default_route = Py_XNewRef(PyDict_GetItemWithError(routes, str_default));
    if (self->default_route == NULL && PyErr_Occurred()) {
        Py_DECREF(self);
        return NULL;
    }
    self->general = Py_NewRef(general);
    self->emit_child = Py_NewRef(emit_child);
    self->acks = acks == Py_None ? NULL : Py_NewRef(acks);
    self->ack_general = Py_NewRef(ack_general);
    self->on_error = Py_NewRef(on_error);
    self->tuple_type = Py_NewRef(tuple_type);
    self->current = NULL;
    return (PyObject *)self;
}

static int basic_traverse(BasicObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->routes);
    Py_VISIT(self->default_route);
    Py_VISIT(self->general);
    Py_VISIT(self->emit_child);
    Py_VISIT(self->acks);
    Py_VISIT(self->ack_general);
    Py_VISIT(self->on_error);
    Py_VISIT(self->tuple_type);
    Py_VISIT(self->current);
    return 0;
}

static int basic_clear(BasicObject *self) {
    Py_CLEAR(self->routes);
    Py_CLEAR(self->default_route);
    Py_CLEAR(self->general);
    Py_CLEAR(self->emit_child);
    Py_CLEAR(self->acks);
    Py_CLEAR(self->ack_general);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->tuple_type);
    Py_CLEAR(self->current);
    return 0;
}

static void basic_dealloc(BasicObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    basic_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* How an emit anchors to the current input: */
enum { UNTRACKED, ONE_TREE, GENERAL };

/* UNTRACKED: no ackers, no input or an untracked one (meta None); ONE_TREE: an input in
 * exactly one tree (meta [edge, root]); GENERAL: anything else (acking's emit_child). */
static int anchoring(BasicObject *self) {
    PyObject *parent = self->current;
    if (self->acks == NULL || parent == NULL || parent == Py_None) return UNTRACKED;
    if (!instance_of(parent, api->tuple_type, &seen_subtype)) return GENERAL;
    PyObject *roots = api->anchors_of(parent);
    if (roots == Py_None) return UNTRACKED;
    return PyLong_CheckExact(roots) ? ONE_TREE : GENERAL;
}

/* values and their meta (UNTRACKED: None; ONE_TREE: a new edge of the current input's
 * tree) on the lane of the one chosen task. */
static int push_one(BasicObject *self, RouteObject *route, PyObject *task, PyObject *values,
                    int how) {
    /* (the edge is drawn before the value is pushed) */
    PyObject *meta = how == ONE_TREE ? api->new_edge_meta(self->current) : Py_NewRef(Py_None);
    if (meta == NULL) return -1;
    int pushed = push_lane(route, task, values, meta);
    Py_DECREF(meta);
    return pushed;
}

static PyObject *call_general(BasicObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
}

static PyObject *basic_emit(BasicObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1 || nargs > 3) return call_general(self, args, nargsf, kwnames);
    PyObject *stream = nargs == 3 ? args[2] : NULL;
    if (kwnames != NULL) { /* anchors= (ignored) and stream=, each once; else Python raises */
        Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t i = 0; i < nkw; i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (name == str_stream && stream == NULL)
                stream = args[nargs + i];
            else if (!(name == str_anchors && nargs == 1))
                return call_general(self, args, nargsf, kwnames);
        }
    }
    PyObject *route_obj;
    if (stream == NULL) {
        route_obj = self->default_route;
    } else {
        route_obj = PyUnicode_CheckExact(stream) ? PyDict_GetItemWithError(self->routes, stream)
                                                 : NULL;
        if (route_obj == NULL && PyErr_Occurred()) return NULL;
    }
    PyObject *values = args[0];
    if (route_obj == NULL || !PyList_CheckExact(values))
        return call_general(self, args, nargsf, kwnames);
    RouteObject *route = (RouteObject *)route_obj;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (n != route->arity) return call_general(self, args, nargsf, kwnames);
    if (route->choose == NULL) { /* nobody subscribes: the values go nowhere */
        route->emitted++;
        return PyList_New(0);
    }
    if (!plain_values(values, n)) return call_general(self, args, nargsf, kwnames);
    Py_INCREF(route); /* user code (a custom choose) could drop the routes */
    route->emitted++; /* (counted before the grouping runs, as _Collector._chosen does) */
    PyObject *tasks = chosen(route, values);
    if (tasks == NULL) goto error;
    Py_ssize_t count = PyList_GET_SIZE(tasks);
    int how = count == 1 ? anchoring(self) : GENERAL;
    if (how != GENERAL) {
        if (push_one(self, route, PyList_GET_ITEM(tasks, 0), values, how) < 0) goto error;
    } else if (count > 0) {
        PyObject *parent = Py_NewRef(self->current != NULL ? self->current : Py_None);
        PyObject *call[4] = {route->push, tasks, values, parent};
        PyObject *done = PyObject_Vectorcall(self->emit_child, call, 4, NULL);
        Py_DECREF(parent);
        if (done == NULL) goto error;
        Py_DECREF(done);
    }
    Py_DECREF(route);
    return tasks;
error:
    Py_XDECREF(tasks);
    Py_DECREF(route);
    return NULL;
}

/* The ack of tup once execute returned: the acker's run_ack (which folds consecutive
 * inputs of one tree into ``run`` and hands other tracked ones to ack_general); nothing
 * without ackers. */
static int ack_input(BasicObject *self, PyObject *tup, RunAcks *run) {
    if (self->acks == NULL) return 0;
    return api->run_ack(self->acks, self->ack_general, tup, run);
}

static int flush_acks(BasicObject *self, RunAcks *run) {
    return self->acks == NULL ? 0 : api->run_flush(self->acks, run);
}

/* One received tuple as tuple_type(values, source[, id, anchors]). */
static PyObject *make_tuple(BasicObject *self, PyObject *values, PyObject *source,
                            PyObject *meta) {
    PyTypeObject *type = (PyTypeObject *)self->tuple_type;
    int truthy = meta == Py_None ? 0 : PyObject_IsTrue(meta);
    if (truthy < 0) return NULL;
    if (!truthy) return api->new_tuple(type, values, source, Py_None, Py_None);
    if (PyTuple_CheckExact(meta) && PyTuple_GET_SIZE(meta) == 2) /* (edge, roots): as made */
        return api->new_tuple(type, values, source, PyTuple_GET_ITEM(meta, 0),
                              PyTuple_GET_ITEM(meta, 1));
    if (PyList_CheckExact(meta) && PyList_GET_SIZE(meta) == 2) /* [edge, roots]: as decoded */
        return api->new_tuple(type, values, source, PyList_GET_ITEM(meta, 0),
                              PyList_GET_ITEM(meta, 1));
    PyObject *id = PySequence_GetItem(meta, 0);
    if (id == NULL) return NULL;
    PyObject *anchors = PySequence_GetItem(meta, 1);
    if (anchors == NULL) {
        Py_DECREF(id);
        return NULL;
    }
    PyObject *tup = api->new_tuple(type, values, source, id, anchors);
    Py_DECREF(id);
    Py_DECREF(anchors);
    return tup;
}

static PyObject *basic_run(BasicObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "run takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *execute = args[0], *source = args[1], *vals = args[2], *metas = args[3];
    if (!PyList_CheckExact(vals) || (metas != Py_None && (!PyList_CheckExact(metas) ||
                                                          PyList_GET_SIZE(metas) <
                                                              PyList_GET_SIZE(vals)))) {
        PyErr_SetString(PyExc_TypeError, "run: vals a list, metas None or as long a list");
        return NULL;
    }
    RunAcks run = RUN_ACKS_INIT;
    Py_INCREF(vals);
    Py_XINCREF(metas);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(vals); i++) {
        PyObject *values = PyList_GET_ITEM(vals, i);
        PyObject *meta = metas == Py_None || i >= PyList_GET_SIZE(metas)
                             ? Py_None
                             : PyList_GET_ITEM(metas, i);
        Py_INCREF(values);
        Py_INCREF(meta);
        PyObject *tup = make_tuple(self, values, source, meta);
        Py_DECREF(values);
        Py_DECREF(meta);
        if (tup == NULL) goto error;
        Py_XSETREF(self->current, Py_NewRef(tup));
        PyObject *result = PyObject_CallOneArg(execute, tup);
        if (result != NULL) {
            Py_DECREF(result);
            self->acked++; /* (counted before the ack, as BoltCollector.ack does) */
            if (ack_input(self, tup, &run) < 0) {
                Py_DECREF(tup);
                goto error;
            }
        } else if (PyErr_ExceptionMatches(PyExc_Exception)) {
            PyObject *type, *exc, *tb;
            PyErr_Fetch(&type, &exc, &tb);
            PyErr_NormalizeException(&type, &exc, &tb);
            if (tb != NULL) PyException_SetTraceback(exc, tb);
            Py_XDECREF(type);
            Py_XDECREF(tb);
            if (flush_acks(self, &run) < 0) { /* (what was acked before goes first) */
                Py_DECREF(exc);
                Py_DECREF(tup);
                goto error;
            }
            PyObject *call[2] = {tup, exc};
            /* on_error runs as in an ``except`` block: sys.exc_info() is exc, and what it
             * raises has exc as its context */
            PyObject *outer = PyErr_GetHandledException();
            PyErr_SetHandledException(exc);
            PyObject *handled = PyObject_Vectorcall(self->on_error, call, 2, NULL);
            PyErr_SetHandledException(outer);
            Py_XDECREF(outer);
            Py_DECREF(exc);
            if (handled == NULL) {
                Py_DECREF(tup);
                goto error;
            }
            Py_DECREF(handled);
        } else { /* KeyboardInterrupt, SystemExit: not the bolt's error to report */
            Py_DECREF(tup);
            goto error;
        }
        Py_DECREF(tup);
    }
    Py_CLEAR(self->current);
    Py_DECREF(vals);
    Py_XDECREF(metas);
    if (flush_acks(self, &run) < 0) return NULL;
    Py_RETURN_NONE;
error:
    { /* what was acked before the error still counts */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (flush_acks(self, &run) < 0) PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    Py_CLEAR(self->current);
    Py_DECREF(vals);
    Py_XDECREF(metas);
    return NULL;
}

static PyObject *basic_get_current(BasicObject *self, void *closure) {
    return Py_NewRef(self->current != NULL ? self->current : Py_None);
}

static int basic_set_current(BasicObject *self, PyObject *value, void *closure) {
    Py_XSETREF(self->current, value == NULL || value == Py_None ? NULL : Py_NewRef(value));
    return 0;
}

static PyMemberDef basic_members[] = {
    {"acked", T_PYSSIZET, offsetof(BasicObject, acked), 0, "inputs run acked so far"},
    {NULL},
};

static PyGetSetDef basic_getset[] = {
    {"current", (getter)basic_get_current, (setter)basic_set_current,
     "the input being processed (None between inputs)", NULL},
    {NULL},
};

static PyMethodDef basic_methods[] = {
    {"emit", (PyCFunction)(void (*)(void))basic_emit, METH_FASTCALL | METH_KEYWORDS,
     "emit($self, values, anchors=None, stream='default')\n--\n\n"
     "A BasicBolt's emit, anchored to the input being processed; returns the tasks."},
    {"run", (PyCFunction)(void (*)(void))basic_run, METH_FASTCALL,
     "run($self, execute, source, vals, metas)\n--\n\n"
     "One received group through execute (acked counts the inputs acked)."},
    {NULL},
};

static PyType_Slot basic_slots[] = {
    {Py_tp_doc, "A BasicBolt task's compiled loop and emit (see the module)."},
    {Py_tp_new, basic_new},
    {Py_tp_dealloc, basic_dealloc},
    {Py_tp_traverse, basic_traverse},
    {Py_tp_clear, basic_clear},
    {Py_tp_getset, basic_getset},
    {Py_tp_members, basic_members},
    {Py_tp_methods, basic_methods},
    {0, NULL},
};

static PyType_Spec basic_spec = {
    "topology.runtime._basic.Basic", sizeof(BasicObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, basic_slots,
};

static struct PyModuleDef basic_module = {
    PyModuleDef_HEAD_INIT, "topology.runtime._basic",
    "Compiled twin of a BasicBolt task's loop and emit (see topology.runtime.basic_path).", -1,
    NULL,
};

PyMODINIT_FUNC PyInit__basic(void) {
    api = (FastpathApi *)PyCapsule_Import(FASTPATH_CAPSULE, 0);
    if (api == NULL) { /* (an older acker._fastpath beside this module: pure Python runs) */
        PyErr_Clear();
        PyErr_SetString(PyExc_ImportError, "acker._fastpath exports no C API");
        return NULL;
    }
    if (api->version != FASTPATH_API_VERSION) {
        PyErr_SetString(PyExc_ImportError, "acker._fastpath: another API version");
        return NULL;
    }
    str_default = PyUnicode_InternFromString("default");
    str_stream = PyUnicode_InternFromString("stream");
    str_anchors = PyUnicode_InternFromString("anchors");
    if (str_default == NULL || str_stream == NULL || str_anchors == NULL) return NULL;
    PyObject *module = PyModule_Create(&basic_module);
    if (module == NULL) return NULL;
    RouteType = (PyTypeObject *)PyType_FromSpec(&route_spec);
    BasicType = (PyTypeObject *)PyType_FromSpec(&basic_spec);
    if (RouteType == NULL || BasicType == NULL ||
        PyModule_AddObjectRef(module, "FastRoute", (PyObject *)RouteType) < 0 ||
        PyModule_AddObjectRef(module, "Basic", (PyObject *)BasicType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
