"""Supervision decisions, as a pure function of what the supervisor sees.

The nimbus (and LocalCluster, for its worker processes) observe the cluster — topology
records, assignments, heartbeats, which workers ended — and call :func:`plan` with that
view, their :class:`History` and the time.  :func:`plan` returns the actions to carry out
and the updated history; it does no I/O, reads no clock and starts nothing, so every
decision is tested with plain data (``tests/unit/test_plan.py``).

Decisions (per topology, by status):

* ``SUBMITTED`` — fail when the cluster lacks free slots; else assign attempt 1, launch
  every worker, set the requested initial status.
* ``KILLED`` — once ``kill_at`` has passed: stop the workers, remove the topology.
* a ``rebalance`` request — set ``REBALANCING`` (the workers see INACTIVE), wait the
  requested seconds, then stop the workers and assign attempt + 1 with the new count
  (or, without the slots, restore the previous status with an error).
* ``ACTIVE`` / ``INACTIVE`` — a current attempt this supervisor did not launch (it took
  over from a dead leader) is replaced by attempt + 1; a worker that ended before it was
  ever ready fails the topology (relaunching would loop); a worker that ended after it was
  ready is reported and relaunched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

#: Statuses of a topology whose workers run.
LIVE = ("ACTIVE", "INACTIVE")


# -- what the supervisor sees ---------------------------------------------------------------


@dataclass(frozen=True)
class WorkerView:
    """One worker of a topology's current attempt.

    ``ready``: its heartbeat says it runs its tasks; ``ended``: its process or Spark job is
    over (``error`` says why, when known).
    """

    ready: bool = False
    ended: bool = False
    error: str | None = None


@dataclass(frozen=True)
class TopologyView:
    """One topology as recorded in ZooKeeper, plus its workers of the current attempt.

    ``attempt`` is ``None`` while there is no assignment.  ``rebalance`` is the pending
    request (``{"workers", "wait"}``, plus ``previous`` and ``deactivated_at`` once begun).
    """

    topology_id: str
    status: str
    workers: int
    initial_status: str = "ACTIVE"
    kill_at: float | None = None
    rebalance: Mapping[str, Any] | None = None
    attempt: int | None = None
    assigned_workers: int = 0
    worker_views: Mapping[int, WorkerView] = field(default_factory=dict)


@dataclass(frozen=True)
class Capacity:
    """Task slots of the cluster (``total``), how many are in use, and a description of
    where they are for error messages (e.g. ``spark.master=local[4,3]``)."""

    total: int
    used: int
    where: str

    @property
    def free(self) -> int:
        return self.total - self.used


#: A cluster without a slot limit (LocalCluster: every worker is a process).
UNLIMITED = Capacity(total=1 << 30, used=0, where="this machine")


@dataclass(frozen=True)
class History:
    """What the supervisor remembers between calls (plain data, owned by the caller).

    ``attempts``: the attempt this supervisor launched, per topology; ``ready``: workers of
    that attempt it has seen ready; ``restarts``: times each worker was relaunched.
    """

    attempts: Mapping[str, int] = field(default_factory=dict)
    ready: Mapping[str, frozenset[int]] = field(default_factory=dict)
    restarts: Mapping[tuple[str, int], tuple[float, ...]] = field(default_factory=dict)

    def restart_count(self, topology_id: str, worker: int) -> int:
        return len(self.restarts.get((topology_id, worker), ()))

    def forget(self, topology_id: str) -> History:
        """The history without ``topology_id`` (it was removed)."""
        return History(
            {t: a for t, a in self.attempts.items() if t != topology_id},
            {t: r for t, r in self.ready.items() if t != topology_id},
            {k: v for k, v in self.restarts.items() if k[0] != topology_id},
        )


# -- what to do -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Launch:
    """Start worker ``worker`` of ``attempt`` (the assignment is already written)."""

    topology_id: str
    worker: int
    attempt: int


@dataclass(frozen=True)
class Assign:
    """Write assignment ``attempt`` for ``workers`` workers, then launch every one."""

    topology_id: str
    workers: int
    attempt: int


@dataclass(frozen=True)
class StopWorkers:
    """Stop the topology's workers: remove the assignment (they stop by themselves) unless
    ``keep_assignment``, then end what still runs after ``grace`` seconds."""

    topology_id: str
    keep_assignment: bool = False
    grace: float = 0.0


@dataclass(frozen=True)
class RemoveTopology:
    """Delete everything recorded about the topology."""

    topology_id: str


@dataclass(frozen=True)
class UpdateRecord:
    """Merge ``changes`` into the topology's record (status, errors, requests, conf)."""

    topology_id: str
    changes: Mapping[str, Any]


@dataclass(frozen=True)
class FailTopology:
    """The topology cannot run: stop what runs, mark it ``FAILED`` with ``error``."""

    topology_id: str
    error: str


@dataclass(frozen=True)
class ReportWorker:
    """Record ``text`` about ``worker`` where ``status`` shows errors."""

    topology_id: str
    worker: int
    text: str


@dataclass(frozen=True)
class Log:
    """A line for the supervisor's log."""

    text: str


Action = (
    Launch
    | Assign
    | StopWorkers
    | RemoveTopology
    | UpdateRecord
    | FailTopology
    | ReportWorker
    | Log
)


@dataclass(frozen=True)
class Plan:
    actions: list[Action]
    history: History


# -- deciding -------------------------------------------------------------------------------


def slot_shortage(needed: int, capacity: Capacity, freed: int = 0) -> str | None:
    """Why ``needed`` more long-running workers cannot all get a slot, or None if they can."""
    free = capacity.free + freed
    if needed <= free:
        return None
    return (
        f"{needed} worker(s) need {needed} task slot(s) for their whole life, but the cluster "
        f"has {free} free of {capacity.total} ({capacity.where}); use fewer topology.workers "
        "or a bigger cluster"
    )


def plan(
    topologies: list[TopologyView],
    capacity: Capacity,
    history: History,
    now: float,
    shutdown_grace: float = 0.0,
) -> Plan:
    """Every action the supervisor should take now, and its updated history."""
    actions: list[Action] = []
    for view in topologies:
        history = _plan_topology(view, capacity, history, now, shutdown_grace, actions)
    return Plan(actions, history)


def _plan_topology(
    view: TopologyView,
    capacity: Capacity,
    history: History,
    now: float,
    grace: float,
    out: list[Action],
) -> History:
    tid = view.topology_id
    if view.status == "SUBMITTED":
        shortage = slot_shortage(view.workers, capacity)
        if shortage is not None:
            out.append(FailTopology(tid, shortage))
            return history
        out.append(Assign(tid, view.workers, 1))
        out.append(UpdateRecord(tid, {"status": view.initial_status, "launched_at": now}))
        return launched(history, tid, 1)
    if view.status == "KILLED":
        if view.kill_at is None or now >= view.kill_at:
            out.extend([StopWorkers(tid, grace=grace), RemoveTopology(tid)])
            return history.forget(tid)
        return history
    if view.rebalance:
        return _plan_rebalance(view, capacity, history, now, grace, out)
    if view.status in LIVE and view.attempt is not None:
        return supervise_workers(view, history, now, out)
    return history


def _plan_rebalance(
    view: TopologyView,
    capacity: Capacity,
    history: History,
    now: float,
    grace: float,
    out: list[Action],
) -> History:
    tid, request = view.topology_id, view.rebalance
    assert request is not None
    if view.status != "REBALANCING":
        out.append(
            UpdateRecord(
                tid,
                {
                    "status": "REBALANCING",
                    "rebalance": dict(request, previous=view.status, deactivated_at=now),
                },
            )
        )
        return history
    if now < request["deactivated_at"] + request.get("wait", 0):
        return history
    workers = int(request["workers"])
    shortage = slot_shortage(workers, capacity, freed=view.assigned_workers)
    if shortage is not None:
        out.append(
            UpdateRecord(tid, {"status": request["previous"], "rebalance": None, "error": shortage})
        )
        return history
    attempt = (view.attempt or 0) + 1
    out.extend(
        [
            StopWorkers(tid, grace=grace),
            Assign(tid, workers, attempt),
            UpdateRecord(tid, {"status": request["previous"], "rebalance": None}),
        ]
    )
    return launched(history, tid, attempt)


def supervise_workers(
    view: TopologyView, history: History, now: float, out: list[Action]
) -> History:
    """Decisions for the workers of a running topology (also LocalCluster's whole plan)."""
    tid, attempt = view.topology_id, view.attempt
    assert attempt is not None
    if history.attempts.get(tid) != attempt:
        # Launched by a previous leader: its workers died with it, or will stop on seeing
        # a new attempt.  Take over with a fresh assignment.
        out.append(Log(f"taking over {tid} (attempt {attempt} -> {attempt + 1})"))
        out.append(StopWorkers(tid, keep_assignment=True))
        out.append(Assign(tid, view.assigned_workers, attempt + 1))
        return launched(history, tid, attempt + 1)
    ready = set(history.ready.get(tid, frozenset()))
    ready.update(w for w, seen in view.worker_views.items() if seen.ready)
    restarts = dict(history.restarts)
    for worker in range(view.assigned_workers):
        seen = view.worker_views.get(worker, WorkerView())
        if not seen.ended:
            continue
        if worker not in ready:
            # Never got going (prepare/open raised, or cannot start): relaunching would loop
            # forever, so the topology fails with the worker's own error.
            text = (seen.error or "worker ended").strip().splitlines()[0]
            out.append(Log(f"{tid}: worker {worker} failed to start: {text}"))
            out.append(FailTopology(tid, f"worker {worker} failed to start: {text}"))
            return replace(history, ready={**history.ready, tid: frozenset(ready)})
        count = len(restarts.get((tid, worker), ())) + 1
        text = (
            f"worker {worker} ended"
            + (f": {seen.error}" if seen.error else "")
            + f"; relaunching (restart {count})"
        )
        out.append(Log(f"{tid}: {text}"))
        out.append(ReportWorker(tid, worker, text))
        out.append(Launch(tid, worker, attempt))
        restarts[(tid, worker)] = (*restarts.get((tid, worker), ()), now)
    return History(history.attempts, {**history.ready, tid: frozenset(ready)}, restarts)


def launched(history: History, topology_id: str, attempt: int) -> History:
    """``history`` after this supervisor launched ``attempt`` (no worker seen ready yet)."""
    return History(
        {**history.attempts, topology_id: attempt},
        {**history.ready, topology_id: frozenset()},
        history.restarts,
    )
