"""AsyncBolt (issue 27) on the in-process runner: ordered and unordered emission, every
input acked once, backpressure at capacity, timeouts on the simulated clock, errors to the
error stream, and barriers that wait for the calls in flight.

Calls run on each task's real asyncio thread; the tests release them through gates (a
future per key, completed from the test) and wait on the task's completion event between
executor turns, so nothing sleeps for a fixed time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

import pytest

from topology import Bolt, ReplayableSpout, Spout, StatefulBolt, TopologyBuilder, Tuple
from topology.async_bolt import ERROR_FIELDS, AsyncBolt, AsyncMapBolt, rows_of
from topology.async_calls import AsyncCalls, AsyncCallTimeout
from topology.runtime.inprocess import InProcessRunner

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

pytestmark = pytest.mark.timeout(60)


class Numbers(Spout):
    """Emits 0..limit-1 once each with msg ids; records acks and fails."""

    outputs = ["n"]

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def open(self, conf: Any, context: Any) -> None:
        self.next = 0
        self.acked: list[int] = []
        self.failed: list[tuple[int, str, str | None]] = []

    def next_tuple(self) -> None:
        if self.next < self.limit:
            self.emit([self.next], msg_id=self.next)
            self.next += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind, reason.error))


class Gated(AsyncBolt):
    """Each call waits until the test opens its key's gate with an outcome: a row, rows,
    None, or an exception to raise."""

    outputs = ["n", "doubled"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.started: list[int] = []  # appended on the loop thread
        self.gates: dict[int, asyncio.Future[Any]] = {}  # loop thread only

    def _gate(self, n: int) -> asyncio.Future[Any]:
        gate = self.gates.get(n)
        if gate is None:
            gate = self.gates[n] = asyncio.get_running_loop().create_future()
        return gate

    async def process_async(self, tup: Tuple) -> Any:
        self.started.append(tup["n"])
        outcome = await self._gate(tup["n"])
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def open_gate(self, n: int, outcome: Any = "default") -> None:
        """From the test thread: let call ``n`` finish with ``outcome``."""
        value = [n, 2 * n] if outcome == "default" else outcome
        loop = self._calls._loop  # type: ignore[union-attr]
        loop.call_soon_threadsafe(lambda: self._gate(n).set_result(value))  # type: ignore[union-attr]


class Sink(Bolt):
    """Records what arrives, by stream, and acks it."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[tuple[str, list[Any]]] = []

    def execute(self, tup: Tuple) -> None:
        self.seen.append((tup.stream, list(tup.values)))
        self.ack(tup)

    def on(self, stream: str = "default") -> list[list[Any]]:
        return [values for s, values in self.seen if s == stream]


def runner_for(bolt: AsyncBolt, limit: int, conf: dict[str, Any] | None = None) -> InProcessRunner:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(limit))
    builder.set_bolt("enrich", bolt).shuffle_grouping("numbers")
    sink = builder.set_bolt("sink", Sink()).shuffle_grouping("enrich")
    if bolt.error_stream is not None:
        sink.shuffle_grouping("enrich", bolt.error_stream)
    runner = InProcessRunner(builder.create_topology(), conf)
    runner.activate()
    return runner


def turn_until(runner: InProcessRunner, done: Any, timeout: float = 10.0) -> None:
    """Turn until ``done()``, waiting on the async task's completions between turns."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        runner.turn()
        calls = runner.instance("enrich")._calls
        if calls is not None and calls.in_flight:
            calls.wait(0.01)


def started(runner: InProcessRunner, count: int) -> None:
    turn_until(runner, lambda: len(runner.instance("enrich").started) >= count)


def test_ordered_results_go_out_in_input_order_each_anchored_and_its_input_acked_once() -> None:
    runner = runner_for(Gated(capacity=10), 3)
    started(runner, 3)
    bolt, sink, spout = (
        runner.instance("enrich"),
        runner.instance("sink"),
        runner.instance("numbers"),
    )
    for n in (2, 1):
        bolt.open_gate(n)
    turn_until(runner, lambda: sum(call.done for call in bolt._calls._order) == 2)
    runner.turn(5)
    assert sink.on() == [] and spout.acked == []  # 0 is still in flight: 1 and 2 wait
    bolt.open_gate(0)
    turn_until(runner, lambda: len(spout.acked) == 3)
    assert sink.on() == [[0, 0], [1, 2], [2, 4]]
    assert sorted(spout.acked) == [0, 1, 2] and spout.failed == []


def test_unordered_results_go_out_as_calls_finish() -> None:
    runner = runner_for(Gated(capacity=10, ordered=False), 3)
    started(runner, 3)
    bolt, sink, spout = (
        runner.instance("enrich"),
        runner.instance("sink"),
        runner.instance("numbers"),
    )
    for n in (2, 1, 0):
        bolt.open_gate(n)
        turn_until(runner, lambda n=n: [n, 2 * n] in sink.on())
    assert sink.on() == [[2, 4], [1, 2], [0, 0]]
    turn_until(runner, lambda: len(spout.acked) == 3)
    assert sorted(spout.acked) == [0, 1, 2]


def test_rows_none_and_several_rows_are_emitted_as_returned() -> None:
    runner = runner_for(Gated(), 3)
    started(runner, 3)
    bolt, sink, spout = (
        runner.instance("enrich"),
        runner.instance("sink"),
        runner.instance("numbers"),
    )
    bolt.open_gate(0, None)
    bolt.open_gate(1, [[1, "a"], [1, "b"]])
    bolt.open_gate(2, ())
    turn_until(runner, lambda: len(spout.acked) == 3)
    runner.turn(3)
    assert sink.on() == [[1, "a"], [1, "b"]]


def test_at_capacity_the_task_takes_no_more_input_until_a_call_finishes() -> None:
    runner = runner_for(Gated(capacity=2), 10)
    started(runner, 2)
    runner.turn(20)
    bolt = runner.instance("enrich")
    executor = runner.worker(0).executor
    assert bolt.started == [0, 1] and bolt.async_in_flight() == 2
    assert bolt.async_room() == 0
    assert executor.buffered() >= 10  # 8 parked inputs (still inbound) and 2 calls
    bolt.open_gate(0)
    started(runner, 3)
    runner.turn(20)
    assert bolt.started == [0, 1, 2]  # one finished, exactly one more started
    for n in range(1, 10):
        bolt.open_gate(n)
    spout = runner.instance("numbers")
    turn_until(runner, lambda: len(spout.acked) == 10)
    assert sorted(spout.acked) == list(range(10))
    assert runner.instance("sink").on() == [[n, 2 * n] for n in range(10)]


def test_a_call_past_its_timeout_on_topology_time_fails_its_input() -> None:
    runner = runner_for(Gated(timeout_secs=10.0), 2, FAIL_AT_ONCE)
    started(runner, 2)
    bolt, spout = runner.instance("enrich"), runner.instance("numbers")
    bolt.open_gate(1)
    turn_until(runner, lambda: sum(call.done for call in bolt._calls._order) == 1)
    runner.turn(5)
    assert spout.failed == [] and spout.acked == []  # 1 waits behind 0 (ordered)
    runner.clock.advance(11.0)  # type: ignore[attr-defined]
    turn_until(runner, lambda: spout.failed and spout.acked)
    [(msg_id, kind, error)] = spout.failed
    assert (msg_id, kind) == (0, "failed") and "AsyncCallTimeout" in (error or "")
    assert spout.acked == [1]
    metrics = runner.task("enrich").context.metrics.snapshot()
    assert metrics["async_timeouts"]["value"] == 1 and metrics["async_errors"]["value"] == 0
    assert runner.task("enrich").collector.failed_by == {"error": 1}  # type: ignore[union-attr]


def test_an_exception_fails_its_input_and_goes_to_the_error_stream() -> None:
    runner = runner_for(Gated(error_stream="errors"), 3, FAIL_AT_ONCE)
    started(runner, 3)
    bolt, sink, spout = (
        runner.instance("enrich"),
        runner.instance("sink"),
        runner.instance("numbers"),
    )
    bolt.open_gate(0)
    bolt.open_gate(1, ValueError("no such user"))
    bolt.open_gate(2)
    turn_until(runner, lambda: len(spout.acked) + len(spout.failed) == 3)
    runner.turn(3)
    assert sorted(spout.acked) == [0, 2]
    assert [(m, k) for m, k, _ in spout.failed] == [(1, "failed")]
    assert sink.on("errors") == [["ValueError: no such user", [1]]]
    assert sink.on() == [[0, 0], [2, 4]]
    assert runner.errors == []  # handled on the error stream: not reported as well
    metrics = runner.task("enrich").context.metrics.snapshot()
    assert metrics["async_errors"]["value"] == 1


def test_without_an_error_stream_the_error_is_reported_as_the_components() -> None:
    runner = runner_for(Gated(), 1, FAIL_AT_ONCE)
    started(runner, 1)
    runner.instance("enrich").open_gate(0, KeyError("gone"))
    spout = runner.instance("numbers")
    turn_until(runner, lambda: spout.failed)
    assert [c for c, _, _ in runner.errors] == ["enrich"] and "gone" in runner.errors[0][2]


def test_a_result_that_is_no_row_fails_its_input() -> None:
    runner = runner_for(Gated(), 1, FAIL_AT_ONCE)
    started(runner, 1)
    runner.instance("enrich").open_gate(0, "not a list")
    spout = runner.instance("numbers")
    turn_until(runner, lambda: spout.failed)
    assert "TypeError" in (spout.failed[0][2] or "")


class Quick(AsyncBolt):
    outputs = ["n"]

    async def process_async(self, tup: Tuple) -> Any:
        await asyncio.sleep(0.001 * (tup["n"] % 3))
        return [tup["n"]]


@pytest.mark.parametrize("ordered", [True, False])
def test_every_input_is_acked_exactly_once_through_many_capacity_waits(ordered: bool) -> None:
    runner = runner_for(Quick(capacity=7, ordered=ordered), 300)
    spout = runner.instance("numbers")
    turn_until(runner, lambda: len(spout.acked) >= 300, timeout=30)
    runner.turn(10)
    assert sorted(spout.acked) == list(range(300)) and spout.failed == []
    seen = [v[0] for v in runner.instance("sink").on()]
    assert sorted(seen) == list(range(300))
    if ordered:
        assert seen == list(range(300))
    assert runner.worker(0).executor.buffered() == 0


def test_async_map_bolt_runs_a_coroutine_function() -> None:
    async def lookup(tup: Tuple) -> list[Any]:
        await asyncio.sleep(0)
        return [tup["n"], f"user-{tup['n']}"]

    bolt = AsyncMapBolt(lookup, ["n", "name"], capacity=3, error_stream="bad")
    runner = runner_for(bolt, 5)
    spout = runner.instance("numbers")
    turn_until(runner, lambda: len(spout.acked) == 5)
    runner.turn(3)
    assert runner.instance("sink").on() == [[n, f"user-{n}"] for n in range(5)]
    streams = runner.topology.components["enrich"].streams
    assert streams["bad"].fields == ERROR_FIELDS and streams["default"].fields == ("n", "name")


def test_settings_are_checked_and_rows_are_read_as_documented() -> None:
    with pytest.raises(ValueError, match="capacity"):
        Gated(capacity=0)
    with pytest.raises(ValueError, match="timeout_secs"):
        Gated(timeout_secs=0)
    assert rows_of(None) == [] and rows_of([]) == []
    assert rows_of([1, "a"]) == [[1, "a"]]
    assert rows_of([[1], [2]]) == [[1], [2]]
    assert rows_of([[["x", "y"]]]) == [[["x", "y"]]]  # one row, its one value a list
    with pytest.raises(TypeError):
        rows_of({"n": 1})


def test_calls_engine_times_out_cancels_and_drops() -> None:
    calls = AsyncCalls("t", capacity=2, ordered=False, timeout_secs=1.0)
    cancelled: list[int] = []
    running: list[int] = []
    both_running = threading.Event()

    async def forever(n: int) -> None:
        running.append(n)
        if len(running) == 2:
            both_running.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise

    calls.submit("a", forever(1), now=0.0)
    calls.submit("b", forever(2), now=0.5)
    assert calls.room() == 0 and both_running.wait(5)
    with pytest.raises(RuntimeError, match="in flight"):
        calls.submit("c", forever(3), now=0.5)
    [(key, result, error)] = calls.ready(now=1.2)
    assert key == "a" and result is None and isinstance(error, AsyncCallTimeout)
    assert calls.in_flight == 1 and calls.next_deadline() == 1.5
    assert calls.drop() == 1 and calls.in_flight == 0 and calls.ready(now=9.0) == []
    deadline = time.monotonic() + 5
    while sorted(cancelled) != [1, 2] and time.monotonic() < deadline:
        calls.wait(0.01)
    assert sorted(cancelled) == [1, 2]
    calls.close()


# -- checkpoints --------------------------------------------------------------------------


class Positions(ReplayableSpout):
    """0..limit-1, slowly; remembers its position at every checkpoint."""

    outputs = ["n"]

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def open(self, conf: Any, context: Any) -> None:
        self.next = 0
        self.positions: list[int] = []

    def next_tuple(self) -> None:
        self.pause = not getattr(self, "pause", False)
        if self.next < self.limit and not self.pause:  # every other call: ~1 per turn
            self.emit([self.next])
            self.next += 1

    def position(self) -> int:
        self.positions.append(self.next)
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position


class Slow(AsyncBolt):
    outputs = ["n"]
    capacity = 4
    timeout_secs = 3600.0  # simulated time runs far ahead of the real calls here

    async def process_async(self, tup: Tuple) -> Any:
        await asyncio.sleep(0.02)  # long enough for barriers to come while calls run
        return [tup["n"]]


class Seen(StatefulBolt):
    """Counts what arrives; at each checkpoint, remembers what it had counted."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.at_checkpoints: list[set[int]] = []

    def execute(self, tup: Tuple) -> None:
        self.state.put(tup["n"], self.state.get(tup["n"], 0) + 1)

    def pre_checkpoint(self, checkpoint: int) -> None:
        self.at_checkpoints.append({k for k, _ in self.state.items()})


def test_a_barrier_passes_an_async_task_only_after_every_call_before_it_was_emitted() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Positions(150))
    builder.set_bolt("enrich", Slow()).shuffle_grouping("numbers")
    builder.set_bolt("seen", Seen()).shuffle_grouping("enrich")
    conf = {"topology.state.provider": "memory", "topology.state.checkpoint.interval.ms": 20}
    runner = InProcessRunner(builder.create_topology(), conf)
    runner.activate()
    seen, spout = runner.instance("seen"), runner.instance("numbers")
    deadline = time.monotonic() + 30
    while len(seen.at_checkpoints) < 5 or Counter(dict(seen.state.items())).total() < 150:
        assert time.monotonic() < deadline, "checkpoints or counts did not come"
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()
        calls = runner.instance("enrich")._calls
        if calls is not None and calls.in_flight:
            calls.wait(0.001)
    # positions[0] is read at the start (where a rollback to no checkpoint goes)
    checked = list(zip(spout.positions[1:], seen.at_checkpoints, strict=False))
    assert any(0 < position < 150 for position, _ in checked)  # taken mid-stream
    for position, counted in checked:
        assert counted == set(range(position))
