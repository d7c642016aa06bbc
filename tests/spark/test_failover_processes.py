"""Two `sparkstorm nimbus` processes: SIGKILL the leader, the standby takes over.

The topology runs in its own Spark application, driven by a process of its own that the
leader started: the leader's death leaves it and its workers running.  The standby is
elected once ZooKeeper expires the dead session and adopts the topology as it is — same
assignment attempt, same driver, same worker processes — while acks keep flowing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark.components import CountingSpout, SinkBolt
from tests.spark.helpers import current_beats, spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.zookeeper_server import EmbeddedZooKeeper

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]


def _children(pids: set[int]) -> set[int]:
    """Every live descendant of ``pids`` (read from /proc; no process names involved)."""
    parent_of: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent_of[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = set(pids)
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (zombies count as gone)."""
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _start_nimbus(conf: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "cli.main",
        "nimbus",
        "--zookeeper",
        f"127.0.0.1:{conf['storm.zookeeper.port']}",
        "-c",
        f"storm.zookeeper.root={conf['storm.zookeeper.root']}",
        "-c",
        "spark.master=local[2,2]",
    ]
    with open(log, "wb") as out:
        return subprocess.Popen(
            command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )


def test_sigkilled_leader_process_is_replaced_and_the_topology_keeps_acking(
    zookeeper: EmbeddedZooKeeper, zk_conf: dict[str, Any], tmp_path: Path
) -> None:
    nimbuses = [_start_nimbus(zk_conf, tmp_path / f"nimbus{i}.log") for i in range(2)]
    spawned = {p.pid for p in nimbuses}
    orphans: set[int] = set()  # the killed leader's descendants, reparented once it dies
    try:
        with Cluster(zk_conf) as cluster:
            leader = wait_for(cluster.leader, 90, "a leader nimbus")
            leader_pid = int(leader.split(":")[1])
            assert leader_pid in spawned
            builder = TopologyBuilder()
            builder.set_spout("numbers", CountingSpout(), parallelism=2)
            builder.set_bolt("sink", SinkBolt(), parallelism=2).shuffle_grouping("numbers")
            topology_id = cluster.submit_topology(
                "failover", {"topology.workers": 2}, builder.create_topology()
            )
            wait_for(lambda: spout_acked(cluster, "failover") > 100, 60, "acks")
            attempt = cluster.zk.read_assignment(topology_id)["attempt"]
            workers = {w: b["pid"] for w, b in current_beats(cluster, topology_id).items()}
            driver = cluster.zk.driver(topology_id)
            assert driver is not None and driver["pid"] != leader_pid

            orphans = _children({leader_pid})
            os.kill(leader_pid, signal.SIGKILL)

            new_leader = wait_for(
                lambda: (lead := cluster.leader()) and lead != leader and lead,
                60,
                "the standby to be elected",
            )
            assert int(new_leader.split(":")[1]) in spawned - {leader_pid}
            # the topology's driver (a process of its own) and its workers kept running:
            # the new leader adopted them
            acked = spout_acked(cluster, "failover")
            wait_for(lambda: spout_acked(cluster, "failover") > acked + 100, 30, "acks go on")
            assert cluster.zk.read_assignment(topology_id)["attempt"] == attempt
            assert (cluster.zk.driver(topology_id) or {}).get("pid") == driver["pid"]
            after = {w: b["pid"] for w, b in current_beats(cluster, topology_id).items()}
            assert after == workers
            [listed] = cluster.topologies()
            assert listed["status"] == "ACTIVE" and listed["workers_alive"] == 2
            cluster.kill_topology("failover", wait_secs=0, timeout=60)
            assert cluster.topologies() == []
    finally:
        for proc in nimbuses:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # the nimbus stops its Spark cleanly
        for proc in nimbuses:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        deadline = time.monotonic() + 30
        while _alive(orphans | _children(spawned)) and time.monotonic() < deadline:
            time.sleep(0.2)  # Spark JVMs exit once their Python driver is gone
        for pid in _alive(orphans | _children(spawned)):
            os.kill(pid, signal.SIGKILL)  # only processes this test started
