"""A standby nimbus takes over when the leader goes away; the topology keeps running, on
the same worker processes (inline drivers: the session's SparkContext hosts the workers)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.spark.components import CountingSpout, SinkBolt
from tests.spark.helpers import all_ready, spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.nimbus import Nimbus

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def _thread_of(server: Nimbus) -> threading.Thread:
    """The thread running ``server.run`` (the ``nimbus`` fixture does not hand it out)."""
    [thread] = [t for t in threading.enumerate() if getattr(t, "_target", None) == server.run]
    return thread


def _topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(), parallelism=2)
    builder.set_bolt("sink", SinkBolt(), parallelism=2).shuffle_grouping("numbers")
    return builder.create_topology()


def test_standby_nimbus_takes_over_and_topology_keeps_running(
    zk_conf: dict[str, Any], nimbus: Nimbus, cluster: Cluster, spark_backend: Any
) -> None:
    standby = Nimbus(zk_conf, spark_backend)
    standby_thread = standby.start()
    try:
        wait_for(lambda: len(cluster.zk.election("?").contenders()) == 2, 15, "two contenders")
        assert cluster.leader() == nimbus.identifier
        assert not standby.is_leader.is_set()

        topology_id = cluster.submit_topology("ha", {"topology.workers": 2}, _topology())
        first = cluster.zk.read_assignment(topology_id)["attempt"]
        wait_for(lambda: spout_acked(cluster, "ha") > 100, 30, "acks under the first leader")
        both = {"leader": nimbus.identifier, "standbys": [standby.identifier]}
        assert cluster.nimbuses() == both
        assert cluster.stats("ha")["nimbus"] == both  # `status` shows who leads
        pids = {w: b["pid"] for w, b in all_ready(cluster, topology_id, 2).items()}

        leader_thread = _thread_of(nimbus)
        nimbus.shutdown()
        leader_thread.join(15)
        assert not leader_thread.is_alive(), "the old leader's thread did not end"
        wait_for(lambda: not nimbus.is_leader.is_set(), 15, "the leader to step down")
        wait_for(lambda: not nimbus.zk.client.connected, 15, "the old leader's session to close")
        assert standby.is_leader.wait(15), "the standby was not elected"
        wait_for(lambda: cluster.leader() == standby.identifier, 15, "the new leader in ZooKeeper")

        # The new leader adopts what runs: a driver of its own takes the workers over as
        # they are (same attempt, same processes).
        wait_for(lambda: cluster.zk.driver(topology_id), 30, "the new leader's driver")
        assert cluster.zk.read_assignment(topology_id)["attempt"] == first
        beats = all_ready(cluster, topology_id, 2)
        assert {w: b["pid"] for w, b in beats.items()} == pids
        [listed] = cluster.topologies()
        assert listed["status"] == "ACTIVE"

        acked = spout_acked(cluster, "ha")
        wait_for(lambda: spout_acked(cluster, "ha") > acked + 100, 30, "acks under the new leader")

        cluster.kill_topology("ha", wait_secs=0)  # needs a live leader: the standby
        assert cluster.topologies() == []
    finally:
        try:  # kill while the standby still leads (the fixture's teardown would find no leader)
            if cluster.zk.find_by_name("ha") is not None:
                cluster.kill_topology("ha", wait_secs=0, timeout=30)
        finally:
            standby.shutdown()
            standby_thread.join(15)
    assert not standby_thread.is_alive()
    wait_for(lambda: cluster.leader() is None, 15, "no nimbus left in the election")
    assert cluster.nimbuses() == {"leader": None, "standbys": []}
