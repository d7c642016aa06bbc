"""Updates without reads: the function ``state.merge(key, value)`` combines with (pure).

A :class:`~topology.StatefulBolt` declares it as ``state_merge`` (addition when it says
nothing); the runtime gives it to the task's state (:func:`merge_function`).  It must be
associative — ``f(f(a, b), c) == f(a, f(b, c))`` — because a disk backend combines the
merges of a key it does not hold in memory with each other first, and with the stored
value only when the key is read, written out or checkpointed.  It need not be
commutative: merges are combined in the order they were made.

Values come back from the state as msgpack gives them (a list as a tuple), so a function
that concatenates or unites collections should accept either: :func:`append` and
:func:`union` do.

Example:
    >>> append((1, 2), [3])
    [1, 2, 3]
    >>> union([3, 1], (2, 3))
    [1, 2, 3]
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Iterable
from typing import Any

#: ``f(stored, merged)``: the combined value.
Combine = Callable[[Any, Any], Any]
#: The combine function of a bolt that declares none.
DEFAULT: Combine = operator.add


def append(first: Iterable[Any], second: Iterable[Any]) -> list[Any]:
    """List append: ``first``'s items, then ``second``'s (lists or tuples).

    Args:
        first: the value so far.
        second: the items to add.

    Returns:
        A new list.

    Example:
        >>> append([1], (2, 3))
        [1, 2, 3]
    """
    return [*first, *second]


def union(first: Iterable[Any], second: Iterable[Any]) -> list[Any]:
    """Set union kept as a sorted list (a set is not a state value msgpack can store).

    Args:
        first: the items so far.
        second: the items to add.

    Returns:
        The distinct items of both, sorted (they must be comparable).

    Example:
        >>> union(["b"], ["a", "b"])
        ['a', 'b']
    """
    return sorted({*first, *second})


def merge_function(bolt: Any) -> Combine:
    """The combine function ``bolt`` declares as ``state_merge`` (:data:`DEFAULT` when
    none): a function of the class body is taken as it is, not as a method.

    Args:
        bolt: a stateful bolt instance.

    Returns:
        A function of two values.

    Raises:
        TypeError: ``state_merge`` is not callable (the message names the bolt's class).

    Example:
        >>> class Longest:
        ...     state_merge = max
        >>> merge_function(Longest())(3, 5), merge_function(object())(3, 5)
        (5, 8)
    """
    declared = inspect.getattr_static(bolt, "state_merge", None)
    if isinstance(declared, staticmethod):
        declared = declared.__func__
    if declared is None:
        return DEFAULT
    if not callable(declared):
        raise TypeError(
            f"{type(bolt).__name__}.state_merge must be a function of two values (the "
            f"stored one and the merged one), got {declared!r}"
        )
    return declared


_ABSENT = object()


def merge_eagerly(state: Any, key: Any, value: Any) -> None:
    """``state.merge(key, value)`` by a read and a write: ``state.put(key,
    state.combine(old, value))``, or ``value`` when ``key`` is absent (a state in memory,
    or one whose keys expire)."""
    old = state.get(key, _ABSENT)
    state.put(key, value if old is _ABSENT else state.combine(old, value))


def merge_problems(instances: dict[str, Any]) -> list[str]:
    """A problem line per component (id -> instance) whose ``state_merge`` is not a
    function (checked at submit: a state would meet it only at its first merge)."""
    problems = []
    for component_id, instance in instances.items():
        try:
            merge_function(instance)
        except TypeError as exc:
            problems.append(f"bolt {component_id!r}: {exc}")
    return problems
