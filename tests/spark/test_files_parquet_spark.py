"""Spark reads what FileSink publishes: ``spark.read.parquet`` over the output directory
finds every row once (partition directories discovered, hidden in-progress files skipped)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from topology.assignment import Assignment
from topology.connectors import FileSink
from topology.constants import COORDINATOR_COMPONENT
from topology.context import TopologyContext
from topology.state.kv import KeyValueState
from topology.tuple import Tuple, TupleSource

pytestmark = [pytest.mark.spark, pytest.mark.timeout(120)]

SOURCE = TupleSource("src", 1, "default", ("id", "day"))


class Quiet:
    """The collector a sink driven by hand acks through."""

    def ack(self, tup: Any) -> None:
        pass

    def log(self, message: str) -> None:
        pass


def test_spark_reads_the_published_parquet_rows(tmp_path: Path, spark_backend: Any) -> None:
    from pyspark.sql import SparkSession

    ids = {"store": [1], COORDINATOR_COMPONENT: [2]}
    owners = {1: "store", 2: COORDINATOR_COMPONENT}
    context = TopologyContext("t", "store", 1, 0, 0, (1,), None, Assignment(ids, owners, [[1, 2]]))  # type: ignore[arg-type]
    out = tmp_path / "out"
    sink = FileSink(str(out), format="parquet", fields=["id", "day"], partition_by="day")
    sink._collector = Quiet()
    sink.prepare({}, context)
    sink.init_state(KeyValueState())
    for i in range(250):
        sink.execute(Tuple([i, f"2026-11-2{i % 3}"], SOURCE))
    sink.pre_checkpoint(1)
    sink.checkpoint_complete(1)
    sink.execute(Tuple([999, "2026-11-20"], SOURCE))
    sink.pre_checkpoint(2)  # pre-committed, never completed: stays hidden

    spark = SparkSession(spark_backend.sc)
    frame = spark.read.parquet(str(out))
    assert frame.count() == 250
    assert sorted(str(r["day"]) for r in frame.select("day").distinct().collect()) == [
        "2026-11-20",
        "2026-11-21",
        "2026-11-22",
    ]
