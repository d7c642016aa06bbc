"""A worker killed with SIGKILL comes back (Spark retries its task, or nimbus relaunches
it) and, with acking and replay, every msg_id is still acked."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.spark.components import PacedCountingSpout, SinkBolt
from tests.spark.helpers import acked_ids, all_ready, spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

#: msg_ids emitted (two spout tasks on two workers, about 1000/s each).
N = 20000


def _topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", PacedCountingSpout(N), parallelism=2)
    builder.set_bolt("sink", SinkBolt(), parallelism=2).shuffle_grouping("numbers")
    return builder.create_topology()


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_sigkilled_worker_comes_back_and_every_msg_id_is_acked(cluster: Cluster) -> None:
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 3}
    topology_id = cluster.submit_topology("crash", conf, _topology())
    attempt = cluster.zk.read_assignment(topology_id)["attempt"]
    wait_for(lambda: spout_acked(cluster, "crash") > 100, 30, "the first acks")

    beats = all_ready(cluster, topology_id, 2)
    victim = beats[1]["pid"]
    # Only ever SIGKILL a Spark Python worker of ours, never this process or the JVM.
    assert victim not in (os.getpid(), beats[0]["pid"])
    assert "pyspark" in _cmdline(victim), _cmdline(victim)
    assert spout_acked(cluster, "crash") < N, "the run ended before the kill: raise N"
    shown = cluster.stats("crash")["spouts"][0]["acked"]  # what `status` showed
    os.kill(victim, signal.SIGKILL)

    def back() -> dict[int, dict[str, Any]]:
        beats = all_ready(cluster, topology_id, 2)
        return beats if beats and beats[1]["pid"] != victim else {}

    beats = wait_for(back, 60, "worker 1 to be ready again with a new pid")
    assert beats[0]["pid"] not in (victim, beats[1]["pid"])
    assert cluster.zk.read_assignment(topology_id)["attempt"] >= attempt
    [listed] = cluster.topologies()
    assert listed["status"] == "ACTIVE" and listed["workers_alive"] == 2
    # the relaunched worker carries on its tasks' counts: status never goes down
    assert cluster.stats("crash")["spouts"][0]["acked"] >= shown
    assert len(cluster.zk.carried_stats(topology_id)) == 2  # saved with the topology

    wait_for(lambda: acked_ids(cluster, "crash") >= set(range(N)), 60, "every msg_id acked")
    assert acked_ids(cluster, "crash") == set(range(N))
