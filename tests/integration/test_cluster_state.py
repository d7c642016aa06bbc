"""Exactly-once state on a LocalCluster: worker processes killed with SIGKILL mid-run, the
counts at the end equal the input — not more, not less."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import kill_worker, wait_for
from tests.integration.state_components import (
    IndexedWords,
    ReplayOnFailWords,
    finished,
    hooked_topology,
    merged_counts,
    settled_counts,
    state_conf,
    stateful_word_count,
    word_list,
)
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WORDS = word_list(40_000)


def conf(tmp_path: Path) -> dict[str, Any]:
    return state_conf(tmp_path, 2, 300)


def settle(cluster: LocalCluster, name: str) -> Counter[str]:
    return settled_counts(lambda: cluster.results(name), 120, pause=0.7)


def test_counts_are_exact_after_two_workers_are_killed_mid_run(tmp_path: Path) -> None:
    with LocalCluster() as cluster:
        cluster.submit_topology("exact", conf(tmp_path), stateful_word_count(IndexedWords(WORDS)))
        wait_for(lambda: merged_counts(cluster.results("exact")).total(), lambda n: n > 3000, 30)
        kill_worker(cluster, "exact", 0)  # the coordinator's and the spout's worker
        wait_for(lambda: merged_counts(cluster.results("exact")).total(), lambda n: n > 3000, 30)
        kill_worker(cluster, "exact", 1)
        assert not finished(cluster.results("exact"))  # the kills landed mid-run
        assert settle(cluster, "exact") == Counter(WORDS)
        status = cluster.worker_status("exact")
        checkpoints = [s["checkpoints"] for s in status]
        assert any(c.get("coordinator", {}).get("completed", 0) > 0 for c in checkpoints)
        assert not cluster.errors("exact").get("__checkpoint")


@pytest.mark.parametrize("merge", [False, True], ids=["get-put", "merge"])
def test_lmdb_counts_are_exact_after_two_kills_with_changes_only_in_the_cache(
    tmp_path: Path, merge: bool
) -> None:
    """The ``lmdb`` backend with a cache of a few entries: at each kill the cache holds
    changes (values, and with ``merge`` deltas) not yet on disk nor in a checkpoint."""
    lmdb_conf = {
        **conf(tmp_path),
        "topology.state.backend": "lmdb",
        "topology.state.local.dir": str(tmp_path / "live"),
        "topology.state.cache.entries": 4,
    }
    topology = stateful_word_count(IndexedWords(WORDS), merge=merge)
    with LocalCluster() as cluster:
        cluster.submit_topology("lmdb", lmdb_conf, topology)
        for worker in (0, 1):
            wait_for(lambda: merged_counts(cluster.results("lmdb")).total(), lambda n: n > 3000, 30)
            kill_worker(cluster, "lmdb", worker)
        assert not finished(cluster.results("lmdb"))  # the kills landed mid-run
        assert settle(cluster, "lmdb") == Counter(WORDS)
        assert not cluster.errors("lmdb").get("count")  # (the kills are "__worker" errors)


def test_a_storm_spout_that_replays_on_fail_gets_exact_counts_when_a_bolt_worker_dies(
    tmp_path: Path,
) -> None:
    """The spout's worker survives; the other is killed: the spout hears ``fail`` for what
    no checkpoint holds and replays it; nothing is counted twice or lost."""
    with LocalCluster() as cluster:
        topology = stateful_word_count(ReplayOnFailWords(WORDS))
        cluster.submit_topology("storm", conf(tmp_path), topology)
        spout_task = cluster.assignment("storm").component_tasks["words"][0]
        spout_worker = cluster.assignment("storm").worker_of()[spout_task]
        wait_for(lambda: merged_counts(cluster.results("storm")).total(), lambda n: n > 5000, 30)
        kill_worker(cluster, "storm", 1 - spout_worker)
        assert settle(cluster, "storm") == Counter(WORDS)
        [spout] = cluster.results("storm")["words"].values()
        assert spout["failed"] > 0 and spout["acked"] == len(WORDS)


def test_a_checkpointed_topology_drains_with_balanced_counters(tmp_path: Path) -> None:
    """Checkpoint control goes on every second after the spouts stop: it must balance
    like ack traffic, or draining a healthy checkpointed topology never ends."""
    with LocalCluster() as cluster:
        cluster.submit_topology("drain", conf(tmp_path), stateful_word_count(IndexedWords(WORDS)))
        wait_for(lambda: merged_counts(cluster.results("drain")).total(), lambda n: n > 3000, 30)
        cluster.deactivate("drain")
        cluster.wait_until_drained("drain", timeout=20)
        status = cluster.worker_status("drain")
        assert not any(s["checkpoints"]["rollbacks"] for s in status)  # the exact path
        assert sum(s["system"]["transferred"] for s in status) > 0
        [spout] = cluster.results("drain")["words"].values()
        assert merged_counts(cluster.results("drain")) == Counter(WORDS[: spout["next"]])


def test_a_stateful_bolt_hears_each_checkpoint_complete_after_its_pre_checkpoint(
    tmp_path: Path,
) -> None:
    """Real workers: every sink task's ``checkpoint_complete`` fires for successive
    checkpoints, in order, each after that task's ``pre_checkpoint`` of it, with what it
    staged then still in its state; the hooks raise nothing."""
    with LocalCluster() as cluster:
        cluster.submit_topology(
            "hooks", conf(tmp_path), hooked_topology(IndexedWords(WORDS, rate=5000.0))
        )

        def sinks() -> list[dict[str, Any]]:
            return list(cluster.results("hooks").get("sink", {}).values())

        wait_for(sinks, lambda s: len(s) == 2 and all(len(r["completed"]) >= 3 for r in s), 60, 0.5)
        for result in sinks():
            completed = [k for k, _ in result["completed"]]
            assert completed == sorted(set(completed))  # once each, increasing
            assert all(k in result["prepared"] for k in completed)
            assert all(staged >= k for k, staged in result["completed"])
        assert not cluster.errors("hooks")
