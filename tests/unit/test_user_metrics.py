"""Unit tests for topology.metrics: the user metrics API (pure)."""

from __future__ import annotations

import math

import pytest

from topology.errors import MetricError
from topology.metrics import (
    MAX_METRICS_PER_TASK,
    Counter,
    Gauge,
    Histogram,
    MetricsRegistry,
)

pytestmark = pytest.mark.timeout(10)


def test_a_counter_only_goes_up() -> None:
    counter = Counter("rows")
    counter.inc()
    counter.inc(2.5)
    assert counter.snapshot() == {"kind": "counter", "help": "rows", "value": 3.5}
    with pytest.raises(ValueError, match="only goes up"):
        counter.inc(-1)


def test_a_gauge_is_set_or_read_from_a_function_and_a_failing_function_shows_nan() -> None:
    gauge = Gauge()
    gauge.set(4)
    assert gauge.snapshot()["value"] == 4.0
    assert Gauge(lambda: 7).snapshot()["value"] == 7.0
    assert math.isnan(Gauge(lambda: 1 / 0).snapshot()["value"])


def test_a_histogram_counts_each_observation_in_the_first_bucket_that_holds_it() -> None:
    histogram = Histogram([1, 10])
    for value in (0.5, 1, 2, 10, 11):
        histogram.observe(value)
    histogram.observe(3, times=4)  # a chunk's mean, once per tuple
    snap = histogram.snapshot()
    assert snap["bounds"] == [1.0, 10.0]
    assert snap["counts"] == [2, 6, 1]  # <=1, <=10, above
    assert snap["sum"] == pytest.approx(0.5 + 1 + 2 + 10 + 11 + 12)


@pytest.mark.parametrize("buckets", [[], [2, 1], [1, 1], list(range(100))])
def test_histogram_buckets_must_be_distinct_ascending_and_few(buckets: list[float]) -> None:
    with pytest.raises(ValueError, match="distinct ascending"):
        Histogram(buckets)


def test_registering_a_name_again_returns_the_same_metric() -> None:
    registry = MetricsRegistry("split")
    first = registry.register("rows", Counter)
    assert registry.register("rows", Counter) is first
    assert len(registry) == 1


def test_errors_name_the_component_and_the_metric() -> None:
    registry = MetricsRegistry("split")
    registry.register("rows", Counter)
    with pytest.raises(MetricError, match="component 'split': metric 'rows' is already a counter"):
        registry.register("rows", Gauge)
    with pytest.raises(MetricError, match=r"component 'split': metric name 'bad-name' must"):
        registry.register("bad-name", Counter)
    for i in range(MAX_METRICS_PER_TASK - 1):
        registry.register(f"m{i}", Counter)
    with pytest.raises(MetricError, match="more than 100 metrics"):
        registry.register("one_too_many", Counter)
