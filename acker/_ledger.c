/*
 * acker._ledger: the acker ledger's two batch steps compiled, selected by acker/ledger.py.
 * The reference is the pure-Python code of AckLedger.ack_all / init_all in that file;
 * tests/unit/test_ledger.py runs every ledger test against both, and
 * tests/unit/test_ledger_compiled.py checks reference counts and hostile input.
 *
 *   ack_all(buckets, acks, completed, failed, outcome)
 *   init_all(buckets, inits, completed, failed, outcome)
 *   complete_all(buckets, roots, now, done, bounds, counts) -> (latency sum, error)
 *   split_acks(acks, ackers) -> {acker: {root: value}}
 *   u64_map(items), u64_list(items), inits_ok(items) -> bool
 *
 * ``buckets`` is the ledger's RotatingMap generations (dicts, newest first) and each entry
 * a list [value, spout task or None, fail reason or None]; ``acks`` a dict root -> XOR,
 * ``inits`` a sequence of [root, value, spout task]; completed trees are appended to
 * ``completed[spout task]`` (a list, created when missing) and failed ones to ``failed``
 * as ``outcome(root, spout task, reason)``, item by item, so what settled before a
 * malformed item (TypeError) is kept.  Values are XORed with the number protocol, exactly
 * as the Python code does, so any int the wire can carry behaves the same; entry values
 * are always exact ints (an init's value must be one, and 0 ^ any int is one), so a
 * tree is complete when its value is false.
 *
 * ``complete_all`` is the spout's side (acker/pending.py, PendingTrees.complete_all): the
 * entries ``[msg_id, emitted at]`` of ``roots`` are popped, their msg ids appended to
 * ``done`` and their latencies (``now - emitted at``) summed and counted in the histogram
 * ``bounds`` / ``counts`` (both None: none).  An error (a root that is not hashable) is
 * returned, not raised, with the sum so far, so that the caller counts what completed.
 *
 * ``split_acks`` is the outbox's (acker/outbox.py, ``_split_acks``): a turn's combined
 * acks, the non-zero ones, per acker task ``ackers[root % len(ackers)]``.
 *
 * ``u64_map``, ``u64_list`` and ``inits_ok`` are the door's checks of ack traffic
 * (acker/protocol.py, ``check_values``, whose pure twins they share names with): exact
 * ints in 0 .. 2**64 - 1 read in one pass instead of six bulk passes.
 *
 * ``inits`` is read as a whole first and ``buckets`` copied into a tuple (the Python code
 * iterates them lazily): the same for the lists and deque the acker passes.
 *
 * Why C: per tree the acker runs these loops two or three times; in Python that is about
 * 150 bytecodes a tree.  Compiled, an acked word costs 1.6 % fewer instructions (most of
 * a tree's cost here is dict and int work, which C does too; docs/BENCHMARKS.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_ids.h"

/* The entry of ``root`` in the first generation holding it, as a new reference, with that
 * generation (borrowed from ``buckets``) in *where; NULL and no error when absent. */
static PyObject *find_entry(PyObject *buckets, PyObject *root, Py_hash_t hash,
                            PyObject **where) {
    Py_ssize_t n = PyTuple_GET_SIZE(buckets);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *bucket = PyTuple_GET_ITEM(buckets, i);
        PyObject *entry = DICT_GET_H(bucket, root, hash);
        if (entry != NULL) {
            if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) != 3) {
                PyErr_SetString(PyExc_SystemError, "acker ledger: an entry is not [value, spout, reason]");
                return NULL;
            }
            Py_INCREF(entry);
            *where = bucket;
            return entry;
        }
        if (PyErr_Occurred()) return NULL;
    }
    return NULL;
}

/* The generations as a tuple of dicts (a new reference), or NULL with an error. */
static PyObject *generations(PyObject *buckets) {
    PyObject *tuple = PySequence_Tuple(buckets);
    if (tuple == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyDict_CheckExact(PyTuple_GET_ITEM(tuple, i))) n = -1;
    }
    if (n <= 0) {
        Py_DECREF(tuple);
        PyErr_SetString(PyExc_TypeError, "acker ledger: buckets must be one or more dicts");
        return NULL;
    }
    return tuple;
}

/* completed.setdefault(spout, []).append(root) */
static int add_completed(PyObject *completed, PyObject *spout, PyObject *root) {
    PyObject *roots = PyDict_GetItemWithError(completed, spout);
    if (roots != NULL) {
        if (!PyList_Check(roots)) {
            PyErr_SetString(PyExc_TypeError, "acker ledger: completed[spout] must be a list");
            return -1;
        }
        return PyList_Append(roots, root);
    }
    if (PyErr_Occurred()) return -1;
    roots = PyList_New(1);
    if (roots == NULL) return -1;
    Py_INCREF(root);
    PyList_SET_ITEM(roots, 0, root);
    int failed = PyDict_SetItem(completed, spout, roots);
    Py_DECREF(roots);
    return failed;
}

/* entry[0] ^= value (the entry keeps the result). */
static int xor_into(PyObject *entry, PyObject *value) {
    PyObject *old = PyList_GET_ITEM(entry, 0);
    uint64_t a, b;
    if (exact_u64(old, &a) && exact_u64(value, &b)) { /* (the number protocol's result) */
        PyObject *combined = PyLong_FromUnsignedLongLong(a ^ b);
        return combined == NULL ? -1 : PyList_SetItem(entry, 0, combined);
    }
    Py_INCREF(old); /* ours across the number protocol, which may run Python code */
    PyObject *combined = PyNumber_InPlaceXor(old, value);
    Py_DECREF(old);
    if (combined == NULL) return -1;
    return PyList_SetItem(entry, 0, combined); /* steals combined, releases the old value */
}

/* A tree whose spout task is known: report it failed or complete, and forget it, when it
 * is (Python's AckLedger._settle and the tail of ack_all). */
static int settle(PyObject *bucket, PyObject *root, Py_hash_t hash, PyObject *entry,
                  PyObject *completed, PyObject *failed, PyObject *outcome) {
    PyObject *spout = PyList_GET_ITEM(entry, 1);
    PyObject *reason = PyList_GET_ITEM(entry, 2);
    int result = -1;
    Py_INCREF(spout); /* our own: deleting the entry below may free it */
    Py_INCREF(reason);
    if (reason != Py_None) {
        PyObject *report = PyObject_CallFunctionObjArgs(outcome, root, spout, reason, NULL);
        if (report == NULL) goto done;
        int appended = PyList_Append(failed, report);
        Py_DECREF(report);
        if (appended < 0 || DICT_DEL_H(bucket, root, hash) < 0) goto done;
    } else {
        int complete = PyObject_Not(PyList_GET_ITEM(entry, 0));
        if (complete < 0) goto done;
        if (complete &&
            (DICT_DEL_H(bucket, root, hash) < 0 || add_completed(completed, spout, root) < 0))
            goto done;
    }
    result = 0;
done:
    Py_DECREF(spout);
    Py_DECREF(reason);
    return result;
}

static int check_outputs(PyObject *completed, PyObject *failed) {
    if (!PyDict_Check(completed) || !PyList_Check(failed)) {
        PyErr_SetString(PyExc_TypeError, "acker ledger: completed must be a dict, failed a list");
        return -1;
    }
    return 0;
}

static PyObject *ledger_ack_all(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "ack_all takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *acks = args[1], *completed = args[2], *failed = args[3], *outcome = args[4];
    if (!PyDict_CheckExact(acks)) {
        PyErr_Format(PyExc_TypeError, "acks must be a dict, got %.80s", Py_TYPE(acks)->tp_name);
        return NULL;
    }
    if (check_outputs(completed, failed) < 0) return NULL;
    PyObject *buckets = generations(args[0]);
    if (buckets == NULL) return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) {
        Py_DECREF(buckets);
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *root, *value;
    Py_hash_t hash;
    while (DICT_NEXT_H(acks, &pos, &root, &value, &hash)) {
        Py_INCREF(root);
        Py_INCREF(value);
        PyObject *bucket = NULL;
        PyObject *entry = find_entry(buckets, root, hash, &bucket);
        int ok = -1;
        if (entry == NULL) {
            if (PyErr_Occurred()) goto next;
            /* acks before the init: kept until the init names the spout (0 ^: ints only) */
            PyObject *first = PyNumber_Xor(zero, value);
            if (first == NULL) goto next;
            PyObject *fresh = list3(first, Py_None, Py_None);
            Py_DECREF(first);
            if (fresh == NULL) goto next;
            ok = DICT_SET_H(PyTuple_GET_ITEM(buckets, 0), root, fresh, hash);
            Py_DECREF(fresh);
            goto next;
        }
        if (xor_into(entry, value) < 0) goto next;
        ok = PyList_GET_ITEM(entry, 1) == Py_None
                 ? 0
                 : settle(bucket, root, hash, entry, completed, failed, outcome);
    next:
        Py_XDECREF(entry);
        Py_DECREF(root);
        Py_DECREF(value);
        if (ok < 0) {
            Py_DECREF(zero);
            Py_DECREF(buckets);
            return NULL;
        }
    }
    Py_DECREF(zero);
    Py_DECREF(buckets);
    Py_RETURN_NONE;
}

/* One [root, value, spout] of an init message (Python's init_all loop body). */
static int init_one(PyObject *buckets, PyObject *item, PyObject *completed, PyObject *failed,
                    PyObject *outcome) {
    if (!(PyList_CheckExact(item) || PyTuple_CheckExact(item)) || PySequence_Fast_GET_SIZE(item) != 3) {
        PyErr_Format(PyExc_TypeError, "an init of the wrong shape: %.80R", item);
        return -1;
    }
    PyObject **parts = PySequence_Fast_ITEMS(item);
    PyObject *root = parts[0], *value = parts[1], *spout = parts[2];
    if (!PyLong_CheckExact(value) || !PyLong_CheckExact(spout)) {
        PyErr_Format(PyExc_TypeError, "an init of the wrong shape: %.80R", item);
        return -1;
    }
    int result = -1;
    Py_INCREF(root);
    Py_INCREF(value);
    Py_INCREF(spout);
    PyObject *bucket = NULL, *entry = NULL;
    Py_hash_t hash = PyObject_Hash(root);
    if (hash == -1) goto done;
    entry = find_entry(buckets, root, hash, &bucket);
    if (entry == NULL) {
        if (PyErr_Occurred()) goto done;
        int edges = PyObject_IsTrue(value);
        if (edges < 0) goto done;
        if (edges) { /* the usual case: the init comes first */
            PyObject *fresh = list3(value, spout, Py_None);
            if (fresh == NULL) goto done;
            result = DICT_SET_H(PyTuple_GET_ITEM(buckets, 0), root, fresh, hash);
            Py_DECREF(fresh);
        } else { /* a tree without edges is complete already */
            result = add_completed(completed, spout, root);
        }
        goto done;
    }
    if (xor_into(entry, value) < 0) goto done;
    Py_INCREF(spout);
    if (PyList_SetItem(entry, 1, spout) < 0) goto done; /* steals spout, releases the old */
    result = settle(bucket, root, hash, entry, completed, failed, outcome);
done:
    Py_XDECREF(entry);
    Py_DECREF(root);
    Py_DECREF(value);
    Py_DECREF(spout);
    return result;
}

static PyObject *ledger_init_all(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "init_all takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *completed = args[2], *failed = args[3], *outcome = args[4];
    if (check_outputs(completed, failed) < 0) return NULL;
    PyObject *inits = PySequence_Fast(args[1], "init_all: inits must be a sequence");
    if (inits == NULL) return NULL;
    PyObject *buckets = generations(args[0]);
    if (buckets == NULL) {
        Py_DECREF(inits);
        return NULL;
    }
    int failed_at = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(inits); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(inits, i);
        Py_INCREF(item);
        failed_at = init_one(buckets, item, completed, failed, outcome);
        Py_DECREF(item);
        if (failed_at < 0) break;
    }
    Py_DECREF(buckets);
    Py_DECREF(inits);
    if (failed_at < 0) return NULL;
    Py_RETURN_NONE;
}

/* -- the outbox: AckOutbox's split of a turn's combined acks by acker -------------------- */

/* ackers[root % len(ackers)] (borrowed), or NULL with an error set. */
static PyObject *acker_of(PyObject *ackers, PyObject *root) {
    Py_ssize_t n = PyTuple_GET_SIZE(ackers), at;
    uint64_t u;
    if (exact_u64(root, &u)) {
        at = (Py_ssize_t)(u % (uint64_t)n);
    } else { /* (not a 64-bit unsigned int: Python's own modulo) */
        PyObject *size = PyLong_FromSsize_t(n);
        PyObject *rest = size == NULL ? NULL : PyNumber_Remainder(root, size);
        Py_XDECREF(size);
        if (rest == NULL) return NULL;
        at = PyLong_AsSsize_t(rest);
        Py_DECREF(rest);
        if (at == -1 && PyErr_Occurred()) return NULL;
        if (at < 0 || at >= n) {
            PyErr_SetString(PyExc_IndexError, "split_acks: root % len(ackers) out of range");
            return NULL;
        }
    }
    return PyTuple_GET_ITEM(ackers, at);
}

static PyObject *ledger_split_acks(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyTuple_CheckExact(args[1]) ||
        PyTuple_GET_SIZE(args[1]) == 0) {
        PyErr_SetString(PyExc_TypeError, "split_acks(acks: dict, ackers: non-empty tuple)");
        return NULL;
    }
    PyObject *acks = args[0], *ackers = args[1];
    PyObject *by_acker = PyDict_New();
    if (by_acker == NULL) return NULL;
    Py_ssize_t pos = 0;
    PyObject *root, *value;
    Py_hash_t hash;
    while (DICT_NEXT_H(acks, &pos, &root, &value, &hash)) {
        Py_INCREF(root);
        Py_INCREF(value);
        int keep = PyObject_IsTrue(value);
        PyObject *acker = keep > 0 ? acker_of(ackers, root) : NULL;
        PyObject *part = acker == NULL ? NULL : PyDict_GetItemWithError(by_acker, acker);
        int stored = -1;
        if (keep == 0) {
            stored = 0;
        } else if (part != NULL) {
            stored = DICT_SET_H(part, root, value, hash);
        } else if (acker != NULL && !PyErr_Occurred()) {
            part = PyDict_New();
            if (part != NULL) {
                stored = PyDict_SetItem(by_acker, acker, part) < 0
                             ? -1
                             : DICT_SET_H(part, root, value, hash);
                Py_DECREF(part);
            }
        }
        Py_DECREF(root);
        Py_DECREF(value);
        if (stored < 0) {
            Py_DECREF(by_acker);
            return NULL;
        }
    }
    return by_acker;
}

/* -- the spout's side: PendingTrees.complete_all's loop ----------------------------------- */

/* Pop root's entry from the first generation holding it: a new reference, or NULL (an
 * error set when root is not hashable). */
static PyObject *pop_entry(PyObject *buckets, PyObject *root) {
    Py_hash_t hash = PyObject_Hash(root);
    if (hash == -1) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(buckets); i++) {
        PyObject *bucket = PyTuple_GET_ITEM(buckets, i);
        PyObject *entry = DICT_GET_H(bucket, root, hash);
        if (entry != NULL) {
            Py_INCREF(entry);
            if (DICT_DEL_H(bucket, root, hash) < 0) {
                Py_DECREF(entry);
                return NULL;
            }
            return entry;
        }
        if (PyErr_Occurred()) return NULL;
    }
    return NULL;
}

/* One completed tree's [msg_id, emitted at]: msg_id onto done, its latency into *sum and
 * the histogram (counts[i] for the first bounds[i] >= latency, the last: above all). */
static int complete_one(PyObject *entry, double now, PyObject *done, PyObject *bounds,
                        PyObject *counts, double *sum) {
    if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) != 2) {
        PyErr_SetString(PyExc_SystemError, "pending trees: an entry is not [msg_id, at]");
        return -1;
    }
    double at = PyFloat_AsDouble(PyList_GET_ITEM(entry, 1));
    if (at == -1.0 && PyErr_Occurred()) return -1;
    double latency = now - at;
    *sum += latency;
    if (counts != Py_None) {
        Py_ssize_t i = 0, n = PyTuple_GET_SIZE(bounds);
        for (; i < n; i++) {
            double bound = PyFloat_AsDouble(PyTuple_GET_ITEM(bounds, i));
            if (bound == -1.0 && PyErr_Occurred()) return -1;
            if (!(bound < latency)) break; /* (bisect_left, NaN included) */
        }
        PyObject *old = Py_NewRef(PyList_GET_ITEM(counts, i)); /* (the add may run code) */
        PyObject *one = PyLong_FromLong(1);                     /* (a cached small int) */
        PyObject *count = one == NULL ? NULL : PyNumber_Add(old, one);
        Py_XDECREF(one);
        Py_DECREF(old);
        if (count == NULL || i >= PyList_GET_SIZE(counts)) {
            if (count != NULL) PyErr_SetString(PyExc_RuntimeError, "the histogram shrank");
            Py_XDECREF(count);
            return -1;
        }
        if (PyList_SetItem(counts, i, count) < 0) return -1; /* (steals count) */
    }
    return PyList_Append(done, PyList_GET_ITEM(entry, 0));
}

static PyObject *ledger_complete_all(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "complete_all takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *done = args[3], *bounds = args[4], *counts = args[5];
    double now = PyFloat_AsDouble(args[2]);
    if (now == -1.0 && PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(done) ||
        (counts != Py_None &&
         (!PyTuple_CheckExact(bounds) || !PyList_CheckExact(counts) ||
          PyList_GET_SIZE(counts) != PyTuple_GET_SIZE(bounds) + 1))) {
        PyErr_SetString(PyExc_TypeError,
                        "complete_all: done a list; bounds a tuple and counts a list one longer");
        return NULL;
    }
    PyObject *buckets = generations(args[0]);
    if (buckets == NULL) return NULL;
    double sum = 0.0;
    PyObject *roots = PySequence_Fast(args[1], "complete_all: roots must be a sequence");
    for (Py_ssize_t i = 0; roots != NULL && i < PySequence_Fast_GET_SIZE(roots); i++) {
        PyObject *root = PySequence_Fast_GET_ITEM(roots, i);
        Py_INCREF(root);
        PyObject *entry = pop_entry(buckets, root);
        Py_DECREF(root);
        if (entry == NULL) {
            if (PyErr_Occurred()) break;
            continue; /* timed out already, or never this task's */
        }
        int failed = complete_one(entry, now, done, bounds, counts, &sum);
        Py_DECREF(entry);
        if (failed < 0) break;
    }
    Py_XDECREF(roots);
    Py_DECREF(buckets);
    PyObject *error = Py_None;
    if (PyErr_Occurred()) { /* returned, not raised: the caller counts what completed first */
        PyObject *type, *tb;
        PyErr_Fetch(&type, &error, &tb);
        PyErr_NormalizeException(&type, &error, &tb);
        if (tb != NULL) PyException_SetTraceback(error, tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        return Py_BuildValue("(dN)", sum, error);
    }
    return Py_BuildValue("(dO)", sum, error);
}

/* -- the door's checks of ack traffic (acker/protocol.py: check_values and its twins) ---- */

static PyObject *ledger_u64_map(PyObject *module, PyObject *items) {
    if (!PyDict_CheckExact(items)) Py_RETURN_FALSE;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    uint64_t ignored;
    while (PyDict_Next(items, &pos, &key, &value)) {
        if (!exact_u64(key, &ignored) || !exact_u64(value, &ignored)) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyObject *ledger_u64_list(PyObject *module, PyObject *items) {
    if (!PyList_CheckExact(items)) Py_RETURN_FALSE;
    uint64_t ignored;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        if (!exact_u64(PyList_GET_ITEM(items, i), &ignored)) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyObject *ledger_inits_ok(PyObject *module, PyObject *items) {
    if (!PyList_CheckExact(items)) Py_RETURN_FALSE;
    uint64_t ignored;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *init = PyList_GET_ITEM(items, i);
        if (!PyList_CheckExact(init) || PyList_GET_SIZE(init) != 3 ||
            !exact_u64(PyList_GET_ITEM(init, 0), &ignored) ||
            !exact_u64(PyList_GET_ITEM(init, 1), &ignored) ||
            !PyLong_CheckExact(PyList_GET_ITEM(init, 2)))
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef ledger_methods[] = {
    {"u64_map", ledger_u64_map, METH_O,
     "u64_map(items) -> whether items is a dict of 64-bit unsigned ints to such ints."},
    {"u64_list", ledger_u64_list, METH_O,
     "u64_list(items) -> whether items is a list of 64-bit unsigned ints."},
    {"inits_ok", ledger_inits_ok, METH_O,
     "inits_ok(items) -> whether items is a list of [root, value, spout task] lists."},
    {"split_acks", (PyCFunction)(void (*)(void))ledger_split_acks, METH_FASTCALL,
     "split_acks(acks, ackers) -> {acker: {root: value}}: AckOutbox's split of a turn's "
     "non-zero combined acks by acker (ackers[root % len(ackers)])."},
    {"complete_all", (PyCFunction)(void (*)(void))ledger_complete_all, METH_FASTCALL,
     "complete_all(buckets, roots, now, done, bounds, counts) -> (latency sum, error or "
     "None): PendingTrees.complete_all's loop."},
    {"ack_all", (PyCFunction)(void (*)(void))ledger_ack_all, METH_FASTCALL,
     "ack_all(buckets, acks, completed, failed, outcome): AckLedger.ack_all's loop."},
    {"init_all", (PyCFunction)(void (*)(void))ledger_init_all, METH_FASTCALL,
     "init_all(buckets, inits, completed, failed, outcome): AckLedger.init_all's loop."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ledger_module = {
    PyModuleDef_HEAD_INIT, "acker._ledger",
    "The acker ledger's batch steps and the spout's completion loop, compiled (see "
    "acker/ledger.py and acker/pending.py).", -1, ledger_methods,
};

PyMODINIT_FUNC PyInit__ledger(void) { return PyModule_Create(&ledger_module); }
