"""The Spark tier: one real ZooKeeper and one SparkContext per test session, a ZooKeeper
chroot and a fresh nimbus per test.  The ZooKeeper log is printed when a test fails."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from topology.deploy.cluster import Cluster
from topology.deploy.embedded_zookeeper import EmbeddedZooKeeper
from topology.deploy.nimbus import Nimbus

#: Task slots of the session's Spark (local mode, 3 attempts per task).
SLOTS = 4


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[EmbeddedZooKeeper]:
    with EmbeddedZooKeeper() as server:
        yield server


@pytest.fixture(scope="session")
def spark_backend() -> Iterator[Any]:
    from topology.deploy.spark_backend import SparkBackend

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
    }


@pytest.fixture
def nimbus(zk_conf: dict[str, Any], spark_backend: Any) -> Iterator[Nimbus]:
    """A leader nimbus for this test's root; its topologies are killed afterwards."""
    server = Nimbus(zk_conf, spark_backend)
    thread = server.start()
    assert server.is_leader.wait(15), "nimbus was not elected"
    try:
        yield server
    finally:
        with Cluster(zk_conf) as cluster:
            for topology in cluster.topologies():
                try:
                    cluster.kill_topology(topology["name"], wait_secs=0, timeout=30)
                except Exception:  # already gone or failed: the backend stop below covers it
                    pass
        server.shutdown()
        thread.join(10)
        for key in list(spark_backend._launched):
            spark_backend.stop(key[0], wait=10)


@pytest.fixture
def cluster(zk_conf: dict[str, Any], nimbus: Nimbus) -> Iterator[Cluster]:
    with Cluster(zk_conf) as client:
        yield client


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and "zookeeper" in getattr(item, "funcargs", {}):
        server = item.funcargs["zookeeper"]
        report.sections.append(("ZooKeeper log (last lines)", server.log_tail(60)))
