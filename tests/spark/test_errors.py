"""Failures that must come back as one clear error: a component that cannot start, no
ZooKeeper, no nimbus."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli
from tests.spark.components import CountingSpout, FailingPrepareBolt, SinkBolt
from tests.spark.helpers import wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster, ClusterOperationError
from topology.deploy.cluster.zookeeper_server import EmbeddedZooKeeper, free_port
from topology.deploy.zk.connection import ZooKeeperUnavailable

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def test_failing_prepare_fails_submit_with_the_components_error(
    cluster: Cluster, spark_backend: Any
) -> None:
    used_before = spark_backend.used_slots()
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(100))
    builder.set_bolt("db", FailingPrepareBolt()).shuffle_grouping("numbers")

    started = time.monotonic()
    with pytest.raises(ClusterOperationError, match="cannot open the database") as info:
        cluster.submit_topology("baddb", {"topology.workers": 1}, builder.create_topology(), 60)
    assert time.monotonic() - started < 45, "the failure took (almost) the whole timeout"
    assert "'baddb'" in str(info.value)
    assert "Traceback" not in str(info.value)

    assert cluster.topologies() == []
    wait_for(lambda: spark_backend.used_slots() == used_before, 30, "the Spark tasks to end")


def test_unreachable_zookeeper_fails_fast_naming_the_address() -> None:
    port = free_port()  # nothing listens there
    conf = {
        "storm.zookeeper.servers": ["127.0.0.1"],
        "storm.zookeeper.port": port,
        "storm.zookeeper.connection.timeout.secs": 2,
    }
    started = time.monotonic()
    with pytest.raises(ZooKeeperUnavailable, match=f"127.0.0.1:{port}"):
        Cluster(conf).connect()
    assert time.monotonic() - started < 5

    started = time.monotonic()
    result = CliRunner().invoke(
        cli,
        [
            "list",
            "--zookeeper",
            f"127.0.0.1:{port}",
            "-c",
            "storm.zookeeper.connection.timeout.secs=2",
        ],
    )
    assert time.monotonic() - started < 5
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert "cannot reach ZooKeeper" in result.output and f"127.0.0.1:{port}" in result.output


def test_submit_without_a_nimbus_says_so(zookeeper: EmbeddedZooKeeper) -> None:
    root = f"/test-no-nimbus-{uuid.uuid4().hex[:8]}"
    conf = {
        "storm.zookeeper.servers": ["127.0.0.1"],
        "storm.zookeeper.port": zookeeper.port,
        "storm.zookeeper.root": root,
        "storm.zookeeper.connection.timeout.secs": 5,
    }
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(10))
    builder.set_bolt("sink", SinkBolt()).shuffle_grouping("numbers")
    with Cluster(conf) as cluster:
        with pytest.raises(ClusterOperationError, match="no nimbus is running") as info:
            cluster.submit_topology("orphan", {}, builder.create_topology(), timeout=10)
        assert root in str(info.value)
        assert cluster.topologies() == []
