"""Simulated time: topology timers follow their own clock, the executor loop real time.

An :class:`InProcessRunner` with two manual clocks — ``clock`` pacing the loop, ``timers``
the topology time a LocalCluster with ``simulated_time=True`` moves — shows which time
source each timer reads; :class:`WorkerTime` and :func:`time_steps` are the pure parts of
``LocalCluster.advance_time``.
"""

from __future__ import annotations

from typing import Any

import pytest

from topology import Bolt, Spout, TopologyBuilder, WindowedBolt
from topology import config as cfg
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.simulated_time import ManualClock, WorkerTime, time_steps
from topology.spec import Topology

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 10.0


class OneTracked(Spout):
    """Emits one tracked tuple (msg_id 7); records fail reasons and counts calls."""

    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.calls = 0
        self.failed: list[tuple[Any, str]] = []

    def next_tuple(self) -> None:
        self.calls += 1
        if self.calls == 1:
            self.emit([1], msg_id=7)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind))


class Hold(Bolt):
    """Never acks; counts ticks."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.ticks = 0
        self.seen = 0

    def execute(self, tup: Any) -> None:
        if tup.is_tick():
            self.ticks += 1
        else:
            self.seen += 1


def two_clock_runner(
    tick_secs: float | None = None, on_turn: Any = None
) -> tuple[InProcessRunner, ManualClock, ManualClock]:
    b = TopologyBuilder()
    b.set_spout("spout", OneTracked())
    bolt = b.set_bolt("hold", Hold()).shuffle_grouping("spout")
    if tick_secs is not None:
        bolt.add_configuration(cfg.TOPOLOGY_TICK_TUPLE_FREQ_SECS, tick_secs)
    topology: Topology = b.create_topology()
    loop, timers = ManualClock(1000.0), ManualClock(0.0)
    conf = {cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS: TIMEOUT, cfg.TOPOLOGY_ACKER_EXECUTORS: 1}
    runner = InProcessRunner(topology, conf, clock=loop, timers=timers, on_turn=on_turn)
    runner.activate()
    return runner, loop, timers


def test_ticks_follow_topology_time_not_the_loop_clock() -> None:
    runner, loop, timers = two_clock_runner(tick_secs=10.0)
    hold = runner.instance("hold")
    loop.advance(1000.0)
    runner.turn(3)
    assert hold.ticks == 0  # real time passing fires no simulated tick
    for expected in (1, 2, 3):
        timers.advance(10.0)
        runner.turn()
        assert hold.ticks == expected
    timers.advance(9.9)
    runner.turn()
    assert hold.ticks == 3


def test_message_timeout_follows_topology_time_only() -> None:
    runner, loop, timers = two_clock_runner()
    spout, hold = runner.instance("spout"), runner.instance("hold")
    runner.run_until(lambda: hold.seen == 1)
    loop.advance(10 * TIMEOUT)
    runner.turn(3)
    assert spout.failed == []  # a real-time stall times nothing out
    timers.advance(TIMEOUT - 0.1)
    runner.turn(2)
    assert spout.failed == []
    timers.advance(TIMEOUT / 2 + 0.2)  # rotating buckets: a tree lives 1x-1.5x the timeout
    runner.turn(2)
    assert spout.failed == [(7, "timeout")]


def test_spout_waits_and_flushes_stay_on_the_loop_clock() -> None:
    runner, loop, _timers = two_clock_runner()
    spout = runner.instance("spout")
    runner.turn()
    calls = spout.calls
    runner.turn(5)
    assert spout.calls == calls  # waiting (spout wait strategy) on the loop clock
    loop.advance(1.0)  # frozen simulated time does not hold the spout back
    runner.turn()
    assert spout.calls == calls + 1


def test_the_loop_does_not_sleep_after_simulated_time_moved() -> None:
    armed: list[ManualClock] = []

    def command_during_turn(worker: int, now: float) -> None:
        if armed:  # as a "time" command handled in the turn's control step
            armed.pop().advance(5.0)

    runner, _loop, timers = two_clock_runner(tick_secs=60.0, on_turn=command_during_turn)
    waiter = runner.waiters[0]
    runner.turn(3)  # the spout's one tuple is out: idle turns from here
    assert waiter.timeouts[-1] > 0.0
    armed.append(timers)
    runner.turn()
    assert waiter.timeouts[-1] == 0.0  # straight on to run the timers at the new time
    runner.turn()
    assert waiter.timeouts[-1] > 0.0


def test_worker_time_confirms_an_advance_once_its_timers_ran_there() -> None:
    time = WorkerTime(3.0)
    time.advance_to(5.0, request=1)
    assert time.clock() == 5.0
    assert time.confirmed(3.0) == []  # the executor has not run a turn at 5.0 yet
    assert time.confirmed(5.0) == [1]
    assert time.confirmed(5.0) == []
    time.advance_to(4.0, request=2)  # a resent, older request: the clock never goes back
    assert time.clock() == 5.0
    assert time.confirmed(5.0) == [2]


def test_time_steps_end_exactly_where_asked() -> None:
    assert time_steps(0.0, 30.0, 10.0) == [10.0, 20.0, 30.0]
    assert time_steps(5.0, 2.5, 1.0) == [6.0, 7.0, 7.5]
    assert time_steps(1.0, 0.0, 1.0) == []
    assert time_steps(0.0, 0.3, 0.1)[-1] == 0.3
    with pytest.raises(ValueError, match="forward only"):
        time_steps(0.0, -1.0, 1.0)
    with pytest.raises(ValueError, match="step"):
        time_steps(0.0, 1.0, 0.0)


class Sizes(WindowedBolt):
    """Records the size of every window fired."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.fired: list[int] = []

    def execute(self, window: Any) -> None:  # type: ignore[override]
        self.fired.append(len(window.tuples))


def test_processing_time_windows_fire_on_topology_time() -> None:
    b = TopologyBuilder()
    b.set_spout("spout", OneTracked())
    b.set_bolt("sizes", Sizes().with_tumbling_window(seconds=10)).shuffle_grouping("spout")
    loop, timers = ManualClock(1000.0), ManualClock(0.0)
    runner = InProcessRunner(
        b.create_topology(), {cfg.TOPOLOGY_ACKER_EXECUTORS: 0}, clock=loop, timers=timers
    )
    runner.activate()
    runner.turn(3)
    sizes = runner.instance("sizes")
    loop.advance(100.0)
    runner.turn(3)
    assert sizes.fired == []  # real time passing closes no simulated window
    timers.advance(5.0)  # timers fire (every watermark interval) on simulated time ...
    runner.turn(2)
    assert sizes.fired == []  # ... and the window's end is simulated time too
    timers.advance(5.0)
    runner.turn(2)
    assert sizes.fired == [1]
