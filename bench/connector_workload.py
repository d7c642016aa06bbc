"""The components of the connector cases of ``bench/run.py`` (``bench/connector_cases.py``).

* ``redis-pg``: ``RedisStreamSpout`` (exactly-once, one stream per spout task, entries
  ``{key: k<i mod 1000>}``) --fields["key"]--> :class:`KeyCount` (a ``StatefulBolt``
  emitting ``[key, count]``) --fields["key"]--> ``PostgresTransactionalSink`` upserting
  ``key_counts (key PRIMARY KEY, n)``; ``redis-pg-memory`` is the same topology over
  :class:`ListSource` and :class:`MemoryUpsertSink`.
* ``parquet-sink``: :class:`GeneratedRows` (``[id, key, value]``) --shuffle-->
  ``FileSink(format="parquet")``; ``parquet-memory`` ends in :class:`MemoryRowsSink`.

Every topology is exactly-once, checkpointed every second (the conf is in the cases).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from topology import ReplayableSpout, StatefulBolt, TopologyBuilder  # noqa: E402
from topology.connectors import PartitionedSource, Record, TransactionalSink  # noqa: E402

#: Distinct keys of the records (as many as the word count's words).
KEYS = [f"k{i}" for i in range(1000)]
#: Entries one read returns (``RedisStreamSpout``'s default ``count``, mirrored in memory).
READ_COUNT = 100


def stream_names(tasks: int) -> list[str]:
    """One stream (partition) per spout task."""
    return [f"records-{n}" for n in range(tasks)]


class ListSource(PartitionedSource):
    """Partitions of the cyclic list :data:`KEYS`: record *i* of each is ``KEYS[i mod
    1000]`` (as in the prefilled streams); a position is the index after a record."""

    outputs = ["key"]

    def __init__(self, partitions: list[str]) -> None:
        super().__init__(guarantee="exactly_once")
        self.names = list(partitions)

    def partitions(self) -> list[str]:
        return list(self.names)

    def start_position(self, partition: str) -> int:
        return 0

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        start = int(position or 0)
        n = min(READ_COUNT, max_records)
        return [Record(partition, i + 1, KEYS[i % 1000]) for i in range(start, start + n)]


class KeyCount(StatefulBolt):
    """A count per key in checkpointed state, emitted on each update (README's style)."""

    outputs = ["key", "n"]

    def execute(self, tup):
        key = tup.values[0]
        n = self.state.get(key, 0) + 1
        self.state.put(key, n)
        self.emit([key, n])


class Progress:
    """What a memory sink task committed so far, in a file of its own under ``folder``
    (rewritten at each commit, atomically), so the bench reads it without asking the
    workers (:meth:`total`)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.path = ""

    def open(self, sink_id: str) -> None:
        self.path = os.path.join(self.folder, sink_id.replace("#", "-"))

    def put(self, total: int) -> None:
        with open(self.path + ".tmp", "w") as f:
            f.write(str(total))
        os.replace(self.path + ".tmp", self.path)

    def total(self) -> int:
        """The sum over the tasks' files."""
        found = 0
        for name in os.listdir(self.folder):
            if not name.endswith(".tmp"):
                with open(os.path.join(self.folder, name)) as f:
                    found += int(f.read() or 0)
        return found


class MemoryUpsertSink(TransactionalSink):
    """``PostgresTransactionalSink`` with a dict for the table: write-ahead (the rows are
    the handle, stored in the checkpoint), committed by upserting into ``table`` under a
    per-process marker.  ``progress`` holds ``sum(n)`` of the table after each commit:
    with the counts of :class:`KeyCount`, the input records whose count is committed."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress

    def prepare(self, conf, context):
        super().prepare(conf, context)
        self.table: dict[str, int] = {}
        self.markers: dict[str, int] = {}
        self.total = 0  # sum(self.table.values()), kept as the commits go
        self.progress.open(self.sink_id)

    def begin(self, checkpoint_hint: int) -> list[list[Any]]:
        return []

    def write(self, txn: list[list[Any]], records: list[list[Any]]) -> None:
        txn.extend(records)

    def pre_commit(self, txn: list[list[Any]], checkpoint: int) -> list[Any]:
        return [self.marker_id, txn]

    def commit(self, handle: Any, checkpoint: int) -> None:
        marker, rows = handle
        if self.markers.get(marker, -1) >= checkpoint:
            return
        for key, n in rows:
            self.total += n - self.table.get(key, 0)
            self.table[key] = n
        self.markers[marker] = checkpoint
        self.progress.put(self.total)

    def collect_results(self):
        return {"rows": len(self.table)}


def key_count(workers: int, source: PartitionedSource, sink: TransactionalSink) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("source", source, parallelism=workers)
    builder.set_bolt("count", KeyCount(), parallelism=workers).fields_grouping("source", ["key"])
    builder.set_bolt("store", sink, parallelism=workers).fields_grouping("count", ["key"])
    return builder.create_topology()


class GeneratedRows(ReplayableSpout):
    """Rows ``[i, KEYS[i mod 1000], i / 2]``, i = task index, + tasks, ...; its position
    is the next i."""

    outputs = ["id", "key", "value"]

    def open(self, conf, context):
        self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self):
        for _ in range(10):
            i = self.next
            self.emit([i, KEYS[i % 1000], i / 2])
            self.next += self.step

    def position(self):
        return self.next

    def seek(self, position):
        self.next = position


class MemoryRowsSink(TransactionalSink):
    """Rows staged in a list per checkpoint, kept out of the checkpoint (as ``FileSink``
    keeps only file names there); a commit moves them into ``committed`` (the last
    :data:`KEPT` checkpoints' rows, so memory stays flat) and counts them in ``progress``
    (rows committed so far)."""

    KEPT = 5

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress

    def prepare(self, conf, context):
        super().prepare(conf, context)
        self.staged: dict[int, list[list[Any]]] = {}
        self.committed: dict[int, list[list[Any]]] = {}
        self.total = 0
        self.progress.open(self.sink_id)

    def begin(self, checkpoint_hint: int) -> list[list[Any]]:
        return []

    def write(self, txn: list[list[Any]], records: list[list[Any]]) -> None:
        txn.extend(records)

    def pre_commit(self, txn: list[list[Any]], checkpoint: int) -> list[Any]:
        self.staged[checkpoint] = txn
        return [self.marker_id, checkpoint]

    def commit(self, handle: Any, checkpoint: int) -> None:
        rows = self.staged.pop(checkpoint, None)
        if rows is None:
            return  # committed already (or staged by a process that is gone)
        self.committed[checkpoint] = rows
        self.total += len(rows)
        self.progress.put(self.total)
        for old in [c for c in self.committed if c <= checkpoint - self.KEPT]:
            del self.committed[old]


def rows_to_sink(workers: int, sink: TransactionalSink) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("rows", GeneratedRows(), parallelism=workers)
    builder.set_bolt("store", sink, parallelism=workers).shuffle_grouping("rows")
    return builder.create_topology()
