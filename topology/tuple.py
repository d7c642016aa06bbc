"""The tuple a bolt receives: values plus where they came from.

Tuples are created on the executor's hot path, so a :class:`Tuple` holds only four
references; everything about its origin (component, task, stream, field names) lives in
one :class:`TupleSource` shared by all tuples of that source task and stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from acker.fastpath import TupleBase

from .constants import SYSTEM_COMPONENT, TICK_STREAM


class TupleSource:
    """Origin shared by every tuple one task emits on one stream (immutable by convention)."""

    __slots__ = ("component", "task", "stream", "fields", "index", "tick")

    def __init__(self, component: str, task: int, stream: str, fields: tuple[str, ...]) -> None:
        self.component = component
        self.task = task
        self.stream = stream
        self.fields = fields
        #: Field name -> position (what ``tup["word"]`` reads).
        self.index = {name: i for i, name in enumerate(fields)}
        #: Tuples from here are the runtime's tick tuples (what ``tup.is_tick()`` returns).
        self.tick = stream == TICK_STREAM and component == SYSTEM_COMPONENT

    def no_field(self, key: str) -> None:
        """Raise the KeyError of ``tup[key]`` for a field this stream does not declare."""
        raise KeyError(
            f"tuple from {self.component!r} on stream {self.stream!r} has no field {key!r} "
            f"(fields: {list(self.fields)})"
        ) from None  # (the lookup's own KeyError, where there is one, says less)

    def __repr__(self) -> str:
        return f"TupleSource({self.component!r}, task={self.task}, stream={self.stream!r})"


class Tuple(TupleBase):
    """One received tuple.

    ``tup.values`` is the list of values; ``tup[0]`` and ``tup["word"]`` read one value by
    position or field name (a name the stream does not declare raises a KeyError naming
    its fields); ``tup.is_tick()`` is True for the tick tuples the runtime sends every
    ``topology.tick.tuple.freq.secs`` (both are the storage's: compiled with it).
    ``source_component``, ``source_task`` and ``stream`` say where it came from.  ``id``
    is the tuple's 64-bit edge id when it belongs to a tracked (acked) tuple tree, else
    ``None``.  ``anchors`` (the root id of its tree, or root id ->
    ack value when it belongs to several) and ``ack_val`` are the runtime's acking state;
    authors never need them.

    Treat a tuple and its values as read-only: the same values may be delivered to
    several tasks of the same worker.

    ``Tuple(values, source, id=None, anchors=None)``; its storage is
    :class:`acker.fastpath.TupleBase` (compiled when the install could build it).  The
    runtime makes the tuples a bolt receives; tests may build one by hand.

    Args:
        values: the values, one per field of the source's stream.
        source: where it came from: a :class:`TupleSource` (component, task, stream,
            field names).
        id: its edge id in a tracked tuple tree, or None.
        anchors: the runtime's acking state (None for an untracked tuple).

    Example:
        >>> tup = Tuple(["be", 2], TupleSource("count", 3, "default", ("word", "count")))
        >>> tup["word"], tup[1], tup.values
        ('be', 2, ['be', 2])
        >>> tup.source_component, tup.source_task, tup.stream, tup.is_tick()
        ('count', 3, 'default', False)
        >>> tup.get("missing", 0), tup.as_dict()
        (0, {'word': 'be', 'count': 2})
        >>> tup["wrod"]
        Traceback (most recent call last):
        ...
        KeyError: "tuple from 'count' on stream 'default' has no field 'wrod' (fields: ...)"
    """

    __slots__ = ()

    source: TupleSource

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (self.values, self.source, self.id, self.anchors, self.ack_val)

    @property
    def source_component(self) -> str:
        """The id of the component that emitted it."""
        return self.source.component

    @property
    def source_task(self) -> int:
        """The id of the task that emitted it."""
        return self.source.task

    @property
    def stream(self) -> str:
        """The stream it was emitted on."""
        return self.source.stream

    @property
    def fields(self) -> tuple[str, ...]:
        """The field names of its stream, in order."""
        return self.source.fields

    def get(self, field: str, default: Any = None) -> Any:
        """Read one value by field name, with a default.

        Args:
            field: the field's name.
            default: what to return when the stream has no such field.

        Returns:
            The value of ``field``, or ``default``.
        """
        i = self.source.index.get(field)
        return default if i is None else self.values[i]

    def as_dict(self) -> dict[str, Any]:
        """The tuple as a dict.

        Returns:
            Field name -> value, in field order.
        """
        return dict(zip(self.source.fields, self.values))

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values)

    def __repr__(self) -> str:
        s = self.source
        return f"Tuple({self.values!r}, source={s.component}:{s.task}, stream={s.stream!r})"


def _rebuilt(
    values: list[Any], source: TupleSource, id: int | None, anchors: Any, ack_val: int
) -> Tuple:
    """A pickled :class:`Tuple` again (both storages pickle alike)."""
    tup = Tuple(values, source, id, anchors)
    tup.ack_val = ack_val
    return tup
