"""A cluster worker running flat out still answers status requests at once (real ZooKeeper,
nimbus and Spark worker).

Its executor thread runs Python without pause, letting go of the GIL only for a few
microseconds at a time; the ZooKeeper client's threads need the GIL several times per
request.  Before the worker shared the GIL on purpose (``topology.runtime.gil_sharing``) a
status request here took 7–15 s and often got no answer within 30 s.
"""

from __future__ import annotations

import time

import pytest

from tests.spark.components import CountingSpout, SinkBolt
from tests.spark.helpers import all_ready, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster

# the first test of the "spark" xdist group: its time includes starting the session's Spark
# and ZooKeeper (tests/conftest.py)
pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def test_a_worker_running_an_unpaced_spout_answers_status_within_seconds(
    cluster: Cluster,
) -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout())  # unbounded: the worker never idles
    builder.set_bolt("sink", SinkBolt()).shuffle_grouping("numbers")
    topology_id = cluster.submit_topology(
        "busy", {"topology.workers": 1}, builder.create_topology()
    )
    wait_for(lambda: all_ready(cluster, topology_id, 1), 60, "the worker to run")

    acked = []
    for _ in range(5):  # each must answer well within the timeout (measured: ~60 ms)
        began = time.monotonic()
        [reply] = cluster.worker_status("busy", timeout=5.0)
        assert time.monotonic() - began < 5.0
        acked.append(sum(t["acked"] for t in reply["tasks"].values()))
    assert acked == sorted(acked) and acked[-1] > acked[0], "the worker was not busy"
