"""Storm-UI-like rolling statistics per task (pure: no I/O, no threads, no clock of its own).

The hot path only bumps cumulative counters on each task.  Every
``topology.stats.interval.secs`` the worker hands a task's cumulative snapshot to its
:class:`StatsRecorder`, which turns it into deltas and files them into time buckets; the
rolling logic therefore never runs per tuple.  Every method takes the clock as ``now``
(seconds, assumed non-decreasing).

Windows are Storm's ids: ``"600"`` (10 min, 30 s buckets), ``"10800"`` (3 h, 10 min
buckets), ``"86400"`` (1 day, 1 h buckets) and ``":all-time"`` (a plain running total).
A window covers ``(now - length, now]``.  Buckets are right-closed intervals
``(origin + (k-1)*width, origin + k*width]`` aligned to the creation time ``origin``; an
entry counts while its bucket overlaps the window.  Hence an entry added at ``t`` counts
for every ``now`` in ``[t, t + length)`` and never once ``now >= t + length + width``:
at most one bucket width too long, and exact for entries on a bucket boundary (such as
ones recorded at whole multiples of the stats interval from creation).

Bounded size: a window keeps at most ``length / width + 1`` buckets (21 + 19 + 25), so a
:class:`RollingSum` never holds more than ``MAX_BUCKETS`` (65) buckets plus one all-time
total.  A recorder keeps one RollingSum per metric key (scalars, streams, failure
reasons); :meth:`StatsRecorder.window` output holds only totals, so heartbeats stay small.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

WINDOWS: dict[str, float | None] = {
    "600": 600.0,
    "10800": 10800.0,
    "86400": 86400.0,
    ":all-time": None,
}
WINDOW_NAMES: dict[str, str] = {"600": "10m", "10800": "3h", "86400": "1d", ":all-time": "all"}
ALL_TIME = ":all-time"
BUCKET_SECS: dict[str, float] = {"600": 30.0, "10800": 600.0, "86400": 3600.0}
#: Length of every finite window (all but all-time).
WINDOW_SECS: dict[str, float] = {w: length for w, length in WINDOWS.items() if length is not None}
MAX_BUCKETS: int = sum(int(WINDOW_SECS[w] // width) + 1 for w, width in BUCKET_SECS.items())

_ALIASES: dict[str, str] = {
    **{name: wid for wid, name in WINDOW_NAMES.items()},
    **{wid: wid for wid in WINDOWS},
    "all-time": ALL_TIME,
}
_MAPS = ("emitted", "transferred", "failed_by")
_SCALARS = (
    "executed",
    "errors",
    "retried",
    "acked",
    "failed",
    "execute_secs",
    "process_secs",
    "process_count",
    "complete_secs",
    "complete_count",
)
_INTS = frozenset(
    {"executed", "errors", "retried", "acked", "failed", "process_count", "complete_count"}
)
_LATENCIES = (
    ("execute_latency_ms", "execute_secs", "executed"),
    ("process_latency_ms", "process_secs", "process_count"),
    ("complete_latency_ms", "complete_secs", "complete_count"),
)


def window_seconds(window_id: Any) -> int | None:
    """A window id's length in seconds (``"600"`` -> 600); None for all-time or anything
    that is not a window id.

    >>> window_seconds("600"), window_seconds(":all-time")
    (600, None)
    """
    length = WINDOWS.get(window_id) if isinstance(window_id, str) else None
    return int(length) if length is not None else None


def parse_window(text: str) -> str:
    """Storm window id for ``text`` ("10m", "3h", "1d", "all", "all-time" or an id itself).

    Raises ValueError naming the accepted values for anything else."""
    wid = _ALIASES.get(text.strip()) if isinstance(text, str) else None
    if wid is None:
        accepted = ", ".join(sorted(_ALIASES, key=lambda a: (a not in WINDOW_NAMES.values(), a)))
        raise ValueError(f"unknown stats window {text!r}; accepted: {accepted}")
    return wid


class RollingSum:
    """Sums of values added over each window, kept in time buckets (bounded memory):
    600 s window in 30 s buckets, 3 h in 10 min buckets, 1 day in 1 h buckets, plus an
    all-time total.  Buckets are aligned to the creation time ``now``."""

    def __init__(self, now: float) -> None:
        self._origin = now
        self._total = 0.0
        self._buckets: dict[str, deque[list[float]]] = {w: deque() for w in BUCKET_SECS}

    def add(self, value: float, now: float) -> None:
        """File ``value`` at time ``now``; zero is a no-op.  A ``now`` older than the newest
        bucket (clock stepped back) is filed into the newest bucket."""
        if not value:
            return
        self._total += value
        rel = now - self._origin
        for wid, width in BUCKET_SECS.items():
            buckets = self._buckets[wid]
            k = math.ceil(rel / width)
            if buckets and k <= buckets[-1][0]:
                buckets[-1][1] += value
            else:
                buckets.append([k, value])
            cutoff = rel - WINDOW_SECS[wid]
            while buckets and buckets[0][0] * width <= cutoff:
                buckets.popleft()  # bucket ends at or before the window start: gone for good

    def total(self, window_id: str, now: float) -> float:
        """Sum over ``(now - window, now]`` at bucket granularity (see module docstring)."""
        if window_id == ALL_TIME:
            return self._total
        width, length = BUCKET_SECS[window_id], WINDOW_SECS[window_id]
        rel = now - self._origin
        return sum(
            v
            for k, v in self._buckets[window_id]
            if k * width > rel - length and (k - 1) * width < rel
        )

    def totals(self, now: float) -> dict[str, float]:
        """Window id -> :meth:`total` for every window in :data:`WINDOWS`."""
        return {wid: self.total(wid, now) for wid in WINDOWS}

    def bucket_count(self) -> int:
        """Buckets currently held (never more than :data:`MAX_BUCKETS`)."""
        return sum(len(b) for b in self._buckets.values())


def _flatten(counters: dict[str, Any]) -> dict[tuple[str, str], float]:
    flat: dict[tuple[str, str], float] = {}
    for metric in _MAPS:
        for name, value in (counters.get(metric) or {}).items():
            flat[(metric, str(name))] = float(value)
    for metric in _SCALARS:
        flat[(metric, "")] = float(counters.get(metric) or 0)
    return flat


def _empty() -> dict[str, Any]:
    out: dict[str, Any] = {m: {} for m in _MAPS}
    out.update({m: 0 if m in _INTS else 0.0 for m in _SCALARS})
    out["capacity"] = 0.0
    return out


def _with_latencies(out: dict[str, Any]) -> dict[str, Any]:
    for key, secs, count in _LATENCIES:
        out[key] = out[secs] * 1000.0 / out[count] if out[count] else 0.0
    return out


class StatsRecorder:
    """Rolling stats of one task fed with cumulative counters (the keys the runtime's
    ``task_counters`` reports: "emitted"/"transferred"/"failed_by" dicts, "executed",
    "retried", "acked", "failed", "execute_secs", "process_secs", "process_count", "complete_secs",
    "complete_count"; absent keys count as zero)."""

    def __init__(self, now: float) -> None:
        self._created = now
        self._last: dict[tuple[str, str], float] = {}
        self._sums: dict[tuple[str, str], RollingSum] = {}

    def record(self, counters: dict[str, Any], now: float) -> None:
        """File the deltas since the previous snapshot (first one: delta from zero) at ``now``.

        If any counter is smaller than before (or a known stream/reason vanished) the task
        restarted: the whole snapshot is then a fresh start (delta = new value).  Deltas are
        therefore never negative."""
        flat = _flatten(counters)
        restarted = any(flat.get(key, 0.0) < value for key, value in self._last.items())
        for key, value in flat.items():
            delta = value if restarted else value - self._last.get(key, 0.0)
            if key not in self._sums:
                self._sums[key] = RollingSum(self._created)
            self._sums[key].add(delta, now)
        self._last = flat

    def window(self, window_id: str, now: float) -> dict[str, Any]:
        """Plain JSON-able stats over one window (id or alias, see :func:`parse_window`).

        Counts are ints; streams/reasons ever seen are listed (0 when idle in the window);
        raw ``*_secs``/``*_count`` sums are included so :func:`merge_windows` can weight
        averages; latencies are ms averages (0.0 without samples); ``capacity`` is
        execute_secs / min(window length, time since creation), 3 decimals, 0.0 at start."""
        wid = parse_window(window_id)
        out = _empty()
        for (metric, name), rolling in sorted(self._sums.items()):
            value = rolling.total(wid, now)
            if metric in _MAPS:
                out[metric][name] = round(value)
            else:
                out[metric] = round(value) if metric in _INTS else value
        length = WINDOWS[wid]
        elapsed = now - self._created
        covered = elapsed if length is None else min(length, elapsed)
        out["capacity"] = round(out["execute_secs"] / covered, 3) if covered > 0 else 0.0
        return _with_latencies(out)

    def all_windows(self, now: float) -> dict[str, dict[str, Any]]:
        """Window id -> :meth:`window` for every window in :data:`WINDOWS`."""
        return {wid: self.window(wid, now) for wid in WINDOWS}


def merge_windows(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Component-level stats from several tasks' :meth:`StatsRecorder.window` dicts.

    Counts and raw sums are added (per stream/reason for the dicts), latencies are
    recomputed from the summed secs/counts (count-weighted averages) and capacity is the
    maximum over the tasks, as in Storm's UI.  An empty list gives all zeros."""
    out = _empty()
    for item in items:
        for metric in _MAPS:
            merged = out[metric]
            for name, value in (item.get(metric) or {}).items():
                merged[name] = merged.get(name, 0) + value
        for metric in _SCALARS:
            out[metric] += item.get(metric) or 0
        out["capacity"] = max(out["capacity"], item.get("capacity") or 0.0)
    for metric in _MAPS:
        out[metric] = dict(sorted(out[metric].items()))
    return _with_latencies(out)
