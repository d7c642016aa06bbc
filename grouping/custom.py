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
    them copyable (no open sockets, locks or threads before ``prepare``).
    """

    context: GroupingContext
    target_tasks: tuple[int, ...]

    def prepare(self, context: GroupingContext) -> None:
        self.context = context
        self.target_tasks = context.target_tasks

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        raise NotImplementedError(f"{type(self).__name__} must override choose_tasks()")
