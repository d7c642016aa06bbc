"""LocalCluster lifecycle: submit errors, and no worker process outliving its cluster."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from tests.integration.components import FailingPrepare, PidFile, Recorder
from tests.integration.helpers import CONF, WORKERS, process_gone
from topology import ClusterError, LocalCluster, TopologyBuilder
from topology.testing import FeederSpout

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def _simple_topology(n: int = 20):
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["n"], [[i] for i in range(n)]), 2)
    builder.set_bolt("rec", Recorder(), 2).shuffle_grouping("spout")
    return builder.create_topology()


def _received(cluster: LocalCluster, name: str) -> list[int]:
    return sorted(entry[3][0] for r in cluster.results(name)["rec"].values() for entry in r["seen"])


def test_submitting_a_running_name_again_raises_and_keeps_the_first() -> None:
    with LocalCluster() as cluster:
        cluster.submit_topology("dup", CONF, _simple_topology())
        pids = cluster.worker_pids("dup")
        with pytest.raises(ClusterError, match="'dup'"):
            cluster.submit_topology("dup", CONF, _simple_topology())
        assert cluster.topologies() == ["dup"]
        assert cluster.worker_pids("dup") == pids
        assert not any(process_gone(pid) for pid in pids)
        cluster.wait_until_drained("dup", timeout=30)
        assert _received(cluster, "dup") == list(range(20))
    assert all(process_gone(pid) for pid in pids)


def test_prepare_error_fails_submit_with_its_text_and_leaves_no_worker(tmp_path: Path) -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["n"], [[1]]), 2)
    # "a_pids" sorts first, so it gets the lowest task ids and is prepared first in both
    # workers: each worker writes its pid before the failing bolt's prepare runs
    builder.set_bolt("a_pids", PidFile(str(tmp_path)), WORKERS).shuffle_grouping("spout")
    builder.set_bolt("b_broken", FailingPrepare("database unreachable"), 1).shuffle_grouping(
        "spout"
    )

    with LocalCluster() as cluster:
        with pytest.raises(ClusterError) as info:
            cluster.submit_topology("broken", CONF, builder.create_topology())
        message = str(info.value)
        assert "'broken'" in message
        assert "RuntimeError: database unreachable" in message
        assert cluster.topologies() == []

        pids = {int(p.read_text()) for p in tmp_path.glob("*.pid")}
        failing_pid = int(re.search(r"database unreachable \(pid (\d+)\)", message).group(1))
        assert len(pids) == WORKERS and failing_pid in pids
        # gone already when submit_topology raised: not just at cluster shutdown
        assert all(process_gone(pid) for pid in pids), pids

        # the name is free again and the cluster still works
        cluster.submit_topology("broken", CONF, _simple_topology())
        cluster.wait_until_drained("broken", timeout=30)
        assert _received(cluster, "broken") == list(range(20))


@pytest.mark.parametrize("leave", ["normally", "by_exception"])
def test_leaving_the_cluster_block_ends_every_worker(leave: str) -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError) if leave == "by_exception" else contextlib.nullcontext():
        with LocalCluster() as cluster:
            for name in ("one", "two"):
                cluster.submit_topology(name, CONF, _simple_topology())
                pids.extend(cluster.worker_pids(name))
            assert len(set(pids)) == 2 * WORKERS
            assert not any(process_gone(pid) for pid in pids)
            cluster.wait_until_drained("one", timeout=30)
            if leave == "by_exception":
                raise RuntimeError("test body failed")
    assert cluster.topologies() == []
    # shutdown waited for every worker: none is running or left unreaped
    assert [pid for pid in pids if not process_gone(pid)] == []
    cluster.shutdown()  # a second shutdown is harmless
