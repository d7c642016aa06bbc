"""A worker that dies of an uncaught error mid-run is relaunched on a LocalCluster, as on a
cluster: same backoff and restart counts, the reason in ``stats``, no msg id lost."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.integration.crash_components import CrashOnce
from tests.integration.helpers import CONF, process_gone, wait_for
from topology import LocalCluster, TopologyBuilder
from topology.testing import FeederSpout

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def test_a_worker_killed_by_an_exception_is_relaunched_and_every_msg_id_is_acked(
    tmp_path: Path,
) -> None:
    n, victim = 2000, 1
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["n"], [[i] for i in range(n)], replay_failed=True))
    crash = CrashOnce(str(tmp_path / "crashed"), worker=victim, after=100)
    builder.set_bolt("crash", crash, 2).shuffle_grouping("spout")
    conf = {**CONF, "topology.message.timeout.secs": 5, "topology.max.spout.pending": 200}

    with LocalCluster() as cluster:
        cluster.submit_topology("crash", conf, builder.create_topology())
        worker_of = cluster.assignment("crash").worker_of()
        [spout_task] = cluster.assignment("crash").component_tasks["spout"]
        assert worker_of[spout_task] != victim  # the spout's own records survive
        pids = cluster.worker_pids("crash")
        wait_for(lambda: cluster.restarts("crash"), lambda r: r == {victim: 1}, timeout=30)
        wait_for(lambda: process_gone(pids[victim]), bool, timeout=10)
        cluster.wait_until_drained("crash", timeout=60)
        results = cluster.results("crash")
        restarts = cluster.restarts("crash")
        new_pids = cluster.worker_pids("crash")
        workers = cluster.stats("crash")["workers"]
        reported = cluster.errors("crash")["__worker"]

    assert (tmp_path / "crashed").exists()
    assert restarts == {victim: 1}
    assert new_pids[victim] != pids[victim]
    assert new_pids[1 - victim] == pids[1 - victim]
    row = {w["worker"]: w for w in workers}[victim]
    assert row["restarts"] == 1
    reason = row["restart_reason"]
    first, *_, last = reason.strip().splitlines()
    assert first.startswith(f"worker {victim} ended: pid {pids[victim]} exited with code 1: ")
    assert first.endswith("WorkerCrash: crashing on tuple 100")
    assert last.endswith("WorkerCrash: crashing on tuple 100")  # what `status` shows
    assert [e["worker"] for e in reported] == [victim]
    acked = Counter(results["spout"][spout_task]["acked"])
    assert sorted(acked) == list(range(n))
    assert set(acked.values()) == {1}
