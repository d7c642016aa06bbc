"""Requests read from a topology's ZooKeeper record, checked before a worker acts (pure).

``Cluster.request`` writes ``{"id": n, "cmd": ..., "args": {...}}`` into the record; every
worker of the topology turns it into a command for its executor.  Whoever can write the
record could write anything there, so only the commands a client asks for pass, each with
arguments of the expected types and ranges; anything else is dropped whole (the asking
client then times out, naming how many workers answered).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from topology.config import MAX_WORKERS
from topology.names import MAX_NAME_CHARS
from topology.runtime.worker_log import LEVELS, MAX_CHUNK_BYTES

#: Longest timed log-level change (seconds).
MAX_REVERT_SECS = 10_000_000.0


def _index(v: Any) -> bool:
    return type(v) is int and 0 <= v < MAX_WORKERS


def _offsets(v: Any) -> bool:
    return (
        isinstance(v, dict)
        and len(v) <= MAX_WORKERS
        and all(isinstance(k, str) and k.isdigit() and type(o) is int and 0 <= o < 2**62
                for k, o in v.items())
    )  # fmt: skip


def _name(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= MAX_NAME_CHARS


def _size(v: Any) -> bool:
    return type(v) is int and 0 < v <= MAX_CHUNK_BYTES


def _level(v: Any) -> bool:
    return isinstance(v, str) and v.upper() in LEVELS


def _seconds(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v) and 0 < v <= MAX_REVERT_SECS


#: cmd -> argument -> its check (an absent or null argument is always allowed).
ALLOWED: dict[str, dict[str, Callable[[Any], bool]]] = {
    "status": {},
    "collect": {},
    "log": {
        "worker": _index,
        "offsets": _offsets,
        "files": _offsets,  # worker -> the file id of its last chunk (same shape)
        "component": _name,
        "max_bytes": _size,
    },
    "log_level": {"level": _level, "revert_after": _seconds},
}


def request_command(request: Any) -> dict[str, Any] | None:
    """The executor command for ``request`` (``{"cmd", "req", **args}``), or None when it
    is not a request a client of ours writes."""
    if not isinstance(request, dict):
        return None
    request_id, cmd, args = request.get("id"), request.get("cmd"), request.get("args") or {}
    checks = ALLOWED.get(cmd) if isinstance(cmd, str) else None
    if type(request_id) is not int or checks is None or not isinstance(args, dict):
        return None
    if any(key not in checks for key in args):
        return None
    command: dict[str, Any] = {"cmd": cmd, "req": request_id}
    for key, check in checks.items():
        value = args.get(key)
        if value is not None and not check(value):
            return None
        command[key] = value
    return command
