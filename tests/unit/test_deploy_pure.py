"""Unit tests for small pure pieces of deployment: error-text clipping, sizing a topology's
Spark application, the executor id of a Python worker."""

from __future__ import annotations

import os

import pytest

from acker.protocol import MAX_REASON_CHARS, FailReason
from topology.deploy.spark.backend import executor_id, local_master, spark_app_conf
from topology.runtime.error_reporter import MAX_ERROR_CHARS, error_text

pytestmark = pytest.mark.timeout(10)


def test_short_texts_are_kept_whole() -> None:
    assert error_text("ValueError: boom") == "ValueError: boom"


def test_long_texts_keep_head_and_tail_and_say_how_much_was_cut() -> None:
    text = "Traceback (most recent call last):\n" + "x" * 1_200_000 + "\nValueError: boom"
    clipped = error_text(text)
    assert len(clipped) <= MAX_ERROR_CHARS
    assert clipped.startswith("Traceback (most recent call last):")
    assert clipped.endswith("ValueError: boom")
    assert f"{len(text) - (MAX_ERROR_CHARS - 60):,} characters cut" in clipped


def test_an_exception_is_reported_as_its_clipped_traceback() -> None:
    try:
        raise ValueError("y" * 100_000)
    except ValueError as exc:
        text = error_text(exc)
    assert text.startswith("Traceback (most recent call last):")
    assert len(text) <= MAX_ERROR_CHARS and text.endswith("y")


def test_a_failure_reason_carries_a_clipped_error_through_the_ackers() -> None:
    from acker.anchoring import BoltAcking
    from acker.outbox import AckOutbox

    outbox = AckOutbox([1])

    class Tracked:
        id, anchors, ack_val = 5, 77, 0

    BoltAcking("split", 3, outbox).fail(Tracked(), ValueError("z" * 1_000_000))
    [(_, _, [root, wire])] = outbox.drain()
    reason = FailReason.from_wire(wire)
    assert root == 77 and reason.component == "split" and reason.task == 3
    assert len(reason.error or "") <= MAX_REASON_CHARS
    assert (reason.error or "").startswith("ValueError: zzz")


def test_a_topology_on_local_mode_gets_a_slot_per_worker() -> None:
    spark = spark_app_conf({"spark.master": "local[*]"}, {}, workers=64)
    assert spark["spark.master"] == local_master(64) == f"local[{max(os.cpu_count() or 1, 64)},3]"
    explicit = spark_app_conf({"spark.master": "local[2,2]"}, {}, workers=3)
    assert explicit["spark.master"] == "local[2,2]"


def test_on_standalone_every_worker_gets_an_executor_of_its_own() -> None:
    spark = spark_app_conf({"spark.master": "spark://m:7077"}, {}, workers=3)
    assert spark["spark.executor.cores"] == 1 and spark["spark.task.cpus"] == 1
    assert spark["spark.cores.max"] == 3
    assert spark["spark.dynamicAllocation.enabled"] == "false"
    bigger = spark_app_conf(
        {"spark.master": "spark://m:7077"}, {"spark.executor.cores": 2}, workers=3
    )
    assert bigger["spark.task.cpus"] == 2 and bigger["spark.cores.max"] == 6


def test_on_yarn_and_kubernetes_the_executor_count_is_the_worker_count() -> None:
    for master in ("yarn", "k8s://https://api:6443"):
        spark = spark_app_conf({"spark.master": master}, {"spark.executor.memory": "2g"}, 4)
        assert spark["spark.executor.instances"] == 4
        assert spark["spark.executor.memory"] == "2g"


def test_the_topology_overrides_the_nimbus_only_where_it_departs_from_defaults() -> None:
    base = {"spark.master": "spark://m:7077", "spark.executor.memory": "1g"}
    topology_conf = {"spark.master": "local[*]", "spark.executor.memory": "3g"}  # master: default
    spark = spark_app_conf(base, topology_conf, workers=1)
    assert spark["spark.master"] == "spark://m:7077"
    assert spark["spark.executor.memory"] == "3g"


def test_a_worker_outside_any_executor_jvm_reports_the_driver() -> None:
    assert executor_id(os.getpid()) == os.environ.get("SPARK_EXECUTOR_ID", "driver")
