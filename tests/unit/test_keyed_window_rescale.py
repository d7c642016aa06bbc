"""Keyed windows through restarts and rescales on the in-process runner: a windowed bolt
keyed by the field its input is grouped by keeps its windows in the component's scope, one
entry per key, and after 2 -> 4 -> 1 tasks (tuples flowing, windows open at each change)
every window fires with exactly its tuples (real executors, memory backend, simulated
clock)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from topology import ReplayableSpout, StatefulBolt, TopologyBuilder, Tuple, Window, WindowedBolt
from topology.runtime.inprocess import InProcessRunner
from topology.state.backends.memory import _OPEN

pytestmark = pytest.mark.timeout(120)

CONF = {
    "topology.workers": 2,
    "topology.state.provider": "memory",
    "topology.state.checkpoint.interval.ms": 50,
}
USERS = [f"u{n}" for n in range(24)]
RNG = random.Random(29)
#: (ts, user): 0.05 s of event time apart, up to 1 s out of order.
EVENTS = sorted(
    ((round(i * 0.05, 2), USERS[RNG.randrange(len(USERS))]) for i in range(1200)),
    key=lambda e: e[0] + RNG.uniform(0, 1.0),
)
END = 10_000.0
CLOSERS = 64  # far-future tuples of many keys: every task's watermark passes every window


class Events(ReplayableSpout):
    """Emits EVENTS up to ``limit`` (then, with no limit, the closers); position: next."""

    outputs = ["ts", "user"]

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit

    def open(self, conf: Any, context: Any) -> None:
        self.next = 0

    def next_tuple(self) -> None:
        end = len(EVENTS) if self.limit is None else self.limit
        if self.next < end:
            self.emit(list(EVENTS[self.next]))
            self.next += 1
        elif self.limit is None and self.next == end:
            for n in range(CLOSERS):
                self.emit([END, f"closer{n}"])
            self.next += 1

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position


class PerUser(WindowedBolt):
    outputs = ["start", "end", "user", "count"]

    def execute(self, window: Window) -> None:
        [user] = window.key
        self.emit([window.start, window.end, user, len(window.tuples)])


class Latest(StatefulBolt):
    """The count each window fired with (idempotent: a replayed firing overwrites)."""

    def execute(self, tup: Tuple) -> None:
        start, end, user, count = tup.values
        if end < END:
            self.state.put([start, end, user], count)


def topology(windows: int, limit: int | None) -> Any:
    bolt = PerUser().with_tumbling_window(seconds=5).with_timestamp_field("ts").with_key("user")
    bolt.with_lag(1.5).with_watermark_interval(0.05)
    builder = TopologyBuilder()
    builder.set_spout("events", Events(limit))
    builder.set_bolt("windows", bolt, windows).fields_grouping("events", ["user"])
    builder.set_bolt("sink", Latest()).shuffle_grouping("windows")
    return builder.create_topology()


def run_until(runner: InProcessRunner, read: int) -> None:
    """Turn until the spout read ``read`` tuples, then through a few checkpoints."""
    for _ in range(20_000):
        if runner.instance("events").next >= read:
            break
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()
    for _ in range(80):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()


def expected(upto: int | None) -> dict[tuple[float, float, str], int]:
    counts: Counter[tuple[float, float, str]] = Counter()
    for ts, user in EVENTS[:upto]:
        start = (ts // 5.0) * 5.0
        counts[(start, start + 5.0, user)] += 1
    return dict(counts)


def test_keyed_windows_fire_exactly_through_rescales_2_4_1() -> None:
    first = InProcessRunner(topology(2, 500), CONF)
    first.activate()
    run_until(first, 500)
    scopes = {scope for scope, _ in _OPEN[first.state_id]._committed}
    assert {"windows/windows", "windows#0/windows", "windows#1/windows"} <= scopes
    second = InProcessRunner(topology(4, 900), CONF, state_id=first.state_id)
    second.activate()
    run_until(second, 900)
    third = InProcessRunner(topology(1, None), CONF, state_id=first.state_id)
    third.activate()
    run_until(third, len(EVENTS) + 1)
    fired = dict(third.instance("sink").state.items())
    assert fired == {tuple_key: n for tuple_key, n in expected(None).items()}
