"""Checkpointed topologies end to end on the in-process runner (real executors, real
frames on memory links, the memory backend, a simulated clock): exactly-once counts across
worker restarts, failed tuples and changed layouts."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from topology import ReplayableSpout, Spout, StatefulBolt, TopologyBuilder, TopologyContext, Tuple
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.net.codec import encode_data
from topology.state.kv import key_owner
from topology.testing import CaptureBolt

pytestmark = pytest.mark.timeout(60)

WORDS = [f"w{random.Random(i).randrange(40)}" for i in range(6000)]
CONF = {
    "topology.workers": 2,
    "topology.state.provider": "memory",
    "topology.state.checkpoint.interval.ms": 50,
}
#: Words that fail once (see FailOnce), shared by every copy of the bolt in this process.
FAILED_ONCE: set[str] = set()


class Words(ReplayableSpout):
    outputs = ["word"]

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.next, self.acked, self.failed = 0, [], []

    def next_tuple(self) -> None:
        if self.next < len(self.words):
            self.emit([self.words[self.next]], msg_id=self.next)
            self.next += 1

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


class StormWords(Spout):
    """No positions: re-emits a msg id's values after ``fail``."""

    outputs = ["word"]

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.next, self.replay, self.acked, self.failed = 0, [], [], []

    def next_tuple(self) -> None:
        if self.replay:
            i = self.replay.pop(0)
        elif self.next < len(self.words):
            i, self.next = self.next, self.next + 1
        else:
            return
        self.emit([self.words[i]], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: Any) -> None:
        self.failed.append((msg_id, reason.kind))
        self.replay.append(msg_id)


class Count(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        word = tup[0]
        self.state.put(word, self.state.get(word, 0) + 1)


class FailOnce(Count):
    """Fails the first tuple of ``word`` it sees in this process (after counting it)."""

    def __init__(self, word: str) -> None:
        self.word = word

    def execute(self, tup: Tuple) -> None:
        super().execute(tup)
        if tup[0] == self.word and self.word not in FAILED_ONCE:
            FAILED_ONCE.add(self.word)
            self.fail(tup)


def word_count(spout: Spout, counter: StatefulBolt | None = None, tasks: int = 3) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", spout)
    builder.set_bolt("count", counter or Count(), tasks).fields_grouping("words", ["word"])
    return builder.create_topology()


def counts(runner: InProcessRunner, tasks: int = 3) -> Counter[str]:
    total: Counter[str] = Counter()
    for i in range(tasks):
        total.update(dict(runner.instance("count", i).state.items()))
    return total


def coordinator_of(runner: InProcessRunner) -> Any:
    [coordinator] = [
        w.checkpoints.coordinator
        for w in runner.workers.values()
        if w.checkpoints is not None and w.checkpoints.coordinator is not None
    ]
    return coordinator


def run(runner: InProcessRunner, turns: int) -> None:
    for _ in range(turns):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()


def settle(runner: InProcessRunner, spout_acked: Any, expected: int, limit: int = 5000) -> None:
    """Turn until the spout has every msg id acked (or fail after ``limit`` turns)."""
    for _ in range(limit):
        if len(spout_acked()) >= expected:
            run(runner, 40)  # a few more checkpoints: nothing may change any more
            return
        run(runner, 1)
    raise AssertionError(f"{len(spout_acked())}/{expected} msg ids acked")


def test_counts_are_exact_and_msg_ids_are_acked_only_once_a_checkpoint_holds_them() -> None:
    runner = InProcessRunner(word_count(Words(WORDS)), CONF)
    runner.activate()
    spout = runner.instance("words")
    while not counts(runner):
        run(runner, 1)
    assert spout.acked == []  # processed, but no checkpoint holds it yet
    settle(runner, lambda: spout.acked, len(WORDS))
    assert counts(runner) == Counter(WORDS)
    assert sorted(spout.acked) == list(range(len(WORDS))) and spout.failed == []
    status = runner.worker(0).checkpoints.status()  # type: ignore[union-attr]
    assert status["coordinator"]["completed"] >= 2 and status["coordinator"]["recoveries"] == 0


@pytest.mark.parametrize("victims", [(0, 1), (1, 1), (0, 0)])
def test_a_worker_restarted_mid_run_twice_leaves_counts_exact(victims: tuple[int, int]) -> None:
    runner = InProcessRunner(word_count(Words(WORDS)), CONF)
    runner.activate()
    for victim in victims:
        run(runner, 15)
        runner.restart_worker(victim)
    spout_task = runner.task("words")
    settle(runner, lambda: range(spout_task.instance.next), len(WORDS))
    assert counts(runner) == Counter(WORDS)
    coordinator = next(
        w.checkpoints.coordinator for w in runner.workers.values() if w.checkpoints.coordinator
    )  # type: ignore[union-attr]
    assert coordinator.completed >= 1


def test_a_storm_spout_replays_what_a_rollback_took_back() -> None:
    """The spout's worker survives; the counting worker restarts: the spout is told ``fail``
    (reason "rollback") for every msg id no checkpoint holds, re-emits them, and the counts
    come out exact."""
    runner = InProcessRunner(word_count(StormWords(WORDS)), CONF)
    runner.activate()
    spout_worker = runner.assignment.worker_of()[runner.task("words").task_id]
    run(runner, 30)
    runner.restart_worker(1 - spout_worker)
    spout = runner.instance("words")
    settle(runner, lambda: spout.acked, len(WORDS))
    assert counts(runner) == Counter(WORDS)
    assert spout.failed and {kind for _, kind in spout.failed} == {"rollback"}
    assert sorted(spout.acked) == list(range(len(WORDS)))


def test_a_failed_tuple_replays_from_the_last_checkpoint_and_counts_stay_exact() -> None:
    FAILED_ONCE.discard("w7")
    runner = InProcessRunner(word_count(Words(WORDS), FailOnce("w7")), CONF)
    runner.activate()
    spout_task = runner.task("words")
    settle(runner, lambda: range(spout_task.instance.next), len(WORDS))
    assert "w7" in FAILED_ONCE
    assert counts(runner) == Counter(WORDS)
    coordinator = next(
        w.checkpoints.coordinator for w in runner.workers.values() if w.checkpoints.coordinator
    )  # type: ignore[union-attr]
    assert coordinator.recoveries == 1


def test_keyed_state_follows_the_fields_grouping_when_the_layout_changes() -> None:
    """Stored with 3 counting tasks on 2 workers, restored into 4 tasks on 3 workers: each
    task gets exactly the keys the fields grouping sends it, so counting goes on exactly."""
    half = len(WORDS) // 2
    first = InProcessRunner(word_count(Words(WORDS[:half])), CONF)
    first.activate()
    settle(first, lambda: first.instance("words").acked, half)
    conf = {**CONF, "topology.workers": 3}
    second = InProcessRunner(word_count(Words(WORDS), tasks=4), conf, state_id=first.state_id)
    second.activate()
    run(second, 5)
    for index in range(4):
        for key in second.instance("count", index).state:
            assert key_owner(key, 4) == index
    assert second.instance("words").next >= half  # the spout went on from its position
    settle(second, lambda: range(second.instance("words").next), len(WORDS))
    assert counts(second, tasks=4) == Counter(WORDS)


class Forward(Count):
    """Counts each word and passes it on, anchored."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        super().execute(tup)
        self.emit([tup[0]], anchors=[tup])
        self.ack(tup)


def test_a_spout_hears_no_commit_before_a_plain_bolt_downstream_has_the_tuple() -> None:
    """A checkpoint completes once every task passed its barrier, plain bolts included: a
    spout's msg id is acked only when what it started has reached the sinks, so a worker
    dying after the commit cannot lose a tuple on its way to one (Flink's rule)."""
    builder = TopologyBuilder()  # names deal the sinks to worker 1, the rest to worker 0
    builder.set_spout("d_words", Words(WORDS[:2000]))
    builder.set_bolt("b_count", Forward()).fields_grouping("d_words", ["word"])
    builder.set_bolt("a_sink", CaptureBolt()).shuffle_grouping("b_count")  # plain bolts
    builder.set_bolt("c_sink", CaptureBolt()).shuffle_grouping("b_count")
    runner = InProcessRunner(builder.create_topology(), CONF)
    worker_of = runner.assignment.worker_of()
    assert {c: worker_of[runner.task(c).task_id] for c in ("a_sink", "c_sink", "d_words")} == {
        "a_sink": 1,
        "c_sink": 1,
        "d_words": 0,
    }
    runner.activate()
    spout, sink = runner.instance("d_words"), runner.instance("a_sink")
    runner.run_until(lambda: len(sink.captured) > 0, advance=0.005)
    reached = len(sink.captured)
    for _ in range(400):  # worker 1 stalls (a long GC, a slow sink) for 2 s: 40 intervals
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.worker(0).executor.turn()
    assert len(spout.acked) <= reached, "a commit acked msg ids the sink never received"
    settle(runner, lambda: spout.acked, 2000)
    assert len(sink.captured) == len(runner.instance("c_sink").captured) == 2000  # a copy each


def test_frames_from_another_epoch_are_dropped_and_counted() -> None:
    runner = InProcessRunner(word_count(Words(WORDS[:10])), CONF)
    runner.activate()
    run(runner, 50)
    worker = runner.worker(1)
    agent = worker.checkpoints
    assert agent is not None and not agent.paused
    count_task = next(t for t in worker.bolts.values() if t.component == "count")
    spout_id = runner.task("words").task_id
    stale = encode_data([[count_task.task_id, spout_id, "default", [["ghost"]], None]], 1)
    runner.inbox(1).put(stale)
    run(runner, 5)
    assert agent.stats.stale_frames >= 1
    assert "ghost" not in counts(runner)


#: A message broker outside the workers: what it delivered and nobody acked yet comes again
#: after a spout restarts (as RabbitMQ or SQS redeliver).
BROKER: dict[str, Any] = {}


class BrokerWords(Spout):
    outputs = ["word"]

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.redeliver = sorted(BROKER["unacked"])
        self.acked: list[int] = []

    def next_tuple(self) -> None:
        if self.redeliver:
            i = self.redeliver.pop(0)
        elif BROKER["next"] < len(self.words):
            i = BROKER["next"]
            BROKER["next"] += 1
            BROKER["unacked"].add(i)
        else:
            return
        self.emit([self.words[i]], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        BROKER["unacked"].discard(msg_id)
        BROKER["acked"] += 1


def test_a_redelivered_msg_id_the_restored_checkpoint_holds_is_not_counted_twice() -> None:
    """The gap between a commit and its acks: the spout's worker dies right after a
    checkpoint completed, before the commit reached it, so the broker redelivers msg ids
    whose effects the checkpoint already holds; they are acked, not processed again."""
    BROKER.update(unacked=set(), next=0, acked=0)
    runner = InProcessRunner(word_count(BrokerWords(WORDS)), CONF)
    runner.activate()
    spout_worker = runner.assignment.worker_of()[runner.task("words").task_id]
    coordinator = next(
        w.checkpoints.coordinator for w in runner.workers.values() if w.checkpoints.coordinator
    )  # type: ignore[union-attr]
    run(runner, 10)
    done = coordinator.completed
    while coordinator.completed == done:  # stop right after a checkpoint completes
        run(runner, 1)
    held_back = set(BROKER["unacked"])
    runner.restart_worker(spout_worker)
    assert held_back  # the commit had not reached the spout: its ids are redelivered
    for _ in range(3000):
        if BROKER["next"] >= len(WORDS) and not BROKER["unacked"]:
            break
        run(runner, 1)
    run(runner, 40)
    assert counts(runner) == Counter(WORDS)


def test_malformed_checkpoint_control_is_dropped_and_the_worker_goes_on() -> None:
    runner = InProcessRunner(word_count(Words(WORDS[:300])), CONF)
    runner.activate()
    run(runner, 20)
    coordinator_task = runner.assignment.component_tasks["__checkpoint"][0]
    epoch = runner.worker(1).checkpoints.epoch  # type: ignore[union-attr]
    forged = [-2, coordinator_task, "__ckpt_rollback", [["not", "ints"]], None]
    runner.inbox(1).put(encode_data([forged], epoch))
    settle(runner, lambda: runner.instance("words").acked, 300)
    assert runner.worker(1).executor.drops.dropped == 1
    assert counts(runner) == Counter(WORDS[:300])
