"""Submit, list, deactivate, activate and kill on ZooKeeper + Spark."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.spark.components import CountingSpout, SinkBolt
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def _topology(limit: int | None = None) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(limit), parallelism=2)
    builder.set_bolt("sink", SinkBolt(), parallelism=2).shuffle_grouping("numbers")
    return builder.create_topology()


def _emitted(cluster: Cluster, name: str) -> int:
    return sum(
        sum(task["emitted"].values())
        for reply in cluster.worker_status(name)
        for task in reply["tasks"].values()
        if task["component"] == "numbers"
    )


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_submit_list_deactivate_activate_kill(cluster: Cluster, spark_backend: Any) -> None:
    topology_id = cluster.submit_topology("life", {"topology.workers": 2}, _topology())

    [listed] = cluster.topologies()
    assert listed["name"] == "life" and listed["status"] == "ACTIVE"
    assert listed["workers"] == 2 and listed["workers_alive"] == 2
    beats = cluster.zk.heartbeats(topology_id)
    assert sorted(beats) == [0, 1]
    assert all(b["ready"] and b["endpoint"].startswith("tcp://") for b in beats.values())
    assert spark_backend.used_slots() == 2

    _wait_for(lambda: _emitted(cluster, "life") > 100, 30, "emits")
    cluster.deactivate("life")
    cluster.wait_until_drained("life", timeout=60)
    stopped = _emitted(cluster, "life")
    time.sleep(1.0)  # a deactivated spout must stay quiet for a while, not just once
    assert _emitted(cluster, "life") == stopped
    [inactive] = cluster.topologies()  # `list`: no rate for spouts that do not run
    assert inactive["status"] == "INACTIVE"
    assert (inactive["emitted_per_sec"], inactive["acked_per_sec"]) == (0, 0)

    cluster.activate("life")
    _wait_for(lambda: _emitted(cluster, "life") > stopped + 100, 30, "emits after activate")

    cluster.kill_topology("life", wait_secs=0)
    assert cluster.topologies() == []
    for path in cluster.zk.paths.topology_paths(topology_id):
        assert cluster.zk.client.exists(path) is None, path
    _wait_for(lambda: spark_backend.used_slots() == 0, 30, "Spark tasks to end")
