"""Nimbus: the driver that turns topologies recorded in ZooKeeper into running workers.

Several nimbuses may run; one is elected leader through ZooKeeper and the others stand by.
The leader reconciles every topology every half second:

* ``SUBMITTED``: check there are enough task slots, compute the assignment (attempt 1),
  write it, launch one long-running worker per slot, then set the requested status;
* ``ACTIVE`` / ``INACTIVE``: relaunch any worker whose Spark job ended; a topology this
  nimbus did not launch (it took over from a dead leader) gets a new assignment attempt
  and fresh workers;
* a ``rebalance`` request: deactivate, wait, stop the workers, reassign with the new
  worker count (attempt + 1), relaunch, restore the status;
* ``KILLED``: after the requested wait, stop the workers and delete the topology's znodes.

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
from topology.assignment import assign, from_json, task_counts, to_json
from topology.deploy.zk.state import ZkState

RECONCILE_SECS = 0.5
LIVE = ("ACTIVE", "INACTIVE")


class DeployBackend(Protocol):
    """How workers are launched (Spark tasks in production)."""

    def check_slots(self, needed: int, freed: int = 0) -> None: ...

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
        self._owned: dict[str, int] = {}  # topology id -> attempt this nimbus launched
        self._ready: set[tuple[str, int, int]] = set()  # (topology, worker, attempt) seen ready
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

    # -- reconciliation --------------------------------------------------------------------

    def reconcile(self) -> None:
        for topology_id in self.zk.topology_ids():
            spec = self.zk.read_spec(topology_id)
            if spec is not None:
                self._reconcile(topology_id, spec)

    def _reconcile(self, topology_id: str, spec: dict[str, Any]) -> None:
        status = spec.get("status")
        if status == "SUBMITTED":
            self._start(topology_id, spec)
        elif status == "KILLED":
            if time.time() >= spec.get("kill_at", 0):
                self._stop_workers(topology_id)
                self.zk.remove_topology(topology_id)
                self._owned.pop(topology_id, None)
                self._ready = {r for r in self._ready if r[0] != topology_id}
        elif spec.get("rebalance"):
            self._rebalance(topology_id, spec)
        elif status in LIVE:
            self._supervise(topology_id, spec)

    def _start(self, topology_id: str, spec: dict[str, Any]) -> None:
        workers = spec["conf"][cfg.TOPOLOGY_WORKERS]
        try:
            self.backend.check_slots(workers)
        except Exception as exc:
            self.zk.update_spec(topology_id, status="FAILED", error=str(exc))
            return
        self._assign_and_launch(topology_id, spec, workers, attempt=1)
        self.zk.update_spec(
            topology_id, status=spec.get("initial_status", "ACTIVE"), launched_at=time.time()
        )

    def _assign_and_launch(
        self, topology_id: str, spec: dict[str, Any], workers: int, attempt: int
    ) -> None:
        import cloudpickle

        topology = cloudpickle.loads(self.zk.read_code(topology_id))
        conf = dict(spec["conf"], **{cfg.TOPOLOGY_WORKERS: workers})
        assignment = assign(task_counts(topology, conf), workers)
        self.zk.write_assignment(topology_id, to_json(assignment, attempt))
        self._owned[topology_id] = attempt
        for worker in range(workers):
            self._launch(topology_id, worker, attempt)

    def _launch(self, topology_id: str, worker: int, attempt: int) -> None:
        self.backend.launch(
            {
                "topology_id": topology_id,
                "worker": worker,
                "attempt": attempt,
                "zk_conf": _zk_conf(self.conf),
                "sys_path": [os.path.abspath(p) if p else os.getcwd() for p in sys.path],
            }
        )

    def _worker_error(self, topology_id: str, worker: int) -> str | None:
        """The last fatal error a worker recorded in ZooKeeper before dying, if any."""
        for error in reversed(self.zk.errors(topology_id).get("__worker", [])):
            if error.get("worker") == worker and error.get("fatal"):
                return str(error["text"])
        return None

    def _stop_workers(self, topology_id: str) -> None:
        """Remove the assignment (workers see it and stop cleanly), then cancel stragglers."""
        self.zk.delete_assignment(topology_id)
        self.backend.stop(topology_id, grace=float(self.conf[cfg.WORKER_SHUTDOWN_SECS]))

    def _supervise(self, topology_id: str, spec: dict[str, Any]) -> None:
        assignment = self.zk.read_assignment(topology_id)
        if assignment is None:
            return
        attempt = assignment["attempt"]
        if self._owned.get(topology_id) != attempt:
            # Launched by a previous leader: its workers died with it, or will stop on
            # seeing a new attempt.  Take over with a fresh assignment.
            _log(f"taking over {topology_id} (attempt {attempt} -> {attempt + 1})")
            self.backend.stop(topology_id, wait=1.0)
            self._assign_and_launch(topology_id, spec, assignment["workers"], attempt + 1)
            return
        beats = self.zk.heartbeats(topology_id)
        for worker, beat in beats.items():
            if beat.get("attempt") == attempt and beat.get("ready"):
                self._ready.add((topology_id, worker, attempt))
        for worker in range(assignment["workers"]):
            ended, error = self.backend.ended(topology_id, worker)
            if ended and (topology_id, worker, attempt) not in self._ready:
                # Never got going (prepare/open raised, or cannot start): relaunching would
                # loop forever, so the topology fails with the worker's own error.
                text = self._worker_error(topology_id, worker) or error or "worker ended"
                text = text.strip().splitlines()[0]
                _log(f"{topology_id}: worker {worker} failed to start: {text}")
                self._stop_workers(topology_id)
                self.zk.update_spec(
                    topology_id, status="FAILED", error=f"worker {worker} failed to start: {text}"
                )
                return
            if ended:
                text = f"worker {worker} ended" + (f": {error}" if error else "") + "; relaunching"
                _log(f"{topology_id}: {text}")
                self.zk.report_error(
                    topology_id,
                    "__worker",
                    {
                        "component": "__worker",
                        "worker": worker,
                        "time": time.time(),
                        "text": text,
                    },
                )
                self._launch(topology_id, worker, attempt)

    def _rebalance(self, topology_id: str, spec: dict[str, Any]) -> None:
        request = spec["rebalance"]
        if spec["status"] != "REBALANCING":
            self.zk.update_spec(
                topology_id,
                status="REBALANCING",
                rebalance=dict(request, previous=spec["status"], deactivated_at=time.time()),
            )
            return
        if time.time() < request["deactivated_at"] + request.get("wait", 0):
            return
        assignment = self.zk.read_assignment(topology_id) or {"attempt": 0, "workers": 0}
        workers = request["workers"]
        try:
            self.backend.check_slots(workers, freed=assignment["workers"])
        except Exception as exc:
            self.zk.update_spec(
                topology_id, status=request["previous"], rebalance=None, error=str(exc)
            )
            return
        self._stop_workers(topology_id)
        conf = dict(spec["conf"], **{cfg.TOPOLOGY_WORKERS: workers})
        self.zk.update_spec(topology_id, conf=conf)
        self._assign_and_launch(
            topology_id, dict(spec, conf=conf), workers, assignment["attempt"] + 1
        )
        self.zk.update_spec(topology_id, status=request["previous"], rebalance=None)


def _zk_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """The keys a worker needs to reach ZooKeeper."""
    keys = (cfg.ZK_SERVERS, cfg.ZK_PORT, cfg.ZK_ROOT, cfg.ZK_CONNECTION_TIMEOUT_SECS)
    return {key: conf[key] for key in keys}


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} [nimbus] {message}", file=sys.stderr, flush=True)


__all__ = ["DeployBackend", "Nimbus", "from_json"]
