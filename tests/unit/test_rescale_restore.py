"""Restoring a checkpoint into other task counts (a rescale) on the in-process runner: keyed
state moves by key group, spout positions are reassigned to the new tasks, and counts stay
exact through 2 -> 4 -> 1 (real executors, memory backend, simulated clock)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from topology import ReplayableSpout, StatefulBolt, TopologyBuilder, TopologyContext, Tuple
from topology.runtime.inprocess import InProcessRunner
from topology.state.kv import key_owner

pytestmark = pytest.mark.timeout(120)

CONF = {
    "topology.workers": 2,
    "topology.state.provider": "memory",
    "topology.state.checkpoint.interval.ms": 50,
}
PARTITIONS = {f"p{n}": [f"w{(n * 7 + i) % 23}" for i in range(300 + 40 * n)] for n in range(6)}
ALL_WORDS = Counter(w for words in PARTITIONS.values() for w in words)


class PartitionedWords(ReplayableSpout):
    """Reads the partitions whose number falls to its task; position {partition: next}.
    ``limit`` caps how far each partition is read (a first deployment reads part of it)."""

    outputs = ["word"]

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit

    def open(self, conf: Any, context: TopologyContext) -> None:
        index, tasks = context.task_index, len(context.component_tasks())
        mine = [p for p in sorted(PARTITIONS) if int(p[1:]) % tasks == index]
        self.next = {p: 0 for p in mine}

    def next_tuple(self) -> None:
        for partition, at in self.next.items():
            words = PARTITIONS[partition]
            end = len(words) if self.limit is None else min(self.limit, len(words))
            if at < end:
                self.emit([words[at]])
                self.next[partition] = at + 1
                return

    def position(self) -> dict[str, int]:
        return dict(self.next)

    def seek(self, position: Any) -> None:
        for partition, at in position.items():
            if partition in self.next:
                self.next[partition] = at

    def done(self) -> int:
        return sum(self.next.values())


class Count(StatefulBolt):
    outputs = ["word", "count"]

    def execute(self, tup: Tuple) -> None:
        word = tup["word"]
        self.state.put(word, self.state.get(word, 0) + 1)


def topology(spouts: int, counters: int, limit: int | None = None) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", PartitionedWords(limit), spouts)
    builder.set_bolt("count", Count(), counters).fields_grouping("words", ["word"])
    return builder.create_topology()


def turn(runner: InProcessRunner, turns: int) -> None:
    for _ in range(turns):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()


def read(runner: InProcessRunner, spouts: int) -> int:
    return sum(runner.instance("words", i).done() for i in range(spouts))


def run_until_read(runner: InProcessRunner, spouts: int, expected: int) -> None:
    """Turn until the spouts read ``expected`` records, then through a few checkpoints."""
    for _ in range(20_000):
        if read(runner, spouts) >= expected:
            turn(runner, 60)
            return
        turn(runner, 1)
    raise AssertionError(f"{read(runner, spouts)}/{expected} records read")


def counts(runner: InProcessRunner, tasks: int) -> Counter[str]:
    total: Counter[str] = Counter()
    for index in range(tasks):
        state = runner.instance("count", index).state
        for key, value in state.items():
            assert key_owner(key, tasks) == index  # each task holds only its key groups
            total[key] += value
    return total


def test_counts_stay_exact_through_rescales_of_spout_and_bolt_2_4_1() -> None:
    first = InProcessRunner(topology(2, 2, limit=100), CONF)
    first.activate()
    run_until_read(first, 2, 600)
    assert counts(first, 2) == Counter(w for words in PARTITIONS.values() for w in words[:100])
    # rescaled: 3 spout tasks and 4 counters, from the last complete checkpoint
    second = InProcessRunner(topology(3, 4, limit=200), CONF, state_id=first.state_id)
    second.activate()
    run_until_read(second, 3, 1200)
    assert counts(second, 4) == Counter(w for words in PARTITIONS.values() for w in words[:200])
    # and down to one of each, reading everything
    third = InProcessRunner(topology(1, 1), CONF, state_id=first.state_id)
    third.activate()
    run_until_read(third, 1, sum(ALL_WORDS.values()))
    assert counts(third, 1) == ALL_WORDS


class Numbers(ReplayableSpout):
    """A position that is one number: it cannot be split without knowing the source."""

    outputs = ["word"]

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.next = 0

    def next_tuple(self) -> None:
        if self.next < self.limit:
            self.emit([f"w{self.next % 5}"])
            self.next += 1

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position


def numbers(spouts: int, limit: int = 50) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(limit), spouts)
    builder.set_bolt("count", Count(), 2).fields_grouping("numbers", ["word"])
    return builder.create_topology()


def test_a_spout_whose_position_cannot_be_split_is_held_until_rebalanced_back() -> None:
    first = InProcessRunner(numbers(1, limit=30), CONF)
    first.activate()
    turn(first, 400)
    assert counts(first, 2) == Counter(f"w{i % 5}" for i in range(30))
    done = Counter(f"w{i % 5}" for i in range(50))
    # two tasks: the position (one number) cannot be shared; held, nothing emitted twice
    second = InProcessRunner(numbers(2), CONF, state_id=first.state_id)
    second.activate()
    turn(second, 400)
    errors = " ".join(text for component, _, text in second.errors if component == "numbers")
    assert "Numbers was rescaled" in errors and "override rescale_position" in errors
    assert "rebalanced back to 1 tasks" in errors and "-e numbers=1" in errors
    assert counts(second, 2) == Counter(f"w{i % 5}" for i in range(30))  # nothing read
    # and back to one task: it resumes from its own position 30, reading the rest once
    third = InProcessRunner(numbers(1), CONF, state_id=first.state_id)
    third.activate()
    turn(third, 400)
    assert third.instance("numbers").next == 50
    assert counts(third, 2) == done
    assert not [text for component, _, text in third.errors if component == "numbers"]


def test_a_keyed_component_with_more_tasks_than_key_groups_is_refused_at_submit() -> None:
    from topology import config as cfg
    from topology.deploy.limits import check_components
    from topology.errors import TopologyValidationError

    conf = cfg.resolve({"topology.state.max.parallelism": 4}, where="test")
    check_components(topology(1, 4), conf)  # as many tasks as key groups: fine
    with pytest.raises(TopologyValidationError) as refused:
        check_components(topology(1, 5), conf)
    assert "component 'count' has keyed state and 5 tasks, more than its 4 key groups" in str(
        refused.value
    )
    assert "topology.state.max.parallelism" in str(refused.value)


def test_a_transactional_sink_keyed_by_fields_is_not_rescalable() -> None:
    from topology.connectors.sink import TransactionalSink
    from topology.runtime.checkpoint.state_layout import rescale_problem, state_kinds

    class Sink(TransactionalSink):
        def begin(self, checkpoint: int) -> Any: ...
        def write(self, txn: Any, rows: list[Any]) -> None: ...
        def pre_commit(self, txn: Any, checkpoint: int) -> Any: ...
        def commit(self, handle: Any, checkpoint: int) -> None: ...

    builder = TopologyBuilder()
    builder.set_spout("words", PartitionedWords(), 2)
    builder.set_bolt("sink", Sink(), 2).fields_grouping("words", ["word"])
    kinds = state_kinds(builder.create_topology(), "sink")
    assert "keyed" in kinds and "task-bound" in kinds
    problem = rescale_problem("sink", kinds, 4, 128)
    assert problem is not None and "keeps state tied to its tasks" in problem
    assert rescale_problem("count", ["keyed"], 4, 128) is None
