"""Unit tests of window assignment, watermarks, triggers and eviction on a simulated clock
(the engine is pure: tuples are plain labels here, time is passed in)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from topology.windows.engine import EARLY, LATE, ON_TIME, Window, WindowEngine
from topology.windows.spec import DISCARDING, WindowSpec
from topology.windows.watermark import LowWatermark

pytestmark = pytest.mark.timeout(30)

ONE_INPUT = frozenset({7})


def event(kind: str, **settings: Any) -> WindowSpec:
    return WindowSpec(kind=kind, timestamp_field="ts", **settings)  # type: ignore[arg-type]


def feed(engine: WindowEngine, stamps: list[float], now: float = 0.0, src: int = 7) -> list[Window]:
    fired: list[Window] = []
    for ts in stamps:
        out = engine.add(f"t{ts:g}", None, src, ts, now)
        assert out is not None, f"{ts} refused as late"
        fired.extend(out)
    return fired


def test_tumbling_event_time_windows_count_out_of_order_input_exactly() -> None:
    rng = random.Random(3)
    stamps = [i * 0.1 for i in range(1000)]  # 100 s of events, 10 per second
    shuffled = sorted(stamps, key=lambda ts: ts + rng.uniform(0, 4.9))  # disorder < lag
    engine = WindowEngine(event("tumbling", length=10.0, lag=5.0), ONE_INPUT, 0.0)
    fired = []
    for i, ts in enumerate(shuffled):
        assert engine.add(ts, None, 7, ts, float(i)) is not None  # nothing is late
        if i % 50 == 0:
            fired += engine.tick(float(i))
    engine.watermark.observe(7, 1e9, 2000.0)  # type: ignore[union-attr]
    fired += engine.tick(2000.0)
    assert [(w.start, w.end, w.pane) for w in fired] == [
        (float(s), float(s + 10), ON_TIME) for s in range(0, 100, 10)
    ]
    for w in fired:
        assert sorted(w.tuples) == [ts for ts in stamps if w.start <= ts < w.end]
        assert w.new == w.tuples and w.tuples == sorted(w.tuples)
    assert [len(w.expired) for w in fired] == [0] + [100] * 9  # the window before it


def test_sliding_windows_hold_each_tuple_length_over_interval_times() -> None:
    engine = WindowEngine(event("sliding", length=10.0, interval=5.0), ONE_INPUT, 0.0)
    feed(engine, [1, 4, 6, 9, 12, 14])
    engine.watermark.observe(7, 100, 1.0)  # type: ignore[union-attr]
    fired = engine.tick(1.0)
    got = {(w.start, w.end): sorted(w.tuples) for w in fired}
    assert got == {
        (-5.0, 5.0): ["t1", "t4"],
        (0.0, 10.0): ["t1", "t4", "t6", "t9"],
        (5.0, 15.0): ["t12", "t14", "t6", "t9"],
        (10.0, 20.0): ["t12", "t14"],
    }
    w = next(w for w in fired if w.start == 5.0)
    assert sorted(w.new) == ["t12", "t14"]  # not in [0, 10)
    assert sorted(w.expired) == ["t1", "t4"]  # in [0, 10), not in [5, 15)


def test_sessions_per_key_merge_within_the_gap() -> None:
    engine = WindowEngine(event("session", gap=5.0, key_fields=("user",)), ONE_INPUT, 0.0)
    for user, ts in [("a", 1), ("a", 4), ("b", 2), ("a", 20), ("a", 8), ("b", 30)]:
        assert engine.add(f"{user}{ts}", user, 7, float(ts), 0.0) == []
    engine.watermark.observe(7, 100, 1.0)  # type: ignore[union-attr]
    fired = engine.tick(1.0)
    got = sorted((w.key, w.start, w.end, tuple(w.tuples)) for w in fired)
    assert got == [
        ("a", 1.0, 13.0, ("a1", "a4", "a8")),
        ("a", 20.0, 25.0, ("a20",)),
        ("b", 2.0, 7.0, ("b2",)),
        ("b", 30.0, 35.0, ("b30",)),
    ]


def test_a_tuple_behind_the_watermark_is_refused_unless_lateness_allows_a_late_pane() -> None:
    strict = WindowEngine(event("tumbling", length=10.0), ONE_INPUT, 0.0)
    feed(strict, [1, 25])
    assert [w.start for w in strict.tick(1.0)] == [0.0]  # watermark 25: [0, 10) is done
    assert strict.add("old", None, 7, 3.0, 1.0) is None
    assert strict.add("ok", None, 7, 24.0, 1.0) == []
    assert strict.late == 1

    lenient = WindowEngine(event("tumbling", length=10.0, allowed_lateness=10.0), ONE_INPUT, 0.0)
    feed(lenient, [1, 15])
    assert [w.pane for w in lenient.tick(1.0)] == [ON_TIME]
    assert lenient.add("late", None, 7, 3.0, 1.0) == []
    [late] = lenient.tick(2.0)
    assert (late.start, late.pane, late.tuples, late.new) == (0.0, LATE, ["t1", "late"], ["late"])
    feed(lenient, [45])
    lenient.tick(3.0)  # watermark 45: [0, 10) is past its lateness, and its tuples leave
    assert lenient.add("too late", None, 7, 4.0, 3.0) is None
    assert "t1" in lenient.drain_evicted()


def test_discarding_panes_hold_only_what_arrived_since_the_last_firing() -> None:
    spec = event("tumbling", length=10.0, allowed_lateness=10.0, accumulation=DISCARDING)
    engine = WindowEngine(spec, ONE_INPUT, 0.0)
    feed(engine, [1, 2, 15])
    [on_time] = engine.tick(1.0)
    assert on_time.tuples == ["t1", "t2"]
    engine.add("late", None, 7, 3.0, 1.0)
    [late] = engine.tick(2.0)
    assert late.tuples == ["late"]


def test_early_firings_by_count_and_by_processing_time() -> None:
    by_count = WindowEngine(event("tumbling", length=100.0, early_every_count=3), ONE_INPUT, 0.0)
    assert feed(by_count, [1, 2]) == []
    [early] = feed(by_count, [3])
    assert (early.pane, early.tuples) == (EARLY, ["t1", "t2", "t3"])
    assert feed(by_count, [4, 5]) == []

    by_time = WindowEngine(event("tumbling", length=100.0, early_every_secs=2.0), ONE_INPUT, 0.0)
    feed(by_time, [1], now=0.0)
    assert by_time.tick(1.0) == []
    [early] = by_time.tick(2.0)
    assert early.pane == EARLY and by_time.tick(5.0) == []  # nothing new since
    feed(by_time, [2], now=5.0)
    [again] = by_time.tick(6.0)
    assert again.new == ["t2"] and again.tuples == ["t1", "t2"]  # accumulating


def test_the_low_watermark_is_the_minimum_over_inputs_and_idle_inputs_let_go() -> None:
    wm = LowWatermark(frozenset({1, 2}), lag=1.0, idle_timeout=10.0, now=0.0)
    wm.observe(1, 50.0, 0.0)
    assert wm.advance(1.0) == float("-inf")  # input 2 not heard from yet
    wm.observe(2, 20.0, 2.0)
    assert wm.advance(2.0) == 19.0  # the slow input holds it back
    wm.observe(1, 60.0, 11.0)
    assert wm.advance(11.0) == 19.0
    assert wm.advance(12.5) == 59.0  # input 2 silent for > 10 s: it stops holding back
    wm.observe(2, 30.0, 13.0)  # back, but behind: the watermark never goes back
    assert wm.advance(13.0) == 59.0
    never = LowWatermark(frozenset({1, 2}), lag=0.0, idle_timeout=5.0, now=0.0)
    never.observe(1, 9.0, 1.0)
    assert never.advance(4.0) == float("-inf") and never.advance(6.0) == 9.0


def test_a_slow_input_makes_windows_wait_instead_of_its_tuples_late() -> None:
    engine = WindowEngine(event("tumbling", length=10.0), frozenset({1, 2}), 0.0)
    engine.add("fast", None, 1, 35.0, 0.0)
    engine.add("slow", None, 2, 5.0, 0.0)
    assert engine.tick(1.0) == []  # watermark 5: nothing is due
    assert engine.add("slow again", None, 2, 8.0, 1.5) == []  # not late
    engine.add("slow moves on", None, 2, 40.0, 2.0)
    fired = engine.tick(2.0)
    assert [(w.start, sorted(w.tuples)) for w in fired] == [(0.0, ["slow", "slow again"])]


def test_count_windows_follow_arrival_order() -> None:
    tumbling = WindowEngine(WindowSpec(kind="tumbling", count_length=3), ONE_INPUT, 0.0)
    fired = feed(tumbling, [1, 2, 3, 4, 5, 6, 7])
    assert [w.tuples for w in fired] == [["t1", "t2", "t3"], ["t4", "t5", "t6"]]
    assert fired[1].expired == ["t1", "t2", "t3"]
    assert tumbling.drain_evicted() == ["t1", "t2", "t3", "t4", "t5", "t6"]
    sliding = WindowEngine(
        WindowSpec(kind="sliding", count_length=4, count_interval=2), ONE_INPUT, 0.0
    )
    fired = feed(sliding, [1, 2, 3, 4, 5, 6])
    assert [w.tuples for w in fired] == [
        ["t1", "t2"],
        ["t1", "t2", "t3", "t4"],
        ["t3", "t4", "t5", "t6"],
    ]
    assert fired[2].new == ["t5", "t6"] and fired[2].expired == ["t1", "t2"]
    assert (fired[2].start, fired[2].end) == (3.0, 6.0)


def test_processing_time_windows_use_the_clock() -> None:
    engine = WindowEngine(WindowSpec(kind="tumbling", length=10.0), ONE_INPUT, 100.0)
    for now in (101.0, 105.0, 109.0, 112.0):
        assert engine.add(f"at{now:g}", None, 7, None, now) == []
    assert engine.tick(109.5) == []
    [w] = engine.tick(110.0)
    assert (w.start, w.end, w.tuples) == (100.0, 110.0, ["at101", "at105", "at109"])


def test_tuples_leave_once_no_window_can_hold_them() -> None:
    engine = WindowEngine(event("tumbling", length=10.0), ONE_INPUT, 0.0)
    feed(engine, [1, 2, 15])
    engine.tick(1.0)
    assert engine.drain_evicted() == []  # kept one window more, for the next one's expired
    feed(engine, [35])
    engine.tick(2.0)
    assert sorted(engine.drain_evicted()) == ["t1", "t2"]
    assert engine.held() == 2


def test_a_snapshot_restores_windows_panes_and_watermark() -> None:
    spec = event("session", gap=5.0, key_fields=("user",), allowed_lateness=30.0)
    engine = WindowEngine(spec, ONE_INPUT, 0.0)
    for label, user, ts in [("a1", "a", 1.0), ("a5", "a", 5.0), ("b1", "b", 1.0), ("c7", "c", 7.0)]:
        engine.add(label, (user,), 7, ts, 0.0)
    [b_session] = engine.tick(1.0)  # watermark 7: b's [1, 6) fires; a's [1, 10) waits
    assert (b_session.key, b_session.tuples) == (("b",), ["b1"])
    clocks, slots = engine.take_window_changes(lambda t: {"label": t})
    copy = WindowEngine(spec, ONE_INPUT, 50.0)
    copy.restore_windows(clocks, [s for s in slots if s[1] is not None], lambda d: d["label"], 50.0)
    assert copy.current == engine.current == 7.0
    copy.add("a30", ("a",), 7, 30.0, 51.0)
    fired = copy.tick(52.0)
    assert [(w.key, w.tuples, w.pane) for w in fired] == [
        (("a",), ["a1", "a5"], ON_TIME),
        (("c",), ["c7"], ON_TIME),
    ]
    assert copy.add("b2", ("b",), 7, 2.0, 53.0) == []  # within b's allowed lateness
    [late] = copy.tick(54.0)
    assert (late.key, late.tuples, late.pane) == (("b",), ["b1", "b2"], LATE)
