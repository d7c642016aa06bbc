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
from dataclasses import dataclass
from typing import Any

from topology.constants import WORKER_COMPONENT
from topology.deploy.zk.state import ZkState
from topology.errors import SparkstormError
from topology.status import TopologyStatus

from ..drain import wait_in_flight
from ..progress import Progress, Steps
from .plan import LIVE

#: Seconds before a request that another client's request replaced is written again (the
#: record holds one request at a time; ``status`` in another terminal must not starve a
#: drain).
REQUEST_RESEND_SECS = 1.0
#: Seconds a look at a deactivated topology's workers waits for their status replies.
STATUS_LOOK_SECS = 2.0


@dataclass(frozen=True)
class Workers:
    """How a wait looks at a topology's workers: ``status()``, every worker's status reply
    (raises when one does not answer), and ``exact()``, whether no worker of the attempt
    was relaunched (the per-link counters of one that was never balance again)."""

    status: Callable[[], list[dict[str, Any]]]
    exact: Callable[[], bool]


class ClusterOperationError(SparkstormError):
    """A cluster operation could not be done; the message says why."""


def current_beats(zk: ZkState, topology_id: str) -> dict[int, dict[str, Any]]:
    """Heartbeats of the workers of the topology's current assignment attempt."""
    assignment = zk.read_assignment(topology_id)
    if not assignment:
        return {}
    return zk.heartbeats(topology_id, attempt=assignment["attempt"])


def running_workers(
    zk: ZkState, topology_id: str, beats: dict[int, dict[str, Any]], stale_secs: float
) -> int:
    """How many workers of the topology run, of its heartbeats ``beats``: those of the
    current assignment attempt that are ready, younger than ``stale_secs``, and not
    waiting for a relaunch in their driver's supervision (a killed process's heartbeat
    outlives it until its ZooKeeper session ends; its relaunch registers anew, not ready
    until its tasks run)."""
    if not beats:
        return 0
    attempt = (zk.read_assignment(topology_id) or {}).get("attempt")
    supervised = (zk.driver(topology_id) or {}).get("workers") or {}
    down = {str(w) for w, info in supervised.items() if (info or {}).get("next_start_at")}
    now = time.time()
    return sum(
        1
        for worker, beat in beats.items()
        if beat.get("ready")
        and beat["attempt"] == attempt
        and str(worker) not in down
        and now - float(beat.get("beat_at") or 0.0) <= stale_secs
    )


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
    looking: Workers | None = None,
) -> None:
    """Return once the nimbus has carried out a rebalance to ``workers`` workers (an
    assignment attempt after ``before``, every worker ready) within ``wait`` (the drain
    it was given) and ``timeout``; each step seen (deactivated and draining; relaunching,
    with the workers ready as updates) is told to ``progress``.

    With ``looking``, the drain lasts only while the deactivated topology has anything in
    flight (:func:`~topology.deploy.drain.wait_in_flight`): then the request's ``wait``
    is cut to 0 and the nimbus moves the workers at once."""
    started = time.monotonic()
    deadline = started + timeout + wait
    steps = Steps(progress)
    while time.monotonic() < deadline:
        record = zk.read_record(topology_id) or {}
        assignment = zk.read_assignment(topology_id) or {}
        attempt = int(assignment.get("attempt", 0))
        if attempt > before:
            beats = current_beats(zk, topology_id)
            ready = sum(1 for b in beats.values() if b.get("ready"))
            steps.say(f"relaunching {name!r} on {workers} worker(s)")
            steps.update(f"relaunching {name!r} on {workers} worker(s): {ready}/{workers} ready")
        elif record.get("status") == TopologyStatus.REBALANCING:
            steps.say(f"{name!r} deactivated: in-flight tuples have up to {wait:g}s to finish")
            if looking is not None and wait > 0:
                _drain_rebalance(zk, topology_id, record, wait, looking, steps)
                looking = None
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


def _drain_rebalance(
    zk: ZkState,
    topology_id: str,
    record: dict[str, Any],
    wait: float,
    looking: Workers,
    steps: Steps,
) -> None:
    """While the topology the nimbus deactivated for a rebalance (``record``) has anything
    in flight, at most ``wait`` seconds; then cut the request's wait to 0 (only if it is
    still the same request, still draining: the nimbus may have moved on meanwhile)."""
    began = (record.get("rebalance") or {}).get("deactivated_at")

    def draining(current: dict[str, Any]) -> bool:
        request = current.get("rebalance")
        return (
            current.get("status") == TopologyStatus.REBALANCING
            and isinstance(request, dict)
            and request.get("deactivated_at") == began
        )

    def still() -> bool:
        return draining(zk.read_record(topology_id) or {})

    if began is not None and wait_in_flight(
        looking.status, wait, exact=looking.exact, still=still, steps=steps
    ):
        zk.amend_record(
            topology_id,
            lambda current: (
                {"rebalance": dict(current["rebalance"], wait=0)} if draining(current) else None
            ),
        )


def wait_removed(
    zk: ZkState,
    topology_id: str,
    name: str,
    timeout: float,
    progress: Progress = None,
    looking: Workers | None = None,
) -> None:
    """Return once every znode of the killed topology is gone (within ``timeout``); while
    the record's ``kill_at`` is ahead, ``progress`` hears how long in-flight tuples still
    have, then that the workers are being stopped.

    With ``looking``, in-flight tuples have only as long as the deactivated topology has
    anything in flight (:func:`~topology.deploy.drain.wait_in_flight`): then ``kill_at``
    is brought forward and the nimbus stops the workers at once."""
    deadline = time.monotonic() + timeout
    steps = Steps(progress)
    if looking is not None:
        _drain_kill(zk, topology_id, looking, steps)
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


def _drain_kill(zk: ZkState, topology_id: str, looking: Workers, steps: Steps) -> None:
    """While the killed topology has anything in flight, until its ``kill_at``; then
    bring ``kill_at`` forward to now."""

    def left(record: dict[str, Any] | None) -> float:
        if record is None or record.get("status") != TopologyStatus.KILLED:
            return 0.0
        return float(record.get("kill_at") or 0.0) - time.time()

    wait = left(zk.read_record(topology_id))
    if wait > 0 and wait_in_flight(
        looking.status,
        wait,
        exact=looking.exact,
        still=lambda: left(zk.read_record(topology_id)) > 0,
        steps=steps,
    ):
        zk.amend_record(topology_id, lambda record: {"kill_at": 0.0} if left(record) > 0 else None)


def looking(
    zk: ZkState, topology_id: str, request: Callable[[float], list[dict[str, Any]]]
) -> Workers:
    """How a wait looks at the topology's workers from now on: ``request(timeout)`` asks
    every current worker for its status (none without an assignment); the counters are
    exact while no worker of the current attempt is relaunched (:func:`no_restarts`)."""
    attempt = (zk.read_assignment(topology_id) or {}).get("attempt")

    def status() -> list[dict[str, Any]]:
        if not (zk.read_assignment(topology_id) or {}).get("workers"):
            return []  # no workers (a failed start): nothing can be in flight
        return request(STATUS_LOOK_SECS)

    return Workers(status, lambda: no_restarts(zk, topology_id, attempt))


def no_restarts(zk: ZkState, topology_id: str, attempt: Any) -> bool:
    """Whether every worker of the topology's assignment ``attempt`` runs in the process
    that first became ready (no worker error, the same attempt, no process Spark retried
    by itself): then what each worker sent a peer balances what the peer received."""
    errors = zk.errors(topology_id).get(WORKER_COMPONENT, [])
    current = (zk.read_assignment(topology_id) or {}).get("attempt")
    if errors or current is None or current != attempt:
        return False
    # a worker Spark retried by itself left no error: its process started later than the
    # first ready worker of its index
    first = zk.first_ready_at(topology_id, current)
    beats = zk.heartbeats(topology_id, attempt=current)
    return all(
        float(beat.get("started") or 0.0) <= first.get(worker, float("inf"))
        for worker, beat in beats.items()
    )


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
