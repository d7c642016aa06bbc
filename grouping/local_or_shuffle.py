"""Local-or-shuffle grouping: prefer target tasks in the emitting task's own worker.

Guarantee: when any target task runs in the same worker as the source task
(``context.local_tasks`` non-empty), every tuple goes to one of those local tasks,
dealt round-robin so they share the load evenly (counts differ by at most one).
Otherwise it behaves exactly like a shuffle grouping over all target tasks.
"""

from __future__ import annotations

from .base import GroupingContext
from .shuffle import ShuffleGrouping


class LocalOrShuffleGrouping(ShuffleGrouping):
    """Shuffle over the local target tasks if there are any, else over all of them."""

    kind = "local_or_shuffle"

    def candidates(self, context: GroupingContext) -> tuple[int, ...]:
        targets = super().candidates(context)
        local = tuple(t for t in targets if t in context.local_tasks)
        return local or targets
