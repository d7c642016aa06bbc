"""A worker killed with SIGKILL comes back (Spark retries its task, or nimbus relaunches
it) and, with acking and replay, every msg_id is still acked; the nimbus's Prometheus
endpoint has every family on every scrape meanwhile, no counter going down (issue 40)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.metrics_scrapes import Scrapes
from tests.spark.components import PacedCountingSpout, SinkBolt
from tests.spark.helpers import acked_ids, all_ready, spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.metrics import ClusterMetrics

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


def test_sigkilled_worker_comes_back_and_every_msg_id_is_acked(
    cluster: Cluster, zk_conf: dict[str, Any]
) -> None:
    conf = {
        "topology.workers": 2,
        "topology.message.timeout.secs": 3,
        "topology.stats.interval.secs": 1,
    }
    topology_id = cluster.submit_topology("crash", conf, _topology())
    attempt = cluster.zk.read_assignment(topology_id)["attempt"]
    wait_for(lambda: spout_acked(cluster, "crash") > 100, 30, "the first acks")
    metrics = ClusterMetrics(zk_conf, port=0)
    try:
        _kill_and_come_back(cluster, topology_id, attempt, Scrapes(metrics.url, "crash"))
    finally:
        metrics.close()

    wait_for(lambda: acked_ids(cluster, "crash") >= set(range(N)), 60, "every msg_id acked")
    assert acked_ids(cluster, "crash") == set(range(N))


def _kill_and_come_back(cluster: Cluster, topology_id: str, attempt: int, scrapes: Scrapes) -> None:
    """SIGKILL worker 1, scraping all along until it is back and has published again."""

    def published(samples: Any) -> bool:  # both workers' stats in their heartbeats
        return all("stats" in b for b in cluster.current_beats(topology_id).values())

    wait_for(lambda: published(scrapes.take()), 30, "both workers' stats published")

    beats = all_ready(cluster, topology_id, 2)
    victim = beats[1]["pid"]
    # Only ever SIGKILL a Spark Python worker of ours, never this process or the JVM.
    assert victim not in (os.getpid(), beats[0]["pid"])
    assert "pyspark" in _cmdline(victim), _cmdline(victim)
    assert spout_acked(cluster, "crash") < N, "the run ended before the kill: raise N"
    shown = cluster.stats("crash")["spouts"][0]["acked"]  # what `status` showed
    os.kill(victim, signal.SIGKILL)

    def back() -> dict[int, dict[str, Any]]:
        scrapes.take()
        beats = all_ready(cluster, topology_id, 2)
        return beats if beats and beats[1]["pid"] != victim and "stats" in beats[1] else {}

    beats = wait_for(back, 60, "worker 1 to be ready again with a new pid, publishing")
    scrapes.take()  # a scrape after it is back (the last one in back() may precede it)
    assert scrapes.value("sparkstorm_worker_restarts_total", worker="1") >= 1
    assert scrapes.value("sparkstorm_topology_workers_alive") == 2
    assert beats[0]["pid"] not in (victim, beats[1]["pid"])
    assert cluster.zk.read_assignment(topology_id)["attempt"] >= attempt
    [listed] = cluster.topologies()
    assert listed["status"] == "ACTIVE" and listed["workers_alive"] == 2
    # the relaunched worker carries on its tasks' counts: status never goes down
    assert cluster.stats("crash")["spouts"][0]["acked"] >= shown
    assert len(cluster.zk.carried_stats(topology_id)) == 2  # saved with the topology
