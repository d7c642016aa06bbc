"""Worker supervision on Spark: a huge error text, a worker stuck in user code, a worker
that keeps dying."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.spark.components import CountingSpout, CrashingBolt, HugeErrorBolt, StuckBolt
from tests.spark.helpers import spout_acked, wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster
from topology.runtime.error_reporter import MAX_ERROR_CHARS

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def _topology(bolt: Any, limit: int | None = None) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(limit))
    builder.set_bolt("bolt", bolt).shuffle_grouping("numbers")
    return builder.create_topology()


def test_a_huge_error_text_is_clipped_and_the_worker_goes_on(cluster: Cluster) -> None:
    topology_id = cluster.submit_topology(
        "huge",
        {"topology.workers": 1, "topology.errors.retries": 0, "topology.errors.action": "fail"},
        _topology(HugeErrorBolt()),
    )
    pid = cluster.current_beats(topology_id)[0]["pid"]
    wait_for(lambda: cluster.errors("huge").get("bolt"), 30, "the error in ZooKeeper")
    [error, *_] = cluster.errors("huge")["bolt"]
    assert len(error["text"]) <= MAX_ERROR_CHARS
    assert "characters cut" in error["text"] and error["text"].endswith("very long message")
    acked = spout_acked(cluster, "huge")
    wait_for(lambda: spout_acked(cluster, "huge") > acked + 500, 30, "acks going on")
    assert cluster.current_beats(topology_id)[0]["pid"] == pid  # no crash, no relaunch


def test_a_stuck_worker_is_reported_then_killed_and_relaunched(cluster: Cluster) -> None:
    conf = {
        "topology.workers": 1,
        "topology.worker.timeout.secs": 3,
        "topology.worker.kill.when.stuck": True,
        "topology.stats.interval.secs": 1,
    }
    topology_id = cluster.submit_topology("stuck", conf, _topology(StuckBolt()))
    pid = cluster.current_beats(topology_id)[0]["pid"]

    def reported() -> list[dict[str, Any]]:
        return [e for e in cluster.errors("stuck").get("__worker", []) if "stuck" in e["text"]]

    [report, *_] = wait_for(reported, 60, "the stuck worker to be reported")
    assert "stuck in bolt:" in report["text"] and "killing it" in report["text"]
    wait_for(
        lambda: (cluster.current_beats(topology_id).get(0) or {}).get("pid") not in (None, pid),
        90,
        "the worker to be relaunched",
    )


def test_a_worker_that_keeps_dying_is_restarted_with_backoff(cluster: Cluster) -> None:
    conf = {
        "topology.workers": 1,
        "supervisor.worker.restart.delay.secs": 2,
        "topology.stats.interval.secs": 1,
    }
    cluster.submit_topology("crashy", conf, _topology(CrashingBolt()), active=False)
    cluster.activate("crashy")  # from here on every incarnation dies on value 20

    def restarts() -> list[dict[str, Any]]:  # the driver's own (Spark's retries come between)
        errors = cluster.errors("crashy").get("__worker", [])
        return [e for e in errors if "ended" in e["text"] and "relaunching" in e["text"]]

    wait_for(lambda: len(restarts()) >= 3, 120, "three deaths")
    texts = [e["text"] for e in restarts()]
    assert re.search(r"relaunching \(restart \d+\)", texts[0])  # the first is immediate
    assert "relaunching in 2s (restart" in texts[1]
    assert "relaunching in 4s (restart" in texts[2]
    times = [e["time"] for e in restarts()]
    assert times[2] - times[1] >= 2.0  # the backoff was waited out between deaths
    report = cluster.stats("crashy", fresh=False)
    [worker] = report["workers"]
    assert worker["restarts"] >= 2 and "ended" in (worker["restart_reason"] or "")
