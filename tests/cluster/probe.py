"""Questions the cluster tests ask, run *inside* the client host's namespace.

``python -m tests.cluster.probe ZK ROOT QUESTION [ARGS...]`` prints one JSON value;
``python -m tests.cluster.probe --serve ZK ROOT`` answers one question per line of its
standard input (a JSON list ``[QUESTION, ARGS...]``) with one JSON line, each on a
connection of its own, so that a test asking hundreds of questions starts Python once.
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


def answer(zk: str, root: str, question: str, *args: str) -> dict[str, Any]:
    """``{"answer": ..., "secs": ...}``, or ``{"error": ..., "secs": ...}`` (the asker reads
    an error as no answer: None)."""
    started = time.monotonic()
    try:
        reply: dict[str, Any] = {"answer": ask(zk, root, question, *args)}
    except Exception as exc:
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    reply["secs"] = round(time.monotonic() - started, 2)
    return reply


def serve(zk: str, root: str) -> None:
    for line in sys.stdin:
        question, *args = json.loads(line)
        print(json.dumps(answer(zk, root, question, *args), default=str), flush=True)


def main() -> int:
    if sys.argv[1] == "--serve":
        serve(*sys.argv[2:4])
        return 0
    zk, root, question, *args = sys.argv[1:]
    reply = answer(zk, root, question, *args)
    print(json.dumps(reply, default=str))
    return 1 if "error" in reply else 0


if __name__ == "__main__":
    sys.exit(main())
