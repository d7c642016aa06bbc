"""Live per-second rates from successive worker status replies (pure).

Each reply carries the wall-clock ``time`` it was taken and the live counters of its
worker's current incarnation (per task: ``emitted`` per stream, ``executed``, ``acked``,
``failed``).  A rate is the change between two samples of one incarnation (same worker,
same pid) divided by the time between the samples — so it reads true however often the
poller looks and however often workers publish; a sample seen again keeps the rate it gave,
and a relaunched worker starts over.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, cast

#: A counter: (what, component, stream or "").
Key = tuple[str, str, str]
#: What a tracker's counters are keyed by.
K = TypeVar("K", bound=Hashable)


def counters(reply: dict[str, Any]) -> dict[Key, float]:
    """The live counters of one worker reply, summed per component (and stream)."""
    out: dict[Key, float] = {}
    for task in (reply.get("tasks") or {}).values():
        component = str(task.get("component"))
        for stream, n in (task.get("emitted") or {}).items():
            key = ("emitted", component, str(stream))
            out[key] = out.get(key, 0.0) + float(n or 0)
        for what in ("executed", "acked", "failed"):
            key = (what, component, "")
            out[key] = out.get(key, 0.0) + float(task.get(what) or 0)
    return out


class RateTracker(Generic[K]):
    """Per-second rates of one topology's counters from its successive replies: by
    default every counter of :func:`counters`; ``sample`` picks others (``sparkstorm
    monitor`` tracks the spouts' totals with it)."""

    def __init__(self, sample: Callable[[dict[str, Any]], dict[K, float]] | None = None) -> None:
        self._sample = sample or cast(Callable[[dict[str, Any]], dict[K, float]], counters)
        #: (worker, pid) -> (sample time, counters) of the newest sample seen.
        self._last: dict[tuple[Any, Any], tuple[float, dict[K, float]]] = {}
        self._rates: dict[tuple[Any, Any], dict[K, float]] = {}
        self._intervals: deque[float] = deque(maxlen=20)

    @property
    def ready(self) -> bool:
        """Whether some worker has given two samples (so there are rates)."""
        return bool(self._rates)

    @property
    def sample_interval(self) -> float | None:
        """The typical seconds between two samples of a worker (None before the first)."""
        return statistics.median(self._intervals) if self._intervals else None

    def update(self, replies: list[dict[str, Any]]) -> dict[K, float]:
        """Fold in one poll's replies; every counter's rate now (empty until a worker has
        given two samples)."""
        seen = set()
        for reply in replies:
            key = (reply.get("worker"), reply.get("pid"))
            taken = reply.get("time")
            if not isinstance(taken, int | float):
                continue
            seen.add(key)
            now = self._sample(reply)
            previous = self._last.get(key)
            if previous is not None and taken <= previous[0]:
                continue  # the same sample again: keep the rate it gave
            if previous is not None:
                elapsed = taken - previous[0]
                self._rates[key] = {
                    k: max(0.0, (v - previous[1].get(k, 0.0)) / elapsed) for k, v in now.items()
                }
                self._intervals.append(elapsed)
            self._last[key] = (float(taken), now)
        for key in list(self._last):  # gone, or a new incarnation under a new pid
            if key not in seen:
                self._last.pop(key)
                self._rates.pop(key, None)
        total: dict[K, float] = {}
        for rates in self._rates.values():
            for k, v in rates.items():
                total[k] = total.get(k, 0.0) + v
        return total


def topology_rates(rates: dict[Key, float], spouts: set[str]) -> dict[str, float]:
    """What the spouts of a topology emit, ack and fail per second (all streams)."""
    out = {"emitted_per_sec": 0.0, "acked_per_sec": 0.0, "failed_per_sec": 0.0}
    for (what, component, _), value in rates.items():
        if component in spouts and f"{what}_per_sec" in out:
            out[f"{what}_per_sec"] += value
    return {k: round(v, 1) for k, v in out.items()}


def component_rates(rates: dict[Key, float], component: str) -> dict[str, float]:
    """One component's emitted (all streams), executed, acked and failed per second."""
    out = dict.fromkeys(("emitted", "executed", "acked", "failed"), 0.0)
    for (what, name, _), value in rates.items():
        if name == component:
            out[what] += value
    return {f"{k}_per_sec": round(v, 1) for k, v in out.items()}


def stream_rate(rates: dict[Key, float], component: str, stream: str) -> float:
    """Tuples ``component`` emits on ``stream`` per second."""
    return round(rates.get(("emitted", component, stream), 0.0), 1)
