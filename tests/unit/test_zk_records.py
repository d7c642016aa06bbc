"""Unit tests for topology.deploy.zk.records: every record read from ZooKeeper is checked at
the door (whoever reaches ZooKeeper can write anything into a node: hostile input).

The hostile records are generated (hypothesis, derandomized so CI is repeatable): each
field of a valid record replaced by junk of every JSON type (and some that JSON does not
have), out-of-range numbers, missing and extra fields, deep nesting.  A checker returns
``None`` or a one-line reason and never raises.  For a longer run:
``SPARKSTORM_FUZZ_EXAMPLES=20000 python3 -m pytest tests/unit/test_zk_records.py``.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology import config as cfg
from topology.deploy.zk import records
from topology.deploy.zk.requests import request_command
from topology.deploy.zk.state import ZkState
from topology.stats.rolling import WINDOW_NAMES

pytestmark = pytest.mark.timeout(120)

EXAMPLES = int(os.environ.get("SPARKSTORM_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

WINDOW = {"emitted": {"default": 3}, "acked": 2, "failed": 0, "capacity": 0.1}
RECORD: dict[str, Any] = {
    "name": "wc",
    "status": "ACTIVE",
    "initial_status": "ACTIVE",
    "conf": {**cfg.defaults(), "topology.workers": 2},
    "components": {
        "words": {"kind": "spout", "tasks": 1, "streams": {"default": ["word"]}, "inputs": []},
        "count": {
            "kind": "bolt",
            "tasks": 2,
            "streams": {"default": ["word", "n"]},
            "inputs": [
                {"component": "words", "stream": "default", "grouping": "fields", "fields": []}
            ],
        },
    },
    "module_paths": ["/home/u/app"],
    "submitted_at": 1.7e9,
    "launched_at": 1.7e9,
    "rebalance": {
        "workers": 3,
        "wait": 0,
        "components": {"count": 4},
        "previous": "ACTIVE",
        "deactivated_at": 1.7e9,
    },
    "request": {"id": 1, "cmd": "status"},
    "driver": {"generation": 2},
    "signatures": {"code": "a" * 64, "record": "b" * 64},
}
ASSIGNMENT: dict[str, Any] = {
    "attempt": 1,
    "workers": 2,
    "component_tasks": {"__acker": [1], "count": [2, 3], "words": [4]},
    "worker_tasks": [[1, 3], [2, 4]],
}
HEARTBEAT: dict[str, Any] = {
    "worker": 0,
    "attempt": 1,
    "endpoint": "tcp://127.0.0.1:5000",
    "host": "h",
    "pid": 42,
    "ready": True,
    "beat_at": 1.7e9,
    "stalled_secs": 0.0,
    "busy_in": None,
    "executor": "1",
    "stats": {
        "worker": 0,
        "time": 1.7e9,
        "throttled_by": [1],
        "tasks": {
            "2": {
                "component": "count",
                "pending": 0,
                "windows": dict.fromkeys(WINDOW_NAMES, WINDOW),
            }
        },
    },
    "reply": {"type": "status", "req": 5, "worker": 0, "tasks": {}},
}
DRIVER = {"host": "h", "pid": 7, "generation": 2, "workers": {"0": {"restarts": 1, "reason": "x"}}}
STARTED = {"attempt": 1, "at": 1.7e9}
ERRORS = [{"text": "boom", "worker": 0, "attempt": 1, "component": "__worker"}]

CASES: dict[str, tuple[Callable[[Any], str | None], Any]] = {
    "record": (records.check_record, RECORD),
    "assignment": (records.check_assignment, ASSIGNMENT),
    "heartbeat": (records.check_heartbeat, HEARTBEAT),
    "driver": (records.check_driver, DRIVER),
    "started": (records.check_started, STARTED),
    "errors": (records.check_errors, ERRORS),
}
#: Fields a checker requires (taking one away must be refused).
REQUIRED = {
    "record": ["name", "status", "conf", "components"],
    "assignment": ["attempt", "workers", "component_tasks", "worker_tasks"],
    "heartbeat": ["worker", "attempt"],
    "started": ["attempt", "at"],
}
#: Records whose every field is known (an extra one is refused).
CLOSED = ["record", "assignment", "started"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a field or item of ``value`` (the root included)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return out


def _deep(depth: int) -> Any:
    value: Any = 1
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
#: Anything a hostile writer could put in a node, and some values JSON cannot even hold.
junk = (
    json_values
    | st.integers(min_value=0, max_value=300).map(_deep)
    | st.sampled_from(
        [-1, 0, 2**31, 2**63, 10**30, -0.5, 1e308, float("nan"), "", "\0", "x" * 5000]
    )
    | st.binary(max_size=10)
    | st.tuples(st.integers(), st.text(max_size=3))
    | st.dictionaries(st.integers(), st.integers(), max_size=3)
    | st.frozensets(st.integers(), max_size=3)
)


def _one_line(reason: Any) -> bool:
    return isinstance(reason, str) and 0 < len(reason) <= 310 and "\n" not in reason


# -- the records sparkstorm writes pass --------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(CASES))
def test_what_sparkstorm_writes_passes(kind: str) -> None:
    check, good = CASES[kind]
    assert check(good) is None
    assert check(json.loads(json.dumps(good))) is None


def test_a_real_assignment_passes() -> None:
    from topology.assignment import assign, to_json

    assignment = to_json(assign({"a": 3, "b": 5, "__acker": 2}, 4), attempt=7)
    assert records.check_assignment(json.loads(json.dumps(assignment))) is None


# -- hostile records are refused with a reason, never an exception ----------------------------


@FUZZ
@given(kind=st.sampled_from(sorted(CASES)), data=st.data(), new=junk)
def test_any_field_replaced_by_junk_never_raises(kind: str, data: Any, new: Any) -> None:
    check, good = CASES[kind]
    path = data.draw(st.sampled_from(_paths(good)))
    reason = check(_replace(good, path, new))
    assert reason is None or _one_line(reason)


@FUZZ
@given(kind=st.sampled_from(sorted(CASES)), value=junk)
def test_any_whole_value_never_raises(kind: str, value: Any) -> None:
    reason = CASES[kind][0](value)
    assert reason is None or _one_line(reason)


@FUZZ
@given(kind=st.sampled_from(sorted(REQUIRED)), data=st.data())
def test_a_missing_required_field_is_refused(kind: str, data: Any) -> None:
    check, good = CASES[kind]
    field = data.draw(st.sampled_from(REQUIRED[kind]))
    reason = check({k: v for k, v in good.items() if k != field})
    assert _one_line(reason) and field in str(reason)


@FUZZ
@given(kind=st.sampled_from(CLOSED), key=st.text(min_size=1, max_size=20), value=junk)
def test_an_extra_field_is_refused(kind: str, key: str, value: Any) -> None:
    check, good = CASES[kind]
    if key in good or (kind == "record" and key in records_optional()):
        return
    assert _one_line(check({**good, key: value}))


def records_optional() -> set[str]:
    return {"initial_status", "module_paths", "submitted_at", "launched_at", "kill_at"} | {
        "rebalance", "request", "driver", "error", "signatures"
    }  # fmt: skip


#: (path, a wrong value) in each record: wrong types and out-of-range values.
WRONG: dict[str, list[tuple[tuple[Any, ...], Any]]] = {
    "record": [
        (("name",), 7),
        (("name",), ""),
        (("name",), "x" * 1001),
        (("status",), "RUNNING"),
        (("status",), ["ACTIVE"]),
        (("conf",), []),
        (("conf", "topology.workers"), 0),
        (("conf", "topology.workers"), 10**9),
        (("conf", "topology.workers"), "2"),
        (("conf", "topology.workers"), True),
        (("conf", "topology.message.timeout.secs"), "soon"),
        (("components", "words", "tasks"), -1),
        (("components", "words"), "spout"),
        (("module_paths",), "/tmp"),
        (("module_paths", 0), "relative/dir"),
        (("module_paths", 0), 3),
        (("module_paths",), ["/x"] * 1001),
        (("rebalance", "workers"), 10**6),
        (("rebalance", "wait"), float("inf")),
        (("rebalance", "components", "count"), 0),
        (("rebalance", "components", "count"), "4"),
        (("rebalance", "components"), {"": 2}),
        (("submitted_at",), float("nan")),
        (("driver", "generation"), -2),
        (("signatures", "code"), "not hex"),
        (("signatures",), {"conf": "a" * 64}),
        (("request",), [1]),
    ],
    "assignment": [
        (("attempt",), -1),
        (("attempt",), 1.5),
        (("workers",), 3),  # worker_tasks has 2
        (("workers",), 0),
        (("component_tasks", "count"), [2, 2]),
        (("component_tasks", "count"), ["2"]),
        (("worker_tasks", 0), [1, 99]),
        (("worker_tasks", 1), [2, 3, 4]),
        (("worker_tasks", 1), [2]),  # task 4 on no worker
        (("worker_tasks",), {"0": [1]}),
    ],
    "heartbeat": [
        (("worker",), "0"),
        (("worker",), 10**6),
        (("endpoint",), "http://evil"),
        (("endpoint",), ["tcp://a:1"]),
        (("pid",), -3),
        (("stats",), []),
        (("stats", "tasks", "2", "windows"), {}),
        (("stats", "tasks", "2", "windows", "600", "acked"), "many"),
        (("stats", "tasks", "2", "component"), None),
        (("stats", "throttled_by"), ["1"]),
        (("reply", "worker"), "0"),
        (("reply",), "status"),
    ],
    "driver": [(("generation",), "2"), (("workers", "0", "restarts"), "1"), (("workers",), [])],
    "started": [(("attempt",), None), (("at",), "now")],
    "errors": [((0, "text"), None), ((0, "worker"), -1), ((0,), "boom")],
}


@pytest.mark.parametrize(
    ("kind", "path", "wrong"), [(k, p, w) for k, cases in WRONG.items() for p, w in cases]
)
def test_wrong_types_and_ranges_are_refused(kind: str, path: tuple[Any, ...], wrong: Any) -> None:
    check, good = CASES[kind]
    reason = check(_replace(good, path, wrong))
    assert _one_line(reason), reason


@pytest.mark.parametrize("kind", sorted(CASES))
def test_deep_nesting_is_refused_and_bad_json_is_a_reason(kind: str) -> None:
    check = CASES[kind][0]
    value, reason = records.load(json.dumps(_deep(100)).encode(), check)
    assert value is None and "nested deeper" in str(reason)
    value, reason = records.load(b"[" * 200_000 + b"]" * 200_000, check)  # json recursion
    assert value is None and reason is not None
    assert records.load(b"\xff\xfe", check)[1] is not None
    assert records.load(b"", check) == (None, None)
    assert records.load(json.dumps(CASES[kind][1]).encode(), check)[1] is None


@FUZZ
@given(request=junk, rid=junk, args=junk)
def test_requests_never_raise(request: Any, rid: Any, args: Any) -> None:
    for candidate in (request, {"id": rid, "cmd": "log", "args": args}, {"id": 1, "cmd": request}):
        command = request_command(candidate)
        assert command is None or isinstance(command, dict)


# -- reading through ZkState: refused once, logged once, read as absent -----------------------


def test_a_bad_record_is_read_as_absent_and_logged_once(caplog: Any) -> None:
    zk = ZkState(cfg.resolve({}))
    try:
        path = zk.paths.storm("wc-1-1")
        caplog.set_level(logging.WARNING, logger="topology.deploy.zk.state")
        bad = json.dumps(dict(RECORD, module_paths="/tmp")).encode()
        assert zk.checked(path, bad, records.check_record) is None
        assert zk.checked(path, bad, records.check_record) is None
        [line] = [r.getMessage() for r in caplog.records]
        assert path in line and "module_paths" in line and "\n" not in line
        good = json.dumps(RECORD).encode()
        assert zk.checked(path, good, records.check_record) == RECORD
        assert path not in zk.refused
    finally:
        zk.client.close()
