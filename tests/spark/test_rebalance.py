"""Rebalance from 1 to 2 workers while a bounded, acked run is in progress."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark.components import PacedCountingSpout, SinkBolt
from tests.spark.helpers import acked_ids, all_ready, spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

#: msg_ids the spout emits (two tasks, about 1000/s each: ten seconds per incarnation).
N = 20000


def _topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", PacedCountingSpout(N), parallelism=2)
    builder.set_bolt("sink", SinkBolt(), parallelism=2).shuffle_grouping("numbers")
    return builder.create_topology()


def test_rebalance_one_to_two_workers_acks_every_msg_id(cluster: Cluster) -> None:
    conf = {"topology.workers": 1, "topology.message.timeout.secs": 10}
    topology_id = cluster.submit_topology("rebal", conf, _topology())
    before = cluster.zk.read_assignment(topology_id)
    assert before["workers"] == 1

    wait_for(lambda: spout_acked(cluster, "rebal") > 100, 30, "the first acks")
    assert spout_acked(cluster, "rebal") < N, "the run ended before the rebalance: raise N"
    cluster.rebalance("rebal", 2, wait_secs=1)

    after = cluster.zk.read_assignment(topology_id)
    assert after["workers"] == 2
    assert after["attempt"] > before["attempt"]
    beats = all_ready(cluster, topology_id, 2)
    assert sorted(beats) == [0, 1], cluster.zk.heartbeats(topology_id)
    assert len({b["pid"] for b in beats.values()}) == 2
    [listed] = cluster.topologies()
    assert listed["status"] == "ACTIVE" and listed["workers"] == 2

    # The new incarnation's spouts start over from 0; wait until they ran to the end.
    wait_for(lambda: spout_acked(cluster, "rebal") >= N, 60, "the new spouts to finish")
    cluster.wait_until_drained("rebal", timeout=60)
    assert acked_ids(cluster, "rebal") == set(range(N))
    assert cluster.errors("rebal") == {}
