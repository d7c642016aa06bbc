"""Per-component time-series of each topology, in a bounded in-memory ring (pure).

The poller hands every poll's worker replies to :meth:`SeriesStore.record`; each
topology's :class:`TopologySeries` turns successive replies into one sample per poll and
files it into three tiers, one per window of the pages:

========  =============  ==========  ==================================================
window    step           points      what a point is
========  =============  ==========  ==================================================
``10m``   2 s            300         the polls of 2 s (at least one publish interval)
``3h``    36 s           300         the polls of 36 s
``1d``    288 s          300         the polls of 288 s (4.8 min)
========  =============  ==========  ==================================================

A point is made when its step has passed (the first poll of the next step closes it), so
a tier holds at most :data:`POINTS` points per topology and keeps them in a ring: the
oldest goes as the newest comes.  A point holds, per component (:data:`FIELDS`):

- ``emitted_per_sec``, ``acked_per_sec``, ``executed_per_sec``, ``failed_per_sec``: the
  component's tasks' counters over the step, per second (every stream for emitted);
- ``latency_p50_ms``, ``latency_p95_ms``, ``latency_p99_ms``: percentiles of the complete
  latency (a spout's trees) or the execute latency (a bolt's tuples) of what completed in
  the step, from the tasks' latency histograms (interpolated inside a bucket; null when
  nothing completed);
- ``queue``: the most tuples seen queued for the component at once in the step — a bolt's
  tuples in its workers' inbound queues, a spout's pending trees;
- ``backpressured``: the tasks' mean share of the step under backpressure — a spout's
  while its worker held its spouts back (any reason: a full queue, a congested or
  throttling peer), a bolt's while its worker held frames for a full peer;
- ``busy``: the tasks' mean share of the step spent in their code — a bolt's executing
  (capacity is the busiest task's over the whole window), a spout's in ``next_tuple``.

Memory: a point is its time and :data:`FIELDS` 32-bit floats per component, packed, so a
topology holds at most ``3 × 300 × 40`` bytes per component and about 100 bytes per point
— about 0.5 MB for ten components (at most :data:`MAX_COMPONENTS` are charted) —, one
open step per tier and each worker's last sample.  Topologies no longer running are
dropped at the next poll.

Replies are hostile data (they come through ZooKeeper): every figure read from one is
checked to be a finite number, and histograms with other bounds or over
:data:`MAX_HISTOGRAM_BUCKETS` buckets are left out.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: What each point holds per component, in this order.
FIELDS = (
    "emitted_per_sec",
    "acked_per_sec",
    "executed_per_sec",
    "failed_per_sec",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "queue",
    "backpressured",
    "busy",
)
#: Decimals each field is shown with (a point keeps 32-bit floats: about 7 digits).
DECIMALS = (2, 2, 2, 2, 3, 3, 3, 0, 3, 3)
#: Points kept per tier.
POINTS = 300
#: Window name -> seconds per point (the window over :data:`POINTS`).
STEPS: dict[str, float] = {"10m": 600 / POINTS, "3h": 10800 / POINTS, "1d": 86400 / POINTS}
#: Window name -> seconds it covers.
SPANS: dict[str, float] = {"10m": 600.0, "3h": 10800.0, "1d": 86400.0}
#: Most components charted per topology (more names in replies are left out).
MAX_COMPONENTS = 256
#: Most buckets of a latency histogram read from a reply.
MAX_HISTOGRAM_BUCKETS = 64
#: The percentiles of a point.
PERCENTILES = ((0.5, "latency_p50_ms"), (0.95, "latency_p95_ms"), (0.99, "latency_p99_ms"))
#: Counters read per task: (name in the reply, rate field).
_COUNTERS = (
    ("acked", "acked_per_sec"),
    ("executed", "executed_per_sec"),
    ("failed", "failed_per_sec"),
)


def _number(value: Any) -> float:
    """``value`` as a finite float (0.0 for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) else 0.0


def _histogram(value: Any) -> tuple[tuple[float, ...], list[float]] | None:
    """(bounds, counts) of a reply's ``latency_histogram``, or None if malformed."""
    if not isinstance(value, dict):
        return None
    bounds, counts = value.get("bounds"), value.get("counts")
    if not (isinstance(bounds, list) and isinstance(counts, list)):
        return None
    if not 0 < len(bounds) <= MAX_HISTOGRAM_BUCKETS or len(counts) != len(bounds) + 1:
        return None
    return tuple(_number(b) for b in bounds), [_number(c) for c in counts]


def percentile(bounds: tuple[float, ...], counts: list[float], q: float) -> float | None:
    """The ``q`` quantile (seconds) of a histogram (``counts[i]``: observations up to
    ``bounds[i]``, the last above every bound), interpolated linearly inside its bucket;
    the last bound when it falls above every bound; None without observations.

    >>> percentile((1.0, 2.0), [0, 10, 0], 0.5)
    1.5
    """
    total = sum(counts)
    if total <= 0:
        return None
    rank, seen = q * total, 0.0
    for i, count in enumerate(counts):
        if count > 0 and seen + count >= rank:
            if i >= len(bounds):
                return bounds[-1]
            low = bounds[i - 1] if i > 0 else 0.0
            return low + (bounds[i] - low) * max(0.0, rank - seen) / count
        seen += count
    return bounds[-1]


@dataclass
class _Sample:
    """One worker incarnation's cumulative figures, per component."""

    time: float
    counters: dict[tuple[str, str], float]
    histograms: dict[str, tuple[tuple[float, ...], list[float]]]


@dataclass
class _Component:
    """What one poll gives for a component: rates, latency counts, gauges."""

    kind: str = "bolt"
    tasks: int = 0
    rates: dict[str, float] = field(default_factory=dict)
    bounds: tuple[float, ...] | None = None
    counts: list[float] | None = None
    queue: float = 0.0


def _sample(reply: dict[str, Any], taken: float) -> tuple[_Sample, dict[str, _Component]]:
    """The cumulative figures of one reply, and its gauges per component."""
    counters: dict[tuple[str, str], float] = {}
    histograms: dict[str, tuple[tuple[float, ...], list[float]]] = {}
    gauges: dict[str, _Component] = {}
    held = _number(reply.get("spouts_held_secs"))
    congested = _number(reply.get("congested_secs"))
    tasks = reply.get("tasks")
    for task in (tasks if isinstance(tasks, dict) else {}).values():
        if not isinstance(task, dict) or not isinstance(task.get("component"), str):
            continue
        name = task["component"]
        spout = task.get("kind") == "spout"
        gauge = gauges.setdefault(name, _Component(kind="spout" if spout else "bolt"))
        gauge.tasks += 1
        gauge.queue += _number(task.get("pending") if spout else task.get("queued"))

        def add(what: str, value: float, name: str = name) -> None:
            counters[(what, name)] = counters.get((what, name), 0.0) + value

        emitted = task.get("emitted")
        if isinstance(emitted, dict):
            add("emitted_per_sec", sum(_number(n) for n in emitted.values()))
        for key, what in _COUNTERS:
            add(what, _number(task.get(key)))
        add("backpressured", held if spout else congested)
        busy = task.get("next_tuple_secs" if spout else "execute_secs")
        if busy is not None:  # (a worker of an older version says nothing)
            add("busy", _number(busy))
        histogram = _histogram(task.get("latency_histogram"))
        if histogram is not None:
            known = histograms.get(name)
            if known is None:
                histograms[name] = (histogram[0], list(histogram[1]))
            elif known[0] == histogram[0]:
                histograms[name] = (known[0], [a + b for a, b in zip(known[1], histogram[1])])
    return _Sample(taken, counters, histograms), gauges


class _Open:
    """The step a tier is filling: sums of the samples so far."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.time = 0.0
        self.sums: dict[str, dict[str, float]] = {}
        #: Component -> the samples of this step that had it (what its sums are over).
        self.seen: dict[str, int] = {}
        self.latency: dict[str, tuple[tuple[float, ...], list[float]]] = {}
        self.queue: dict[str, float] = {}

    def add(self, now: float, components: dict[str, _Component]) -> None:
        self.time = now
        for name, c in components.items():
            sums = self.sums.setdefault(name, {})
            self.seen[name] = self.seen.get(name, 0) + 1
            for what, rate in c.rates.items():
                sums[what] = sums.get(what, 0.0) + rate
            self.queue[name] = max(self.queue.get(name, 0.0), c.queue)
            if c.bounds is not None and c.counts is not None:
                known = self.latency.get(name)
                if known is None or known[0] != c.bounds:
                    self.latency[name] = (c.bounds, list(c.counts))
                else:
                    self.latency[name] = (c.bounds, [a + b for a, b in zip(known[1], c.counts)])

    def point(self) -> tuple[float, dict[str, tuple[float | None, ...]]]:
        """(time of its last sample, component -> the values of :data:`FIELDS`)."""
        out: dict[str, tuple[float | None, ...]] = {}
        for name, sums in self.sums.items():
            n = max(1, self.seen.get(name, 0))
            values: dict[str, float | None] = {k: round(v / n, 3) for k, v in sums.items()}
            for what in ("backpressured", "busy"):
                if what in values and values[what] is not None:
                    values[what] = round(min(1.0, max(0.0, float(values[what] or 0.0))), 3)
            latency = self.latency.get(name)
            for q, key in PERCENTILES:
                found = percentile(*latency, q) if latency is not None else None
                values[key] = None if found is None else round(found * 1000.0, 3)
            values["queue"] = self.queue.get(name, 0.0)
            out[name] = tuple(values.get(k) for k in FIELDS)
        return self.time, out


class _Tier:
    """One window's ring of points and its open step.  A point is its time and its values
    packed as 32-bit floats (NaN: no figure), :data:`FIELDS` per component in the order
    of :attr:`slots`."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.slots: dict[str, int] = {}
        self.points: deque[tuple[float, bytes]] = deque(maxlen=POINTS)
        self.open: _Open | None = None

    def add(self, now: float, components: dict[str, _Component]) -> None:
        index = math.floor(now / self.step)
        if self.open is not None and index > self.open.index:
            self._close(*self.open.point())
            self.open = None
        if self.open is None:
            self.open = _Open(index)
        self.open.add(now, components)

    def _close(self, t: float, values: dict[str, tuple[float | None, ...]]) -> None:
        for name in values:
            if name not in self.slots and len(self.slots) < MAX_COMPONENTS:
                self.slots[name] = len(self.slots)
        row = array("f", [math.nan]) * (len(self.slots) * len(FIELDS))
        for name, figures in values.items():
            slot = self.slots.get(name)
            if slot is None:
                continue
            for i, value in enumerate(figures):
                if value is not None:
                    row[slot * len(FIELDS) + i] = value
        self.points.append((t, row.tobytes()))

    def columns(self, names: list[str]) -> dict[str, list[list[float | None]]]:
        """Each of ``names``' values of every point (one list per field of
        :data:`FIELDS`, rounded to its :data:`DECIMALS`), each point unpacked once."""
        width = len(FIELDS)
        out: dict[str, list[list[float | None]]] = {n: [[] for _ in FIELDS] for n in names}
        slots = [(self.slots.get(n), out[n]) for n in names]
        for _, packed in self.points:
            row = array("f", packed).tolist()
            for slot, values in slots:
                base = -1 if slot is None else slot * width
                if base < 0 or base + width > len(row):  # not charted yet at that point
                    for column in values:
                        column.append(None)
                    continue
                for i, digits in enumerate(DECIMALS):
                    value = row[base + i]
                    values[i].append(None if value != value else round(value, digits))
        return out


class TopologySeries:
    """One topology's samples and tiers (not thread-safe: :class:`SeriesStore` locks)."""

    def __init__(self, steps: dict[str, float] | None = None) -> None:
        self.tiers = {window: _Tier(step) for window, step in (steps or STEPS).items()}
        #: (worker, pid) -> that incarnation's last sample.
        self._last: dict[tuple[Any, Any], _Sample] = {}
        #: (worker, pid) -> the rates its last two samples gave (kept while no newer one).
        self._rates: dict[tuple[Any, Any], dict[tuple[str, str], float]] = {}
        self.kinds: dict[str, str] = {}

    def record(self, now: float, replies: Iterable[dict[str, Any]]) -> None:
        """Fold in one poll's worker ``replies`` taken at ``now`` (wall clock seconds)."""
        components: dict[str, _Component] = {}
        seen = set()
        for reply in replies:
            taken = reply.get("time") if isinstance(reply, dict) else None
            if isinstance(taken, bool) or not isinstance(taken, int | float):
                continue
            key = (reply.get("worker"), reply.get("pid"))
            seen.add(key)
            sample, gauges = _sample(reply, float(taken))
            for name, gauge in gauges.items():
                if name not in self.kinds and len(self.kinds) >= MAX_COMPONENTS:
                    continue
                c = components.setdefault(name, _Component(kind=gauge.kind))
                c.tasks += gauge.tasks
                c.queue += gauge.queue
                self.kinds[name] = gauge.kind
            previous = self._last.get(key)
            if previous is not None and sample.time > previous.time:
                elapsed = sample.time - previous.time
                self._rates[key] = {
                    k: max(0.0, (v - previous.counters.get(k, 0.0)) / elapsed)
                    for k, v in sample.counters.items()
                }
                for name, (bounds, counts) in sample.histograms.items():
                    before = previous.histograms.get(name)
                    if before is None or before[0] != bounds:
                        continue
                    delta = [max(0.0, a - b) for a, b in zip(counts, before[1])]
                    c = components.setdefault(name, _Component())
                    if c.counts is None or c.bounds != bounds:
                        c.bounds, c.counts = bounds, delta
                    else:
                        c.counts = [a + b for a, b in zip(c.counts, delta)]
            if previous is None or sample.time > previous.time:
                self._last[key] = sample
        for key in list(self._last):  # gone, or relaunched under a new pid
            if key not in seen:
                self._last.pop(key)
                self._rates.pop(key, None)
        for rates in self._rates.values():
            for (what, name), rate in rates.items():
                c = components.setdefault(name, _Component())
                c.rates[what] = c.rates.get(what, 0.0) + rate
        for c in components.values():  # shares: the mean over the component's tasks
            for what in ("backpressured", "busy"):
                if what in c.rates:
                    c.rates[what] /= max(1, c.tasks)
        if not any(c.rates for c in components.values()):
            return  # no worker sampled twice yet: nothing to chart
        for tier in self.tiers.values():
            tier.add(now, components)

    def series(self, window: str, component: str | None = None) -> dict[str, Any]:
        """The points of ``window`` (a key of :data:`STEPS`), oldest first, as columns:
        ``{"window", "step_secs", "span_secs", "fields", "times": [t],
        "components": {id: {"kind", field: [value]}}}`` — every column as long as
        ``times``, null where the component had no figure; one component's only when
        ``component`` is given."""
        tier = self.tiers[window]
        names = sorted(set(tier.slots) | set(self.kinds))
        if component is not None:
            names = [n for n in names if n == component]
        columns: dict[str, Any] = {}
        for name, values in tier.columns(names).items():
            columns[name] = {"kind": self.kinds.get(name, "bolt"), **dict(zip(FIELDS, values))}
        return {
            "window": window,
            "step_secs": tier.step,
            "span_secs": SPANS.get(window, tier.step * POINTS),
            "points_max": POINTS,
            "fields": list(FIELDS),
            "times": [round(t, 3) for t, _ in tier.points],
            "components": columns,
        }


class SeriesStore:
    """Every topology's :class:`TopologySeries` (:meth:`record` from the poller's
    threads, :meth:`series` from request handlers: both take the store's lock)."""

    def __init__(self, steps: dict[str, float] | None = None) -> None:
        self._steps = steps
        self._lock = threading.Lock()
        self._topologies: dict[str, TopologySeries] = {}

    def record(self, name: str, now: float, replies: Iterable[dict[str, Any]]) -> None:
        """Fold in one poll of topology ``name``."""
        with self._lock:
            series = self._topologies.get(name)
            if series is None:
                series = self._topologies[name] = TopologySeries(self._steps)
            series.record(now, replies)

    def keep(self, names: Iterable[str]) -> None:
        """Forget every topology not in ``names`` (the ones running now)."""
        keep = set(names)
        with self._lock:
            for gone in set(self._topologies) - keep:
                del self._topologies[gone]

    def series(self, name: str, window: str, component: str | None = None) -> dict[str, Any]:
        """:meth:`TopologySeries.series` of ``name`` (empty columns if never recorded)."""
        with self._lock:
            series = self._topologies.get(name)
            if series is None:
                series = TopologySeries(self._steps)
            return {"topology": name, **series.series(window, component)}
