"""Unit tests for the executor loop, driven one ``turn()`` at a time.

Worker 0 is assembled by :func:`assemble_worker` inside an :class:`InProcessRunner`: its
receiver is a memory inbox the tests put frames into, its waiter records timeouts and
never sleeps, and its clock moves only when a test moves it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from topology import Bolt, Spout, TopologyBuilder
from topology import config as cfg
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.net.backpressure import BACKPRESSURE_REFRESH, BACKPRESSURE_TTL
from topology.runtime.net.codec import BACKPRESSURE, DATA, decode, encode_backpressure, encode_data
from topology.runtime.net.data_token import TOKEN_BYTES, new_token
from topology.runtime.tasks.executor import TUPLES_PER_TURN
from topology.spec import Topology

pytestmark = pytest.mark.timeout(30)


# -- components ---------------------------------------------------------------------------


class Numbers(Spout):
    """Emits 0, 1, 2, ... (at most ``limit``); counts next_tuple calls."""

    outputs = ["n"]

    def __init__(self, limit: int = 10**9) -> None:
        self.limit = limit

    def open(self, conf: Any, context: Any) -> None:
        self.calls = 0
        self.i = 0

    def next_tuple(self) -> None:
        self.calls += 1
        if self.i < self.limit:
            self.emit([self.i])
            self.i += 1


class Recorder(Bolt):
    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[tuple[str, str, list[Any]]] = []
        self.ticks: list[Any] = []

    def execute(self, tup: Any) -> None:
        if tup.is_tick():
            self.ticks.append((tup["freq"], tup.values))
        else:
            self.seen.append((tup.source_component, tup.stream, tup.values))


def topology(grouping: str = "shuffle", bolts: int = 1) -> Topology:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(limit=5))
    getattr(b.set_bolt("record", Recorder(), bolts), f"{grouping}_grouping")("numbers")
    return b.create_topology()


# -- harness --------------------------------------------------------------------------------


class Harness:
    """Worker 0 of ``topo`` (of ``num_workers``) in an :class:`InProcessRunner`: memory
    links, a recording waiter (never sleeps) and a manual clock; acking off unless
    ``conf`` turns it on."""

    def __init__(
        self,
        topo: Topology,
        conf: dict[str, Any] | None = None,
        num_workers: int = 1,
        tick_freqs: dict[str, float] | None = None,
    ) -> None:
        for component, freq in (tick_freqs or {}).items():
            topo.components[component].conf[cfg.TOPOLOGY_TICK_TUPLE_FREQ_SECS] = freq
        conf = {
            cfg.TOPOLOGY_ACKER_EXECUTORS: 0,
            **(conf or {}),
            cfg.TOPOLOGY_WORKERS: num_workers,
        }
        self.turns: list[float] = []
        self.runner = InProcessRunner(
            topo, conf, workers=[0], on_turn=lambda worker, now: self.turns.append(now)
        )
        self.clock = self.runner.clock
        self.assignment = self.runner.assignment
        worker = self.runner.worker(0)
        self.executor = worker.executor
        self.transfer = worker.executor.transfer
        self.spouts = worker.spouts
        self.bolts = worker.bolts
        self.receiver = self.runner.inbox(0)
        self.waiter = self.runner.waiters[0]

    @property
    def now(self) -> float:
        return self.clock()

    def set_time(self, t: float) -> None:
        self.clock.time = t  # type: ignore[attr-defined]

    @property
    def spout(self) -> Numbers:
        return self.spouts[0].instance  # type: ignore[return-value]

    def bolt(self, index: int = 0) -> Recorder:
        return list(self.bolts.values())[index].instance  # type: ignore[return-value]

    def turn(self, n: int = 1) -> None:
        for _ in range(n):
            self.executor.turn()

    def put(self, *frames: bytes) -> None:
        """Deliver ``frames`` to worker 0 as its peers send them (with its data token)."""
        for frame in frames:
            self.receiver.put(frame)


def data_frame(dest: int, src: int, n: int, groups: int = 1, start: int = 0) -> bytes:
    """A DATA frame of ``groups`` groups of ``n`` tuples each, [start], [start+1], ..."""
    out, i = [], start
    for _ in range(groups):
        out.append([dest, src, "default", [[i + k] for k in range(n)], None])
        i += n
    return encode_data(out)


# -- the basic loop -------------------------------------------------------------------------


def test_spout_tuples_reach_the_bolt_in_order() -> None:
    h = Harness(topology())
    h.spouts[0].set_active(True)
    h.turn()  # spout emits (limit 5), local flush
    assert h.spout.i == 5
    assert h.bolt().seen == []
    assert h.executor.inbound_count == 5
    h.turn()  # bolt executes
    assert h.bolt().seen == [("numbers", "default", [i]) for i in range(5)]
    assert h.executor.inbound_count == 0
    assert h.executor.buffered() == 0
    assert list(h.bolts.values())[0].stats.executed == 5
    assert h.turns == [1000.0, 1000.0]  # on_turn gets the clock's time


def test_inactive_spouts_are_not_called_and_the_loop_waits() -> None:
    h = Harness(topology())
    h.turn(3)
    assert h.spout.calls == 0
    assert h.waiter.timeouts == [pytest.approx(50.0)] * 3


def test_busy_turns_do_not_wait() -> None:
    h = Harness(topology())
    h.spouts[0].set_active(True)
    h.turn()
    assert h.waiter.timeouts == []


def test_idle_spout_is_asked_again_after_the_wait_strategy() -> None:
    h = Harness(topology(), {"topology.sleep.spout.wait.strategy.time.ms": 20})
    h.spouts[0].set_active(True)
    h.turn(2)  # emits 5, then idles: its 6th call emits nothing
    assert h.spout.calls == 6
    h.turn()
    assert h.spout.calls == 6  # still within the 20 ms
    assert h.waiter.timeouts[-1] == pytest.approx(20.0)
    h.set_time(h.now + 0.020)
    h.turn()
    assert h.spout.calls == 7


def test_progressive_wait_doubles_while_the_spout_stays_idle_and_restarts_on_emit() -> None:
    h = Harness(
        topology(),
        {
            "topology.spout.wait.strategy": "progressive",
            "topology.sleep.spout.wait.strategy.time.ms": 10,
            "topology.spout.wait.progressive.max.millis": 35,
        },
    )
    spout_task = h.spouts[0]
    spout_task.set_active(True)
    h.turn()  # emits 5 (limit), then the 6th call is empty: waits 10 ms
    waits = []
    for _ in range(4):
        waits.append(round((spout_task.idle_until - h.now) * 1000))
        h.set_time(spout_task.idle_until)
        h.turn()
    assert waits == [10, 20, 35, 35]  # doubled, capped at the maximum
    h.spout.limit += 1  # data again: the emit starts the wait afresh
    h.set_time(spout_task.idle_until)
    h.turn()
    assert spout_task.empty_calls == 1
    assert round((spout_task.idle_until - h.now) * 1000) == 10


def test_remote_data_frames_are_executed() -> None:
    h = Harness(topology())
    (bolt_task,) = h.bolts
    (spout_task,) = [s.task_id for s in h.spouts]
    h.receiver.put(data_frame(bolt_task, spout_task, 3))
    h.turn()
    assert h.bolt().seen == [("numbers", "default", [i]) for i in range(3)]


def test_frames_for_unknown_tasks_are_dropped_and_counted() -> None:
    h = Harness(topology())
    h.receiver.put(data_frame(99, 1, 4))
    h.turn()
    assert h.executor.drops.dropped == 1
    assert "task 99" in (h.executor.drops.last_reason or "")
    assert h.bolt().seen == []
    assert h.executor.inbound_count == 0


def peers_harness() -> Harness:
    """Worker 0 of 3: the spout and one of three record tasks (all grouping), so that
    workers 1 and 2 are peers whose backpressure counts."""
    h = Harness(topology("all", bolts=3), num_workers=3)
    assert h.assignment.worker_tasks[0] == [1, 4]
    return h


def signal(h: Harness, peer: int, on: bool) -> bytes:
    """Backpressure from ``peer`` (:meth:`Harness.put` delivers it as the real one sends
    it: with worker 0's data token)."""
    return encode_backpressure(peer, on)


# -- backpressure -----------------------------------------------------------------------------


def test_peer_backpressure_stops_spouts_until_off() -> None:
    h = peers_harness()
    h.spouts[0].set_active(True)
    h.receiver.put(signal(h, 1, True))
    h.turn()
    assert set(h.executor.peers_throttling) == {1}
    assert not h.executor.may_emit()
    assert h.spout.calls == 0
    h.set_time(h.now + 1.0)
    h.receiver.put(signal(h, 1, True))  # repeated while congested
    h.turn(3)
    assert h.spout.calls == 0  # still held back, however long it takes
    h.receiver.put(signal(h, 1, False))
    h.turn()
    assert set(h.executor.peers_throttling) == set()
    assert h.executor.may_emit()
    assert h.spout.calls > 0
    h.turn()
    assert [v for _, _, v in h.bolt().seen] == [[i] for i in range(5)]


def test_spouts_resume_only_when_every_peer_is_off() -> None:
    h = peers_harness()
    h.spouts[0].set_active(True)
    h.put(signal(h, 1, True), signal(h, 2, True))
    h.turn()
    assert set(h.executor.peers_throttling) == {1, 2}
    h.receiver.put(signal(h, 1, False))
    h.turn()
    assert set(h.executor.peers_throttling) == {2}
    assert h.spout.calls == 0
    h.receiver.put(signal(h, 2, False))
    h.turn()
    assert h.spout.calls > 0


def test_a_signal_not_repeated_lapses_so_a_lost_off_stops_spouts_only_for_seconds() -> None:
    h = peers_harness()
    h.spouts[0].set_active(True)
    h.receiver.put(signal(h, 1, True))  # and never an "off"
    h.turn()
    assert h.spout.calls == 0
    h.set_time(h.now + BACKPRESSURE_TTL - 0.1)
    h.turn()
    assert h.spout.calls == 0
    h.set_time(h.now + 0.2)
    h.turn(2)
    assert set(h.executor.peers_throttling) == set()
    assert h.spout.calls > 0


def test_a_congested_worker_repeats_its_signal_while_congested() -> None:
    h = peers_harness()
    h.runner.link(0, 1).open = False  # worker 1 takes nothing: worker 0 is congested
    h.spouts[0].set_active(True)
    h.turn(2)  # emits (the frame to worker 1 is held back), then signals
    assert h.transfer.congested

    def sent() -> list[Any]:
        messages = [decode(f[TOKEN_BYTES:]) for f in h.runner.inbox(2).frames]
        return [m for m in messages if m[0] == BACKPRESSURE]

    assert sent() == [[BACKPRESSURE, 0, True]]
    assert {f[:TOKEN_BYTES] for f in h.runner.inbox(2).frames} == {h.runner.inbox(2).token}
    h.set_time(h.now + BACKPRESSURE_REFRESH)
    h.turn()
    assert sent() == [[BACKPRESSURE, 0, True]] * 2


def test_forged_backpressure_on_the_data_port_is_dropped_counted_and_does_not_throttle() -> None:
    h = peers_harness()
    h.spouts[0].set_active(True)
    real = h.receiver.token
    near = [real[:-1] + bytes([real[-1] ^ 1]), bytes([real[0] ^ 0x80]) + real[1:]]
    for token in (b"", new_token(), *near, bytes(x ^ 1 for x in real)):
        h.receiver.put(signal(h, 1, True), token)  # no token, a guess, near misses
    h.receiver.put(signal(h, 1, True), h.runner.inbox(1).token)  # another worker's token
    h.put(b"\x94\x01\x01\xc3\x90")  # the old shape, [BACKPRESSURE, 1, True, []]
    h.turn()
    assert h.executor.peers_throttling == {}
    assert h.executor.may_emit()
    assert h.spout.calls > 0
    assert h.executor.drops.by_reason == {"bad-token": 6, "not-a-frame": 1}
    # nor can a forged "off" lift a real "on"
    h.put(signal(h, 2, True))
    h.receiver.put(signal(h, 2, False), new_token())
    h.turn()
    assert set(h.executor.peers_throttling) == {2}
    assert h.executor.drops.by_reason["bad-token"] == 7


def test_time_held_back_and_congested_is_added_up_turn_by_turn() -> None:
    h = peers_harness()
    h.spouts[0].set_active(True)
    h.turn()
    assert h.executor.spouts_held_secs == h.executor.congested_secs == 0.0
    h.put(signal(h, 1, True))
    h.turn()  # throttled from this turn on
    h.set_time(h.now + 1.5)
    h.receiver.put(signal(h, 1, True))
    h.turn()
    assert h.executor.spouts_held_secs == pytest.approx(1.5)
    h.receiver.put(signal(h, 1, False))
    h.set_time(h.now + 0.5)
    h.turn()  # the 0.5 s before this turn were still held; free from here
    h.set_time(h.now + 2.0)
    h.turn()
    assert h.executor.spouts_held_secs == pytest.approx(2.0)
    assert h.executor.congested_secs == 0.0


def test_time_congested_is_added_up_turn_by_turn() -> None:
    h = peers_harness()
    h.runner.link(0, 1).open = False  # worker 1 takes nothing: frames wait for it
    h.spouts[0].set_active(True)
    h.turn(2)
    assert h.transfer.congested
    h.set_time(h.now + 1.0)
    h.turn()
    assert h.executor.congested_secs == pytest.approx(1.0)
    assert h.executor.spouts_held_secs == pytest.approx(1.0)  # a congested worker holds them


def test_time_in_next_tuple_is_added_up_per_spout_task() -> None:
    h = Harness(topology())
    h.spouts[0].set_active(True)
    spout = h.spout
    calls = spout.next_tuple

    def slow() -> None:  # each call takes 10 ms of the harness clock
        h.set_time(h.now + 0.01)
        calls()

    spout.next_tuple = slow  # type: ignore[method-assign]
    h.turn(3)
    assert spout.calls >= 3
    assert h.spouts[0].call_secs == pytest.approx(0.01 * spout.calls)


def test_queued_tuples_are_counted_per_task() -> None:
    h = peers_harness()
    (bolt_task,) = h.bolts
    src = h.spouts[0].task_id
    h.executor.inbound.extend(
        [[bolt_task, src, "default", [[1], [2]], None], [bolt_task, src, "default", [[3]], None]]
    )
    assert h.executor.queued_by_task() == {bolt_task: 3}


def test_bolts_keep_draining_while_spouts_are_held_back() -> None:
    h = peers_harness()
    (bolt_task,) = h.bolts
    h.spouts[0].set_active(True)
    src = h.spouts[0].task_id
    h.put(signal(h, 1, True), data_frame(bolt_task, src, 3))
    h.turn()
    assert h.spout.calls == 0
    assert len(h.bolt().seen) == 3


def test_full_inbound_stops_reading_the_receiver() -> None:
    limit = 100
    h = Harness(topology(), {"topology.executor.receive.buffer.size": limit})
    (bolt_task,) = h.bolts
    h.spouts[0].set_active(True)
    per_group = TUPLES_PER_TURN // 2
    src = h.spouts[0].task_id
    big = data_frame(bolt_task, src, per_group, groups=3)  # 1.5 turns of work
    h.put(big, data_frame(bolt_task, src, 1, start=-1))

    h.turn()
    assert h.receiver.reads == 1  # read one frame, then the inbound was full
    assert len(h.receiver.frames) == 1
    assert len(h.bolt().seen) == TUPLES_PER_TURN
    assert h.executor.inbound_count == per_group >= limit
    assert not h.executor.may_emit()
    assert h.spout.calls == 0  # spouts held back too

    h.turn()
    assert h.receiver.reads == 1  # still full at the start of the turn: socket not read
    assert len(h.bolt().seen) == 3 * per_group
    assert h.executor.inbound_count < limit
    assert h.spout.calls > 0  # room again: spouts run

    h.turn()
    assert h.receiver.frames == deque()  # reading resumed
    assert [-1] in [v for _, _, v in h.bolt().seen]


def test_congestion_holds_spouts_and_signals_peers() -> None:
    # two workers: "numbers" (task 1) and record task 3 on worker 0, record task 2 on worker 1
    h = Harness(topology("all", bolts=2), num_workers=2)
    link = h.runner.link(0, 1)
    link.open = False
    assert h.assignment.worker_tasks == [[1, 3], [2]]
    h.spouts[0].set_active(True)
    h.turn()  # emits 5 to both record tasks; the remote frame cannot be sent
    assert h.transfer.congested
    assert not h.executor.may_emit()
    calls = h.spout.calls
    h.turn(2)
    assert h.spout.calls == calls
    assert h.runner.inbox(1).frames == deque()
    link.open = True
    h.turn()  # retry: the data, then backpressure on, then (drained) backpressure off
    messages = [decode(f[TOKEN_BYTES:]) for f in h.runner.inbox(1).frames]
    assert messages[0][0] == DATA
    assert [v for g in messages[0][1] for v in g[3]] == [[i] for i in range(5)]
    assert messages[1:] == [[BACKPRESSURE, 0, True], [BACKPRESSURE, 0, False]]
    assert not h.transfer.congested
    assert h.executor.may_emit()


# -- ticks ----------------------------------------------------------------------------------


def test_tick_tuples_follow_the_injected_clock() -> None:
    h = Harness(topology(), tick_freqs={"record": 2.0})
    start = h.now
    h.turn()
    assert h.bolt().ticks == []
    assert h.waiter.timeouts[-1] == pytest.approx(50.0)
    h.set_time(start + 1.99)
    h.turn()
    assert h.bolt().ticks == []
    assert h.waiter.timeouts[-1] == pytest.approx(10.0)  # wakes up for the tick
    h.set_time(start + 2.0)
    h.turn()
    assert h.bolt().ticks == [(2.0, [2.0])]
    h.set_time(start + 3.5)
    h.turn()
    assert len(h.bolt().ticks) == 1
    h.set_time(start + 4.0)
    h.turn()
    assert len(h.bolt().ticks) == 2
    (task,) = h.bolts.values()
    assert task.stats.ticks == 2
    assert task.stats.executed == 0  # ticks are not counted as executed tuples
    assert h.bolt().seen == []


def test_late_turn_delivers_one_tick_not_a_burst() -> None:
    h = Harness(topology(), tick_freqs={"record": 1.0})
    start = h.now
    h.set_time(start + 10.0)
    h.turn()
    assert len(h.bolt().ticks) == 1
    h.set_time(start + 10.5)
    h.turn()
    assert len(h.bolt().ticks) == 1
    h.set_time(start + 11.0)
    h.turn()
    assert len(h.bolt().ticks) == 2


def test_ticks_reach_every_task_of_the_component() -> None:
    h = Harness(topology(bolts=3), tick_freqs={"record": 1.0})
    h.set_time(h.now + 1.0)
    h.turn()
    assert [len(b.instance.ticks) for b in h.bolts.values()] == [1, 1, 1]


def test_no_ticks_without_a_frequency() -> None:
    h = Harness(topology())
    h.set_time(h.now + 3600.0)
    h.turn()
    assert h.bolt().ticks == []


def test_stop_ends_the_loop() -> None:
    h = Harness(topology())
    h.executor.stop()
    h.executor.run()  # returns at once
    assert not h.executor.running
    assert h.turns == []
