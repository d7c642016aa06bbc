"""Rescaling with state on the Spark-hosted cluster (what ``sparkstorm local`` runs), while
tuples flow: a fields-grouped stateful count rescaled 2 -> 4 tasks (through the CLI,
``sparkstorm rebalance NAME -e count=4``) and 4 -> 1 (``Cluster.rebalance``) ends with
exact counts; a partitioned replayable spout rescaled 2 -> 3 keeps every position (no record
lost or counted twice); the CLI's rebalance waits only while tuples are in flight.  The
new counts show in the record, the assignment and ``status`` and survive a later worker
rebalance; a refused rescale changes nothing; with a cluster secret the nimbus re-signs the
record it rescaled."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import cli
from tests.integration.state_components import (
    IndexedWords,
    finished,
    merged_counts,
    settled_counts,
    state_conf,
    stateful_word_count,
    word_list,
)
from tests.spark.components import CountingSpout, SinkBolt
from tests.spark.helpers import wait_for
from tests.spark.rescale_components import expected_sums, partitioned_count
from topology import TopologyBuilder
from topology import config as cfg
from topology.deploy.cluster.client import Cluster, ClusterOperationError
from topology.deploy.security import verify_stored
from topology.testing import LocalStack

pytestmark = [pytest.mark.spark, pytest.mark.timeout(420)]

WORDS = word_list(60_000)


def _run(zk_conf: dict[str, Any], *args: str) -> Result:
    """``sparkstorm ARGS`` pointed at this test's ZooKeeper root."""
    options = [
        "--zookeeper",
        f"127.0.0.1:{zk_conf['storm.zookeeper.port']}",
        "-c",
        f"storm.zookeeper.root={zk_conf['storm.zookeeper.root']}",
    ]
    return CliRunner().invoke(cli, [*args, *options])


def _tasks(cluster: Cluster, topology_id: str, component: str) -> tuple[int, int, int]:
    """``component``'s task count in the record, the assignment and ``status``."""
    record = cluster.zk.read_record(topology_id)
    assignment = cluster.zk.read_assignment(topology_id)
    report = cluster.stats(cluster.zk.read_record(topology_id)["name"], fresh=False)
    [shown] = [c for c in report["spouts"] + report["bolts"] if c["id"] == component]
    return (
        record["components"][component]["tasks"],
        len(assignment["component_tasks"][component]),
        shown["tasks"],
    )


def _counted(cluster: Cluster, name: str) -> int:
    return merged_counts(cluster.results(name)).total()


def test_a_keyed_count_rescaled_2_4_1_while_tuples_flow_is_exact(
    cluster: Cluster, zk_conf: dict[str, Any], tmp_path: Path
) -> None:
    topology = stateful_word_count(IndexedWords(WORDS, rate=2500), counters=2)
    topology_id = cluster.submit_topology("resc", state_conf(tmp_path, 2, 500), topology)
    wait_for(lambda: _counted(cluster, "resc") > 3000, 60, "counting to start")

    # no --wait: the drain lasts while tuples are in flight, not the message timeout (30 s);
    # piped, each step is said once (issue 40)
    result = _run(zk_conf, "rebalance", "resc", "-e", "count=4")
    assert result.exit_code == 0, result.output
    steps = result.stderr.splitlines()
    assert len(steps) == len(set(steps)), steps
    assert [s for s in steps if s.startswith("nothing in flight after ")], steps
    assert result.stdout.splitlines()[-1] == (
        "Rebalanced topology: resc now runs on 2 worker(s); count: 2 -> 4 tasks"
    )
    assert _tasks(cluster, topology_id, "count") == (4, 4, 4)
    assert len(cluster.results("resc")["count"]) == 4
    assert not finished(cluster.results("resc")), "the run ended before the rescale to 4"

    wait_for(lambda: _counted(cluster, "resc") > 25_000, 90, "counting on 4 tasks")
    done = cluster.rebalance("resc", wait_secs=0, components={"count": 1})
    assert done.describe() == "on 2 worker(s); count: 4 -> 1 tasks"
    assert _tasks(cluster, topology_id, "count") == (1, 1, 1)
    assert not finished(cluster.results("resc")), "the run ended before the rescale to 1"

    assert settled_counts(lambda: cluster.results("resc"), 200, pause=1.2) == Counter(WORDS)
    assert [len(c) for c in cluster.results("resc")["count"].values()] == [50]

    # a worker rebalance afterwards keeps the rescaled count, and the state
    cluster.rebalance("resc", 1, wait_secs=0)
    assert _tasks(cluster, topology_id, "count") == (1, 1, 1)
    assert settled_counts(lambda: cluster.results("resc"), 60, pause=1.2) == Counter(WORDS)


def test_a_partitioned_spout_rescaled_2_to_3_keeps_every_position(
    cluster: Cluster, tmp_path: Path
) -> None:
    partitions, size = 6, 4_000
    topology = partitioned_count(partitions, size, rate=800, spouts=2)
    topology_id = cluster.submit_topology("spouts", state_conf(tmp_path, 2, 500), topology)

    def counted() -> int:
        return sum(v[0] for t in cluster.results("spouts")["count"].values() for v in t.values())

    wait_for(lambda: counted() > 3_000, 60, "counting to start")
    cluster.rebalance("spouts", wait_secs=0, components={"lists": 3})
    assert _tasks(cluster, topology_id, "lists") == (3, 3, 3)
    spouts = cluster.results("spouts")["lists"]
    assert len(spouts) == 3 and not all(s["done"] for s in spouts.values())
    owned = sorted(p for s in spouts.values() for p in s["positions"])
    assert owned == [f"p{i}" for i in range(partitions)]  # each partition read by one task

    def sums() -> dict[str, list[int]]:
        merged: dict[str, list[int]] = {}
        for task in cluster.results("spouts")["count"].values():
            merged.update(task)
        return merged

    def read_all() -> bool:
        return all(s["done"] for s in cluster.results("spouts")["lists"].values())

    wait_for(read_all, 200, "every partition read to its end", 0.5)
    last: dict[str, list[int]] | None = None
    while (now := sums()) != last:  # until a checkpoint interval changed nothing
        last = now
        time.sleep(1.2)
    expected = expected_sums(partitions, size)
    wrong = {k: (now.get(k), v) for k, v in expected.items() if now.get(k) != v}
    assert not wrong, f"{len(wrong)} keys lost or counted twice (got, expected): {wrong}"
    assert set(now) == set(expected)


def test_a_rescale_the_state_cannot_take_is_refused_and_changes_nothing(
    cluster: Cluster, zk_conf: dict[str, Any], tmp_path: Path
) -> None:
    conf = {**state_conf(tmp_path, 1, 500), "topology.state.max.parallelism": 4}
    topology = stateful_word_count(IndexedWords(WORDS[:100], rate=100), counters=2)
    topology_id = cluster.submit_topology("refused", conf, topology)
    before = cluster.zk.read_assignment(topology_id)
    with pytest.raises(ClusterOperationError, match="keyed state in 4 key groups"):
        cluster.rebalance("refused", components={"count": 5})
    result = _run(zk_conf, "rebalance", "refused", "-e", "cuont=2")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "no component 'cuont' (its components: count, words)" in result.output
    assert cluster.zk.read_assignment(topology_id) == before
    assert not cluster.zk.read_record(topology_id).get("rebalance")


def test_with_a_cluster_secret_the_rescaled_record_is_re_signed(
    zk_conf: dict[str, Any], zookeeper: Any, spark_backend: Any
) -> None:
    signed = {**zk_conf, "sparkstorm.cluster.secret": "a-cluster-secret-for-tests"}
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(limit=1000))
    builder.set_bolt("sink", SinkBolt(), 2).shuffle_grouping("numbers")
    with LocalStack(signed, zookeeper=zookeeper, backend=spark_backend) as stack:
        with stack.cluster() as cluster:
            conf = {"topology.workers": 1}
            topology_id = cluster.submit_topology("signed", conf, builder.create_topology())
            cluster.rebalance("signed", wait_secs=0, components={"sink": 3})
            record = cluster.zk.read_record(topology_id)
            code = cluster.zk.read_code(topology_id)
            verify_stored(cluster.zk, cfg.cluster_secret(signed), topology_id, record, code)
            assert record["components"]["sink"]["tasks"] == 3
            assert len(cluster.results("signed")["sink"]) == 3
            assert cluster.errors("signed") == {}
