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

    __slots__ = ("component", "task", "stream", "fields", "index")

    def __init__(self, component: str, task: int, stream: str, fields: tuple[str, ...]) -> None:
        self.component = component
        self.task = task
        self.stream = stream
        self.fields = fields
        self.index = {name: i for i, name in enumerate(fields)}

    def __repr__(self) -> str:
        return f"TupleSource({self.component!r}, task={self.task}, stream={self.stream!r})"


class Tuple(TupleBase):
    """One received tuple.

    ``tup.values`` is the list of values; ``tup[0]`` and ``tup["word"]`` read one value by
    position or field name.  ``source_component``, ``source_task`` and ``stream`` say where
    it came from.  ``id`` is the tuple's 64-bit edge id when it belongs to a tracked
    (acked) tuple tree, else ``None``.  ``anchors`` (the root id of its tree, or root id ->
    ack value when it belongs to several) and ``ack_val`` are the runtime's acking state;
    authors never need them.

    Treat a tuple and its values as read-only: the same values may be delivered to
    several tasks of the same worker.

    ``Tuple(values, source, id=None, anchors=None)``; its storage is
    :class:`acker.fastpath.TupleBase` (compiled when the install could build it).
    """

    __slots__ = ()

    source: TupleSource

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (self.values, self.source, self.id, self.anchors, self.ack_val)

    @property
    def source_component(self) -> str:
        return self.source.component

    @property
    def source_task(self) -> int:
        return self.source.task

    @property
    def stream(self) -> str:
        return self.source.stream

    @property
    def fields(self) -> tuple[str, ...]:
        return self.source.fields

    def is_tick(self) -> bool:
        """True for the tick tuples the runtime sends every ``topology.tick.tuple.freq.secs``."""
        return self.source.stream == TICK_STREAM and self.source.component == SYSTEM_COMPONENT

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            try:
                return self.values[self.source.index[key]]
            except KeyError:
                raise KeyError(
                    f"tuple from {self.source.component!r} on stream {self.source.stream!r} "
                    f"has no field {key!r} (fields: {list(self.source.fields)})"
                ) from None
        return self.values[key]

    def get(self, field: str, default: Any = None) -> Any:
        """The value of ``field``, or ``default`` when the stream has no such field."""
        i = self.source.index.get(field)
        return default if i is None else self.values[i]

    def as_dict(self) -> dict[str, Any]:
        """Field name -> value."""
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
