"""A topology's driver: the supervisor of its workers, one per topology.

In production (``nimbus.driver.mode: process``) the driver is a process of its own —
``python -m topology.deploy.cluster.topology_driver`` — holding the topology's own Spark
application (Heron gives each topology its own job the same way): a nimbus that dies or
fails over leaves it, and every worker of its application, running.  With ``inline`` the
driver is a thread of the nimbus sharing the nimbus's SparkContext (tests, quick starts).

A driver holds the ephemeral znode ``drivers/<topology-id>`` with its own ZooKeeper
session (the nimbus sees it alive there), and every half second observes the workers of
the current assignment attempt — their heartbeats and its own Spark jobs — asks
:func:`~topology.deploy.worker_plan.supervise` what to do, and does it.  It exits, stopping
its workers, when the topology is removed, killed or failed, or when the nimbus started a
newer driver (the record's ``driver.generation`` moved on).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Protocol

from topology import config as cfg
from topology.constants import WORKER_COMPONENT
from topology.logs import configure_logging
from topology.status import ENDED, TopologyStatus

from ..error_log import worker_error_entry
from ..security import SignatureMismatch, verify_stored
from ..spark.backend import SparkBackend, spark_app_conf
from ..worker_plan import (
    AttemptView,
    FailTopology,
    KillWorker,
    Launch,
    Log,
    ReportWorker,
    StopAttempt,
    WorkerAction,
    WorkerHistory,
    WorkerView,
    pending_restarts,
    restart_policy,
    supervise,
)
from ..zk.state import ZkState
from .effective_conf import shown_spark, shown_zookeeper

ROUND_SECS = 0.5


class WorkerBackend(Protocol):
    """Where a driver's workers run (:class:`~topology.deploy.spark.backend.SparkBackend`)."""

    def launch(self, launch: dict[str, Any]) -> None: ...

    def launched(self, topology_id: str, worker: int, attempt: int) -> bool: ...

    def ended(self, topology_id: str, worker: int) -> tuple[bool, str | None]: ...

    def kill(self, topology_id: str, worker: int) -> None: ...

    def stop(
        self,
        topology_id: str,
        worker: int | None = None,
        wait: float = 10.0,
        grace: float = 0.0,
        attempt: int | None = None,
    ) -> None: ...


def zk_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """The keys a process needs to reach ZooKeeper."""
    keys = (
        cfg.ZK_SERVERS,
        cfg.ZK_PORT,
        cfg.ZK_ROOT,
        cfg.ZK_CONNECTION_TIMEOUT_SECS,
        cfg.ZK_SESSION_TIMEOUT_SECS,
        cfg.ZK_AUTH_SCHEME,
        cfg.ZK_AUTH_PAYLOAD,
    )
    return {key: conf.get(key) for key in keys}


class TopologyDriver:
    """Supervises the workers of ``topology_id`` for driver ``generation``."""

    def __init__(
        self,
        conf: dict[str, Any],
        topology_id: str,
        generation: int,
        backend: WorkerBackend,
    ) -> None:
        self.conf = cfg.resolve(conf, where="driver")
        self.topology_id = topology_id
        self.generation = generation
        self.backend = backend
        self.secret = cfg.cluster_secret(self.conf)
        self._secret_hex = self.secret.hex() if self.secret is not None else None
        self.history = WorkerHistory()
        self.zk = ZkState(self.conf)
        self.info = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "generation": generation,
            "started": time.time(),
            # what its workers reach ZooKeeper with and run on (shown as the effective conf)
            "zookeeper": shown_zookeeper(self.conf),
            "spark": shown_spark(self.conf, getattr(backend, "spark_conf", None)),
        }
        self._published: dict[str, Any] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> str:
        """Supervise until the topology no longer needs this driver, or ``stop`` is set
        (then workers are left running: a new driver adopts them).  Returns why it ended."""
        self.zk.connect()
        try:
            reason = self._claim(stop)
            if reason is not None:
                return reason
            self.zk.on_new_session(self._reclaim)
            reason = self._supervise(stop)
            if reason != "stopped":  # the topology is over for this driver: end its workers
                grace = float(self.conf[cfg.WORKER_SHUTDOWN_SECS])
                self.backend.stop(self.topology_id, grace=grace)
            return reason
        finally:
            try:
                self.zk.release_driver(self.topology_id)
            except Exception:  # ZooKeeper gone: the ephemeral node goes with the session
                pass
            self.zk.close()

    def _claim(self, stop: threading.Event) -> str | None:
        """Take the driver node, waiting for a previous driver to let go of it."""
        while not stop.is_set():
            why = self._superseded()
            if why is not None:
                return why
            if self.zk.claim_driver(self.topology_id, self.info):
                _log(self.topology_id, f"driver generation {self.generation} running")
                return None
            stop.wait(ROUND_SECS)
        return "stopped"

    def _reclaim(self) -> None:
        """A new ZooKeeper session: re-create the ephemeral driver node if still current."""
        try:
            if self._superseded() is None:
                self.zk.claim_driver(self.topology_id, self.info | self._published)
        except Exception:  # the next round tries again through _publish
            pass

    def _superseded(self) -> str | None:
        """Why this driver must not (or no longer) run, or None."""
        record = self.zk.read_record(self.topology_id)
        if record is None:
            return "the topology was removed"
        if record.get("status") in ENDED:
            return f"the topology is {record['status']}"
        current = (record.get("driver") or {}).get("generation", 0)
        if current != self.generation:
            return f"driver generation {current} replaced generation {self.generation}"
        return None

    # -- the rounds ------------------------------------------------------------------------

    def _supervise(self, stop: threading.Event) -> str:
        record = self.zk.read_record(self.topology_id) or {}
        try:
            verify_stored(self.zk, self.secret, self.topology_id, record)
        except SignatureMismatch as exc:
            _log(self.topology_id, str(exc))
            self.zk.delete_assignment(self.topology_id)
            self.zk.update_record(self.topology_id, status=TopologyStatus.FAILED, error=str(exc))
            return str(exc)
        policy = restart_policy(cfg.resolve(record.get("conf") or {}, where="topology"))
        grace = float(self.conf[cfg.WORKER_SHUTDOWN_SECS])
        away = False  # ZooKeeper unreachable since the last successful round
        while not stop.is_set():
            try:
                why = self._superseded()
                if why is not None:
                    _log(self.topology_id, f"driver exits: {why}")
                    return why
                view = self._observe()
                if view is not None:
                    result = supervise(view, self.history, policy, time.time(), grace)
                    self.history = result.history
                    for action in result.actions:
                        self._carry_out(action)
                    self._publish()
                if away:
                    _log(self.topology_id, "ZooKeeper is back: supervising again")
                    away = False
            except Exception as exc:
                if not self.zk.unreachable(exc):
                    _log(self.topology_id, f"round failed: {type(exc).__name__}: {exc}")
                elif not away:  # said once per outage; the workers do not need ZooKeeper
                    _log(self.topology_id, "ZooKeeper unreachable; the workers keep running")
                    away = True
            stop.wait(ROUND_SECS)
        return "stopped"

    def _observe(self) -> AttemptView | None:
        assignment = self.zk.read_assignment(self.topology_id)
        if not assignment:
            return None
        attempt, workers = int(assignment["attempt"]), int(assignment["workers"])
        beats = self.zk.heartbeats(self.topology_id, attempt=attempt)
        started = self.zk.started_workers(self.topology_id, attempt)
        views = {}
        for worker in range(workers):
            beat = beats.get(worker, {})
            launched = self.backend.launched(self.topology_id, worker, attempt)
            ended, error = (
                self.backend.ended(self.topology_id, worker) if launched else (False, None)
            )
            process = _process(beat)
            known = self.history.processes.get(worker)
            if ended:  # the worker's own record of why it died beats the Spark job's
                error = self._worker_error(worker, attempt) or error
            elif process is not None and known is not None and process != known:
                error = self._worker_error(worker, attempt, known)  # Spark retried its task
            views[worker] = WorkerView(
                alive=worker in beats,
                ready=bool(beat.get("ready")) or worker in started,
                launched=launched,
                ended=ended,
                error=error,
                stalled_secs=beat.get("stalled_secs"),
                busy_in=beat.get("busy_in"),
                process=process,
            )
        return AttemptView(self.topology_id, attempt, workers, views)

    def _worker_error(self, worker: int, attempt: int, process: str | None = None) -> str | None:
        """The last fatal error a worker (``process``: that process of it) recorded in
        ZooKeeper before dying, if any."""
        for error in reversed(self.zk.errors(self.topology_id).get(WORKER_COMPONENT, [])):
            if error.get("worker") == worker and error.get("fatal"):
                if process is not None and _process(error) != process:
                    continue
                if error.get("attempt") in (None, attempt):
                    return str(error["text"])
        return None

    def _carry_out(self, action: WorkerAction) -> None:
        tid = self.topology_id
        if isinstance(action, Launch):
            self.backend.launch(
                {
                    "topology_id": tid,
                    "worker": action.worker,
                    "attempt": action.attempt,
                    "zk_conf": zk_conf(self.conf),
                    "secret": self._secret_hex,
                }
            )
        elif isinstance(action, KillWorker):
            self.backend.kill(tid, action.worker)
        elif isinstance(action, StopAttempt):
            threading.Thread(
                target=self.backend.stop,
                kwargs={"topology_id": tid, "attempt": action.attempt, "grace": action.grace},
                daemon=True,
            ).start()
        elif isinstance(action, ReportWorker):
            self.zk.report_error(
                tid, WORKER_COMPONENT, worker_error_entry(action.worker, action.text)
            )
        elif isinstance(action, FailTopology):
            self.zk.delete_assignment(tid)
            self.zk.update_record(tid, status=TopologyStatus.FAILED, error=action.error)
        elif isinstance(action, Log):
            _log(tid, action.text)

    def _publish(self) -> None:
        """Put restart counts, reasons and next start times in the driver node."""
        workers = pending_restarts(self.history)
        state = {"workers": {str(w): v for w, v in workers.items()}}
        if state != self._published:
            self.zk.update_driver(self.topology_id, self.info | state)
            self._published = state


def _process(entry: dict[str, Any]) -> str | None:
    """Which process a heartbeat or error entry comes from: ``pid 7 on host-1``."""
    pid = entry.get("pid")
    return f"pid {pid} on {entry.get('host')}" if pid is not None else None


def _log(topology_id: str, message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"{stamp} [driver {topology_id}] {message}", file=sys.stderr, flush=True)


def _wait_for_executors(
    backend: Any, spark: dict[str, Any], workers: int, wait: float
) -> str | None:
    """On a cluster, wait until the application has an executor per worker; say what is
    missing, with the numbers, if it does not within ``wait`` seconds."""
    master = str(spark.get("spark.master", ""))
    if master.startswith("local"):
        return None
    deadline = time.monotonic() + wait
    while (got := backend.executors()) < workers:
        if time.monotonic() > deadline:
            cores = spark.get("spark.executor.cores", 1)
            memory = spark.get("spark.executor.memory", "1g")
            return (
                f"{workers} worker(s) need {workers} executor(s) of {cores} core(s) and "
                f"{memory} each, but spark.master={master} gave this topology only {got} "
                f"within {wait:g}s; use fewer topology.workers, smaller executors, or a "
                "bigger cluster"
            )
        time.sleep(0.5)
    return None


def main() -> int:
    """Entry point of a driver process: reads a JSON launch from stdin (``conf``,
    ``topology_id``, ``generation``), starts the topology's own Spark
    application and supervises its workers until the topology no longer needs it."""
    configure_logging()
    launch = json.loads(sys.stdin.read())
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    conf = cfg.resolve(launch["conf"], where="driver")
    with ZkState(conf) as zk:
        record = zk.read_record(launch["topology_id"])
        assignment = zk.read_assignment(launch["topology_id"]) or {}
        if record is None:
            return 0
        try:  # the conf configures Spark (JVM options included): only a signed one is used
            verify_stored(zk, cfg.cluster_secret(conf), launch["topology_id"], record)
        except SignatureMismatch as exc:
            _log(launch["topology_id"], str(exc))
            zk.delete_assignment(launch["topology_id"])
            zk.update_record(launch["topology_id"], status=TopologyStatus.FAILED, error=str(exc))
            return 1
    workers = int(assignment.get("workers") or record["conf"][cfg.TOPOLOGY_WORKERS])
    spark = spark_app_conf(conf, record["conf"], workers)
    backend = SparkBackend(spark, app_name=f"sparkstorm-{record['name']}")
    try:
        shortage = _wait_for_executors(
            backend, spark, workers, float(conf[cfg.SPARK_EXECUTOR_WAIT_SECS])
        )
        if shortage is not None:
            _log(launch["topology_id"], shortage)
            with ZkState(conf) as zk:
                zk.delete_assignment(launch["topology_id"])
                zk.update_record(
                    launch["topology_id"], status=TopologyStatus.FAILED, error=shortage
                )
            return 1
        driver = TopologyDriver(conf, launch["topology_id"], int(launch["generation"]), backend)
        reason = driver.run(stop)
        _log(launch["topology_id"], f"driver ended: {reason}")
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
