"""Events written exactly once as Parquet files, partitioned by date, for Spark to read.

    rm -rf /tmp/sparkstorm-events            # the output of an earlier run
    sparkstorm local examples/events_to_parquet.py:topology --duration 15

events (EventSpout, a ReplayableSpout: EVENTS generated events over 3 days; its position,
the next event, is in the checkpoints) --shuffle--> archive (FileSink: Parquet files in
Hive partition directories ``date=2026-01-01/``, ...)

The sink writes each checkpoint interval's rows to hidden in-progress files and renames
them to ``part-...parquet`` once the checkpoint holding their rows is complete, so a file
is visible whole or not at all, and after a crash the replayed events replace what the
lost files held: every event is in exactly one visible file.  ``verify`` (run by
``sparkstorm local`` at the end) counts the rows and ids with pyarrow.

Read it back with Spark (``date`` comes back as a column, from the directory names)::

    python3 -c '
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[2]").getOrCreate()
    df = spark.read.parquet("/tmp/sparkstorm-events")
    df.groupBy("date").count().orderBy("date").show()
    print(df.count(), df.select("id").distinct().count())'

Or from files of JSON lines instead of the generator (a FileSource over a directory,
exactly-once: byte offsets in the checkpoints; files added later are read too)::

    python3 examples/events_to_parquet.py write-json /tmp/events-in 50000
    EVENTS_DIR=/tmp/events-in sparkstorm local examples/events_to_parquet.py:topology

Settings, from the environment: ``OUT_DIR`` (``/tmp/sparkstorm-events``; any fsspec URL:
``s3://bucket/events`` with s3fs), ``EVENTS`` (100000), ``EVENTS_DIR`` (unset: generate).
"""

from __future__ import annotations

import datetime
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from topology import ReplayableSpout, Topology, TopologyBuilder
from topology.connectors import FileSink, FileSource

FIELDS = ["id", "ts", "date", "user", "action", "amount"]
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC).timestamp()
DAYS = 3
ACTIONS = ["view", "click", "cart", "buy"]


def setting(name: str) -> str:
    defaults = {"OUT_DIR": "/tmp/sparkstorm-events", "EVENTS": "100000", "EVENTS_DIR": ""}
    return os.environ.get(name, defaults[name])


def event(i: int, total: int) -> list[Any]:
    """Event ``i`` of ``total`` (spread evenly over :data:`DAYS` days): the values of
    :data:`FIELDS`."""
    rng = random.Random(i)
    when = datetime.datetime.fromtimestamp(START + i * DAYS * 86400 / total, datetime.UTC)
    ts = when.isoformat(timespec="milliseconds")
    return [
        i,
        ts,
        ts[:10],
        f"user{rng.randrange(1000)}",
        rng.choice(ACTIONS),
        rng.randrange(1, 10000) / 100,
    ]


class EventSpout(ReplayableSpout):
    """Events ``i, i + n, i + 2n, ...`` below ``total`` (task ``i`` of ``n``); the
    position is the next ``i``."""

    outputs = FIELDS

    def __init__(self, total: int) -> None:
        self.total = total

    def open(self, conf, context):
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self):
        for _ in range(100):
            if self.next >= self.total:
                return
            self.emit(event(self.next, self.total), msg_id=self.next)
            self.next += self.step

    def position(self):
        return self.next

    def seek(self, position):
        self.next = position

    def collect_results(self):
        return {"first": self.first, "step": self.step, "next": self.next}


def build(
    *,
    out_dir: str | None = None,
    events: int | None = None,
    events_dir: str | None = None,
    parallelism: int = 2,
) -> Topology:
    """The topology; a setting not given comes from the environment (see the docstring)."""
    source_dir = events_dir if events_dir is not None else setting("EVENTS_DIR")
    builder = TopologyBuilder()
    if source_dir:
        files = FileSource(source_dir, pattern="*.jsonl", format="json", fields=FIELDS,
                           guarantee="exactly_once")  # fmt: skip
        builder.set_spout("events", files, parallelism)
    else:
        builder.set_spout("events", EventSpout(events or int(setting("EVENTS"))), parallelism)
    archive = FileSink(out_dir or setting("OUT_DIR"), format="parquet", partition_by="date")
    builder.set_bolt("archive", archive, parallelism).shuffle_grouping("events")
    return builder.create_topology()


def topology() -> Topology:
    """``sparkstorm local examples/events_to_parquet.py:topology``: settings from the
    environment."""
    return build()


# -- input files, and the check ------------------------------------------------------------


def write_json(directory: str, count: int, files: int = 4) -> int:
    """``count`` events as JSON lines in ``files`` files of ``directory`` (written under a
    hidden name, then renamed: a reader never sees half a file); returns ``count``."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for f in range(files):
        hidden = Path(directory, f".events-{stamp}-{f}.jsonl")
        with hidden.open("w") as out:
            for i in range(f, count, files):
                out.write(json.dumps(dict(zip(FIELDS, event(i, count), strict=True))) + "\n")
        hidden.rename(hidden.with_name(hidden.name[1:]))
    return count


def expected_ids(results: dict, events_dir: str | None = None) -> list[int]:
    """The ids the run read: from the spouts' positions, or every line of the input files."""
    source_dir = events_dir if events_dir is not None else setting("EVENTS_DIR")
    if source_dir:
        return [
            json.loads(line)["id"]
            for path in sorted(Path(source_dir).glob("*.jsonl"))
            for line in path.read_text().splitlines()
        ]
    spouts = results["events"].values()
    return [i for s in spouts for i in range(s["first"], s["next"], s["step"])]


def written_ids(out_dir: str | None = None) -> list[int]:
    """The ids in the visible Parquet files (in-progress files are hidden: ``.`` names)."""
    import pyarrow.dataset as ds

    root = out_dir or setting("OUT_DIR")
    if not Path(root).exists():
        return []
    dataset = ds.dataset(root, format="parquet", partitioning="hive")
    if not dataset.files:  # (nothing published yet)
        return []
    return dataset.to_table(columns=["id"]).column("id").to_pylist()


def verify(results: dict, timeout: float = 15.0) -> str:
    """Every event read is in exactly one visible row (files are published when their
    checkpoint completes: wait up to ``timeout`` seconds)."""
    want = sorted(expected_ids(results))
    deadline = time.monotonic() + timeout
    while (got := sorted(written_ids())) != want and time.monotonic() < deadline:
        time.sleep(0.5)
    assert got == want, (
        f"{len(got):,} rows for {len(want):,} events ({len(set(want) - set(got)):,} missing, "
        f"{len(got) - len(set(got)):,} duplicated): an earlier run's files in {setting('OUT_DIR')}?"
    )
    return f"{len(got):,} events in {setting('OUT_DIR')}, each exactly once"


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "write-json" or not sys.argv[3].isdigit():
        sys.exit(f"usage: {sys.argv[0]} write-json DIR N   (N events as JSON lines)")
    print(f"{write_json(sys.argv[2], int(sys.argv[3])):,} events written to {sys.argv[2]}")
