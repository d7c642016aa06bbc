"""Nimbus: turns topologies recorded in ZooKeeper into running drivers.

Several nimbuses may run; one is elected leader through ZooKeeper and the others stand by.
Every half second the leader *observes* (topology records, assignments, which drivers
hold their ZooKeeper node), asks the pure planner (:mod:`topology.deploy.cluster.plan`)
what to do, and *carries out* the actions it returns.  Every decision lives in the planner.

Each topology's workers are supervised by its driver
(:mod:`topology.deploy.cluster.topology_driver`), not by the nimbus: a driver started by a
nimbus that dies keeps running, and the next leader adopts it.  When its ZooKeeper session
expires the nimbus does not exit: it waits for a new session and campaigns again.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from topology import config as cfg
from topology.assignment import assign, task_counts, to_json
from topology.constants import DRIVER_COMPONENT
from topology.names import MAX_ID_CHARS, name_problem
from topology.state.backends import remove_state
from topology.status import TopologyStatus

from ..error_log import error_entry
from ..limits import local_slots, worker_count_problem
from ..rescale import components_problem
from ..security import SignatureMismatch, refuse_insecure, resign, verify_stored
from ..spark.backend import spark_app_conf, standalone_capacity
from ..zk.connection import ZnodeTooLarge
from ..zk.state import ZkState
from .drivers import DriverLauncher, InlineDrivers, ProcessDrivers
from .metrics import ClusterMetrics
from .plan import (
    UNLIMITED,
    Action,
    Assign,
    Capacity,
    DriverPolicy,
    FailTopology,
    History,
    Log,
    RemoveTopology,
    ReportDriver,
    StartDriver,
    StopDriver,
    TopologyView,
    Unassign,
    UpdateRecord,
    plan,
)

RECONCILE_SECS = 0.5
#: Seconds beyond the workers' shutdown time after which a removed topology's checkpoints
#: are removed once more (what its last workers stored while they stopped).
STATE_REMOVAL_SLACK_SECS = 5.0


class Nimbus:
    """One nimbus; :meth:`run` campaigns for leadership and leads until ``stop`` is set.

    ``backend`` (a ``SparkBackend``) is needed in ``inline`` driver mode only; ``drivers``
    replaces the launcher the mode implies.  Without a cluster secret and with ZooKeeper
    off loopback it refuses to start unless ``insecure``.
    """

    def __init__(
        self,
        conf: dict[str, Any],
        backend: Any = None,
        drivers: DriverLauncher | None = None,
        insecure: bool = False,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        """``announce`` is called with the nimbus's routine news, its first election
        (default: its log on stderr, as every other line it says); ``sparkstorm local``
        passes its progress printer (silent with ``--quiet``)."""
        self._announce = announce or _log
        self.terms = 0  # how many times it led
        self.conf = cfg.resolve(conf, where="nimbus")
        refuse_insecure(self.conf, "start a nimbus", insecure)
        self.secret = cfg.cluster_secret(self.conf)
        self.backend = backend
        if drivers is None:
            if self.conf[cfg.NIMBUS_DRIVER_MODE] == "inline":
                if backend is None:
                    raise ValueError("nimbus.driver.mode inline needs a SparkBackend")
                drivers = InlineDrivers(self.conf, backend)
            else:
                drivers = ProcessDrivers(self.conf)
        self.drivers = drivers
        self.identifier = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.zk = ZkState(self.conf)
        self.is_leader = threading.Event()
        self.history = History()
        self.elections = 0
        self._policy = DriverPolicy(
            base_secs=float(self.conf[cfg.WORKER_RESTART_DELAY_SECS]),
            max_secs=float(self.conf[cfg.WORKER_RESTART_MAX_DELAY_SECS]),
            reset_secs=float(self.conf[cfg.WORKER_RESTART_RESET_SECS]),
        )
        self._stop = threading.Event()
        self._election: Any = None
        #: Removed topology -> when to remove its checkpoints again, and its conf.
        self._state_removals: dict[str, tuple[float, dict[str, Any]]] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Connect, then campaign and lead until ``stop`` (or :meth:`shutdown`).

        A lost ZooKeeper session ends the current term only: the nimbus waits for a new
        session and campaigns again."""
        if stop is not None:
            self._stop = stop
        self.zk.connect()
        threading.Thread(target=self._cancel_on_stop, name="nimbus-stop", daemon=True).start()
        metrics = self._serve_metrics()
        try:
            while not self._stop.is_set():
                if not self.zk.wait_connected(timeout=1.0):
                    continue
                self.zk.lost.clear()
                self._election = self.zk.election(self.identifier)
                self.elections += 1
                try:
                    self._election.run(self._lead)
                except Exception as exc:  # the session went while leading or campaigning
                    _log(f"leadership ended ({type(exc).__name__}); campaigning again")
                self.is_leader.clear()
                self._stop.wait(0.2)
        finally:
            self.is_leader.clear()
            if metrics is not None:
                metrics.close()
            self.drivers.close()
            self.zk.close()

    def _serve_metrics(self) -> ClusterMetrics | None:
        """The Prometheus endpoint of ``sparkstorm.metrics.port`` (None when not set, or
        when the port is taken: said in the log, and the nimbus runs without it)."""
        port = self.conf[cfg.METRICS_PORT]
        if port is None:
            return None
        try:
            metrics = ClusterMetrics(self.conf, port, self.conf[cfg.METRICS_HOST])
        except OSError as exc:
            _log(f"no metrics endpoint: {cfg.METRICS_PORT}={port}: {exc}")
            return None
        _log(f"metrics at {metrics.url}")
        return metrics

    def start(self) -> threading.Thread:
        """Run in a daemon thread (tests, ``sparkstorm local``)."""
        thread = threading.Thread(target=self.run, name="nimbus", daemon=True)
        thread.start()
        return thread

    def shutdown(self) -> None:
        self._stop.set()

    def _cancel_on_stop(self) -> None:
        self._stop.wait()
        if self._election is not None:
            self._election.cancel()

    def _lead(self) -> None:
        self.is_leader.set()
        self.terms += 1
        if self.terms == 1:
            self._announce(f"nimbus {self.identifier} is the leader")
        else:  # leading again after a lost session: news for the log, not the first page
            _log(f"nimbus {self.identifier} is the leader again")
        self._tighten()
        away = False  # ZooKeeper unreachable since the last successful round
        while not self._stop.is_set() and not self.zk.lost.is_set():
            try:
                self.reconcile()
                if away:
                    _log("ZooKeeper is back")
                    away = False
            except Exception as exc:  # never let one bad topology stop the leader
                if not self.zk.unreachable(exc):
                    _log("reconcile failed:\n" + traceback.format_exc(limit=3))
                elif not away:
                    _log("ZooKeeper unreachable; topologies keep running meanwhile")
                    away = True
            self._stop.wait(RECONCILE_SECS)
        if self.zk.lost.is_set():
            _log("ZooKeeper session lost: stepping down until a new session is up")

    def _tighten(self) -> None:
        """Once a term, make the nodes older versions left open this user's identity's
        alone where that is safe (``Ownership.tighten_tree``); say what was left."""
        if self.zk.ownership is None:
            return
        try:
            tightened, left = self.zk.ownership.tighten_tree()
        except Exception as exc:  # ZooKeeper away: the next term tries again
            _log(f"ZooKeeper nodes not checked ({type(exc).__name__})")
            return
        if tightened or left:
            shown = ", ".join(left[:3]) + (", ..." if len(left) > 3 else "")
            _log(
                f"ZooKeeper: {tightened} node(s) under {self.zk.paths.root} made this user's "
                f"alone; {len(left)} others could write or that are not ours left as they "
                f"are (ignored){': ' + shown if left else ''}"
            )

    # -- observe, plan, act ----------------------------------------------------------------

    def reconcile(self) -> None:
        """One round: observe every topology, plan, and carry out the actions."""
        result = plan(self.observe(), self.capacity(), self.history, time.time(), self._policy)
        self.history = result.history
        refused: set[str] = set()
        for action in result.actions:
            tid = getattr(action, "topology_id", None)
            if tid in refused:
                continue  # its code was refused: the rest of its plan must not undo FAILED
            if self.carry_out(action) is False:
                refused.add(str(tid))
        self._remove_state_again(time.time())

    def capacity(self) -> Capacity:
        """Free worker slots where they are known in advance: the shared SparkContext in
        inline mode, a standalone master's cores; elsewhere each driver checks its own."""
        if self.backend is not None and self.conf[cfg.NIMBUS_DRIVER_MODE] == "inline":
            capacity: Capacity = self.backend.capacity()
            return capacity
        master = str(self.conf.get("spark.master") or "")
        if master.startswith("spark://"):
            try:
                cores = int(self.conf.get("spark.executor.cores") or 1)
                return standalone_capacity(master, cores)
            except OSError:  # the master's UI is not reachable: the driver checks
                return UNLIMITED
        return UNLIMITED

    def observe(self) -> list[TopologyView]:
        """What the planner needs to know, read from ZooKeeper."""
        alive = self.zk.drivers()
        views = []
        for topology_id in self.zk.topology_ids():
            record = self.zk.read_record(topology_id)
            if record is None:
                continue
            assignment = self.zk.read_assignment(topology_id) or {}
            conf = record.get("conf") if isinstance(record.get("conf"), dict) else {}
            workers = conf.get(cfg.TOPOLOGY_WORKERS)
            views.append(
                TopologyView(
                    topology_id=topology_id,
                    status=record.get("status", ""),
                    workers=workers if isinstance(workers, int) else 0,
                    initial_status=record.get("initial_status", TopologyStatus.ACTIVE),
                    kill_at=record.get("kill_at"),
                    rebalance=record.get("rebalance"),
                    attempt=assignment.get("attempt"),
                    assigned_workers=assignment.get("workers", 0),
                    driver_alive=topology_id in alive,
                    problem=_record_problem(topology_id, record.get("name"), workers),
                    own_capacity=self._own_capacity(conf, workers),
                    rescale_problem=_rescale_problem(record),
                )
            )
        return views

    def _own_capacity(self, conf: dict[str, Any], workers: object) -> Capacity | None:
        """Slots of a topology's own application, when drivers are processes and its
        master is ``local[N]`` (N cores, one per worker for its life); else None."""
        if self.conf[cfg.NIMBUS_DRIVER_MODE] == "inline" or type(workers) is not int:
            return None
        master = str(spark_app_conf(self.conf, conf, max(1, workers)).get("spark.master", ""))
        slots = local_slots(master)
        if slots is None:
            return None
        return Capacity(slots, 0, f"spark.master={master}, the topology's own application")

    def carry_out(self, action: Action) -> bool:
        """Perform one planned action; False when the topology was failed instead (its code
        or conf does not carry the cluster secret's signature)."""
        tid = getattr(action, "topology_id", None)
        if isinstance(action, Assign):
            return self._assign(action.topology_id, action.workers, action.attempt, action.tasks)
        elif isinstance(action, Unassign):
            self.zk.delete_assignment(action.topology_id)
        elif isinstance(action, StartDriver):
            generation = self._next_generation(action.topology_id)
            if generation is not None:
                self.drivers.start(action.topology_id, generation)
        elif isinstance(action, StopDriver):
            self._next_generation(action.topology_id)
        elif isinstance(action, RemoveTopology):
            self._remove_state(action.topology_id)
            self.zk.remove_topology(action.topology_id)
        elif isinstance(action, UpdateRecord):
            self.zk.update_record(action.topology_id, **action.changes)
        elif isinstance(action, FailTopology):
            self.zk.delete_assignment(action.topology_id)
            self.zk.update_record(
                action.topology_id, status=TopologyStatus.FAILED, error=action.error
            )
        elif isinstance(action, ReportDriver):
            entry = error_entry(DRIVER_COMPONENT, action.text)
            self.zk.report_error(action.topology_id, DRIVER_COMPONENT, entry)
        elif isinstance(action, Log):
            _log(action.text)
        else:  # pragma: no cover - every action is handled above
            raise TypeError(f"unknown action {action!r} for {tid}")
        return True

    def _remove_state(self, topology_id: str) -> None:
        """Delete a killed topology's checkpoints where its verified record's conf keeps
        them (any provider, fsspec URLs included; savepoints are directories of their own
        and stay); a failure is logged, and the topology is removed anyway."""
        record = self.zk.read_record(topology_id)
        if record is None:
            return
        try:
            verify_stored(self.zk, self.secret, topology_id, record)
            remove_state(record["conf"], topology_id)
        except Exception as exc:  # a forged record, an unreachable store: keep going
            _log(f"topology {topology_id}: its checkpoints were not removed: {exc}")
            return
        again = float(record["conf"].get(cfg.WORKER_SHUTDOWN_SECS) or 0) + STATE_REMOVAL_SLACK_SECS
        self._state_removals[topology_id] = (time.time() + again, record["conf"])

    def _remove_state_again(self, now: float) -> None:
        """Remove the checkpoints of topologies removed a shutdown time ago once more."""
        for topology_id, (due, conf) in list(self._state_removals.items()):
            if now >= due:
                del self._state_removals[topology_id]
                try:
                    remove_state(conf, topology_id)
                except Exception as exc:  # an unreachable store: said, not retried
                    _log(f"topology {topology_id}: its checkpoints were not removed: {exc}")

    def _next_generation(self, topology_id: str) -> int | None:
        """Move the record's driver generation on (any running driver then exits)."""
        record = self.zk.read_record(topology_id)
        if record is None:
            return None
        generation = int((record.get("driver") or {}).get("generation", 0)) + 1
        self.zk.update_record(topology_id, driver={"generation": generation})
        return generation

    def _assign(
        self, topology_id: str, workers: int, attempt: int, tasks: Mapping[str, int]
    ) -> bool:
        """Write assignment ``attempt``: ``workers`` workers, and each component's task
        count from the verified record, after ``tasks`` (a rebalance's new counts) were
        stored in it.  The record's ``conf`` and ``components`` are signed fields: with a
        secret they are re-signed from the record just verified, never from a re-read."""
        import cloudpickle

        record = self.zk.read_record(topology_id)
        if record is None:  # removed meanwhile, or refused at the door (logged there)
            return False
        code = self.zk.read_code(topology_id)
        try:  # before anything is unpickled
            verify_stored(self.zk, self.secret, topology_id, record, code)
        except SignatureMismatch as exc:
            _log(str(exc))
            self.zk.update_record(topology_id, status=TopologyStatus.FAILED, error=str(exc))
            return False
        name = str(record.get("name"))
        problem = components_problem(name, record, tasks) if tasks else None
        if problem is not None:  # the plan checked the same request: changed meanwhile
            self.zk.update_record(topology_id, status=TopologyStatus.FAILED, error=problem)
            return False
        conf = dict(record["conf"], **{cfg.TOPOLOGY_WORKERS: workers})
        components = {
            c: dict(info, tasks=tasks.get(c, info["tasks"]))
            for c, info in record["components"].items()
        }
        changes: dict[str, Any] = {
            key: value
            for key, value in (("conf", conf), ("components", components))
            if value != record[key]
        }
        if changes:  # re-signed from the record just verified, not a re-read
            if self.secret is not None:
                changes = resign(self.secret, record, **changes)
            self.zk.update_record(topology_id, **changes)
        try:
            topology = cloudpickle.loads(code)
        except Exception as exc:  # e.g. a module the code refers to is not importable here
            error = f"the nimbus cannot load the topology's code: {type(exc).__name__}: {exc}"
            _log(f"{topology_id}: {error}")
            self.zk.update_record(topology_id, status=TopologyStatus.FAILED, error=error)
            return False
        counts = task_counts(topology, conf)
        counts.update({c: int(i["tasks"]) for c, i in components.items() if c in counts})
        assignment = assign(counts, workers)
        try:
            self.zk.write_assignment(topology_id, to_json(assignment, attempt))
        except ZnodeTooLarge as exc:  # written by hand: clients check the size first
            _log(f"{topology_id}: {exc}")
            self.zk.update_record(topology_id, status=TopologyStatus.FAILED, error=str(exc))
            return False
        return True


def _rescale_problem(record: Mapping[str, Any]) -> str | None:
    """Why the record's pending rebalance cannot run its ``components`` task counts (a
    client checks first; the request may have been written by hand), or None."""
    request = record.get("rebalance")
    if not isinstance(request, Mapping) or not request.get("components"):
        return None
    return components_problem(str(record.get("name")), record, request["components"])


def _record_problem(topology_id: str, name: object, workers: object) -> str | None:
    """Why a topology record cannot be run: its id (which names paths and files), its name
    or its worker count breaks the rules a client checks (someone wrote it by hand)."""
    return (
        name_problem("topology", name)
        or name_problem("topology id", topology_id, MAX_ID_CHARS)
        or worker_count_problem(workers)
    )


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} [nimbus] {message}", file=sys.stderr, flush=True)
