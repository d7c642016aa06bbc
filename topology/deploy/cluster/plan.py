"""The nimbus's decisions, as a pure function of what it sees.

Every topology has a *driver*: the supervisor of its workers (one Spark application per
topology, :mod:`topology.deploy.cluster.topology_driver`), alive while its ephemeral znode
``drivers/<id>`` exists.  The leader nimbus only manages topologies and their drivers;
the drivers manage workers (:mod:`topology.deploy.worker_plan`).  Each round the nimbus
observes the topology records, assignments and drivers, calls :func:`plan` with that view,
its :class:`History` and the time, and carries out the actions returned.  Nothing here does
I/O, reads a clock or starts anything (``tests/unit/test_plan.py``).

Decisions (per topology, by status):

* ``SUBMITTED`` — fail when the cluster lacks free slots; else write attempt 1, start the
  driver, set the requested initial status.
* ``ACTIVE`` / ``INACTIVE`` — a live driver is left alone, whoever started it: a new
  leader *adopts* running topologies.  A driver that is gone (and is not just starting)
  is restarted, with the same backoff as workers.
* a ``rebalance`` request — set ``REBALANCING`` (the workers see INACTIVE), wait the
  requested seconds, then write attempt + 1 with the new worker count and the request's
  task counts (``components``) and restart the driver (its application is sized for the
  workers); without the slots, or when the new task counts are refused
  (``TopologyView.rescale_problem``), restore the previous status with an error.
* ``KILLED`` — once ``kill_at`` has passed: remove the assignment (workers stop), stop
  the driver, remove the topology.
* ``FAILED`` — stop a driver that is still there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from topology.status import ENDED, LIVE, TopologyStatus

from ..limits import worker_count_problem
from ..worker_plan import Backoff, FailTopology, Log

#: Statuses of a topology whose workers run.
#: Longest wait a rebalance request may ask for between deactivating and moving (seconds).
MAX_REBALANCE_WAIT_SECS = 86_400.0
#: Seconds a started driver may take to register before it counts as gone.
DRIVER_START_SECS = 120.0


# -- what the nimbus sees ---------------------------------------------------------------------


@dataclass(frozen=True)
class TopologyView:
    """One topology as recorded in ZooKeeper, and whether its driver is alive.

    ``attempt`` is ``None`` while there is no assignment.  ``rebalance`` is the pending
    request (``{"workers", "wait", "components"?}``, plus ``previous`` and
    ``deactivated_at`` once begun); ``rescale_problem``: why its ``components`` (component
    -> new task count) cannot be run (:func:`topology.deploy.rescale.components_problem`).
    ``problem``: why the record cannot be run as it is (a bad name or worker count; the
    topology fails).  ``own_capacity``: the slots of the topology's own Spark application
    when known in advance (drivers as processes on a ``local[N]`` master), used instead
    of the cluster's.
    """

    topology_id: str
    status: str
    workers: int
    initial_status: str = TopologyStatus.ACTIVE
    kill_at: float | None = None
    rebalance: Mapping[str, Any] | None = None
    attempt: int | None = None
    assigned_workers: int = 0
    driver_alive: bool = False
    problem: str | None = None
    own_capacity: Capacity | None = None
    rescale_problem: str | None = None


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


#: A cluster without a slot limit known in advance.
UNLIMITED = Capacity(total=1 << 30, used=0, where="no slot limit")


@dataclass(frozen=True)
class DriverPolicy(Backoff):
    """Backoff of driver restarts, and how long a started driver may take to register."""

    start_secs: float = DRIVER_START_SECS


@dataclass(frozen=True)
class History:
    """What the nimbus remembers between rounds (plain data, owned by the caller).

    ``started``: when this nimbus last started each topology's driver; ``registered``:
    drivers seen alive since then; ``restarts``: times it restarted each driver after it was
    gone; ``due``: when a gone driver may be started again.
    """

    started: Mapping[str, float] = field(default_factory=dict)
    registered: frozenset[str] = frozenset()
    restarts: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    due: Mapping[str, float] = field(default_factory=dict)

    def forget(self, topology_id: str) -> History:
        """The history without ``topology_id`` (it was removed)."""
        return History(
            {t: v for t, v in self.started.items() if t != topology_id},
            self.registered - {topology_id},
            {t: v for t, v in self.restarts.items() if t != topology_id},
            {t: v for t, v in self.due.items() if t != topology_id},
        )

    def driver_started(self, topology_id: str, now: float) -> History:
        """After a StartDriver: not registered yet, nothing due."""
        return History(
            {**self.started, topology_id: now},
            self.registered - {topology_id},
            self.restarts,
            {t: v for t, v in self.due.items() if t != topology_id},
        )


# -- what to do -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign:
    """Write assignment ``attempt`` for ``workers`` workers (the driver launches them);
    ``tasks``: new task counts of components (a rebalance's ``components``), stored in the
    record first so that every later assignment keeps them."""

    topology_id: str
    workers: int
    attempt: int
    tasks: Mapping[str, int] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Unassign:
    """Remove the assignment: every worker of the topology stops by itself."""

    topology_id: str


@dataclass(frozen=True)
class StartDriver:
    """Start the topology's driver (it waits for a previous one to be gone)."""

    topology_id: str


@dataclass(frozen=True)
class StopDriver:
    """Tell the topology's driver to stop its workers and exit."""

    topology_id: str


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
class ReportDriver:
    """Record ``text`` about the topology's driver where ``status`` shows errors."""

    topology_id: str
    text: str


Action = (
    Assign
    | Unassign
    | StartDriver
    | StopDriver
    | RemoveTopology
    | UpdateRecord
    | FailTopology
    | ReportDriver
    | Log
)


@dataclass(frozen=True)
class Plan:
    actions: list[Action]
    history: History


# -- deciding ---------------------------------------------------------------------------------


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
    policy: DriverPolicy | None = None,
) -> Plan:
    """Every action the nimbus should take now, and its updated history."""
    policy = policy or DriverPolicy()
    actions: list[Action] = []
    for view in topologies:
        history = _plan_topology(view, capacity, history, now, policy, actions)
    return Plan(actions, history)


def _plan_topology(
    view: TopologyView,
    capacity: Capacity,
    history: History,
    now: float,
    policy: DriverPolicy,
    out: list[Action],
) -> History:
    tid = view.topology_id
    if view.own_capacity is not None:
        capacity = view.own_capacity
    if view.problem is not None and view.status not in ENDED:
        out.append(FailTopology(tid, view.problem))
        return history
    if view.status == TopologyStatus.SUBMITTED:
        shortage = slot_shortage(view.workers, capacity)
        if shortage is not None:
            out.append(FailTopology(tid, shortage))
            return history
        out.extend(
            [
                Assign(tid, view.workers, 1),
                StartDriver(tid),
                UpdateRecord(tid, {"status": view.initial_status, "launched_at": now}),
            ]
        )
        return history.driver_started(tid, now)
    if view.status == TopologyStatus.KILLED:
        if view.kill_at is None or now >= view.kill_at:
            out.extend([Unassign(tid), StopDriver(tid), RemoveTopology(tid)])
            return history.forget(tid)
        return history
    if view.status == TopologyStatus.FAILED:
        if view.driver_alive:
            out.append(StopDriver(tid))
        return history
    if view.rebalance:
        return _plan_rebalance(view, capacity, history, now, out)
    if view.status in LIVE and view.attempt is not None:
        return _keep_driver(view, history, now, policy, out)
    return history


def _keep_driver(
    view: TopologyView, history: History, now: float, policy: DriverPolicy, out: list[Action]
) -> History:
    """A live topology's driver: adopted while alive, restarted with backoff when gone."""
    tid = view.topology_id
    if view.driver_alive:
        waiting = {t: d for t, d in history.due.items() if t != tid}
        return replace(history, registered=history.registered | {tid}, due=waiting)
    started = history.started.get(tid)
    ours = started is not None
    if started is not None and tid not in history.registered:
        if now - started < policy.start_secs:
            return history  # started by us and still starting: not registered yet
    due = history.due.get(tid)
    if due is None:
        recent = policy.recent(tuple(history.restarts.get(tid, ())), now)
        delay = policy.delay(recent) if ours else 0.0
        due = now + delay
        if ours:  # a new leader finding no driver just starts one
            when = "restarting it" if delay == 0 else f"restarting it in {delay:g}s"
            text = f"the driver of {tid} is gone; {when}"
            out.extend([Log(text), ReportDriver(tid, text)])
        history = replace(history, due={**history.due, tid: due})
    if now < due:
        return history
    out.append(StartDriver(tid))
    if ours:
        history = replace(
            history, restarts={**history.restarts, tid: (*history.restarts.get(tid, ()), now)}
        )
    return history.driver_started(tid, now)


def _plan_rebalance(
    view: TopologyView, capacity: Capacity, history: History, now: float, out: list[Action]
) -> History:
    tid, request = view.topology_id, view.rebalance
    assert request is not None
    freed = 0 if view.own_capacity is not None else view.assigned_workers
    if view.status != TopologyStatus.REBALANCING:
        workers: Any = request.get("workers") if isinstance(request, Mapping) else None
        refused = worker_count_problem(workers) or slot_shortage(workers, capacity, freed)
        wait = request.get("wait", 0) if isinstance(request, Mapping) else None
        if type(wait) not in (int, float) or not 0 <= wait <= MAX_REBALANCE_WAIT_SECS:
            refused = refused or f"rebalance wait must be 0 to {MAX_REBALANCE_WAIT_SECS:g}s"
        refused = refused or view.rescale_problem
        if refused is not None:  # refused before anything is deactivated
            out.append(UpdateRecord(tid, {"rebalance": None, "error": refused}))
            return history
        out.append(
            UpdateRecord(
                tid,
                {
                    "status": TopologyStatus.REBALANCING,
                    "rebalance": dict(request, previous=view.status, deactivated_at=now),
                },
            )
        )
        return history
    if now < request["deactivated_at"] + request.get("wait", 0):
        return history
    workers = int(request["workers"])
    shortage = slot_shortage(workers, capacity, freed=freed) or view.rescale_problem
    if shortage is not None:  # the capacity, or a request changed by hand since it began
        out.append(
            UpdateRecord(tid, {"status": request["previous"], "rebalance": None, "error": shortage})
        )
        return history
    out.extend(
        [
            StopDriver(tid),
            Assign(tid, workers, (view.attempt or 0) + 1, dict(request.get("components") or {})),
            StartDriver(tid),
            UpdateRecord(tid, {"status": request["previous"], "rebalance": None}),
        ]
    )
    return history.driver_started(tid, now)
