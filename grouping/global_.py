"""Global grouping: the whole stream goes to one task.

Guarantee: every tuple, from every source task, goes to the target task with the
lowest id, so a single task sees the entire stream (as in Storm).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._util import require_targets
from .base import GroupingContext


class GlobalGrouping:
    """Always ``[min(target_tasks)]``."""

    def __init__(self) -> None:
        self._one: list[int] = []

    def prepare(self, context: GroupingContext) -> None:
        # target_tasks is sorted by contract; min() keeps this right even if it is not.
        self._one = [min(require_targets(context, "global"))]

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        return self._one
