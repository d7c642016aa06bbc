"""Checking what a request gives (pure): every bad input becomes :class:`BadRequest`,
naming the parameter, before anything reaches the cluster.

Query strings are strict: a parameter the path does not take, or one given twice, is an
error too (a typo such as ``windw=3h`` must not silently show the default window).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from topology.config import MAX_WORKERS
from topology.names import name_problem, quoted
from topology.runtime.worker_log import LEVELS, MAX_CHUNK_BYTES
from topology.stats.rolling import parse_window

#: Most components one rebalance may rescale, and most tasks it may give one (the
#: cluster checks its own limits, the names and the state again).
MAX_RESCALED_COMPONENTS = 1_000
MAX_COMPONENT_TASKS = 100_000
#: Longest query string value looked at (longer ones are refused as they are).
MAX_VALUE_CHARS = 256
_DIGITS = re.compile(r"[0-9]{1,12}")
_NUMBER = re.compile(r"[0-9]{1,12}(\.[0-9]{1,9})?")


class BadRequest(Exception):
    """A request the API refuses: HTTP ``status``, a one-line ``message`` and the
    ``parameter`` at fault (None when it is not one parameter's)."""

    def __init__(self, message: str, parameter: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.parameter = parameter
        self.status = status

    def body(self) -> dict[str, Any]:
        """The JSON error body: ``{"error": code, "message": ..., "parameter": ...}``."""
        return {"error": _CODES.get(self.status, "error"), **self.details()}

    def details(self) -> dict[str, Any]:
        return {"message": self.message, "parameter": self.parameter}


_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    503: "unavailable",
}


def query_params(items: Iterable[tuple[str, str]], allowed: Iterable[str]) -> dict[str, str]:
    """The query string as a dict, refusing a parameter not in ``allowed``, one given
    twice, and a value longer than :data:`MAX_VALUE_CHARS`."""
    accepted = sorted(allowed)
    out: dict[str, str] = {}
    for key, value in items:
        if key not in accepted:
            takes = ", ".join(accepted) or "none"
            raise BadRequest(f"unknown parameter {quoted(key)} (this path takes: {takes})", key)
        if key in out:
            raise BadRequest(f"parameter {key!r} given twice", key)
        if len(value) > MAX_VALUE_CHARS:
            raise BadRequest(f"{key}: longer than {MAX_VALUE_CHARS} characters", key)
        out[key] = value
    return out


def name(value: str, kind: str = "topology", parameter: str = "name") -> str:
    """``value`` if it follows the name rule of :mod:`topology.names`."""
    problem = name_problem(kind, value)
    if problem is not None:
        raise BadRequest(problem, parameter)
    return value


def window(params: Mapping[str, str]) -> str:
    """The ``window`` parameter as a Storm window id (default ``10m``)."""
    try:
        return parse_window(params.get("window", "10m"))
    except ValueError as exc:
        raise BadRequest(f"window: {exc}", "window") from None


def integer(
    params: Mapping[str, Any], key: str, low: int, high: int, default: int | None = None
) -> int | None:
    """``params[key]`` as an integer in ``low..high`` (a JSON number or decimal digits),
    ``default`` when absent."""
    raw = params.get(key)
    if raw is None:
        return default
    if isinstance(raw, bool) or not (
        isinstance(raw, int) or (isinstance(raw, str) and _DIGITS.fullmatch(raw))
    ):
        raise BadRequest(
            f"{key}: expected an integer from {low} to {high:,}, got {quoted(raw)}", key
        )
    value = int(raw)
    if not low <= value <= high:
        raise BadRequest(f"{key}: expected an integer from {low} to {high:,}, got {value}", key)
    return value


def seconds(params: Mapping[str, Any], key: str, positive: bool = False) -> float | None:
    """``params[key]`` as seconds (>= 0, or > 0 when ``positive``; at most a day), or None
    when absent."""
    raw = params.get(key)
    if raw is None:
        return None
    what = "a number of seconds " + ("> 0" if positive else ">= 0") + " (at most 86400)"
    if isinstance(raw, bool) or not (
        (isinstance(raw, int | float) and math.isfinite(raw))
        or (isinstance(raw, str) and _NUMBER.fullmatch(raw))
    ):
        raise BadRequest(f"{key}: expected {what}, got {quoted(raw)}", key)
    value = float(raw)
    if value > 86400 or value < 0 or (positive and value == 0):
        raise BadRequest(f"{key}: expected {what}, got {value:g}", key)
    return value


def log_bytes(params: Mapping[str, str], default: int) -> int:
    """The ``bytes`` parameter of a log read: 1 .. the largest chunk a worker sends."""
    value = integer(params, "bytes", 1, MAX_CHUNK_BYTES, default)
    assert value is not None
    return value


def workers(params: Mapping[str, Any], required: bool = True) -> int | None:
    """The ``workers`` of a rebalance (required unless ``components`` are given: None
    keeps the topology's count)."""
    if params.get("workers") is None:
        if not required:
            return None
        raise BadRequest(
            "workers: required (the new number of workers) unless components are given",
            "workers",
        )
    return integer(params, "workers", 1, MAX_WORKERS)


def components(params: Mapping[str, Any]) -> dict[str, int] | None:
    """The ``components`` of a rebalance (``sparkstorm rebalance -e``): component -> new
    task count, as a JSON object (``{"count": 4}``) or text (``count=4,log=2``); None when
    absent or empty.  The form and ranges are checked here, the names and the state by
    the cluster."""
    raw = params.get("components")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, str):
        pairs = [item.partition("=") for item in raw.split(",") if item.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise BadRequest(
                f"components: expected component=count,... got {quoted(raw)}", "components"
            )
        raw = {name.strip(): count.strip() for name, _, count in pairs}
    if not isinstance(raw, dict) or not raw or len(raw) > MAX_RESCALED_COMPONENTS:
        raise BadRequest(
            'components: expected {"component": count, ...} (at most '
            f"{MAX_RESCALED_COMPONENTS:,}) or component=count,...",
            "components",
        )
    out: dict[str, int] = {}
    for name, count in raw.items():
        problem = name_problem("component", name)
        if problem is not None:
            raise BadRequest(f"components: {problem}", "components")
        try:
            value = integer({name: count}, name, 1, MAX_COMPONENT_TASKS)
        except BadRequest as bad:
            raise BadRequest(f"components.{bad.message}", "components") from None
        assert value is not None
        out[name] = value
    return out


def level(params: Mapping[str, Any]) -> str:
    """The ``level`` of a log level change (required): one of ``LEVELS``."""
    raw = params.get("level")
    if not isinstance(raw, str) or raw.upper() not in LEVELS:
        got = "nothing" if raw is None else quoted(raw)
        raise BadRequest(f"level: expected one of {', '.join(LEVELS)}, got {got}", "level")
    return raw.upper()
