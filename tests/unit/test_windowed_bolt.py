"""Windowed bolts end to end on the in-process runner (simulated clock): event-time windows
over out-of-order input with exact counts, late tuples on the late stream, acks when tuples
leave their windows, settings checked at build time, and window contents restored from a
checkpoint after a worker restart."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from topology import (
    Bolt,
    Count,
    ReplayableSpout,
    Spout,
    StatefulBolt,
    StatefulWindowedBolt,
    TopologyBuilder,
    TopologyValidationError,
    Tuple,
    Window,
    WindowedBolt,
)
from topology.runtime.inprocess import InProcessRunner

pytestmark = pytest.mark.timeout(60)

#: One event every 0.1 s of event time for 60 s, delivered out of order (up to 4 s early
#: or late), plus a few far behind the watermark, then one event far ahead to close windows.
RNG = random.Random(11)
STAMPS = [round(i * 0.1, 1) for i in range(600)]
SHUFFLED = sorted(STAMPS, key=lambda ts: ts + RNG.uniform(0, 4.0))
LATE = [2.5, 7.5, 31.0]  # sent after the watermark passed their windows
END = 10_000.0


class Events(ReplayableSpout):
    """Replays from a position (its next index), so it also feeds checkpointed topologies."""

    outputs = ["ts", "user"]

    def __init__(self, stamps: list[float], late_after: int, late: list[float]) -> None:
        self.stamps, self.late_after, self.late = stamps, late_after, late

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0
        self.rested = False
        self.acked: list[Any] = []
        self.queue = (
            list(self.stamps[: self.late_after]) + self.late + self.stamps[self.late_after :]
        )

    def next_tuple(self) -> None:
        """Five events, then a rest until the next executor turn (so event time and the
        simulated processing time advance together)."""
        if self.i % 5 == 0 and not self.rested:
            self.rested = True
            return
        self.rested = False
        if self.i < len(self.queue):
            ts = self.queue[self.i]
            self.emit([ts, f"u{int(ts * 10) % 7}"], msg_id=self.i)
            self.i += 1
        elif self.i == len(self.queue):
            for user in range(7):  # moves every task's watermark past every window
                self.emit([END, f"u{user}"], msg_id=self.i + user)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def position(self) -> int:
        return self.i

    def seek(self, position: Any) -> None:
        self.i = position


class CountWindow(WindowedBolt):
    outputs = {"default": ["start", "end", "count", "pane"]}

    def execute(self, window: Window) -> None:
        self.emit([window.start, window.end, len(window.tuples), window.pane])


class Collect(Bolt):
    def prepare(self, conf: Any, context: Any) -> None:
        self.rows: list[tuple[str, list[Any]]] = []

    def execute(self, tup: Tuple) -> None:
        self.rows.append((tup.stream, tup.values))
        self.ack(tup)


def windowed(bolt: WindowedBolt, spout: Spout, sink: Bolt | None = None) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("events", spout)
    builder.set_bolt("windows", bolt, 2).fields_grouping("events", ["user"])
    declarer = builder.set_bolt("sink", sink or Collect())
    declarer.shuffle_grouping("windows")
    if bolt.window_spec.late_stream:
        declarer.shuffle_grouping("windows", bolt.window_spec.late_stream)
    return builder.create_topology()


def run(runner: InProcessRunner, turns: int, step: float = 0.05) -> None:
    for _ in range(turns):
        runner.clock.advance(step)  # type: ignore[attr-defined]
        runner.turn()


def per_window(rows: list[tuple[str, list[Any]]]) -> Counter[tuple[float, float]]:
    counts: Counter[tuple[float, float]] = Counter()
    for start, end, count, _pane in (v for s, v in rows if s == "default"):
        if end < END:
            counts[(start, end)] += count
    return counts


def expected(length: float, step: float) -> Counter[tuple[float, float]]:
    counts: Counter[tuple[float, float]] = Counter()
    for ts in STAMPS:
        start = (ts // step) * step
        while start > ts - length:
            counts[(start, start + length)] += 1
            start -= step
    return counts


@pytest.mark.parametrize(
    ("bolt", "length", "step"),
    [
        (CountWindow().with_tumbling_window(seconds=10), 10.0, 10.0),
        (CountWindow().with_sliding_window(10, 5), 10.0, 5.0),
    ],
    ids=["tumbling", "sliding"],
)
def test_event_time_windows_over_shuffled_input_count_exactly_and_late_tuples_go_aside(
    bolt: WindowedBolt, length: float, step: float
) -> None:
    bolt.with_timestamp_field("ts").with_lag(4.0).with_late_tuple_stream("late")
    bolt.with_watermark_interval(0.5).with_idle_timeout(2.0)
    runner = InProcessRunner(windowed(bolt, Events(SHUFFLED, 450, LATE)), {"topology.workers": 2})
    runner.activate()
    run(runner, 300)
    rows = runner.instance("sink").rows
    assert per_window(rows) == expected(length, step)
    late = sorted(v[0]["ts"] for s, v in rows if s == "late")
    assert late == LATE  # every tuple beyond the watermark, none lost
    assert {v[3] for s, v in rows if s == "default"} == {"on_time"}
    spout = runner.instance("events")
    assert len(spout.acked) == len(SHUFFLED) + len(LATE)  # all but END's left their windows


def test_settings_are_checked_when_the_topology_is_built() -> None:
    with pytest.raises(TopologyValidationError) as err:
        windowed(CountWindow(), Events([], 0, []))
    assert "windowed bolt 'windows': no window" in str(err.value)
    bolt = CountWindow().with_tumbling_window(seconds=5).with_timestamp_field("time")
    with pytest.raises(TopologyValidationError, match="stream 'default' has no field 'time'"):
        windowed(bolt, Events([], 0, []))
    bolt = CountWindow().with_tumbling_window(seconds=5).with_late_tuple_stream("late")
    with pytest.raises(TopologyValidationError, match="needs with_timestamp_field"):
        windowed(bolt, Events([], 0, []))
    with pytest.raises(ValueError, match="seconds must be a number > 0"):
        CountWindow().with_tumbling_window(seconds=0)
    with pytest.raises(TypeError, match="both in seconds or both as Count"):
        CountWindow().with_sliding_window(Count(10), 5)


def test_a_bad_timestamp_is_reported_naming_the_bolt_and_field() -> None:
    class Bad(Spout):
        outputs = ["ts", "user"]

        def next_tuple(self) -> None:
            self.emit(["yesterday", "u"])

    bolt = CountWindow().with_tumbling_window(seconds=5).with_timestamp_field("ts")
    runner = InProcessRunner(windowed(bolt, Bad()), {"topology.workers": 1})
    runner.activate()
    run(runner, 2)
    assert any(
        "windowed bolt 'windows': timestamp field 'ts'" in text and "'yesterday'" in text
        for _, _, text in runner.errors
    )


class Latest(StatefulBolt):
    """Keeps the last count seen per window (idempotent: replays overwrite)."""

    def execute(self, tup: Tuple) -> None:
        start, end, count, _pane = tup.values
        self.state.put([start, end, tup.source_task], count)


def coordinator_completed(runner: InProcessRunner) -> int:
    return max(
        w.checkpoints.coordinator.completed
        for w in runner.workers.values()
        if w.checkpoints is not None and w.checkpoints.coordinator is not None
    )


class StatefulCount(StatefulWindowedBolt, CountWindow):
    pass


def test_window_contents_survive_a_worker_restart_in_a_checkpointed_topology() -> None:
    bolt = StatefulCount().with_tumbling_window(seconds=10).with_timestamp_field("ts")
    bolt.with_lag(4.0).with_watermark_interval(0.5)
    conf = {
        "topology.workers": 2,
        "topology.state.provider": "memory",
        "topology.state.checkpoint.interval.ms": 200,
    }
    runner = InProcessRunner(windowed(bolt, Events(SHUFFLED, 600, []), Latest()), conf)
    runner.activate()
    run(runner, 50)  # about 250 events in, several checkpoints complete
    runner.restart_worker(1)
    run(runner, 30)
    runner.restart_worker(0)
    run(runner, 400)
    assert coordinator_completed(runner) >= 5
    final: Counter[tuple[float, float]] = Counter()
    for (start, end, _task), count in runner.instance("sink").state.items():
        if end < END:
            final[(start, end)] += count
    assert final == expected(10.0, 10.0)


def test_count_windows_in_a_bolt() -> None:
    bolt = CountWindow().with_sliding_window(Count(4), Count(2))
    runner = InProcessRunner(windowed(bolt, Events(STAMPS[:20], 20, [])), {"topology.workers": 1})
    runner.activate()
    run(runner, 50)
    sizes = sorted(v[2] for s, v in runner.instance("sink").rows)
    assert sizes and set(sizes) <= {2, 4}
