"""The state and window examples run on LocalCluster and pass their own ``verify``: the
stateful word count exact after a worker killed with SIGKILL, the sessions exact with the
held-back clicks on the late stream."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cli.loader import load_topology
from tests.integration.helpers import wait_for
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> ModuleType:
    """The example loaded as ``sparkstorm`` loads it (its classes travel by value)."""
    _, module = load_topology(f"{EXAMPLES / name}.py:topology")
    return module


def words_counted(results: dict[str, dict[int, Any]]) -> int:
    return sum(sum(counts.values()) for counts in results.get("count", {}).values())


def test_stateful_wordcount_counts_every_word_once_through_a_kill(tmp_path: Path) -> None:
    module = example("stateful_wordcount")
    conf = {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path),
        "topology.state.checkpoint.interval.ms": 300,
    }
    with LocalCluster() as cluster:
        cluster.submit_topology("swc", conf, module.topology)
        counted = wait_for(lambda: words_counted(cluster.results("swc")), lambda n: n > 50_000, 60)
        os.kill(cluster.worker_pids("swc")[1], signal.SIGKILL)
        wait_for(lambda: cluster.restarts("swc").get(1, 0), bool, 30)
        wait_for(lambda: words_counted(cluster.results("swc")), lambda n: n > counted, 60)
        cluster.deactivate("swc")
        cluster.wait_until_drained("swc", timeout=90)
        assert "each counted exactly once" in module.verify(cluster.results("swc"))


def test_sessions_example_finds_every_session_and_reports_the_late_clicks() -> None:
    module = example("sessions")
    with LocalCluster() as cluster:
        cluster.submit_topology("sessions", {"topology.workers": 2}, module.topology)
        wait_for(
            lambda: cluster.results("sessions").get("clicks", {}),
            lambda spouts: bool(spouts) and all(r["ended"] for r in spouts.values()),
            60,
        )
        cluster.deactivate("sessions")
        cluster.wait_until_drained("sessions", timeout=60)
        message = module.verify(cluster.results("sessions"))
        assert "sessions of" in message and "late clicks reported" in message


def test_state_merge_example_is_exact_on_lmdb_through_a_kill(tmp_path: Path) -> None:
    module = example("state_merge")
    conf = {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path / "checkpoints"),
        "topology.state.checkpoint.interval.ms": 300,
        "topology.state.backend": "lmdb",
        "topology.state.local.dir": str(tmp_path / "live"),
        "topology.state.cache.entries": 500,  # most of the 5,000 words merge as deltas
    }
    with LocalCluster() as cluster:
        cluster.submit_topology("merge", conf, module.topology)
        counted = wait_for(
            lambda: words_counted(cluster.results("merge")), lambda n: n > 50_000, 60
        )
        os.kill(cluster.worker_pids("merge")[1], signal.SIGKILL)
        wait_for(lambda: cluster.restarts("merge").get(1, 0), bool, 30)
        wait_for(lambda: words_counted(cluster.results("merge")), lambda n: n > counted, 60)
        cluster.deactivate("merge")
        cluster.wait_until_drained("merge", timeout=90)
        assert "each counted once" in module.verify(cluster.results("merge"))
        assert not cluster.errors("merge").get("first")
