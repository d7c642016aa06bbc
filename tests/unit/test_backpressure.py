"""Backpressure between workers: :class:`PeerSignals` (which signals hold the spouts and
for how long, what is sent), and signals to and from a relaunched worker on an
:class:`InProcessRunner`, which count at once (issue 40: they were dropped as
``unconfirmed-backpressure`` when link tokens had to travel on congested links)."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from topology import Bolt, Spout, TopologyBuilder
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.net.backpressure import BACKPRESSURE_REFRESH, BACKPRESSURE_TTL, PeerSignals
from topology.runtime.net.codec import decode

pytestmark = pytest.mark.timeout(30)


class Endless(Spout):
    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        self.i += 1
        self.emit([self.i])


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        pass


def test_a_signal_holds_the_spouts_until_its_off_or_until_it_lapses() -> None:
    s = PeerSignals(0, [1, 2])
    s.receive(1, True, 10.0)  # the door let it in: it came with this worker's token
    assert s.throttling == {1: 10.0 + BACKPRESSURE_TTL}
    s.receive(1, True, 11.0)  # repeated: lapses later
    s.expire(11.0 + BACKPRESSURE_TTL - 0.1)
    assert set(s.throttling) == {1}
    s.expire(11.0 + BACKPRESSURE_TTL)
    assert s.throttling == {}
    s.receive(2, True, 20.0)
    s.receive(2, False, 20.5)
    assert s.throttling == {}


def test_signals_go_to_every_peer_on_a_change_and_on_then_every_refresh() -> None:
    s = PeerSignals(0, [1, 2])
    sent = [(p, decode(f)) for p, f in s.signals_due(1.0, congested=True)]
    assert sent == [(1, [1, 0, True]), (2, [1, 0, True])]
    assert list(s.signals_due(1.0 + BACKPRESSURE_REFRESH - 0.01, congested=True)) == []
    assert len(list(s.signals_due(1.0 + BACKPRESSURE_REFRESH, congested=True))) == 2
    sent = [decode(f) for _, f in s.signals_due(1.1 + BACKPRESSURE_REFRESH, congested=False)]
    assert sent == [[1, 0, False]] * 2  # the "off" at once
    assert list(s.signals_due(9.0, congested=False)) == []  # nothing while not congested


# -- after a worker relaunch (issue 40) ----------------------------------------------------


def relaunched(victim: int) -> InProcessRunner:
    """Three workers, each with a spout and a bolt (shuffle), run until they have heard
    each other; then worker ``victim`` is relaunched (a fresh process, as after ``kill -9``
    and a relaunch)."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Endless(), parallelism=3)
    builder.set_bolt("sink", Sink(), parallelism=3).shuffle_grouping("numbers")
    runner = InProcessRunner(
        builder.create_topology(),
        {"topology.workers": 3, "topology.acker.executors": 0},
    )
    runner.activate()
    for _ in range(30):  # 3 s: every worker has heard from every other
        runner.clock.advance(0.1)  # type: ignore[attr-defined]
        runner.turn()
    runner.restart_worker(victim)
    return runner


def throttled_by(runner: InProcessRunner, worker: int) -> set[int]:
    return set(runner.worker(worker).executor.signals.throttling)


def test_a_relaunched_worker_honours_a_peers_genuine_backpressure() -> None:
    runner = relaunched(1)
    runner.link(0, 2).open = False  # worker 0 is congested: worker 2 stopped reading
    runner.link(1, 0).open = False  # and nothing of worker 1's reaches worker 0 now
    runner.run_until(lambda: 0 in throttled_by(runner, 1), max_turns=30, advance=0.1)
    assert runner.worker(1).executor.drops.by_reason == {}


def test_a_relaunched_workers_genuine_backpressure_is_honoured() -> None:
    runner = relaunched(1)
    runner.link(1, 2).open = False  # the relaunched worker 1 is congested
    runner.link(0, 1).open = False  # and nothing of worker 0's reaches worker 1 now
    runner.run_until(lambda: 1 in throttled_by(runner, 0), max_turns=30, advance=0.1)
    assert runner.worker(0).executor.drops.by_reason == {}


class Seen(Bolt):
    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[int] = []

    def execute(self, tup: Any) -> None:
        self.seen.append(tup.values[0])


def test_frames_for_a_peer_whose_token_is_not_known_wait_and_all_arrive_in_order() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Endless())
    builder.set_bolt("seen", Seen()).shuffle_grouping("numbers")
    runner = InProcessRunner(
        builder.create_topology(), {"topology.workers": 2, "topology.acker.executors": 0}
    )
    worker_of = runner.assignment.worker_of()
    spouts = worker_of[runner.assignment.component_tasks["numbers"][0]]
    bolts = worker_of[runner.assignment.component_tasks["seen"][0]]
    assert spouts != bolts
    runner.activate()
    runner.run_until(lambda: len(runner.instance("seen").seen) > 100, advance=0.01)
    runner.restart_worker(bolts, announce=False)  # its peers do not know its token yet
    spout, executor = runner.instance("numbers"), runner.worker(spouts).executor
    at_restart = spout.i
    runner.run_until(lambda: executor.transfer.congested, advance=0.01)
    emitted = spout.i
    for _ in range(50):
        runner.clock.advance(0.1)  # type: ignore[attr-defined]
        runner.turn()
        assert not executor.may_emit() and spout.i == emitted  # held, as for a full peer
    assert runner.instance("seen").seen == [] and runner.inbox(bolts).frames == deque()
    runner.announce(bolts)
    runner.run_until(lambda: spout.i > emitted + 100, advance=0.01)
    runner.activate(False)
    runner.run_until(lambda: runner.instance("seen").seen[-1:] == [spout.i], advance=0.01)
    seen = runner.instance("seen").seen
    assert seen[0] <= at_restart + 1 and seen == list(range(seen[0], spout.i + 1))
    assert runner.worker(bolts).executor.drops.by_reason == {}
