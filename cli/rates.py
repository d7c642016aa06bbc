"""Live rates from worker samples (pure): what ``monitor`` shows.

Each worker reply carries the wall-clock ``time`` it was taken and the totals of the
worker's current incarnation.  A rate is the change between two samples of one
incarnation divided by the time *between the samples*, never by the time between two
refreshes of the view (workers publish less often than the view refreshes).  A sample seen
again (nothing new published) keeps the last rate.
"""

from __future__ import annotations

from typing import Any

from topology.ui.rates import RateTracker as CounterRates

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
    """Per-second spout rates of a topology from successive worker replies (the UI's
    :class:`topology.ui.rates.RateTracker` over :func:`spout_totals`)."""

    def __init__(self) -> None:
        self._tracker: CounterRates[str] = CounterRates(spout_totals)

    def update(self, replies: list[dict[str, Any]]) -> dict[str, float] | None:
        """Fold in one refresh's replies; the topology's rates, or None until some worker
        has sent two samples."""
        total = self._tracker.update(replies)
        if not self._tracker.ready:
            return None
        return {k: total.get(k, 0.0) for k in KEYS}

    @property
    def sample_interval(self) -> float | None:
        """The typical seconds between two samples of a worker (None before the first)."""
        return self._tracker.sample_interval
