"""Custom groupings: subclass :class:`CustomGrouping` and override ``choose_tasks``.

Guarantee: whatever the subclass implements, with these rules (see
:mod:`grouping.base`): ``prepare`` runs once before any ``choose_tasks``; every source
task gets its own deep copy of the instance given to the topology builder (so
per-instance state needs no locking, but is not shared between source tasks); the
returned ids must come from ``self.target_tasks``; the returned list is read-only to
the caller, so a pre-built list may be returned.

Example, routing words by length::

    >>> from grouping import CustomGrouping, GroupingContext
    >>> class ByLength(CustomGrouping):
    ...     def choose_tasks(self, values):
    ...         return [self.target_tasks[len(values[0]) % len(self.target_tasks)]]
    >>> g = ByLength()
    >>> g.prepare(GroupingContext("split", 1, "default", ("word",), "count", (4, 5, 6)))
    >>> g.choose_tasks(["storm"]), g.choose_tasks(["spark"]), g.choose_tasks(["a"])
    ([6], [6], [5])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import GroupingContext


class CustomGrouping:
    """Base class for user groupings.

    ``prepare`` stores ``self.context`` and ``self.target_tasks``; subclasses that
    override it should call ``super().prepare(context)``.  Subclasses must override
    :meth:`choose_tasks`.  Instances are deep-copied once per source task, so keep
    them copyable (no open sockets, locks or threads before ``prepare``).  Subscribe a
    bolt with it through ``BoltDeclarer.custom_grouping``.

    Example: every tuple to the two lowest tasks:

        >>> class FirstTwo(CustomGrouping):
        ...     def choose_tasks(self, values):
        ...         return list(self.target_tasks[:2])
        >>> first_two = FirstTwo()
        >>> first_two.prepare(GroupingContext("split", 1, "default", ("word",), "count", (4, 5, 6)))
        >>> first_two.choose_tasks(["storm"])
        [4, 5]
        >>> from topology import TopologyBuilder
        >>> from topology.testing import CaptureBolt, FeederSpout
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("split", FeederSpout(["word"]))
        >>> _ = builder.set_bolt("count", CaptureBolt(), 3).custom_grouping("split", FirstTwo())
    """

    context: GroupingContext
    target_tasks: tuple[int, ...]

    def prepare(self, context: GroupingContext) -> None:
        """Called once, before the first :meth:`choose_tasks`; keeps the context.

        Args:
            context: the edge this instance routes (source task, stream, target tasks).
        """
        self.context = context
        self.target_tasks = context.target_tasks

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        """Choose the tasks that receive one tuple; called for every tuple emitted.

        Args:
            values: the tuple's values (read-only).

        Returns:
            Task ids taken from ``self.target_tasks`` (the caller does not modify the
            list, so a pre-built one may be returned).

        Raises:
            NotImplementedError: the subclass does not override it.
        """
        raise NotImplementedError(f"{type(self).__name__} must override choose_tasks()")
