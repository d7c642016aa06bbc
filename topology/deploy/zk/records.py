"""The JSON records sparkstorm reads from ZooKeeper, checked at the door (pure).

Whoever can write to ZooKeeper can write anything into a node, so the nimbus, drivers,
workers and clients check every record they read before they look inside it: the
topology record, the assignment, heartbeats, driver nodes, ``started`` marks and error
logs.  Each ``check_*`` function returns ``None`` for a record of the expected shape, or a
one-line reason; it never raises, whatever it is given (each is built of the checkers of
:mod:`.schema`).  :func:`load` decodes and checks in one step (bad JSON and absurd nesting
are reasons too).  Reading them through :class:`~topology.deploy.zk.state.ZkState` logs
each refusal once and treats the record as absent, so a reader goes on.

The checks bound types, ranges and sizes: they say nothing of who wrote a record; with a
cluster secret the signature does (:mod:`topology.deploy.security`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from topology import config as cfg
from topology.errors import ConfigError
from topology.stats.rolling import WINDOW_NAMES
from topology.status import LIVE, TopologyStatus

from ..rescale import MAX_COMPONENT_TASKS, MAX_RESCALED_COMPONENTS
from .requests import MAX_WORKERS
from .schema import (
    MAX_ID,
    MAX_NAME_CHARS,
    Check,
    _Bad,
    _checker,
    _digits,
    _fields,
    _int,
    _label,
    _list,
    _name,
    _num,
    _obj,
    _str,
)

#: Most tasks an assignment may hold.
MAX_TASKS = 100_000
#: Most ``module_paths`` entries, and the longest one.
MAX_MODULE_PATHS = 1000
MAX_PATH_CHARS = 4096
#: Most entries of an error log.
MAX_ERRORS = 1000

STATUSES = frozenset(TopologyStatus)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ENDPOINT = re.compile(r"(tcp|ipc|inproc)://\S{1,300}")
_TOKEN = re.compile(r"[0-9a-f]{32}")


def load(raw: bytes | None, check: Check) -> tuple[Any, str | None]:
    """``(value, None)`` for a node's content that decodes and passes ``check``, else
    ``(None, reason)``; an empty node is ``(None, None)``."""
    if not raw:
        return None, None
    try:
        value = json.loads(raw.decode())
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None, "not JSON (or nested too deep)"
    reason = check(value)
    return (None, reason) if reason is not None else (value, None)


# -- the topology record -------------------------------------------------------------------


def _status(value: Any, field: str) -> None:
    if not isinstance(value, str) or value not in STATUSES:
        raise _Bad(f"{field}: {str(value)[:40]!r} is not one of {', '.join(sorted(STATUSES))}")


def _initial_status(value: Any, field: str) -> None:
    if not isinstance(value, str) or value not in LIVE:
        raise _Bad(f"{field}: {str(value)[:40]!r} is neither ACTIVE nor INACTIVE")


def _conf(value: Any, field: str) -> None:
    """A topology's conf: every key sparkstorm knows of its type and range."""
    conf = _obj(value, field)
    if cfg.TOPOLOGY_WORKERS not in conf:
        raise _Bad(f"{field}: missing {cfg.TOPOLOGY_WORKERS!r}")
    _int(conf[cfg.TOPOLOGY_WORKERS], f"{field}.{cfg.TOPOLOGY_WORKERS}", 1, MAX_WORKERS)
    for key, item in conf.items():
        try:
            cfg.check_value(key, item, field)
        except (ConfigError, TypeError, ValueError) as exc:
            raise _Bad(str(exc)) from None


def _module_paths(value: Any, field: str) -> None:
    for entry in _list(value, field, MAX_MODULE_PATHS):
        path = _str(entry, field, MAX_PATH_CHARS, least=1)
        if not path.startswith("/") or "\0" in path:
            raise _Bad(f"{field}: {path[:80]!r} is not an absolute path")


def _components(value: Any, field: str) -> None:
    components = _obj(value, field)
    if len(components) > MAX_TASKS:
        raise _Bad(f"{field}: {len(components)} components, more than {MAX_TASKS}")
    for name, info in components.items():
        where = f"{field}.{_label(name)}"
        _name(name, field)
        info = _obj(info, where)
        _str(info.get("kind"), f"{where}.kind", 40, least=1)
        _int(info.get("tasks"), f"{where}.tasks", 1, MAX_TASKS)
        if info.get("uid") is not None:
            _name(info["uid"], f"{where}.uid")
        for kind in _list(info.get("state", []), f"{where}.state", 8):
            _str(kind, f"{where}.state", 40, least=1)
        for stream, fields in _obj(info.get("streams", {}), f"{where}.streams").items():
            _name(stream, f"{where}.streams")
            for item in _list(fields, f"{where}.streams.{_label(stream)}", MAX_TASKS):
                _str(item, f"{where}.streams.{_label(stream)}", MAX_NAME_CHARS)
        for put in _list(info.get("inputs", []), f"{where}.inputs", MAX_TASKS):
            _obj(put, f"{where}.inputs")


def _rescaled(value: Any, field: str) -> None:
    """A rebalance's new task counts: component id -> count (the nimbus checks the names
    against the topology's components)."""
    counts = _obj(value, field)
    if len(counts) > MAX_RESCALED_COMPONENTS:
        raise _Bad(f"{field}: {len(counts)} components, more than {MAX_RESCALED_COMPONENTS}")
    for name, count in counts.items():
        _name(name, field)
        _int(count, f"{field}.{_label(name)}", 1, MAX_COMPONENT_TASKS)


def _rebalance(value: Any, field: str) -> None:
    _fields(
        _obj(value, field),
        f"{field}.",
        {"workers": lambda v, f: _int(v, f, 1, MAX_WORKERS)},
        {
            "wait": lambda v, f: _num(v, f, 0.0, 1e7),
            "components": _rescaled,
            "previous": _status,
            "deactivated_at": _num,
        },
    )


def _driver_mark(value: Any, field: str) -> None:
    _int(_obj(value, field).get("generation", 0), f"{field}.generation")


def _signatures(value: Any, field: str) -> None:
    for purpose, signed in _obj(value, field).items():
        if purpose not in ("code", "record"):
            raise _Bad(f"{field}: unknown signature {str(purpose)[:40]!r}")
        if not (isinstance(signed, str) and _HEX64.fullmatch(signed)):
            raise _Bad(f"{field}.{purpose}: not a hex HMAC-SHA256")


@_checker
def _topology_record(value: Any) -> None:
    """A topology's record (``<root>/storms/<topology-id>``)."""
    _fields(
        _obj(value, "record"),
        "",
        {"name": _name, "status": _status, "conf": _conf, "components": _components},
        {
            "initial_status": _initial_status,
            "module_paths": _module_paths,
            "submitted_at": _num,
            "launched_at": _num,
            "kill_at": _num,
            "rebalance": _rebalance,
            "request": _obj,  # checked in full by zk/requests.py before a worker acts
            "driver": _driver_mark,
            "error": _str,
            "signatures": _signatures,
        },
    )


check_record: Check = _topology_record


# -- assignments ---------------------------------------------------------------------------


@_checker
def _assignment(value: Any) -> None:
    """An assignment (``<root>/assignments/<topology-id>``): every task of
    ``component_tasks`` on exactly one of ``workers`` workers."""
    record = _obj(value, "assignment")
    _fields(
        record,
        "",
        {
            "attempt": _int,
            "workers": lambda v, f: _int(v, f, 1, MAX_WORKERS),
            "component_tasks": _obj,
            "worker_tasks": lambda v, f: _list(v, f, MAX_WORKERS),
        },
        {},
    )
    component_of: dict[int, str] = {}
    for component, tasks in record["component_tasks"].items():
        _name(component, "component_tasks")
        for task in _list(tasks, f"component_tasks.{_label(component)}", MAX_TASKS):
            _int(task, f"component_tasks.{_label(component)}", 1)
            if task in component_of:
                raise _Bad(f"component_tasks: task {task} belongs to two components")
            component_of[task] = component
            if len(component_of) > MAX_TASKS:
                raise _Bad(f"component_tasks: more than {MAX_TASKS} tasks")
    if len(record["worker_tasks"]) != record["workers"]:
        raise _Bad(
            f"worker_tasks: {len(record['worker_tasks'])} workers, but workers is "
            f"{record['workers']}"
        )
    placed: set[int] = set()
    for index, tasks in enumerate(record["worker_tasks"]):
        for task in _list(tasks, f"worker_tasks.{index}", MAX_TASKS):
            _int(task, f"worker_tasks.{index}", 1)
            if task not in component_of or task in placed:
                raise _Bad(f"worker_tasks.{index}: task {task} is unknown or placed twice")
            placed.add(task)
    if len(placed) != len(component_of):
        raise _Bad("worker_tasks: some tasks of component_tasks are on no worker")


check_assignment: Check = _assignment


# -- what workers and drivers write --------------------------------------------------------


def _endpoint(value: Any, field: str) -> None:
    if not (isinstance(value, str) and _ENDPOINT.fullmatch(value)):
        raise _Bad(f"{field}: not a tcp://, ipc:// or inproc:// endpoint")


def _token(value: Any, field: str) -> None:
    if not (isinstance(value, str) and _TOKEN.fullmatch(value)):
        raise _Bad(f"{field}: not a data token (32 lower-case hex digits)")


def _count(value: Any, field: str) -> float:
    return _num(value, field, -1e18, 1e18)


def _counts(value: Any, field: str) -> None:
    for key, count in _obj(value, field).items():
        _str(key, field, MAX_NAME_CHARS)
        _count(count, f"{field}.{_label(key)}")


def _window(value: Any, field: str) -> None:
    for key, item in _obj(value, field).items():
        if isinstance(item, dict):
            _counts(item, f"{field}.{_label(key)}")
        elif item is not None:
            _count(item, f"{field}.{_label(key)}")


def _task_stats(value: Any, field: str) -> None:
    info = _obj(value, field)
    _name(info.get("component"), f"{field}.component")
    if info.get("pending") is not None:
        _count(info["pending"], f"{field}.pending")
    windows = _obj(info.get("windows"), f"{field}.windows")
    for window in WINDOW_NAMES:
        if window not in windows:
            raise _Bad(f"{field}.windows: missing window {window!r}")
    for window, counts in windows.items():
        _window(counts, f"{field}.windows.{_label(window)}")


def _reply(value: Any, field: str) -> None:
    """A worker's status reply or published stats (what ``status`` adds up)."""
    reply = _obj(value, field)
    _fields(
        reply,
        f"{field}.",
        {},
        {
            "worker": lambda v, f: _int(v, f, 0, MAX_WORKERS - 1),
            "req": lambda v, f: _int(v, f, 0, 2**63 - 1),
            "type": lambda v, f: _str(v, f, 40),
            "time": _num,
            "uptime_secs": _num,
            "dropped_frames": _int,
            "inbound": _int,
            "throttled_by": lambda v, f: [
                _int(w, f, 0, MAX_WORKERS - 1) for w in _list(v, f, MAX_WORKERS)
            ],
            "full_peers": lambda v, f: [
                _int(w, f, 0, MAX_WORKERS - 1) for w in _list(v, f, MAX_WORKERS)
            ],
            "checkpoints": _obj,
        },
        extra=True,
    )
    if "tasks" in reply:
        for task, info in _obj(reply["tasks"], f"{field}.tasks").items():
            _digits(task, f"{field}.tasks", MAX_ID)
            _task_stats(info, f"{field}.tasks.{_label(task)}")


def _replies(value: Any, field: str) -> None:
    """A worker's latest reply to each command (``{"status": {...}, "log": {...}}``)."""
    for kind, reply in _obj(value, field).items():
        _reply(reply, f"{field}.{_label(kind)}")


def _stats(value: Any, field: str) -> None:
    if "tasks" not in _obj(value, field):
        raise _Bad(f"{field}: missing field 'tasks'")
    _reply(value, field)


@_checker
def _heartbeat(value: Any) -> None:
    """A worker's heartbeat (``<root>/workerbeats/<topology-id>/<worker>``)."""
    _fields(
        _obj(value, "heartbeat"),
        "",
        {"worker": lambda v, f: _int(v, f, 0, MAX_WORKERS - 1), "attempt": _int},
        {
            "endpoint": _endpoint,
            "token": _token,
            "host": lambda v, f: _str(v, f, 1000),
            "pid": _int,
            "ready": lambda v, f: None if type(v) is bool else _int(v, f, 0, 1),
            "started": _num,
            "beat_at": _num,
            "ready_at": _num,
            "stats_at": _num,
            "stalled_secs": lambda v, f: _num(v, f, 0.0, 1e12),
            "busy_in": lambda v, f: _str(v, f, 1000),
            "errors_dropped": _int,
            "requests_refused": _int,
            "stats": _stats,
            "reply": _reply,
            "replies": _replies,
        },
        extra=True,  # executor and Spark task details vary; none of them is acted on
    )


check_heartbeat: Check = _heartbeat


@_checker
def _started(value: Any) -> None:
    """The mark a worker leaves once it became ready (``<root>/started/...``)."""
    _fields(_obj(value, "started"), "", {"attempt": _int, "at": _num}, {})


check_started: Check = _started


def _supervised(value: Any, field: str) -> None:
    for worker, info in _obj(value, field).items():
        _digits(worker, field, MAX_WORKERS - 1)
        info = _obj(info, f"{field}.{worker}")
        _fields(
            info,
            f"{field}.{worker}.",
            {},
            {
                "restarts": _int,
                "reason": _str,
                "next_start_at": _num,
            },
            extra=True,
        )


@_checker
def _driver(value: Any) -> None:
    """A topology driver's node (``<root>/drivers/<topology-id>``)."""
    _fields(
        _obj(value, "driver"),
        "",
        {},
        {
            "host": lambda v, f: _str(v, f, 1000),
            "pid": _int,
            "generation": _int,
            "started": _num,
            "workers": _supervised,
        },
        extra=True,
    )


check_driver: Check = _driver


@_checker
def _errors(value: Any) -> None:
    """A component's error log (``<root>/errors/<topology-id>/<component>``)."""
    for index, entry in enumerate(_list(value, "errors", MAX_ERRORS)):
        entry = _obj(entry, f"errors.{index}")
        _str(entry.get("text"), f"errors.{index}.text")
        if entry.get("worker") is not None:
            _int(entry["worker"], f"errors.{index}.worker", 0, MAX_WORKERS - 1)
        if entry.get("attempt") is not None:
            _int(entry["attempt"], f"errors.{index}.attempt")


check_errors: Check = _errors


@_checker
def _carried(value: Any) -> None:
    """Stats a worker saved for its next incarnation (``<root>/carried/...``)."""
    _obj(value, "carried stats")


check_carried: Check = _carried
