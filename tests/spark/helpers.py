"""Polling and counting helpers shared by the Spark-tier tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from topology.deploy.cluster.client import Cluster, ClusterOperationError


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:g}s waiting for {what}"
        time.sleep(interval)


def spout_acked(
    cluster: Cluster, name: str, component: str = "numbers", polling: bool = False
) -> int:
    """Trees acked so far by the current workers' tasks of spout ``component``.

    ``polling``: 0 when a worker did not answer within 5 s (the caller polls again, with a
    new request) instead of failing."""
    try:
        replies = cluster.worker_status(name, timeout=5.0 if polling else 15.0)
    except ClusterOperationError:
        if not polling:
            raise
        return 0
    return sum(
        task["acked"]
        for reply in replies
        for task in reply["tasks"].values()
        if task["component"] == component
    )


def acked_ids(cluster: Cluster, name: str, component: str = "numbers") -> set[int]:
    """Every msg_id the current incarnation of ``component``'s CountingSpout tasks saw acked."""
    by_task = cluster.results(name).get(component, {})
    return {n for result in by_task.values() for n in result["acked"]}


def current_beats(cluster: Cluster, topology_id: str) -> dict[int, dict[str, Any]]:
    """Heartbeats of the workers of the current assignment attempt."""
    return cluster.current_beats(topology_id)


def all_ready(cluster: Cluster, topology_id: str, workers: int) -> dict[int, dict[str, Any]]:
    """The current beats when exactly ``workers`` of them are ready, else an empty dict."""
    beats = current_beats(cluster, topology_id)
    if len(beats) == workers and all(b.get("ready") for b in beats.values()):
        return beats
    return {}
