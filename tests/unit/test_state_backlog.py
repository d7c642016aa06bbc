"""A state whose keys change faster than checkpoints store them slows the spouts down
instead of filling the worker's memory (in-process runner, simulated clock)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from topology import ReplayableSpout, StatefulBolt, TopologyBuilder, TopologyContext, Tuple
from topology.runtime.checkpoint import worker as checkpoints
from topology.runtime.inprocess import InProcessRunner

pytestmark = pytest.mark.timeout(120)

KEYS = 2_000
LIMIT = 100


class DistinctKeys(ReplayableSpout):
    """Every tuple a key no other tuple has (the worst case for checkpoints)."""

    outputs = ["key"]

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.next = 0

    def next_tuple(self) -> None:
        if self.next < KEYS:
            self.emit([f"k{self.next}"])
            self.next += 1

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position


class Count(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        self.state.put(tup["key"], self.state.get(tup["key"], 0) + 1)


def test_spouts_wait_while_the_changes_not_yet_checkpointed_pass_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkpoints, "CHANGES_BACKLOG_LIMIT", LIMIT)
    builder = TopologyBuilder()
    builder.set_spout("keys", DistinctKeys())
    builder.set_bolt("count", Count(), 2).fields_grouping("keys", ["key"])
    conf = {
        "topology.workers": 1,
        "topology.state.provider": "memory",
        "topology.state.checkpoint.interval.ms": 1000,
    }
    runner = InProcessRunner(builder.create_topology(), conf)
    runner.activate()
    spout = runner.instance("keys")
    most_between_checkpoints = 0
    for second in range(60):
        before = spout.next
        for _ in range(200):  # one simulated second, in turns of 5 ms
            runner.clock.advance(0.005)  # type: ignore[attr-defined]
            runner.turn()
        most_between_checkpoints = max(most_between_checkpoints, spout.next - before)
        if spout.next >= KEYS and second > 3:
            break
    assert spout.next == KEYS  # held back, never stopped: every key was read
    # between two checkpoints the spout emitted about the limit, not what it could
    assert LIMIT <= most_between_checkpoints <= 4 * LIMIT, most_between_checkpoints
    counted: Counter[str] = Counter()
    for index in range(2):
        counted.update(dict(runner.instance("count", index).state.items()))
    assert counted == Counter(f"k{i}" for i in range(KEYS))


def test_a_disk_backend_holds_at_most_twice_its_cache_in_changes_waiting() -> None:
    limit = checkpoints.changes_backlog_limit
    assert limit("memory", 64 << 20, 3) == checkpoints.CHANGES_BACKLOG_LIMIT
    per_task = 2 * (64 << 20) // checkpoints.CHANGE_BYTES  # 524,288 for 64 MiB
    assert limit("lmdb", 64 << 20, 1) == per_task
    assert limit("lmdb", 64 << 20, 2) == checkpoints.CHANGES_BACKLOG_LIMIT  # capped
    assert limit("lmdb", 1 << 16, 1) == checkpoints.MIN_TASK_BACKLOG  # a tiny cache batches
    assert limit("lmdb", 1 << 40, 4) == checkpoints.CHANGES_BACKLOG_LIMIT  # never above


def test_the_worker_takes_the_limit_from_the_backend_and_its_cache(tmp_path: Any) -> None:
    builder = TopologyBuilder()
    builder.set_spout("keys", DistinctKeys())
    builder.set_bolt("count", Count(), 2).fields_grouping("keys", ["key"])
    conf = {
        "topology.workers": 1,
        "topology.state.provider": "memory",
        "topology.state.backend": "lmdb",
        "topology.state.local.dir": str(tmp_path),
        "topology.state.cache.bytes": 16 << 20,
    }
    runner = InProcessRunner(builder.create_topology(), conf)
    agent = runner.worker(0).checkpoints
    assert agent is not None
    assert agent._backlog_limit == 2 * 2 * (16 << 20) // checkpoints.CHANGE_BYTES
