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
#: Seconds between two "Ns left" lines of a wait that is only counting down.
COUNTDOWN_EVERY_SECS = 5.0

#: Where a long wait says how it is going: one line per step (None: silence).
Progress = Callable[[str], None] | None


class _Steps:
    """Says each step of a wait once, and a countdown at most every
    :data:`COUNTDOWN_EVERY_SECS` while nothing else happens."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._said: str | None = None
        self._counted_at = time.monotonic()

    def say(self, line: str) -> None:
        """Say ``line`` unless it was the last thing said."""
        if self._progress is not None and line != self._said:
            self._said = line
            self._counted_at = time.monotonic()
            self._progress(line)

    def count_down(self, what: str, left: float) -> None:
        """``<what>: 25s left``, every :data:`COUNTDOWN_EVERY_SECS` at most."""
        now = time.monotonic()
        if left > 0.5 and now - self._counted_at >= COUNTDOWN_EVERY_SECS:
            self.say(f"{what}: {left:.0f}s left")


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
    zk: ZkState,
    topology_id: str,
    name: str,
    workers: int,
    before: int,
    wait: float,
    timeout: float,
    progress: Progress = None,
) -> None:
    """Return once the nimbus has carried out a rebalance to ``workers`` workers (an
    assignment attempt after ``before``, every worker ready) within ``wait`` (the drain
    it was given) and ``timeout``; each step seen (deactivated and draining, with a
    countdown; relaunching; workers ready) is told to ``progress``."""
    started = time.monotonic()
    deadline = started + timeout + wait
    steps = _Steps(progress)
    while time.monotonic() < deadline:
        record = zk.read_record(topology_id) or {}
        assignment = zk.read_assignment(topology_id) or {}
        attempt = int(assignment.get("attempt", 0))
        if attempt > before:
            beats = current_beats(zk, topology_id)
            ready = sum(1 for b in beats.values() if b.get("ready"))
            steps.say(f"relaunching {name!r} on {workers} worker(s): {ready}/{workers} ready")
        elif record.get("status") == TopologyStatus.REBALANCING:
            steps.say(f"{name!r} deactivated: in-flight tuples have {wait:g}s to finish")
            steps.count_down("draining", wait - (time.monotonic() - started))
        if not record.get("rebalance") and record.get("status") != TopologyStatus.REBALANCING:
            if attempt == before:
                raise ClusterOperationError(
                    f"rebalance of {name!r} failed: {record.get('error', 'unknown error')}"
                )
            if _all_ready(zk, topology_id, workers):
                return
        time.sleep(0.1)
    raise ClusterOperationError(f"rebalance of {name!r} did not finish within {timeout:g}s")


def wait_removed(
    zk: ZkState, topology_id: str, name: str, timeout: float, progress: Progress = None
) -> None:
    """Return once every znode of the killed topology is gone (within ``timeout``); while
    the record's ``kill_at`` is ahead, ``progress`` hears how long in-flight tuples still
    have (every few seconds), then that the workers are being stopped."""
    deadline = time.monotonic() + timeout
    steps = _Steps(progress)
    # the nimbus removes the record first (workers stop on it), then the rest: once the
    # record is gone, finish what is left so nothing of the topology outlives this call
    while zk.topology_leftovers(topology_id):
        record = zk.read_record(topology_id)
        if record is None:
            steps.say(f"stopping the workers of {name!r} and removing it")
            zk.remove_topology(topology_id)
        else:
            left = float(record.get("kill_at") or 0.0) - time.time()
            if left > 0:
                steps.count_down("in-flight tuples finishing", left)
            else:
                steps.say(f"stopping the workers of {name!r}")
        if time.monotonic() > deadline:
            raise ClusterOperationError(
                f"topology {name!r} was not removed within {timeout:g}s: is a nimbus running?"
            )
        time.sleep(0.1)


def reply_to(beat: dict[str, Any], cmd: str) -> dict[str, Any]:
    """A heartbeat's latest reply to ``cmd`` ({} when none): each command's own in
    ``replies``, else the single ``reply`` of workers from before it."""
    replies = beat.get("replies")
    if isinstance(replies, dict) and isinstance(replies.get(cmd), dict):
        return dict(replies[cmd])
    reply = beat.get("reply")
    return dict(reply) if isinstance(reply, dict) and reply.get("type") == cmd else {}


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
        beats = zk.heartbeats(topology_id, attempt=assignment["attempt"]).values()
        replies = [r for r in (reply_to(b, cmd) for b in beats) if r.get("req") == request_id]
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
