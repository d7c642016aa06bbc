"""Shuffle grouping: spread tuples evenly over all target tasks.

Guarantee: each source task deals its tuples round-robin over a fixed permutation of
``target_tasks``, so at any moment the numbers of tuples it has sent to any two target
tasks differ by at most one.  The permutation is seeded by the source task id, so
different source tasks (generally) start at different places instead of all hitting
the same target first.  Which task receives a given tuple is unspecified.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any

from ._util import require_targets
from .base import GroupingContext


def _unprepared() -> list[int]:
    raise RuntimeError("choose_tasks() called before prepare()")


class ShuffleGrouping:
    """Round-robin over a per-source-task permutation of the target tasks."""

    kind = "shuffle"

    def __init__(self) -> None:
        self._next: Callable[[], list[int]] = _unprepared

    def candidates(self, context: GroupingContext) -> tuple[int, ...]:
        """The tasks to deal over (subclasses narrow this); non-empty, sorted."""
        return require_targets(context, self.kind)

    def prepare(self, context: GroupingContext) -> None:
        tasks = list(self.candidates(context))
        random.Random(context.source_task).shuffle(tasks)
        # Pre-built one-element lists: no allocation per tuple.
        self._next = itertools.cycle([[t] for t in tasks]).__next__

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        return self._next()
