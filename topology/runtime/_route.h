/*
 * FastRoute's storage and what both compiled emits do with it (a BasicBolt's,
 * topology/runtime/_basic.c, which defines the type, and a spout's, _spout.c): are the
 * values plain, which tasks does the stream's grouping pick, and the push onto a lane.
 */
#ifndef SPARKSTORM_ROUTE_H
#define SPARKSTORM_ROUTE_H

#include <Python.h>

typedef struct {
    PyObject_HEAD
    Py_ssize_t arity;
    PyObject *choose; /* NULL: nobody subscribes */
    PyObject *push;
    Py_ssize_t key;
    PyObject *cache;
    Py_ssize_t emitted;
} RouteObject;

/* 1: every value is of a type msgpack encodes as is (what _Collector._checked passes
 * without a call: ASCII str, int within 64 bits, float, bool, None, bytes); 0 otherwise
 * (the Python path decides). */
static int plain_values(PyObject *values, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i);
        PyTypeObject *t = Py_TYPE(v);
        if (t == &PyUnicode_Type) {
            if (!PyUnicode_IS_READY(v) || !PyUnicode_IS_ASCII(v)) return 0;
        } else if (t == &PyLong_Type) {
            int overflow;
            (void)PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow < 0 || (overflow > 0 && _PyLong_NumBits(v) > 64)) return 0;
        } else if (t != &PyFloat_Type && t != &PyBool_Type && v != Py_None &&
                   t != &PyBytes_Type) {
            return 0;
        }
    }
    return 1;
}

/* The chosen tasks (a new list the caller owns), or NULL with an error set. */
static PyObject *chosen(RouteObject *route, PyObject *values) {
    PyObject *picked = NULL;
    if (route->cache != NULL && route->key < PyList_GET_SIZE(values)) {
        PyObject *key = PyList_GET_ITEM(values, route->key);
        PyTypeObject *t = Py_TYPE(key);
        if (t == &PyUnicode_Type || t == &PyLong_Type || t == &PyBytes_Type || key == Py_None) {
            picked = PyDict_GetItemWithError(route->cache, key); /* borrowed */
            if (picked == NULL && PyErr_Occurred()) return NULL;
            Py_XINCREF(picked);
        }
    }
    if (picked == NULL) {
        picked = PyObject_CallOneArg(route->choose, values);
        if (picked == NULL) return NULL;
    }
    PyObject *tasks; /* a fresh list: the caller's to keep */
    if (PyList_CheckExact(picked) && PyList_GET_SIZE(picked) == 1) { /* (the usual pick) */
        tasks = PyList_New(1);
        if (tasks != NULL) PyList_SET_ITEM(tasks, 0, Py_NewRef(PyList_GET_ITEM(picked, 0)));
    } else {
        tasks = PySequence_List(picked);
    }
    Py_DECREF(picked);
    return tasks;
}

/* values and meta on the lane of task (route->push[task]: (append value, append meta)):
 * 0, or -1 with an error set. */
static int push_lane(RouteObject *route, PyObject *task, PyObject *values, PyObject *meta) {
    PyObject *lane = PyDict_GetItemWithError(route->push, task); /* borrowed */
    if (lane == NULL) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, task);
        return -1;
    }
    if (!PyTuple_CheckExact(lane) || PyTuple_GET_SIZE(lane) != 2) {
        PyErr_SetString(PyExc_TypeError, "a lane is (append value, append meta)");
        return -1;
    }
    Py_INCREF(lane);
    PyObject *result = PyObject_CallOneArg(PyTuple_GET_ITEM(lane, 0), values);
    if (result != NULL) {
        Py_DECREF(result);
        result = PyObject_CallOneArg(PyTuple_GET_ITEM(lane, 1), meta);
    }
    Py_DECREF(lane);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

#endif
