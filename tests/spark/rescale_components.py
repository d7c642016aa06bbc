"""Components of the rescale tests on the Spark tier (importable, so Spark's Python workers
load them by module): a paced partitioned source over fixed lists, whose positions are
``{partition: position}``, and a keyed count that also sums what it counted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.integration.state_components import Pacer
from topology import StatefulBolt, TopologyBuilder, TopologyContext, Tuple
from topology.connectors import PartitionedSource, Record

#: Keys per partition of :class:`PacedLists` (record ``j`` of ``p`` has key ``p:j%KEYS``).
KEYS = 25


class PacedLists(PartitionedSource):
    """``partitions`` partitions ``p0``, ``p1``, ... of ``size`` records each: record ``j``
    of partition ``p`` is ``[f"{p}:{j % KEYS}", j]``, at position ``j + 1``.  Exactly-once
    (positions in the checkpoint); at most about ``rate`` records a second per task."""

    outputs = ["key", "n"]
    BATCH = 10

    def __init__(self, partitions: int, size: int, rate: float) -> None:
        super().__init__(guarantee="exactly_once", max_batch=self.BATCH)
        self.count, self.size, self.rate = partitions, size, rate

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().open(conf, context)
        self.pacer = Pacer(self.rate / self.BATCH, most=1)

    def next_tuple(self) -> None:
        if self.pacer.allowed():
            super().next_tuple()

    def partitions(self) -> list[str]:
        return [f"p{i}" for i in range(self.count)]

    def start_position(self, partition: str) -> int:
        return 0

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        start = int(position or 0)
        end = min(self.size, start + max_records)
        return [Record(partition, j + 1, [f"{partition}:{j % KEYS}", j]) for j in range(start, end)]

    def decode(self, record: Record) -> list[Any]:
        return list(record.value)

    def collect_results(self) -> dict[str, Any]:
        positions = {p: int(self.position().get(p) or 0) for p in self.owned}
        done = all(n >= self.size for n in positions.values())
        return {"positions": positions, "done": done}


class CountAndSum(StatefulBolt):
    """Per key (keyed state): ``[records counted, sum of their n]``."""

    def execute(self, tup: Tuple) -> None:
        count, total = self.state.get(tup["key"], [0, 0])
        self.state.put(tup["key"], [count + 1, total + int(tup["n"])])

    def collect_results(self) -> dict[str, list[int]]:
        return {str(k): list(v) for k, v in self.state.items()}


def expected_sums(partitions: int, size: int) -> dict[str, list[int]]:
    """What :class:`CountAndSum` holds once every record of :class:`PacedLists` was counted
    exactly once."""
    out: dict[str, list[int]] = {}
    for p in range(partitions):
        for j in range(size):
            entry = out.setdefault(f"p{p}:{j % KEYS}", [0, 0])
            entry[0] += 1
            entry[1] += j
    return out


def partitioned_count(partitions: int, size: int, rate: float, spouts: int) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("lists", PacedLists(partitions, size, rate), spouts)
    builder.set_bolt("count", CountAndSum(), 2).fields_grouping("lists", ["key"])
    return builder.create_topology()
