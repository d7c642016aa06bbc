"""The UI's per-component time-series (topology.ui.series): rates, latency percentiles,
queue, backpressured and busy shares from successive worker replies, in bounded tiers."""

from __future__ import annotations

from typing import Any

import pytest

from topology.ui.series import FIELDS, POINTS, STEPS, SeriesStore, TopologySeries, percentile

pytestmark = pytest.mark.timeout(30)

BOUNDS = [0.001, 0.01, 0.1]


def reply(
    t: float,
    n: int,
    *,
    worker: int = 0,
    pid: int = 100,
    latency: list[int] | None = None,
    held: float = 0.0,
    congested: float = 0.0,
    busy: float = 0.0,
    queued: int = 0,
) -> dict[str, Any]:
    """Worker ``worker``'s reply at ``t`` after the spout emitted ``n`` and the bolt
    executed ``n`` (cumulative), with the given cumulative seconds and histograms."""
    return {
        "worker": worker,
        "pid": pid,
        "time": t,
        "spouts_held_secs": held,
        "congested_secs": congested,
        "tasks": {
            "1": {
                "component": "src",
                "kind": "spout",
                "emitted": {"default": n},
                "acked": n,
                "failed": 0,
                "pending": 7,
                "next_tuple_secs": busy / 5,
                "latency_histogram": {"bounds": BOUNDS, "counts": latency or [0, 0, 0, 0]},
            },
            "2": {
                "component": "sink",
                "kind": "bolt",
                "emitted": {},
                "executed": n,
                "acked": n,
                "failed": 0,
                "queued": queued,
                "execute_secs": busy,
                "latency_histogram": {"bounds": BOUNDS, "counts": [0, 0, 0, 0]},
            },
        },
    }


def column(s: dict[str, Any], component: str, what: str) -> list[Any]:
    return s["components"][component][what]


def test_percentile_interpolates_inside_the_bucket_and_caps_at_the_last_bound() -> None:
    assert percentile((1.0, 2.0), [0, 10, 0], 0.5) == 1.5
    assert percentile((1.0, 2.0), [10, 0, 0], 0.99) == pytest.approx(0.99)
    assert percentile((1.0, 2.0), [0, 0, 5], 0.5) == 2.0
    assert percentile((1.0, 2.0), [0, 0, 0], 0.5) is None


def test_rates_shares_queue_and_percentiles_per_step() -> None:
    series = TopologySeries({"10m": 2.0})
    series.record(0.0, [reply(0.0, 0)])
    assert series.series("10m")["times"] == []  # one sample: no rate yet
    latency = [0, 0, 0, 0]
    for i in range(1, 8):  # one reply per second: 100 tuples/s, 20 % of time held
        latency = [latency[0], latency[1] + 10, latency[2], latency[3]]
        series.record(
            float(i),
            [reply(float(i), 100 * i, latency=latency, held=0.2 * i, busy=0.5 * i, queued=i)],
        )
    s = series.series("10m")
    assert s["fields"] == list(FIELDS)
    assert len(s["times"]) == 3  # steps [0,2), [2,4), [4,6) closed; [6,8) still open
    assert column(s, "src", "emitted_per_sec") == [100.0, 100.0, 100.0]
    assert column(s, "src", "acked_per_sec") == [100.0, 100.0, 100.0]
    assert column(s, "sink", "executed_per_sec") == [100.0, 100.0, 100.0]
    assert column(s, "src", "backpressured") == [0.2, 0.2, 0.2]
    assert column(s, "sink", "backpressured") == [0.0, 0.0, 0.0]
    assert column(s, "sink", "busy") == [0.5, 0.5, 0.5]
    assert column(s, "src", "busy") == [0.1, 0.1, 0.1]  # in next_tuple
    assert column(s, "src", "queue") == [7.0, 7.0, 7.0]  # pending trees
    assert column(s, "sink", "queue") == [1.0, 3.0, 5.0]  # the most queued in the step
    # every tree completed in (1 ms, 10 ms]: the median half way
    assert column(s, "src", "latency_p50_ms") == [5.5, 5.5, 5.5]
    assert column(s, "src", "latency_p99_ms") == [9.91, 9.91, 9.91]
    assert column(s, "sink", "latency_p50_ms") == [None, None, None]  # nothing observed
    assert s["components"]["src"]["kind"] == "spout"
    assert series.series("10m", "sink")["components"].keys() == {"sink"}


def test_workers_add_up_and_a_relaunched_worker_starts_over() -> None:
    series = TopologySeries({"10m": 1.0})
    series.record(0.5, [reply(0.5, 0, worker=0), reply(0.5, 0, worker=1, pid=200)])
    series.record(1.5, [reply(1.5, 50, worker=0), reply(1.5, 30, worker=1, pid=200)])
    # worker 1 relaunched (new pid, counters from zero): no negative rate, no rate yet
    series.record(2.5, [reply(2.5, 100, worker=0), reply(2.5, 5, worker=1, pid=201)])
    series.record(3.5, [reply(3.5, 150, worker=0), reply(3.5, 25, worker=1, pid=201)])
    rates = column(series.series("10m"), "src", "emitted_per_sec")
    assert rates == [80.0, 50.0]  # the step of 3.5 is still open


def test_a_component_missing_from_a_sample_is_averaged_over_the_samples_that_had_it() -> None:
    series = TopologySeries({"10m": 2.0})

    def only(component: str, t: float, n: int, worker: int) -> dict[str, Any]:
        r = reply(t, n, worker=worker, pid=worker)
        r["tasks"] = {k: v for k, v in r["tasks"].items() if v["component"] == component}
        return r

    series.record(0.25, [only("src", 0.25, 0, 0), only("sink", 0.25, 0, 1)])
    series.record(0.75, [only("src", 0.75, 50, 0), only("sink", 0.75, 50, 1)])
    series.record(1.25, [only("src", 1.25, 100, 0)])  # the sink's worker did not answer
    series.record(2.25, [only("src", 2.25, 200, 0)])
    s = series.series("10m")
    assert column(s, "src", "emitted_per_sec") == [100.0]
    assert column(s, "sink", "executed_per_sec") == [100.0]  # not halved


def test_tiers_are_rings_of_bounded_length() -> None:
    series = TopologySeries()
    for i in range(2 * POINTS + 10):
        t = i * STEPS["10m"]
        series.record(t, [reply(t, 10 * i)])
    s = series.series("10m")
    assert len(s["times"]) == POINTS
    assert len(column(s, "src", "emitted_per_sec")) == POINTS
    assert s["times"] == sorted(s["times"])
    assert len(series.series("3h")["times"]) < POINTS


def test_hostile_replies_are_read_as_zero_or_left_out() -> None:
    series = TopologySeries({"10m": 1.0})
    bad: dict[str, Any] = {
        "worker": 0,
        "pid": 1,
        "time": 0.5,
        "spouts_held_secs": "x",
        "tasks": {
            "1": {"component": "src", "kind": "spout", "emitted": {"s": float("nan")}},
            "2": {"component": 5},
            "3": "not a task",
            "4": {
                "component": "b",
                "latency_histogram": {"bounds": list(range(1000)), "counts": [1] * 1001},
            },
        },
    }
    later = {**bad, "time": 1.5}
    series.record(0.5, [bad, {"time": True}, {"worker": 3}])
    series.record(1.5, [later])
    series.record(2.5, [{**bad, "time": 2.5}])
    s = series.series("10m")
    assert column(s, "src", "emitted_per_sec") == [0.0]  # the step of 2.5 is open
    assert column(s, "b", "latency_p50_ms") == [None]


def test_the_store_forgets_topologies_that_stopped() -> None:
    store = SeriesStore({"10m": 1.0})
    for t in (0.5, 1.5, 2.5):
        store.record("wc", t, [reply(t, int(t * 10))])
    assert store.series("wc", "10m")["times"]
    store.keep(["other"])
    empty = store.series("wc", "10m")
    assert empty["topology"] == "wc" and empty["times"] == [] and empty["components"] == {}
