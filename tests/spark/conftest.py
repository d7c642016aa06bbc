"""The Spark tier: one real ZooKeeper and one SparkContext per test session, and per test
a :class:`~topology.testing.LocalStack` on them with a ZooKeeper root of its own (its
nimbus, and every topology killed afterwards).  The ZooKeeper log is printed when a test
fails."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.nimbus import Nimbus
from topology.deploy.cluster.zookeeper_server import EmbeddedZooKeeper
from topology.testing import LocalStack

#: Task slots of the session's Spark (local mode, 3 attempts per task).
SLOTS = 4
#: How long the session's ZooKeeper may take to serve: in a parallel run its JVM starts
#: while the other xdist workers start theirs (Spark, the multi-host tier's hosts).
ZK_START_SECS = 120


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[EmbeddedZooKeeper]:
    server = EmbeddedZooKeeper().start(timeout=ZK_START_SECS)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark_backend() -> Iterator[Any]:
    from topology.deploy.spark.backend import SparkBackend

    backend = SparkBackend({"spark.master": f"local[{SLOTS},3]"}, app_name="sparkstorm-tests")
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def zk_conf(zookeeper: EmbeddedZooKeeper) -> dict[str, Any]:
    """Config pointing at the session's ZooKeeper under a root of this test's own."""
    return {
        "storm.zookeeper.servers": ["127.0.0.1"],
        "storm.zookeeper.port": zookeeper.port,
        "storm.zookeeper.root": f"/test-{uuid.uuid4().hex[:12]}",
        "storm.zookeeper.connection.timeout.secs": 5,
        "nimbus.driver.mode": "inline",  # the session's SparkContext hosts every worker
    }


@pytest.fixture
def stack(
    zk_conf: dict[str, Any], zookeeper: EmbeddedZooKeeper, spark_backend: Any
) -> Iterator[LocalStack]:
    """This test's stack on the session's ZooKeeper and Spark: a leader nimbus for its root;
    its topologies are killed afterwards."""
    with LocalStack(zk_conf, zookeeper=zookeeper, backend=spark_backend) as local:
        yield local


@pytest.fixture
def nimbus(stack: LocalStack) -> Nimbus:
    nimbus: Nimbus = stack.nimbus
    return nimbus


@pytest.fixture
def cluster(stack: LocalStack) -> Iterator[Cluster]:
    with stack.cluster() as client:
        yield client


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and "zookeeper" in getattr(item, "funcargs", {}):
        server = item.funcargs["zookeeper"]
        report.sections.append(("ZooKeeper log (last lines)", server.log_tail(60)))
