"""The value format a :class:`~topology.stateful.StatefulBolt` declares, checked at submit.

A stateful bolt may say what its state's values are with ``state_values`` (a type, a
tuple of types, ``X | None``, or ``list[...]`` / ``dict[..., ...]`` of those)::

    class Count(StatefulBolt):
        state_values = int

Every live backend (``topology.state.backend``: ``memory``, ``lmdb``) and every checkpoint
provider stores a value as msgpack, which keeps ``None``, ``bool``, ``int``, ``float``,
``str``, ``bytes``, ``list`` and ``dict`` as they are and nothing else (a tuple comes back
as a list; a set, a datetime or an object of the author's class cannot be stored at all).
A declaration naming anything else is refused at submit (:func:`format_problems`), naming
the component, the format and the backend, instead of failing at the first put (``lmdb``)
or checkpoint (``memory``).  A savepoint restored into the component has every value
checked against it (:func:`value_problem`), as ``check_state`` would.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

from topology import config as cfg

#: What msgpack stores and gives back as the same type.
STORABLE: tuple[type, ...] = (type(None), bool, int, float, str, bytes, list, dict)
#: Types msgpack stores as another one (the one a restore gives back).
CHANGED: dict[type, str] = {tuple: "list", bytearray: "bytes", memoryview: "bytes"}
#: Nesting followed in a declaration (deeper is refused, not walked).
MAX_DEPTH = 16
_STORABLE_NAMES = "None, bool, int, float, str, bytes, list and dict"


def declared(instance: Any) -> Any:
    """The ``state_values`` a stateful bolt declares (None: none, or not a stateful bolt:
    only :class:`~topology.StatefulBolt` has the attribute)."""
    return getattr(instance, "state_values", None)


def format_problem(fmt: Any, depth: int = 0) -> str | None:
    """Why values of format ``fmt`` cannot be stored as they are, or None."""
    if depth > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    if fmt is None:
        return None
    if isinstance(fmt, tuple):
        if not fmt:
            return "an empty tuple of types"
        for part in fmt:
            problem = format_problem(part, depth + 1)
            if problem is not None:
                return problem
        return None
    origin = typing.get_origin(fmt)
    if origin in (typing.Union, types.UnionType):
        return format_problem(typing.get_args(fmt), depth + 1)
    if origin in (list, dict):
        args = typing.get_args(fmt)
        return format_problem(args, depth + 1) if args else None
    if origin is not None:
        return f"{format_name(fmt)}: only list[...] and dict[..., ...] are followed"
    if fmt is Any:
        return None
    if not isinstance(fmt, type):
        return f"{format_name(fmt)} is not a type"
    if fmt in STORABLE:
        return None
    if fmt in CHANGED:
        return f"{fmt.__name__} is stored as a {CHANGED[fmt]}: declare {CHANGED[fmt]}"
    return f"{fmt.__name__} is not stored by msgpack (it stores {_STORABLE_NAMES})"


def format_problems(components: Mapping[str, Any], conf: Mapping[str, Any]) -> list[str]:
    """A problem line per component (id -> instance) whose ``state_values`` the chosen
    backend cannot store."""
    backend = conf.get(cfg.STATE_BACKEND, "memory")
    provider = conf.get(cfg.STATE_PROVIDER, "sqlite")
    problems = []
    for component_id, instance in components.items():
        fmt = declared(instance)
        if fmt is None:
            continue
        problem = format_problem(fmt)
        if problem is not None:
            problems.append(
                f"bolt {component_id!r}: state_values {format_name(fmt)} cannot be kept by "
                f"{cfg.STATE_BACKEND} {backend!r} nor checkpointed by {cfg.STATE_PROVIDER} "
                f"{provider!r}, which store values as msgpack: {problem}"
            )
    return problems


def value_problem(value: Any, fmt: Any, depth: int = 0) -> str | None:
    """Why a restored ``value`` is not of format ``fmt`` (one :func:`format_problem`
    accepts), or None."""
    if fmt is None or fmt is Any:
        return None
    if depth > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    if isinstance(fmt, tuple):
        for part in fmt:
            if value_problem(value, part, depth + 1) is None:
                return None
        return f"a {type(value).__name__}, not {format_name(fmt)}"
    origin = typing.get_origin(fmt)
    if origin in (typing.Union, types.UnionType):
        return value_problem(value, typing.get_args(fmt), depth + 1)
    if origin in (list, dict):
        if not isinstance(value, origin):
            return f"a {type(value).__name__}, not {format_name(fmt)}"
        args = typing.get_args(fmt)
        if origin is list and args:
            for item in value:
                problem = value_problem(item, args[0], depth + 1)
                if problem is not None:
                    return f"an item is {problem}"
        if origin is dict and len(args) == 2:
            for key, item in value.items():
                problem = value_problem(key, args[0], depth + 1) or value_problem(
                    item, args[1], depth + 1
                )
                if problem is not None:
                    return f"an entry is {problem}"
        return None
    if fmt is type(None):
        return None if value is None else f"a {type(value).__name__}, not None"
    if isinstance(fmt, type) and isinstance(value, fmt):
        if fmt is int and type(value) is bool:
            return "a bool, not int"
        return None
    if fmt is float and type(value) is int:
        return None  # an int where a float is declared (as type checkers take it)
    return f"a {type(value).__name__}, not {format_name(fmt)}"


def format_name(fmt: Any) -> str:
    """``fmt`` as a message shows it."""
    if isinstance(fmt, tuple):
        return " | ".join(format_name(part) for part in fmt)
    if fmt is type(None) or fmt is None:
        return "None"
    if isinstance(fmt, type) and typing.get_origin(fmt) is None:
        return fmt.__name__
    return repr(fmt)[:120]
