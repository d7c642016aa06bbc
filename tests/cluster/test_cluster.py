"""The multi-host tier: a real cluster across network namespaces (see ``harness.py``).

One cluster serves the whole module, and the tests run in order on it: a stateful word
count across hosts, rescaled, stopped with a savepoint and upgraded with exact counts; then
one at-least-once topology with on-disk ledgers lives through an executor killed with
SIGKILL, the leader nimbus killed with SIGKILL, all of ZooKeeper down for 12 s, an expired
nimbus session and one ZooKeeper node killed — and in the end every msg id it emitted is
acked.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.components import STOP_FILE, ledger_summary, longest_gap
from tests.cluster.harness import SESSION_SECS, SPARK_HOSTS, ZK_NODES, ClusterStack
from tests.cluster.netns import check_available

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

#: New ids per second per spout task of the ledger topology (two tasks).
RATE = 150.0
#: Sentences per partition of the rescaled word count (8 partitions, 50/s per spout task).
SENTENCES_PER_PARTITION = 1500
#: Sentences per second per spout task of version 2, which reads the rest: the rescales
#: happened while version 1 read slowly, so the rest need not wait.
FAST_RATE = 1000
#: How long all of ZooKeeper is down: longer than a session (``SESSION_SECS``).
ZK_OUTAGE_SECS = 12


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterStack]:
    reason = check_available()
    if reason is not None:
        pytest.skip(f"the multi-host tier needs network namespaces: {reason}")
    cluster = ClusterStack(tmp_path_factory.mktemp("cluster")).start()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="module")
def ledger(stack: ClusterStack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The at-least-once topology ``chaos``, running; its ledger folder."""
    folder = tmp_path_factory.mktemp("ledger")
    assert stack.probe("submit-ledger", "chaos", str(folder), str(RATE), timeout=240)
    stack.wait_for(lambda: ledger_summary(str(folder))["acked"] > 500, 60, "the first acks")
    return folder


def beat_pids(stack: ClusterStack, name: str) -> dict[str, int]:
    beats = stack.probe("beats", name) or {}
    return {w: b["pid"] for w, b in beats.items()}


def acks_between(folder: Path, start: float, end: float) -> int:
    return sum(1 for t in ledger_summary(str(folder))["ack_times"] if start <= t <= end)


def assert_acks_flow(folder: Path, secs: float = 6.0, at_least: float = 0.5) -> float:
    """Wait ``secs``; assert acks came at ``at_least`` of the spouts' rate; the rate."""
    start = time.time()
    time.sleep(secs)
    rate = acks_between(folder, start, time.time() - 0.5) / (secs - 0.5)
    assert rate >= at_least * 2 * RATE, f"acks at {rate:.0f}/s, expected ~{2 * RATE:.0f}/s"
    return rate


def wait_until_acks_flow(stack: ClusterStack, folder: Path, timeout: float = 60.0) -> None:
    """Wait until the last 3 s saw acks at half the spouts' rate (a relaunched worker's
    spout opens, connects and replays its timed-out ids only after its first heartbeat)."""

    def flowing() -> bool:
        now = time.time()
        return acks_between(folder, now - 3.5, now - 0.5) / 3.0 >= 0.5 * 2 * RATE

    stack.wait_for(flowing, timeout, "acks at the full rate again")


def assert_spread_across_hosts(stack: ClusterStack, name: str) -> None:
    """``name``'s two workers run on the two Spark hosts, one executor each, advertise their
    own host's address, log on their own host (read through the cluster), and its records
    are closed to a client without the cluster's credentials."""
    beats = stack.probe("beats", name)
    hosts = {b["host"] for b in beats.values()}
    assert hosts == set(SPARK_HOSTS), beats
    for beat in beats.values():  # each advertises its own host's address, found there
        assert beat["endpoint"].startswith(f"tcp://{stack.address[beat['host']]}:"), beat
    executors = {b["executor"] for b in beats.values()}
    assert len(executors) == 2 and "driver" not in executors  # one executor per worker
    assert stack.probe("anonymous-can-read", name) is False  # the cluster runs secured
    # worker 1's log lives on its own host: the client reads it through the cluster
    logged = stack.sparkstorm("logs", name, "--worker", "1")
    host = (beats.get("1") or beats.get(1))["host"]  # JSON keys from the probe
    assert logged.startswith(f"==> worker 1 on {host} "), logged[:300]
    assert f"worker 1 of {name} starting" in logged, logged[:300]


def test_a_stateful_topology_is_rescaled_stopped_with_a_savepoint_and_upgraded_exactly(
    stack: ClusterStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 29's acceptance through the CLI on this cluster: a checkpointed word count
    (state in a directory every host sees) rescaled 2 -> 4 counters and 3 spout tasks while
    sentences flow (the way back to 1 counter is tests/spark/test_rescale_cluster.py's: a
    rebalance here takes 20-50 s); stopped with a savepoint; version 2 (its counter renamed,
    uid kept, values in a new format) submitted from it reads the rest; every word counted
    exactly once, and the killed topology's checkpoints are gone."""
    state = tmp_path_factory.mktemp("state")
    savepoints = tmp_path_factory.mktemp("savepoints")
    conf = ["-c", "topology.workers=2", "-c", "topology.state.provider=directory",
            "-c", f"topology.state.dir={state}",
            "-c", f"sentences.per.partition={SENTENCES_PER_PARTITION}"]  # fmt: skip
    stack.sparkstorm("submit", "examples/rescalable_wordcount.py:topology", "--name", "rwc",
                     *conf, "-c", "sentences.per.sec=50", timeout=240)  # fmt: skip
    first_id = stack.probe("topology-id", "rwc")
    assert_spread_across_hosts(stack, "rwc")
    out = stack.sparkstorm("rebalance", "rwc", "-e", "count=4", "-e", "sentences=3",
                           "--wait", "1", timeout=240)  # fmt: skip
    assert "count: 2 -> 4 tasks" in out and "sentences: 2 -> 3 tasks" in out, out
    out = stack.sparkstorm("kill", "rwc", "--savepoint", "--dir", str(savepoints), timeout=240)
    [path] = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("Savepoint:")]
    # the killed topology's checkpoints are removed by the nimbus (its savepoint stays)
    stack.wait_for(lambda: not (state / first_id).exists(), 60, "its checkpoints deleted")
    inspected = json.loads(stack.sparkstorm("savepoint", "--inspect", path, "--json"))
    assert inspected["components"]["count"]["uid"] == "count", inspected
    stack.sparkstorm("submit", "examples/rescalable_wordcount_v2.py:topology", "--name", "rwc",
                     "--from-savepoint", path, *conf, "-c", f"sentences.per.sec={FAST_RATE}",
                     timeout=240)  # fmt: skip

    def all_read() -> bool:
        results = stack.probe("results", "rwc") or {}
        positions = [at for task in results.get("sentences", {}).values() for at in task.values()]
        return len(positions) == 8 and all(at == SENTENCES_PER_PARTITION for at in positions)

    stack.wait_for(all_read, 240, "every sentence read")
    assert stack.probe("deactivate-and-drain", "rwc", "120", timeout=180)
    results = stack.probe("results", "rwc")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import rescalable_wordcount_v2  # the example's own verify(): every word's count, exact

    assert "each counted exactly once" in rescalable_wordcount_v2.verify(results)
    assert stack.probe("kill", "rwc", timeout=180)


def test_a_topology_bigger_than_the_cluster_is_refused_naming_the_numbers(
    stack: ClusterStack,
) -> None:
    with pytest.raises(RuntimeError) as info:
        stack.sparkstorm("submit", "examples/wordcount.py:topology", "--name", "huge",
                         "-c", "topology.workers=9", timeout=120)  # fmt: skip
    message = str(info.value)
    assert "9 worker(s) need 9 task slot(s)" in message
    assert f"free of {2 * stack.worker_cores}" in message and stack.master_url in message
    assert "Traceback" not in message
    assert stack.probe("topologies") == []


def test_a_killed_executor_is_replaced_and_its_worker_relaunched(
    stack: ClusterStack, ledger: Path
) -> None:
    before = beat_pids(stack, "chaos")
    victims = stack.executor_pids("h1")
    assert victims, "no executor on h1"
    for pid in victims:
        os.kill(pid, signal.SIGKILL)

    def relaunched() -> bool:
        now = beat_pids(stack, "chaos")
        return len(now) == 2 and now != before

    stack.wait_for(relaunched, 120, "the worker of the killed executor to come back")
    wait_until_acks_flow(stack, ledger)
    assert_acks_flow(ledger)


def test_the_standby_nimbus_takes_over_and_adopts_the_running_workers(
    stack: ClusterStack, ledger: Path
) -> None:
    leader = stack.leader_host()
    assert leader is not None
    driver = stack.probe("driver", "chaos")
    workers = beat_pids(stack, "chaos")
    stack.nimbus[leader].send_signal(signal.SIGKILL)
    stack.nimbus[leader].wait(10)
    stack.wait_for(lambda: stack.leader_host() not in (None, leader), 60, "the standby to lead")
    assert_acks_flow(ledger)
    assert beat_pids(stack, "chaos") == workers  # the same worker processes: adopted
    assert (stack.probe("driver", "chaos") or {}).get("pid") == driver["pid"]
    stack.start_nimbus(leader)  # back as the standby
    stack.wait_for(lambda: len(stack.probe("contenders") or []) == 2, 60, "a standby again")


def test_acks_keep_flowing_while_all_of_zookeeper_is_down(
    stack: ClusterStack, ledger: Path
) -> None:
    workers = beat_pids(stack, "chaos")
    before = assert_acks_flow(ledger)
    down = time.time()
    for node in ZK_NODES:
        stack.stop_zookeeper(node)
    time.sleep(ZK_OUTAGE_SECS)
    during = acks_between(ledger, down + 1, time.time()) / (time.time() - down - 1)
    for node in ZK_NODES:
        stack.start_zookeeper(node)
    stack.wait_for(lambda: stack.probe("ready"), 120, "ZooKeeper back")
    assert during >= 0.8 * before, f"{during:.0f} acks/s without ZooKeeper, {before:.0f} before"
    summary = ledger_summary(str(ledger))
    assert longest_gap(summary["ack_times"], down, down + ZK_OUTAGE_SECS) < 2.0
    assert beat_pids(stack, "chaos") == workers  # nothing was relaunched because of it


def test_a_nimbus_whose_session_expired_rejoins_without_exiting(
    stack: ClusterStack, ledger: Path
) -> None:
    leader = stack.leader_host()
    assert leader is not None
    nimbus = stack.nimbus[leader]
    stack.disconnect(leader)
    time.sleep(SESSION_SECS + 6)  # ZooKeeper expires its session meanwhile
    stack.reconnect(leader)
    stack.wait_for(lambda: len(stack.probe("contenders") or []) == 2, 90, "it to campaign again")
    assert nimbus.poll() is None, "the nimbus exited"
    assert stack.leader_host() is not None
    assert_acks_flow(ledger)


def test_a_worker_whose_session_expired_re_registers_without_a_relaunch(
    stack: ClusterStack, ledger: Path
) -> None:
    workers = beat_pids(stack, "chaos")
    host = "h1"
    stack.disconnect(host)
    time.sleep(SESSION_SECS + 6)  # its workers' ZooKeeper sessions expire meanwhile
    stack.reconnect(host)
    stack.wait_for(lambda: beat_pids(stack, "chaos") == workers, 60, "the heartbeats back")
    # TCP resends what waited during the partition on its own backoff (seconds): give the
    # data plane that long before asking for the full rate again
    start = time.time()
    stack.wait_for(lambda: acks_between(ledger, start, time.time()) > 1000, 60, "acks again")
    assert_acks_flow(ledger)


def test_killing_one_zookeeper_node_changes_nothing(stack: ClusterStack, ledger: Path) -> None:
    workers = beat_pids(stack, "chaos")
    stack.stop_zookeeper("zk1")
    try:
        assert_acks_flow(ledger, secs=10)
        assert beat_pids(stack, "chaos") == workers
        assert stack.leader_host() is not None
    finally:
        stack.start_zookeeper("zk1")


def test_every_emitted_msg_id_was_acked(stack: ClusterStack, ledger: Path) -> None:
    (ledger / STOP_FILE).touch()  # no new ids: what was emitted drains
    summary: dict[str, Any] = {}

    def drained() -> bool:
        summary.update(ledger_summary(str(ledger)))
        return not summary["lost"]

    stack.wait_for(drained, 120, "every emitted msg id to be acked", interval=2.0)
    assert summary["emitted"] > 10_000
    assert summary["acked"] == summary["emitted"]
