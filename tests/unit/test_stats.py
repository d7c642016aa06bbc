"""Unit tests for topology.stats: rolling windows, cumulative deltas, capacity, merging."""

from __future__ import annotations

import json

import pytest

from topology.stats.rolling import (
    BUCKET_SECS,
    MAX_BUCKETS,
    WINDOW_NAMES,
    WINDOWS,
    RollingSum,
    StatsRecorder,
    merge_windows,
    parse_window,
)

pytestmark = pytest.mark.timeout(30)

H = 3600.0


def counters(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "emitted": {},
        "transferred": {},
        "executed": 0,
        "acked": 0,
        "failed": 0,
        "failed_by": {},
        "execute_secs": 0.0,
        "process_secs": 0.0,
        "process_count": 0,
        "complete_secs": 0.0,
        "complete_count": 0,
    }
    base.update(kw)
    return base


# -- windows and parse_window ---------------------------------------------------------------


def test_window_ids_names_and_bucket_bound() -> None:
    assert WINDOWS == {"600": 600.0, "10800": 10800.0, "86400": 86400.0, ":all-time": None}
    assert WINDOW_NAMES == {"600": "10m", "10800": "3h", "86400": "1d", ":all-time": "all"}
    assert BUCKET_SECS == {"600": 30.0, "10800": 600.0, "86400": 3600.0}
    assert MAX_BUCKETS == 21 + 19 + 25


@pytest.mark.parametrize(
    ("text", "wid"),
    [
        ("10m", "600"),
        ("3h", "10800"),
        ("1d", "86400"),
        ("all", ":all-time"),
        ("all-time", ":all-time"),
        (":all-time", ":all-time"),
        ("600", "600"),
        ("10800", "10800"),
        ("86400", "86400"),
    ],
)
def test_parse_window_accepts(text: str, wid: str) -> None:
    assert parse_window(text) == wid


@pytest.mark.parametrize("text", ["", "5m", "1h", "ALL", "601", "forever", "all time"])
def test_parse_window_rejects_naming_accepted_values(text: str) -> None:
    with pytest.raises(ValueError, match="unknown stats window") as err:
        parse_window(text)
    for accepted in ("10m", "3h", "1d", "all", "600", ":all-time"):
        assert accepted in str(err.value)


# -- RollingSum -----------------------------------------------------------------------------


def test_value_at_start_counts_everywhere_then_expires_per_window() -> None:
    r = RollingSum(0.0)
    r.add(5, 0.0)
    everywhere = {"600": 5, "10800": 5, "86400": 5, ":all-time": 5}
    assert r.totals(0.0) == everywhere
    assert r.totals(599.0) == everywhere
    assert r.totals(601.0) == {"600": 0, "10800": 5, "86400": 5, ":all-time": 5}
    assert r.totals(3 * H - 1) == {"600": 0, "10800": 5, "86400": 5, ":all-time": 5}
    assert r.totals(3 * H + 600) == {"600": 0, "10800": 0, "86400": 5, ":all-time": 5}
    assert r.totals(24 * H + H) == {"600": 0, "10800": 0, "86400": 0, ":all-time": 5}
    assert r.totals(1000 * 24 * H)[":all-time"] == 5


@pytest.mark.parametrize("wid", ["600", "10800", "86400"])
@pytest.mark.parametrize("offset", [0.0, 0.5, 1.0, 17.0, 29.9, 30.0, 1234.5])
def test_granularity_bound(wid: str, offset: float) -> None:
    """Counted for all of [t, t + window); never from t + window + bucket width on."""
    length, width = WINDOWS[wid], BUCKET_SECS[wid]
    assert length is not None
    r = RollingSum(0.0)
    r.add(1, offset)
    for now in (offset, offset + length / 2, offset + length - 0.001):
        assert r.total(wid, now) == 1
    assert r.total(wid, offset + length + width) == 0
    assert r.total(wid, offset + length + width + 1e6) == 0


def test_mid_bucket_entry_lingers_less_than_one_bucket() -> None:
    r = RollingSum(0.0)
    r.add(1, 1.0)  # bucket (0, 30]
    assert r.total("600", 629.0) == 1  # 28 s past the window: still counted
    assert r.total("600", 630.0) == 0


def test_sums_across_buckets_and_windows() -> None:
    r = RollingSum(100.0)  # origin need not be zero
    r.add(1, 100.0)
    r.add(2, 110.0)
    r.add(4, 130.0)
    assert r.total("600", 130.0) == 7
    r.add(8, 100.0 + 2 * H)
    assert r.totals(100.0 + 2 * H) == {"600": 8, "10800": 15, "86400": 15, ":all-time": 15}
    r.add(0, 200.0)
    assert r.total(":all-time", 300.0) == 15


def test_bucket_count_stays_bounded_and_zero_adds_are_free() -> None:
    r = RollingSum(0.0)
    r.add(0, 10.0)
    assert r.bucket_count() == 0
    t = 0.0
    peak = 0
    while t < 2 * 24 * H:
        r.add(1, t)
        peak = max(peak, r.bucket_count())
        t += 7.0
    assert peak <= MAX_BUCKETS
    assert peak >= MAX_BUCKETS - 3  # the bound is tight, not vacuous
    assert r.total(":all-time", t) == len(range(0, int(2 * 24 * H), 7))


# -- StatsRecorder: deltas ------------------------------------------------------------------


def test_first_record_is_delta_from_zero() -> None:
    rec = StatsRecorder(0.0)
    rec.record(counters(emitted={"default": 3}, executed=4, acked=2, failed=1), 10.0)
    w = rec.window("600", 10.0)
    assert w["emitted"] == {"default": 3}
    assert (w["executed"], w["acked"], w["failed"]) == (4, 2, 1)
    assert isinstance(w["executed"], int)


def test_deltas_are_filed_at_record_time() -> None:
    rec = StatsRecorder(0.0)
    rec.record(counters(executed=0), 0.0)
    rec.record(counters(executed=10), 300.0)
    rec.record(counters(executed=25), 900.0)
    assert rec.window("10m", 900.0)["executed"] == 15  # only the 300 -> 900 delta
    assert rec.window("3h", 900.0)["executed"] == 25
    assert rec.window("all", 900.0)["executed"] == 25


def test_per_stream_deltas_with_new_streams_and_reasons() -> None:
    rec = StatsRecorder(0.0)
    rec.record(counters(emitted={"default": 5}, transferred={"default": 5}), 30.0)
    rec.record(
        counters(
            emitted={"default": 8, "s2": 4},
            transferred={"default": 8, "s2": 8},
            failed=2,
            failed_by={"timeout": 2},
        ),
        60.0,
    )
    w = rec.window("all", 60.0)
    assert w["emitted"] == {"default": 8, "s2": 4}
    assert w["transferred"] == {"default": 8, "s2": 8}
    assert w["failed_by"] == {"timeout": 2}
    # In a window that holds only the later delta, the old stream shows its delta.
    rec.record(
        counters(
            emitted={"default": 9, "s2": 4},
            transferred={"default": 8, "s2": 8},
            failed=2,
            failed_by={"timeout": 2},
        ),
        700.0,
    )
    w = rec.window("10m", 700.0)
    assert w["emitted"] == {"default": 1, "s2": 0}
    assert w["transferred"] == {"default": 0, "s2": 0}
    assert w["failed_by"] == {"timeout": 0}


def test_restart_with_smaller_counters_is_a_fresh_start() -> None:
    rec = StatsRecorder(0.0)
    rec.record(counters(executed=100, emitted={"default": 50}, execute_secs=5.0), 30.0)
    # executed went down: restarted; emitted grew past the old value but is fresh too.
    rec.record(counters(executed=7, emitted={"default": 60}, execute_secs=0.5), 60.0)
    w = rec.window("all", 60.0)
    assert w["executed"] == 107
    assert w["emitted"] == {"default": 110}
    assert w["execute_secs"] == pytest.approx(5.5)
    # And counting continues normally from the new baseline.
    rec.record(counters(executed=9, emitted={"default": 61}, execute_secs=0.5), 90.0)
    w = rec.window("all", 90.0)
    assert (w["executed"], w["emitted"]) == (109, {"default": 111})


def test_vanished_stream_means_restart_and_nothing_goes_negative() -> None:
    rec = StatsRecorder(0.0)
    rec.record(counters(executed=10, emitted={"a": 4}), 30.0)
    rec.record(counters(executed=12), 60.0)  # "a" is gone: a restart
    w = rec.window("all", 60.0)
    assert w["executed"] == 22
    assert w["emitted"] == {"a": 4}
    for wid, data in rec.all_windows(60.0).items():
        assert min([data["executed"], *data["emitted"].values()]) >= 0, wid


# -- StatsRecorder: averages and capacity ---------------------------------------------------


def test_averages_exact_and_zero_without_samples() -> None:
    rec = StatsRecorder(0.0)
    assert rec.window("all", 0.0)["execute_latency_ms"] == 0.0
    rec.record(
        counters(
            executed=4,
            execute_secs=2.0,
            process_secs=0.3,
            process_count=3,
            complete_secs=1.5,
            complete_count=5,
        ),
        10.0,
    )
    w = rec.window("all", 10.0)
    assert w["execute_latency_ms"] == pytest.approx(500.0)
    assert w["process_latency_ms"] == pytest.approx(100.0)
    assert w["complete_latency_ms"] == pytest.approx(300.0)
    idle = StatsRecorder(0.0)
    idle.record(counters(executed=3), 10.0)
    w = idle.window("all", 10.0)
    assert (w["execute_latency_ms"], w["process_latency_ms"], w["complete_latency_ms"]) == (
        0.0,
        0.0,
        0.0,
    )


def test_capacity_over_elapsed_time_when_younger_than_window() -> None:
    rec = StatsRecorder(0.0)
    assert rec.window("600", 0.0)["capacity"] == 0.0  # no time has passed
    rec.record(counters(executed=1, execute_secs=2.0), 10.0)
    for wid in WINDOWS:
        assert rec.window(wid, 10.0)["capacity"] == 0.2


def test_capacity_over_full_window() -> None:
    rec = StatsRecorder(0.0)
    rec.record(counters(executed=1, execute_secs=100.0), 600.0)
    rec.record(counters(executed=2, execute_secs=250.0), 1200.0)
    assert rec.window("600", 1200.0)["capacity"] == 0.25  # 150 / 600
    assert rec.window("10800", 1200.0)["capacity"] == round(250 / 1200, 3)
    assert rec.window(":all-time", 1200.0)["capacity"] == 0.208


def test_window_rejects_unknown_ids_and_all_windows_is_json() -> None:
    rec = StatsRecorder(0.0)
    rec.record(counters(emitted={"default": 1}, execute_secs=0.25, executed=1), 30.0)
    with pytest.raises(ValueError, match="accepted"):
        rec.window("7", 30.0)
    every = rec.all_windows(30.0)
    assert list(every) == list(WINDOWS)
    assert json.loads(json.dumps(every)) == every
    expected_keys = {
        "emitted",
        "transferred",
        "executed",
        "errors",
        "retried",
        "acked",
        "failed",
        "failed_by",
        "execute_latency_ms",
        "process_latency_ms",
        "complete_latency_ms",
        "capacity",
        "execute_secs",
        "process_secs",
        "process_count",
        "complete_secs",
        "complete_count",
    }
    assert set(every["600"]) == expected_keys


# -- merge_windows --------------------------------------------------------------------------


def test_merge_sums_counts_and_weights_latencies() -> None:
    a = StatsRecorder(0.0)
    a.record(
        counters(
            emitted={"default": 10},
            executed=10,
            execute_secs=1.0,
            acked=3,
            failed_by={"timeout": 1},
            complete_secs=0.3,
            complete_count=3,
        ),
        10.0,
    )
    b = StatsRecorder(0.0)
    b.record(
        counters(
            emitted={"default": 5, "s2": 2},
            executed=40,
            execute_secs=0.2,
            acked=1,
            failed_by={"timeout": 2, "error": 1},
            complete_secs=0.9,
            complete_count=1,
        ),
        10.0,
    )
    m = merge_windows([a.window("600", 10.0), b.window("600", 10.0)])
    assert m["emitted"] == {"default": 15, "s2": 2}
    assert m["failed_by"] == {"error": 1, "timeout": 3}
    assert (m["executed"], m["acked"]) == (50, 4)
    assert m["execute_latency_ms"] == pytest.approx(1.2 * 1000 / 50)  # not mean(100, 5)
    assert m["complete_latency_ms"] == pytest.approx(1.2 * 1000 / 4)  # not mean(100, 900)
    assert m["process_latency_ms"] == 0.0
    assert m["capacity"] == 0.1  # max(0.1, 0.02)


def test_merge_of_nothing_and_of_one() -> None:
    zero = merge_windows([])
    assert zero["executed"] == 0 and zero["emitted"] == {} and zero["capacity"] == 0.0
    assert zero["execute_latency_ms"] == 0.0
    rec = StatsRecorder(0.0)
    rec.record(counters(executed=4, execute_secs=2.0, transferred={"x": 3}), 10.0)
    one = rec.window("all", 10.0)
    assert merge_windows([one]) == one
