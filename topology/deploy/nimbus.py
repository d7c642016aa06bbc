"""Nimbus: the driver that turns topologies recorded in ZooKeeper into running workers.

Several nimbuses may run; one is elected leader through ZooKeeper and the others stand by.
Every half second the leader *observes* (topology records, assignments, heartbeats, which
workers' Spark jobs ended), asks the pure planner (:mod:`topology.deploy.plan`) what to do,
and *carries out* the actions it returns.  Every decision lives in the planner; this
module only reads state and performs actions.

Workers only need ZooKeeper: they read their assignment, register, and obey status
changes; a worker of an old attempt stops by itself.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import traceback
from typing import Any, Protocol

from topology import config as cfg
from topology.assignment import assign, task_counts, to_json

from .error_log import WORKER_COMPONENT, worker_error_entry
from .plan import (
    LIVE,
    Action,
    Assign,
    Capacity,
    FailTopology,
    History,
    Launch,
    Log,
    RemoveTopology,
    ReportWorker,
    StopWorkers,
    TopologyView,
    UpdateRecord,
    WorkerView,
    plan,
)
from .shipping import launch_sys_path
from .zk.state import ZkState

RECONCILE_SECS = 0.5


class DeployBackend(Protocol):
    """How workers are launched (Spark tasks in production)."""

    def capacity(self) -> Capacity: ...

    def launch(self, launch: dict[str, Any]) -> None: ...

    def ended(self, topology_id: str, worker: int) -> tuple[bool, str | None]: ...

    def stop(
        self, topology_id: str, worker: int | None = None, wait: float = 10.0, grace: float = 0.0
    ) -> None: ...


class Nimbus:
    """One nimbus; :meth:`run` campaigns for leadership and leads until ``stop`` is set."""

    def __init__(self, conf: dict[str, Any], backend: DeployBackend) -> None:
        self.conf = cfg.resolve(conf, where="nimbus")
        self.backend = backend
        self.identifier = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.zk = ZkState(self.conf)
        self.is_leader = threading.Event()
        self.history = History()
        self._stop = threading.Event()

    # -- lifecycle -------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Connect, wait to be elected, then lead until ``stop`` (or :meth:`shutdown`)."""
        if stop is not None:
            self._stop = stop
        self.zk.connect()
        election = self.zk.election(self.identifier)
        watcher = threading.Thread(target=self._cancel_on_stop, args=(election,), daemon=True)
        watcher.start()
        try:
            election.run(self._lead)
        finally:
            self.is_leader.clear()
            self.zk.close()

    def start(self) -> threading.Thread:
        """Run in a daemon thread (tests, ``sparkstorm local``)."""
        thread = threading.Thread(target=self.run, name="nimbus", daemon=True)
        thread.start()
        return thread

    def shutdown(self) -> None:
        self._stop.set()

    def _cancel_on_stop(self, election: Any) -> None:
        self._stop.wait()
        election.cancel()

    def _lead(self) -> None:
        self.is_leader.set()
        _log(f"nimbus {self.identifier} is the leader")
        while not self._stop.is_set() and not self.zk.lost.is_set():
            try:
                self.reconcile()
            except Exception:  # never let one bad topology stop the leader
                _log("reconcile failed:\n" + traceback.format_exc())
            self._stop.wait(RECONCILE_SECS)

    # -- observe, plan, act ----------------------------------------------------------------

    def reconcile(self) -> None:
        """One round: observe every topology, plan, and carry out the actions."""
        result = plan(
            self.observe(),
            self.backend.capacity(),
            self.history,
            time.time(),
            shutdown_grace=float(self.conf[cfg.WORKER_SHUTDOWN_SECS]),
        )
        self.history = result.history
        for action in result.actions:
            self.carry_out(action)

    def observe(self) -> list[TopologyView]:
        """What the planner needs to know, read from ZooKeeper and the backend."""
        views = []
        for topology_id in self.zk.topology_ids():
            record = self.zk.read_record(topology_id)
            if record is None:
                continue
            assignment = self.zk.read_assignment(topology_id) or {}
            attempt = assignment.get("attempt")
            workers: dict[int, WorkerView] = {}
            if record.get("status") in LIVE and attempt is not None:
                workers = self._worker_views(topology_id, attempt, assignment["workers"])
            views.append(
                TopologyView(
                    topology_id=topology_id,
                    status=record.get("status", ""),
                    workers=record["conf"][cfg.TOPOLOGY_WORKERS],
                    initial_status=record.get("initial_status", "ACTIVE"),
                    kill_at=record.get("kill_at"),
                    rebalance=record.get("rebalance"),
                    attempt=attempt,
                    assigned_workers=assignment.get("workers", 0),
                    worker_views=workers,
                )
            )
        return views

    def _worker_views(self, topology_id: str, attempt: int, count: int) -> dict[int, WorkerView]:
        beats = self.zk.heartbeats(topology_id, attempt=attempt)
        views = {}
        for worker in range(count):
            ended, error = self.backend.ended(topology_id, worker)
            if ended:  # the worker's own record of why it died beats the Spark job's
                error = self._worker_error(topology_id, worker, attempt) or error
            beat = beats.get(worker, {})
            views[worker] = WorkerView(ready=bool(beat.get("ready")), ended=ended, error=error)
        return views

    def _worker_error(self, topology_id: str, worker: int, attempt: int) -> str | None:
        """The last fatal error a worker recorded in ZooKeeper before dying, if any."""
        for error in reversed(self.zk.errors(topology_id).get(WORKER_COMPONENT, [])):
            if error.get("worker") == worker and error.get("fatal"):
                if error.get("attempt") in (None, attempt):
                    return str(error["text"])
        return None

    def carry_out(self, action: Action) -> None:
        """Perform one planned action."""
        if isinstance(action, Launch):
            self._launch(action.topology_id, action.worker, action.attempt)
        elif isinstance(action, Assign):
            self._assign_and_launch(action.topology_id, action.workers, action.attempt)
        elif isinstance(action, StopWorkers):
            self._stop_workers(action.topology_id, action.keep_assignment, action.grace)
        elif isinstance(action, RemoveTopology):
            self.zk.remove_topology(action.topology_id)
        elif isinstance(action, UpdateRecord):
            self.zk.update_record(action.topology_id, **action.changes)
        elif isinstance(action, FailTopology):
            grace = float(self.conf[cfg.WORKER_SHUTDOWN_SECS])
            self._stop_workers(action.topology_id, False, grace)
            self.zk.update_record(action.topology_id, status="FAILED", error=action.error)
        elif isinstance(action, ReportWorker):
            self.zk.report_error(
                action.topology_id,
                WORKER_COMPONENT,
                worker_error_entry(action.worker, action.text),
            )
        elif isinstance(action, Log):
            _log(action.text)

    def _assign_and_launch(self, topology_id: str, workers: int, attempt: int) -> None:
        import cloudpickle

        record = self.zk.read_record(topology_id)
        conf = dict(record["conf"], **{cfg.TOPOLOGY_WORKERS: workers})
        if conf != record["conf"]:
            self.zk.update_record(topology_id, conf=conf)
        topology = cloudpickle.loads(self.zk.read_code(topology_id))
        assignment = assign(task_counts(topology, conf), workers)
        self.zk.write_assignment(topology_id, to_json(assignment, attempt))
        for worker in range(workers):
            self._launch(topology_id, worker, attempt)

    def _launch(self, topology_id: str, worker: int, attempt: int) -> None:
        self.backend.launch(
            {
                "topology_id": topology_id,
                "worker": worker,
                "attempt": attempt,
                "zk_conf": _zk_conf(self.conf),
                "sys_path": launch_sys_path(),
            }
        )

    def _stop_workers(self, topology_id: str, keep_assignment: bool, grace: float) -> None:
        """Remove the assignment (workers see it and stop cleanly), then cancel stragglers."""
        if not keep_assignment:
            self.zk.delete_assignment(topology_id)
        self.backend.stop(topology_id, wait=10.0 if grace else 1.0, grace=grace)


def _zk_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """The keys a worker needs to reach ZooKeeper."""
    keys = (cfg.ZK_SERVERS, cfg.ZK_PORT, cfg.ZK_ROOT, cfg.ZK_CONNECTION_TIMEOUT_SECS)
    return {key: conf[key] for key in keys}


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} [nimbus] {message}", file=sys.stderr, flush=True)
