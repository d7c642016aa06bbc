"""Live rates from worker samples (pure): what ``monitor`` shows.

Each worker reply carries the wall-clock ``time`` it was taken and the totals of the
worker's current incarnation.  A rate is the change between two samples of one
incarnation divided by the time *between the samples*, never by the time between two
refreshes of the view (workers publish less often than the view refreshes).  A sample seen
again (nothing new published) keeps the last rate.
"""

from __future__ import annotations

import statistics
from collections import deque
from typing import Any

#: The spout totals rates are shown for.
KEYS = ("emitted", "acked", "failed")


def spout_totals(reply: dict[str, Any]) -> dict[str, float]:
    """emitted / acked / failed over the spout tasks of one worker reply (this incarnation)."""
    out = dict.fromkeys(KEYS, 0.0)
    for task in reply.get("tasks", {}).values():
        if task.get("kind") == "spout":
            out["emitted"] += sum(task.get("emitted", {}).values())
            out["acked"] += task.get("acked", 0)
            out["failed"] += task.get("failed", 0)
    return out


class RateTracker:
    """Per-second spout rates of a topology from successive worker replies."""

    def __init__(self) -> None:
        #: (worker, pid) -> (sample time, totals) of the newest sample seen.
        self._last: dict[tuple[Any, Any], tuple[float, dict[str, float]]] = {}
        self._rates: dict[tuple[Any, Any], dict[str, float]] = {}
        self._intervals: deque[float] = deque(maxlen=20)

    def update(self, replies: list[dict[str, Any]]) -> dict[str, float] | None:
        """Fold in one refresh's replies; the topology's rates, or None until some worker
        has sent two samples."""
        seen = set()
        for reply in replies:
            key = (reply.get("worker"), reply.get("pid"))
            taken = reply.get("time")
            if taken is None:
                continue
            seen.add(key)
            totals = spout_totals(reply)
            previous = self._last.get(key)
            if previous is not None and taken <= previous[0]:
                continue  # the same sample again: keep the rate it gave
            if previous is not None:
                elapsed = taken - previous[0]
                self._rates[key] = {
                    k: max(0.0, (totals[k] - previous[1][k]) / elapsed) for k in KEYS
                }
                self._intervals.append(elapsed)
            self._last[key] = (taken, totals)
        for key in list(self._last):  # a relaunched worker is a new incarnation
            if key not in seen:
                self._last.pop(key)
                self._rates.pop(key, None)
        if not self._rates:
            return None
        return {k: sum(rates[k] for rates in self._rates.values()) for k in KEYS}

    @property
    def sample_interval(self) -> float | None:
        """The typical seconds between two samples of a worker (None before the first)."""
        return statistics.median(self._intervals) if self._intervals else None
