"""FeederSpout: its fixed list, what is fed to it while it runs, and feed's refusals.

The spout's tasks run in an :class:`InProcessRunner` (copies made as a worker makes them);
the feed between the test's object and those copies is the real ZeroMQ feed on 127.0.0.1.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from topology import Bolt, TopologyBuilder
from topology import config as cfg
from topology.runtime.inprocess import InProcessRunner
from topology.testing import FeedError, FeederSpout

pytestmark = pytest.mark.timeout(60)


class FailOnce(Bolt):
    """Acks every tuple except the first one whose word is ``"bad"``."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[str] = []

    def execute(self, tup: Any) -> None:
        self.seen.append(tup.values[0])
        if tup.values[0] == "bad" and self.seen.count("bad") == 1:
            self.fail(tup)
        else:
            self.ack(tup)


def running(feeder: FeederSpout, spouts: int = 2) -> InProcessRunner:
    builder = TopologyBuilder()
    builder.set_spout("words", feeder, parallelism=spouts)
    builder.set_bolt("sink", FailOnce()).shuffle_grouping("words")
    runner = InProcessRunner(
        builder.create_topology(), {cfg.TOPOLOGY_ACKER_EXECUTORS: 1}, clock=time.monotonic
    )
    runner.activate()
    return runner


def turn_until(runner: InProcessRunner, done: Any, timeout: float = 10.0) -> None:
    """Turn (never sleeping: fed tuples arrive over a socket) until ``done()``."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "condition not met in time"
        runner.turn()


def tracked(runner: InProcessRunner, key: str) -> list[Any]:
    """``key`` ("acked", "failed") of every task of the spout, sorted by str."""
    tasks = runner.assignment.component_tasks["words"]
    found = [runner.instance("words", i).collect_results()[key] for i in range(len(tasks))]
    return sorted((m for r in found for m in r), key=str)


def test_fed_tuples_are_emitted_after_the_fixed_list_with_following_msg_ids() -> None:
    feeder = FeederSpout(["word"], [["a"], ["b"]])
    runner = running(feeder)
    sink = runner.instance("sink")
    turn_until(runner, lambda: len(sink.seen) == 2)
    assert [feeder.feed(["c"]), feeder.feed(("d",))] == [2, 3]
    turn_until(runner, lambda: len(sink.seen) == 4)
    assert sorted(sink.seen) == ["a", "b", "c", "d"]
    turn_until(runner, lambda: tracked(runner, "acked") == [0, 1, 2, 3])
    assert feeder.feed(["e"], msg_id="mine") == "mine"
    turn_until(runner, lambda: "mine" in tracked(runner, "acked"))
    feeder.close()


def test_a_failed_fed_tuple_is_replayed_and_its_reason_recorded() -> None:
    feeder = FeederSpout(["word"], replay_failed=True)
    runner = running(feeder, spouts=1)
    sink = runner.instance("sink")
    msg_id = feeder.feed(["bad"])
    turn_until(runner, lambda: sink.seen == ["bad", "bad"])
    turn_until(runner, lambda: tracked(runner, "acked") == [msg_id])
    spout = runner.instance("words")
    assert spout.collect_results()["failures"] == [[msg_id, "failed"]]
    feeder.close()


def test_feed_refuses_values_that_do_not_fit_the_declared_fields() -> None:
    feeder = FeederSpout(["word", "n"])
    with pytest.raises(FeedError, match=r"fed 1 value\(s\), but the spout declares 2 field"):
        feeder.feed(["a"])
    with pytest.raises(FeedError, match="field 'n' was fed a object that msgpack cannot"):
        feeder.feed(["a", object()])
    with pytest.raises(FeedError, match="takes a list of values, got str"):
        feeder.feed("ab")
    with pytest.raises(FeedError, match="msg_id must be an int or str"):
        feeder.feed(["a", 1], msg_id=[1])


def test_feed_without_a_running_spout_task_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("topology.testing.feeder.FEED_CONNECT_SECS", 0.05)
    feeder = FeederSpout(["word"])
    with pytest.raises(FeedError, match="no spout task connected to the feed"):
        feeder.feed(["a"])
    feeder.close()
