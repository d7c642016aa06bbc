"""The stream graph: one :class:`Node` per operator, as the Streams API records it.

Nodes only describe; :mod:`topology.streams.plan` turns the graph into components (fusing
runs of stateless nodes) and :mod:`topology.streams.components` runs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: Operators that hold no state and see one element at a time: they fuse with the node
#: before them when it has the same parallelism.
STATELESS = frozenset(
    {
        "map",
        "filter",
        "flat_map",
        "peek",
        "for_each",
        "key_by",
        "map_to_pair",
        "flat_map_to_pair",
        "map_values",
        "flat_map_values",
        "branch",  # computes which of its routes an element takes
        "route",  # one stream of a branch: always in its branch's component
    }
)
#: Operators whose input is grouped by key (a fields grouping on ``key``).
KEYED = frozenset({"aggregate", "state", "group", "join", "keyed_join", "interval_join"})

#: What a component sees for an element, per kind of producer: a Streams node's output
#: (``value``, or ``key`` and ``value`` for a pair stream) or a hand-written component's
#: fields (one field: its value; more: a dict of them).
VALUE_FIELDS = ["value"]
PAIR_FIELDS = ["key", "value"]


@dataclass(eq=False)
class Node:
    """One operator.

    Attributes:
        id: unique in its builder, in creation order.
        kind: ``spout``, ``bolt`` (hand-written), a :data:`STATELESS` kind, ``identity``
            (union, repartition), ``aggregate`` (running, per key), ``state``, ``group``
            (a repartition by key), ``window`` (an aggregation over windows, per key for a
            pair stream), ``join`` (two streams over windows), ``keyed_join`` and
            ``interval_join`` (two streams on keyed state, :mod:`.joins`), ``late`` (a
            window's late elements), ``async`` (``map_async``: a coroutine per element).
        name: what it is called in status, visualize and metrics (unique once planned).
        parents: the nodes it reads (none for a spout; two for a join; any for a union).
        parallelism: tasks of the component it runs in when it heads one.
        pair: whether its elements are ``(key, value)`` pairs.
        options: the operator's settings (its function, window, aggregator...).
        children: the nodes reading it (filled in as the graph grows).
    """

    id: int
    kind: str
    name: str
    parents: list[Node]
    parallelism: int
    pair: bool
    options: dict[str, Any] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    #: A hand-written component's output fields (spout and bolt nodes).
    fields: list[str] | None = None

    @property
    def stateless(self) -> bool:
        return self.kind in STATELESS

    @property
    def output_fields(self) -> list[str]:
        """Fields of the tuples this node's component emits for it."""
        if self.fields is not None:
            return self.fields
        return PAIR_FIELDS if self.pair else VALUE_FIELDS


_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def default_name(kind: str, fn: Any = None) -> str:
    """A node's name: the function's ``__name__`` where it has a real one (not a lambda, a
    ``functools.partial`` or a callable object), else the operator's kind."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>":
        return kind
    return sanitized(name) or kind


def sanitized(name: str) -> str:
    """``name`` within the component name rule (runs of other characters become ``_``)."""
    return _NOT_NAME.sub("_", name).strip("_.-")[:60]
