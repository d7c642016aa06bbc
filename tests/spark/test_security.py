"""Security on a real ZooKeeper: ACLs keep anonymous clients out, and code or a record
changed in ZooKeeper without the cluster secret is never run, by the nimbus or by a worker.
Without a secret (the local identity): tests/spark/test_zk_ownership.py and
tests/spark/test_zk_intruders.py."""

from __future__ import annotations

import json
import os
import pickle
import signal
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from tests.spark.components import Booby, CountingSpout, SinkBolt
from tests.spark.helpers import spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster
from topology.deploy.zk.connection import ZooKeeperNotAuthorized
from topology.testing import LocalStack

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

SECRET = "a-cluster-secret-for-tests"


def _topology() -> Any:
    builder = TopologyBuilder()
    # a bounded spout: this test is about access, not load (a busy worker's status:
    # tests/spark/test_busy_worker_status.py)
    builder.set_spout("numbers", CountingSpout(limit=1000))
    builder.set_bolt("sink", SinkBolt()).shuffle_grouping("numbers")
    return builder.create_topology()


def test_anonymous_clients_can_neither_read_nor_write_a_secured_cluster(
    zk_conf: dict[str, Any], zookeeper: Any, spark_backend: Any
) -> None:
    secured = {
        **zk_conf,
        "storm.zookeeper.auth.scheme": "digest",
        "storm.zookeeper.auth.payload": "sparkstorm:s3cret",
        "sparkstorm.cluster.secret": SECRET,
    }
    with LocalStack(secured, zookeeper=zookeeper, backend=spark_backend) as stack:
        with stack.cluster() as cluster:
            topology_id = cluster.submit_topology("acl", {"topology.workers": 1}, _topology())
            wait_for(lambda: spout_acked(cluster, "acl", polling=True) > 100, 60, "acks")
            paths = cluster.zk.paths
            record = cluster.zk.read_record(topology_id)
            assert "sparkstorm.cluster.secret" not in record["conf"]
            assert "storm.zookeeper.auth.payload" not in record["conf"]
        anonymous = KazooClient(hosts=f"127.0.0.1:{zookeeper.port}")
        anonymous.start(10)
        try:
            for read in (paths.storm(topology_id), paths.assignment(topology_id)):
                with pytest.raises(NoAuthError):
                    anonymous.get(read)
            with pytest.raises(NoAuthError):
                anonymous.get_children(paths.storms)
            chunk = paths.code_chunk(topology_id, 0)
            with pytest.raises(NoAuthError):
                anonymous.set(chunk, b"evil")
            with pytest.raises(NoAuthError):
                anonymous.delete(paths.storm(topology_id))
        finally:
            anonymous.stop()
            anonymous.close()
        with pytest.raises(ZooKeeperNotAuthorized, match="not authorized"):
            Cluster(zk_conf).connect()  # the same root without the credentials


def test_code_changed_in_zookeeper_is_refused_by_worker_and_nimbus(
    zk_conf: dict[str, Any], zookeeper: Any, spark_backend: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "owned"
    signed = {**zk_conf, "sparkstorm.cluster.secret": SECRET}
    with LocalStack(signed, zookeeper=zookeeper, backend=spark_backend) as stack:
        with stack.cluster() as cluster:
            topology_id = cluster.submit_topology("tamper", {"topology.workers": 1}, _topology())
            pid = cluster.current_beats(topology_id)[0]["pid"]
            # an attacker with write access to ZooKeeper (no ACLs here) but not the secret
            evil = pickle.dumps(Booby(str(marker)))
            cluster.zk.client.set(cluster.zk.paths.code_chunk(topology_id, 0), evil)
            for extra in cluster.zk.client.get_children(cluster.zk.paths.code(topology_id))[1:]:
                cluster.zk.client.delete(f"{cluster.zk.paths.code(topology_id)}/{extra}")

            refusal = _relaunched_worker_refuses(cluster, "tamper", pid)
            assert "code in ZooKeeper does not carry the cluster secret" in refusal

            cluster.zk.update_record(topology_id, rebalance={"workers": 1, "wait": 0})
            wait_for(
                lambda: (cluster.zk.read_record(topology_id) or {}).get("status") == "FAILED",
                60,
                "the nimbus to refuse the code",
            )
            assert "signature" in cluster.zk.read_record(topology_id)["error"]
    assert not marker.exists(), "the tampered code was unpickled"


def _relaunched_worker_refuses(cluster: Any, name: str, pid: int) -> str:
    """Kill worker ``pid`` of topology ``name``; the text of the signature error its
    relaunched successor reports when it reads the (tampered) nodes again."""
    os.kill(pid, signal.SIGKILL)

    def refused() -> list[dict[str, Any]]:
        errors = cluster.errors(name).get("__worker", [])
        return [e for e in errors if "signature" in e["text"]]

    [refusal, *_] = wait_for(refused, 60, f"a relaunched worker of {name!r} to refuse it")
    return str(refusal["text"])


def test_module_paths_changed_in_zookeeper_are_refused_by_a_worker(
    zk_conf: dict[str, Any], zookeeper: Any, spark_backend: Any, tmp_path: Path
) -> None:
    """``module_paths`` decide what a worker imports: they are signed with the rest of the
    record (docs/SECURITY.md), so a relaunched worker refuses a record whose paths changed."""
    signed = {**zk_conf, "sparkstorm.cluster.secret": SECRET}
    with LocalStack(signed, zookeeper=zookeeper, backend=spark_backend) as stack:
        with stack.cluster() as cluster:
            topology_id = cluster.submit_topology("paths", {"topology.workers": 1}, _topology())
            pid = cluster.current_beats(topology_id)[0]["pid"]
            path = cluster.zk.paths.storm(topology_id)
            raw, _ = cluster.zk.client.get(path)
            record = json.loads(raw)
            record["module_paths"] = [str(tmp_path), *record.get("module_paths", [])]
            cluster.zk.client.set(path, json.dumps(record).encode())

            refusal = _relaunched_worker_refuses(cluster, "paths", pid)
            assert "its record (name, conf, module_paths, components)" in refusal
