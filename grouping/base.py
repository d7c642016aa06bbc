"""The one protocol every grouping implements, and the context it is prepared with.

A grouping decides, for one tuple emitted by one source task on one stream, which
tasks of one subscribing component receive it.  Every *source task* gets its own
grouping instance (so per-source state such as a round-robin position or load
counters needs no locking), prepared once with a :class:`GroupingContext` and then
asked :meth:`Grouping.choose_tasks` once per emitted tuple.

Contract for implementations:

* ``prepare`` is called exactly once, before any ``choose_tasks``.
* ``choose_tasks`` runs on the executor thread on the per-tuple hot path: keep it
  cheap, never block, never mutate ``values``.
* The returned list must contain only ids from ``context.target_tasks``.  It may be a
  list shared between calls (a pre-built ``[task]``): callers must treat it as
  read-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class GroupingContext:
    """What a grouping knows about the edge it routes.

    Attributes:
        source_component: id of the emitting component.
        source_task: task id of the emitting task (each source task has its own grouping).
        stream: the stream the tuples are emitted on.
        source_fields: the stream's declared output fields, in order.
        target_component: id of the subscribing component.
        target_tasks: the subscribing component's task ids, sorted ascending.
        local_tasks: those of ``target_tasks`` hosted by the same worker as
            ``source_task`` (empty when none are).
        grouping_fields: for fields / partial-key groupings, the key fields; else ``()``.
        key_groups: how many key groups a fields grouping deals to the target tasks
            (``topology.state.max.parallelism`` when the target keeps keyed state; 0, the
            default: plain ``hash % tasks``; see :mod:`grouping.fields`).

    Args:
        source_component: as in Attributes (the runtime makes contexts; tests may build
            one).
        source_task: as in Attributes.
        stream: as in Attributes.
        source_fields: as in Attributes.
        target_component: as in Attributes.
        target_tasks: as in Attributes.
        local_tasks: as in Attributes.
        grouping_fields: as in Attributes.
        key_groups: as in Attributes.

    Example:
        >>> context = GroupingContext(
        ...     "split", 1, "default", ("word", "count"), "sum", (4, 5), grouping_fields=("word",)
        ... )
        >>> context.target_tasks, context.field_indexes()
        ((4, 5), (0,))
    """

    source_component: str
    source_task: int
    stream: str
    source_fields: tuple[str, ...]
    target_component: str
    target_tasks: tuple[int, ...]
    local_tasks: frozenset[int] = frozenset()
    grouping_fields: tuple[str, ...] = ()
    key_groups: int = 0

    def field_indexes(self) -> tuple[int, ...]:
        """Where the key fields are in a tuple.

        Returns:
            The positions of ``grouping_fields`` inside ``source_fields``.

        Raises:
            ValueError: a grouping field is not one of the source fields.
        """
        return tuple(self.source_fields.index(f) for f in self.grouping_fields)


@runtime_checkable
class Grouping(Protocol):
    """Chooses target tasks for tuples of one (source task, stream, target component)."""

    def prepare(self, context: GroupingContext) -> None:
        """Called once before the first :meth:`choose_tasks`."""

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        """Return the target task ids for one tuple's values (read-only list)."""
        ...
