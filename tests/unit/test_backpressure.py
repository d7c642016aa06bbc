"""Unit tests for :class:`PeerSignals`: link tokens, which signals count, what is sent."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from topology import Bolt, Spout, TopologyBuilder
from topology.runtime.backpressure import (
    BACKPRESSURE_REFRESH,
    BACKPRESSURE_TTL,
    MAX_TOKENS,
    TOKEN_REFRESH,
    PeerSignals,
)
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.serialization import decode

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


def signals() -> PeerSignals:
    """Worker 0 with peers 1 and 2; its link tokens are 101 and 102."""
    counter = itertools.count(101)
    return PeerSignals(0, [1, 2], randbits=lambda bits: next(counter))


def test_only_a_signal_quoting_the_links_token_counts() -> None:
    s = signals()
    assert s.tokens == {1: 101, 2: 102}
    assert not s.receive(1, True, [], 10.0)
    assert not s.receive(1, True, [102], 10.0)  # worker 2's link, not worker 1's
    assert not s.receive(3, True, [101], 10.0)  # no link to worker 3
    assert s.throttling == {}
    assert s.receive(1, True, [7, 101], 10.0)  # among tokens others put in its name
    assert s.throttling == {1: 10.0 + BACKPRESSURE_TTL}
    assert not s.receive(1, False, [7], 11.0)  # a forged "off" lifts nothing
    s.expire(10.0 + BACKPRESSURE_TTL - 0.1)
    assert set(s.throttling) == {1}
    s.expire(10.0 + BACKPRESSURE_TTL)
    assert s.throttling == {}


def test_tokens_are_due_at_once_and_then_every_refresh() -> None:
    s = signals()
    assert [(p, decode(f)) for p, f in s.tokens_due(5.0)] == [(1, [2, 0, 101]), (2, [2, 0, 102])]
    assert list(s.tokens_due(5.0 + TOKEN_REFRESH - 0.01)) == []
    assert len(list(s.tokens_due(5.0 + TOKEN_REFRESH))) == 2


def test_signals_quote_the_most_recent_tokens_heard_and_go_to_those_peers_only() -> None:
    s = signals()
    assert list(s.signals_due(1.0, congested=True)) == []  # no token heard yet
    s.heard_token(9, 1)  # no link to worker 9: ignored
    for token in range(MAX_TOKENS + 2):
        s.heard_token(2, token)
    s.heard_token(2, 2)  # heard again: the most recent
    sent = [(p, decode(f)) for p, f in s.signals_due(1.0 + BACKPRESSURE_REFRESH, congested=True)]
    assert sent == [(2, [1, 0, True, [3, 4, 5, 2]])]
    assert list(s.signals_due(1.5 + BACKPRESSURE_REFRESH, congested=True)) == []  # not due
    sent = [decode(f) for _, f in s.signals_due(1.6 + BACKPRESSURE_REFRESH, congested=False)]
    assert sent == [[1, 0, False, [3, 4, 5, 2]]]  # the "off" at once
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


@pytest.mark.xfail(strict=True, reason="issue 40: dropped as unconfirmed-backpressure")
def test_a_relaunched_worker_honours_a_peers_genuine_backpressure() -> None:
    runner = relaunched(1)
    runner.link(0, 2).open = False  # worker 0 is congested: worker 2 stopped reading
    runner.link(1, 0).open = False  # and nothing of worker 1's reaches worker 0 now
    runner.run_until(lambda: 0 in throttled_by(runner, 1), max_turns=30, advance=0.1)
    assert "unconfirmed-backpressure" not in runner.worker(1).executor.drops.by_reason


@pytest.mark.xfail(strict=True, reason="issue 40: it heard no link token, so it sends none")
def test_a_relaunched_workers_genuine_backpressure_is_honoured() -> None:
    runner = relaunched(1)
    runner.link(1, 2).open = False  # the relaunched worker 1 is congested
    runner.link(0, 1).open = False  # and nothing of worker 0's reaches worker 1 now
    runner.run_until(lambda: 1 in throttled_by(runner, 0), max_turns=30, advance=0.1)
    assert "unconfirmed-backpressure" not in runner.worker(0).executor.drops.by_reason
