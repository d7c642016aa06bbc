"""Waiting on ZooKeeper for what a :class:`~topology.deploy.cluster.client.Cluster` client asked.

The client writes to the topology record; the nimbus and the workers answer through the
record, the assignment and the heartbeats.  Each function here polls those until the
answer is complete (every worker of a submit or rebalance ready, every reply to a request
in, every znode of a killed topology gone) and raises :class:`ClusterOperationError`
saying why when it fails or time runs out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from topology.deploy.zk.state import ZkState
from topology.errors import SparkstormError
from topology.status import TopologyStatus

from .plan import LIVE

#: Seconds before a request that another client's request replaced is written again (the
#: record holds one request at a time; ``status`` in another terminal must not starve a
#: drain).
REQUEST_RESEND_SECS = 1.0


class ClusterOperationError(SparkstormError):
    """A cluster operation could not be done; the message says why."""


def current_beats(zk: ZkState, topology_id: str) -> dict[int, dict[str, Any]]:
    """Heartbeats of the workers of the topology's current assignment attempt."""
    assignment = zk.read_assignment(topology_id)
    if not assignment:
        return {}
    return zk.heartbeats(topology_id, attempt=assignment["attempt"])


def _all_ready(zk: ZkState, topology_id: str, workers: int) -> bool:
    beats = current_beats(zk, topology_id)
    return len(beats) == workers and all(b.get("ready") for b in beats.values())


def wait_running(
    zk: ZkState, topology_id: str, name: str, timeout: float, kill: Callable[[], None]
) -> None:
    """Return once every worker of the submitted topology is ready; a failed start is
    removed, and one not running within ``timeout`` is killed (``kill``)."""
    deadline = time.monotonic() + timeout
    while True:
        record = zk.read_record(topology_id) or {}
        if record.get("status") == TopologyStatus.FAILED:
            zk.remove_topology(topology_id)
            raise ClusterOperationError(f"topology {name!r} failed to start: {record['error']}")
        assignment = zk.read_assignment(topology_id)
        if record.get("status") in LIVE and assignment:
            if _all_ready(zk, topology_id, assignment["workers"]):
                return
        if time.monotonic() > deadline:
            errors = zk.errors(topology_id)
            last = [e[-1]["text"] for e in errors.values() if e]
            kill()
            raise ClusterOperationError(
                f"topology {name!r}: workers not running within {timeout:g}s"
                + (f"; last errors: {last}" if last else "")
            )
        time.sleep(0.1)


def wait_rebalanced(
    zk: ZkState, topology_id: str, name: str, workers: int, before: int, wait: float, timeout: float
) -> None:
    """Return once the nimbus has carried out a rebalance to ``workers`` workers (an
    assignment attempt after ``before``, every worker ready) within ``wait`` (the drain
    it was given) and ``timeout``."""
    deadline = time.monotonic() + timeout + wait
    while time.monotonic() < deadline:
        record = zk.read_record(topology_id) or {}
        assignment = zk.read_assignment(topology_id) or {}
        if not record.get("rebalance") and record.get("status") != TopologyStatus.REBALANCING:
            if assignment.get("attempt", 0) == before:
                raise ClusterOperationError(
                    f"rebalance of {name!r} failed: {record.get('error', 'unknown error')}"
                )
            if _all_ready(zk, topology_id, workers):
                return
        time.sleep(0.1)
    raise ClusterOperationError(f"rebalance of {name!r} did not finish within {timeout:g}s")


def wait_removed(zk: ZkState, topology_id: str, name: str, timeout: float) -> None:
    """Return once every znode of the killed topology is gone (within ``timeout``)."""
    deadline = time.monotonic() + timeout
    # the nimbus removes the record first (workers stop on it), then the rest: once the
    # record is gone, finish what is left so nothing of the topology outlives this call
    while zk.topology_leftovers(topology_id):
        if zk.read_record(topology_id) is None:
            zk.remove_topology(topology_id)
        if time.monotonic() > deadline:
            raise ClusterOperationError(
                f"topology {name!r} was not removed within {timeout:g}s: is a nimbus running?"
            )
        time.sleep(0.1)


def wait_replies(
    zk: ZkState, topology_id: str, name: str, request: dict[str, Any], timeout: float
) -> list[dict[str, Any]]:
    """Write ``request`` (``{"id", "cmd", "args"?}``) to the topology record and return
    the replies of every current worker, oldest worker first; written again while another
    client's request has replaced it."""
    request_id, cmd = request["id"], request["cmd"]
    zk.update_record(topology_id, request=request)
    deadline = time.monotonic() + timeout
    resend_at = time.monotonic() + REQUEST_RESEND_SECS
    while True:
        assignment = zk.read_assignment(topology_id) or {"workers": 0, "attempt": -1}
        replies = [
            b["reply"]
            for b in zk.heartbeats(topology_id, attempt=assignment["attempt"]).values()
            if b.get("reply", {}).get("req") == request_id
        ]
        if assignment["workers"] and len(replies) == assignment["workers"]:
            return sorted(replies, key=lambda r: r["worker"])
        if time.monotonic() > deadline:
            raise ClusterOperationError(
                f"{len(replies)}/{assignment['workers']} workers of {name!r} answered "
                f"{cmd!r} within {timeout:g}s"
            )
        if time.monotonic() >= resend_at:  # another client's request replaced ours
            resend_at = time.monotonic() + REQUEST_RESEND_SECS
            current = (zk.read_record(topology_id) or {}).get("request") or {}
            if current.get("id") != request_id:
                zk.update_record(topology_id, request=request)
        time.sleep(0.05)
