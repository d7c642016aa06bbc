"""Exactly-once state on the Spark-hosted cluster (what ``sparkstorm local`` runs): counts
equal the input after a nimbus failover plus a worker killed with SIGKILL, and after a
rebalance from 2 to 3 workers (the state moves with its keys)."""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.state_components import (
    IndexedWords,
    finished,
    merged_counts,
    settled_counts,
    state_conf,
    stateful_word_count,
    word_list,
)
from tests.spark.helpers import all_ready, wait_for
from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.nimbus import Nimbus

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

WORDS = word_list(60_000)


def _conf(tmp_path: Path, workers: int) -> dict[str, Any]:
    return state_conf(tmp_path, workers, 500)


def _settled(cluster: Cluster, name: str) -> Counter[str]:
    return settled_counts(lambda: cluster.results(name), 150, pause=1.2)


def _counted(cluster: Cluster, name: str) -> int:
    return merged_counts(cluster.results(name)).total()


def test_counts_are_exact_after_a_nimbus_failover_and_a_killed_worker(
    zk_conf: dict[str, Any], nimbus: Nimbus, cluster: Cluster, spark_backend: Any, tmp_path: Path
) -> None:
    standby = Nimbus(zk_conf, spark_backend)
    standby_thread = standby.start()
    try:
        topology = stateful_word_count(IndexedWords(WORDS, rate=4000))
        topology_id = cluster.submit_topology("exact", _conf(tmp_path, 2), topology)
        wait_for(lambda: _counted(cluster, "exact") > 2000, 60, "counting to start")
        [leader_thread] = [
            t for t in threading.enumerate() if getattr(t, "_target", None) == nimbus.run
        ]
        nimbus.shutdown()
        leader_thread.join(15)
        assert standby.is_leader.wait(20), "the standby was not elected"
        pid = all_ready(cluster, topology_id, 2)[1]["pid"]
        os.kill(pid, signal.SIGKILL)
        assert not finished(cluster.results("exact")), "the run ended before the kill"
        assert _settled(cluster, "exact") == Counter(WORDS)
        cluster.kill_topology("exact", wait_secs=0)
    finally:
        standby.shutdown()
        standby_thread.join(15)


def test_state_is_restored_after_a_rebalance_from_two_to_three_workers(
    cluster: Cluster, tmp_path: Path
) -> None:
    topology = stateful_word_count(IndexedWords(WORDS, rate=4000))
    topology_id = cluster.submit_topology("rebal", _conf(tmp_path, 2), topology)
    wait_for(lambda: _counted(cluster, "rebal") > 5000, 60, "counting to start")
    cluster.rebalance("rebal", 3, wait_secs=0)
    assert cluster.zk.read_assignment(topology_id)["workers"] == 3
    assert not finished(cluster.results("rebal")), "the run ended before the rebalance"
    assert _settled(cluster, "rebal") == Counter(WORDS)
    tasks = cluster.results("rebal")["count"]
    assert len(tasks) == 3 and all(tasks.values())  # every counting task holds keys
