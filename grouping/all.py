"""All grouping: replicate every tuple to every target task.

Guarantee: each tuple is delivered to every task of the subscribing component
(``context.target_tasks``, ascending), once each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._util import require_targets
from .base import GroupingContext


class AllGrouping:
    """Returns all target tasks (one list built in ``prepare``, shared by every call)."""

    def __init__(self) -> None:
        self._all: list[int] = []

    def prepare(self, context: GroupingContext) -> None:
        self._all = list(require_targets(context, "all"))

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        return self._all
