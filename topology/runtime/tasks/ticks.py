"""Tick tuples: when each bolt task's next one is due, on topology time (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class Tick:
    """When the next tick tuple is due for one bolt task, and how often it comes."""

    due: float
    task: int
    every: float


class Ticks:
    """The tick timers of a worker's bolt tasks (``freqs``: task -> seconds between two
    ticks), the first of each due one period after ``now``."""

    def __init__(self, freqs: dict[int, float], now: float) -> None:
        self._ticks = [Tick(now + every, task, every) for task, every in freqs.items()]

    def __bool__(self) -> bool:
        return bool(self._ticks)

    @property
    def next_due(self) -> float:
        """When the first tick is due (``inf``: no task has ticks)."""
        return min((t.due for t in self._ticks), default=math.inf)

    def due(self, now: float) -> list[Tick]:
        """The ticks due at ``now``, each then due one period after ``now``."""
        out = [t for t in self._ticks if now >= t.due]
        for tick in out:
            tick.due = now + tick.every
        return out
