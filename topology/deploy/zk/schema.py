"""Building blocks of the record checks (pure): type, range and size checkers and a guard
against deep nesting, from which :mod:`.records` composes one checker per record.

A building block takes a value and the field it came from, returns the value when it is of
the expected type and within bounds, and otherwise raises :class:`_Bad` with a one-line
reason naming the field.  :func:`_checker` turns a body made of them into a :data:`Check`:
a function that returns ``None`` or that reason and never raises, whatever it is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..limits import nesting_problem

#: Largest task id, attempt number and generation accepted.
MAX_ID = 2**31 - 1
#: Longest topology, component or stream name.
MAX_NAME_CHARS = 1000
#: Deepest nesting of lists and objects in any record.
MAX_DEPTH = 32
#: Longest free text (an error, a host name, an endpoint).
MAX_TEXT_CHARS = 100_000
#: Longest reason given for a refusal.
MAX_REASON_CHARS = 300

Check = Callable[[Any], "str | None"]


class _Bad(Exception):
    """A reason a record is refused (internal: check_* functions return it as text)."""


def _checker(body: Callable[[Any], None]) -> Check:
    """``body`` (which raises :class:`_Bad`) as a :data:`Check` of the same name and
    docstring: nesting is bounded first, and the reason is one line of at most
    :data:`MAX_REASON_CHARS` characters."""

    def check(value: Any) -> str | None:
        try:
            _depth(value)
            body(value)
        except _Bad as bad:
            reason = " ".join(str(bad).split())  # one line, whatever a key held
            return reason if len(reason) <= MAX_REASON_CHARS else reason[:MAX_REASON_CHARS] + "..."
        return None

    check.__name__ = body.__name__.lstrip("_")
    check.__doc__ = body.__doc__
    return check


# -- building blocks -----------------------------------------------------------------------


def _depth(value: Any) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` (iteratively: no recursion)."""
    problem = nesting_problem(value, MAX_DEPTH)
    if problem is not None:
        raise _Bad(problem)


def _what(value: Any) -> str:
    return type(value).__name__


def _label(key: Any) -> str:
    """A key as shown in a reason (clipped: a reason stays one short line)."""
    return ascii(str(key)[:80])[1:-1]


def _obj(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"{field}: expected an object, got {_what(value)}")
    return value


def _list(value: Any, field: str, most: int) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(f"{field}: expected a list, got {_what(value)}")
    if len(value) > most:
        raise _Bad(f"{field}: {len(value)} entries, more than {most}")
    return value


def _int(value: Any, field: str, low: int = 0, high: int = MAX_ID) -> int:
    if type(value) is not int:
        raise _Bad(f"{field}: expected an integer, got {_what(value)}")
    if not low <= value <= high:
        raise _Bad(f"{field}: {value} is outside {low}..{high}")
    return value


def _num(value: Any, field: str, low: float = 0.0, high: float = 1e12) -> float:
    if type(value) not in (int, float):
        raise _Bad(f"{field}: expected a number, got {_what(value)}")
    if not (math.isfinite(value) and low <= value <= high):
        raise _Bad(f"{field}: {value!r} is outside {low:g}..{high:g}")
    return float(value)


def _str(value: Any, field: str, most: int = MAX_TEXT_CHARS, least: int = 0) -> str:
    if not isinstance(value, str):
        raise _Bad(f"{field}: expected a string, got {_what(value)}")
    if not least <= len(value) <= most:
        raise _Bad(f"{field}: {len(value)} characters, not within {least}..{most}")
    return value


def _name(value: Any, field: str) -> str:
    return _str(value, field, MAX_NAME_CHARS, least=1)


def _digits(key: Any, field: str, high: int) -> int:
    if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 10):
        raise _Bad(f"{field}: key {_label(key)!r} is not a number")
    return _int(int(key), field, 0, high)


def _fields(
    record: Mapping[str, Any],
    where: str,
    required: Mapping[str, Callable[[Any, str], Any]],
    optional: Mapping[str, Callable[[Any, str], Any]],
    extra: bool = False,
) -> None:
    """Check ``required`` and (when present and not null) ``optional`` fields; refuse
    unknown fields unless ``extra``."""
    for key, check in required.items():
        if key not in record:
            raise _Bad(f"{where}missing field {key!r}")
        check(record[key], f"{where}{key}")
    for key, check in optional.items():
        if record.get(key) is not None:
            check(record[key], f"{where}{key}")
    if not extra:
        unknown = sorted(str(k) for k in record if k not in required and k not in optional)
        if unknown:
            raise _Bad(f"{where}unknown field {unknown[0][:80]!r}")
