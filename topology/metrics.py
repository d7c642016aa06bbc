"""User-defined metrics: counters, gauges and histograms a component registers on its
context (Storm's ``registerCounter`` / ``registerGauge`` / ``registerHistogram``).

Register in ``open`` / ``prepare``::

    def prepare(self, conf, context):
        self.bad_rows = context.register_counter("bad_rows", "rows that failed to parse")
        self.size = context.register_histogram("row_bytes", buckets=[100, 1_000, 10_000])
        context.register_gauge("cache_entries", lambda: len(self.cache))

    def execute(self, tup):
        self.size.observe(len(tup[0]))
        ...
        self.bad_rows.inc()

Each task's metrics travel with its worker's status (``metrics`` in the task's entry) and
are exported by the Prometheus endpoint as ``sparkstorm_user_<name>`` with the labels
``topology``, ``component`` and ``task`` (see docs/METRICS.md).  Metrics live in the
worker: a relaunched worker starts them from zero (Prometheus' ``rate`` handles resets).
Only the executor thread may update them; reads for status happen on that thread too.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from .errors import MetricError

#: Metric names: Prometheus' rule, so they export unchanged.
NAME_PATTERN = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
#: Most metrics one task may register (a name built from data would grow without end).
MAX_METRICS_PER_TASK = 100
#: Buckets of a histogram registered without its own.
DEFAULT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)
#: Buckets (seconds) of the built-in latency histograms: spouts' complete latency, bolts'
#: execute latency.
LATENCY_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
#: Most buckets one histogram may have.
MAX_BUCKETS = 50


class Counter:
    """A count that only goes up."""

    kind = "counter"

    def __init__(self, description: str = "") -> None:
        self.description = description
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        """Add ``amount`` (>= 0)."""
        if amount < 0:
            raise ValueError(f"a counter only goes up: inc({amount!r})")
        self.value += amount

    def snapshot(self) -> dict[str, Any]:
        return {"kind": self.kind, "help": self.description, "value": self.value}


class Gauge:
    """A value that goes up and down: :meth:`set` it, or give a function read at export."""

    kind = "gauge"

    def __init__(self, read: Callable[[], float] | None = None, description: str = "") -> None:
        self.description = description
        self.value = 0.0
        self._read = read

    def set(self, value: float) -> None:
        self.value = float(value)

    def snapshot(self) -> dict[str, Any]:
        value = self.value
        if self._read is not None:
            try:
                value = float(self._read())
            except Exception:  # a gauge function that fails shows NaN, never breaks status
                value = math.nan
        return {"kind": self.kind, "help": self.description, "value": value}


class Histogram:
    """Observations counted in buckets (upper bounds, ascending), with their sum."""

    kind = "histogram"

    def __init__(self, buckets: Iterable[float] | None = None, description: str = "") -> None:
        bounds = tuple(float(b) for b in (DEFAULT_BUCKETS if buckets is None else buckets))
        if not bounds or len(bounds) > MAX_BUCKETS or list(bounds) != sorted(set(bounds)):
            raise ValueError(
                f"histogram buckets must be 1..{MAX_BUCKETS} distinct ascending bounds, "
                f"got {buckets!r}"
            )
        self.description = description
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, value: float, times: int = 1) -> None:
        """Count ``value`` (``times`` times: e.g. a chunk's mean, once per tuple)."""
        self.counts[bisect_left(self.bounds, value)] += times
        self.sum += value * times

    def snapshot(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "help": self.description,
            "bounds": list(self.bounds),
            "counts": list(self.counts),
            "sum": self.sum,
        }


Metric = Counter | Gauge | Histogram
M = TypeVar("M", Counter, Gauge, Histogram)


class MetricsRegistry:
    """The metrics of one task, by name (what ``TopologyContext.register_*`` fills)."""

    def __init__(self, component: str = "?") -> None:
        self.component = component
        self._metrics: dict[str, Metric] = {}

    def register(self, name: str, make: Callable[[], M]) -> M:
        """The metric called ``name``, made by ``make()`` on first registration; registering
        a name again returns the metric already there (if of the same kind)."""
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise MetricError(
                f"component {self.component!r}: metric name {name!r} must match "
                f"{NAME_PATTERN.pattern} (letters, digits, underscores)"
            )
        metric = make()
        existing = self._metrics.get(name)
        if existing is not None:
            if existing.kind != metric.kind:
                raise MetricError(
                    f"component {self.component!r}: metric {name!r} is already a "
                    f"{existing.kind}, not a {metric.kind}"
                )
            return cast(M, existing)
        if len(self._metrics) >= MAX_METRICS_PER_TASK:
            raise MetricError(
                f"component {self.component!r}: more than {MAX_METRICS_PER_TASK} metrics "
                f"(is {name!r} built from data?)"
            )
        self._metrics[name] = metric
        return metric

    def __len__(self) -> int:
        return len(self._metrics)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """name -> plain data (what a worker's status carries)."""
        return {name: metric.snapshot() for name, metric in self._metrics.items()}
