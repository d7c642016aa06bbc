"""Questions the cluster tests ask, run *inside* the client host's namespace.

``python -m tests.cluster.probe ZK ROOT QUESTION [ARGS...]`` prints one JSON value.
The test process itself stays outside every namespace it made, so it reaches ZooKeeper,
the nimbus and the workers only through this.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from tests.cluster.components import LedgerSink, LedgerSpout, PassBolt
from tests.cluster.harness import SECURITY
from topology import Topology, TopologyBuilder
from topology.deploy.cluster.client import Cluster


def ledger_topology(folder: str, rate: float) -> Topology:
    """ledger spout (2 tasks) -> pass (shuffle, 2) -> sink (fields on n, 2)."""
    builder = TopologyBuilder()
    builder.set_spout("ledger", LedgerSpout(folder, rate), parallelism=2)
    builder.set_bolt("pass", PassBolt(), parallelism=2).shuffle_grouping("ledger")
    builder.set_bolt("sink", LedgerSink(folder), parallelism=2).fields_grouping("pass", ["n"])
    return builder.create_topology()


def _cluster(zk: str, root: str) -> Cluster:
    return Cluster(
        {
            "storm.zookeeper.servers": zk.split(","),
            "storm.zookeeper.root": root,
            "storm.zookeeper.connection.timeout.secs": 15,
            **SECURITY,
        }
    )


def ask(zk: str, root: str, question: str, *args: str) -> Any:
    if question == "ready":  # ZooKeeper answers and a write goes through the quorum
        with _cluster(zk, root) as cluster:
            cluster.zk.client.ensure_path(f"{root}/probe")
            return True
    with _cluster(zk, root) as cluster:
        if question == "leader":
            return cluster.leader()
        if question == "contenders":
            return cluster.zk.election("?").contenders()
        if question == "topology-id":
            return cluster.topology_id(args[0])
        if question == "beats":
            return cluster.current_beats(cluster.topology_id(args[0]))
        if question == "driver":
            return cluster.zk.driver(cluster.topology_id(args[0]))
        if question == "topologies":
            return cluster.topologies()
        if question == "status":
            return cluster.stats(args[0])
        if question == "deactivate-and-drain":
            cluster.deactivate(args[0])
            cluster.wait_until_drained(args[0], timeout=float(args[1]) if args[1:] else 120.0)
            return True
        if question == "results":
            return cluster.results(args[0])
        if question == "submit-ledger":  # NAME FOLDER RATE [TIMEOUT]
            conf = {"topology.workers": 2, "topology.message.timeout.secs": 10}
            return cluster.submit_topology(args[0], conf, ledger_topology(args[1], float(args[2])))
        if question == "anonymous-can-read":  # NAME: without credentials, on another session
            from kazoo.client import KazooClient
            from kazoo.exceptions import NoAuthError

            path = cluster.zk.paths.storm(cluster.topology_id(args[0]))
            anonymous = KazooClient(hosts=zk)
            anonymous.start(15)
            try:
                anonymous.get(path)
                return True
            except NoAuthError:
                return False
            finally:
                anonymous.stop()
                anonymous.close()
        if question == "kill":
            cluster.kill_topology(args[0], wait_secs=0, timeout=120)
            return True
    raise SystemExit(f"unknown question {question!r}")


def main() -> int:
    zk, root, question, *args = sys.argv[1:]
    started = time.monotonic()
    answer = ask(zk, root, question, *args)
    json.dump(
        {"answer": answer, "secs": round(time.monotonic() - started, 2)}, sys.stdout, default=str
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
