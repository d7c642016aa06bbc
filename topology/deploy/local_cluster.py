"""LocalCluster: run topologies in real worker processes on this machine.

Each submitted topology gets ``topology.workers`` worker processes (``python -m
topology.deploy.local_worker_main``) exchanging tuples over ZeroMQ on 127.0.0.1, and a
control channel (ZeroMQ ROUTER) serviced by a background thread of this process.  No
ZooKeeper or Spark is involved; the workers are the same
:class:`~topology.runtime.worker.Worker` that runs elsewhere.

Example::

    with LocalCluster() as cluster:
        cluster.submit_topology("wc", {"topology.workers": 2}, topology)
        cluster.wait_until_drained("wc", timeout=60)
        print(cluster.status("wc"))
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any

import cloudpickle

from topology import config as cfg
from topology.assignment import Assignment, assign, task_counts
from topology.errors import SparkstormError
from topology.runtime.assembly import WorkerSetup
from topology.runtime.transport import ControlClient, ControlServer
from topology.spec import Topology, describe_components
from topology.stats.status_report import build_report

from .drain import wait_until_drained

ERRORS_KEPT = 10
#: Seconds before a control request is sent again to workers that have not answered.
RESEND_SECS = 1.0


class ClusterError(SparkstormError):
    """A LocalCluster operation failed (worker crashed, timeout, unknown topology)."""


class LocalClusterClient:
    """The worker side of LocalCluster's control channel."""

    def __init__(self, endpoint: str, identity: str) -> None:
        self._control = ControlClient(endpoint, identity)
        self.socket = self._control.socket
        self._early: list[dict[str, Any]] = []

    def register(self, worker_index: int, endpoint: str, info: dict[str, Any]) -> dict[int, str]:
        self._control.send(
            {"type": "register", "worker": worker_index, "endpoint": endpoint, **info}
        )
        while True:
            message = self._control.recv(timeout_ms=1000)
            if message is None:
                continue
            if message.get("cmd") == "start":
                return {int(w): ep for w, ep in message["endpoints"].items()}
            self._early.append(message)

    def poll_commands(self) -> list[dict[str, Any]]:
        commands, self._early = self._early, []
        while (message := self._control.recv_nowait()) is not None:
            commands.append(message)
        return commands

    def send(self, message: dict[str, Any]) -> None:
        self._control.send(message)

    def close(self) -> None:
        self._control.close()


class _Request:
    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.replies: dict[int, dict[str, Any]] = {}
        self.done = threading.Event()


class _RunningTopology:
    """One submitted topology: its worker processes and control-channel state."""

    def __init__(self, name: str, topology: Topology, conf: dict[str, Any]) -> None:
        self.name = name
        self.topology = topology
        self.conf = conf
        self.assignment: Assignment = assign(
            task_counts(topology, conf), conf[cfg.TOPOLOGY_WORKERS]
        )
        self.server = ControlServer()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.endpoints: dict[int, str] = {}
        self.ready: set[int] = set()
        self.stopped: set[int] = set()
        self.fatal: dict[int, str] = {}
        self.errors: dict[str, deque[dict[str, Any]]] = {}
        self.started = threading.Event()
        self.failed = threading.Event()
        self.outbox: queue.Queue[tuple[int | None, dict[str, Any]]] = queue.Queue()
        self.requests: dict[int, _Request] = {}
        self.closing = False
        self.stopping = False
        self.active = True
        self.restarting: set[int] = set()
        self.restarts: dict[int, int] = {}
        self._payloads: list[bytes] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=f"control-{name}", daemon=True)

    # -- lifecycle ----------------------------------------------------------------------

    def launch(self) -> None:
        self._payloads = [
            cloudpickle.dumps(WorkerSetup(self.name, self.topology, self.conf, self.assignment, w))
            for w in range(self.assignment.num_workers)
        ]
        self.processes = [self._spawn(w) for w in range(self.assignment.num_workers)]
        self._thread.start()

    def _spawn(self, worker: int) -> subprocess.Popen[bytes]:
        """Start the process of ``worker``; it registers itself on the control channel."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "topology.deploy.local_worker_main"], stdin=subprocess.PIPE
        )
        header = {
            "sys_path": [os.path.abspath(p) if p else os.getcwd() for p in sys.path],
            "control": self.server.endpoint,
            "identity": f"w{worker}",
            "worker": worker,
            "parent_pid": os.getpid(),
        }
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(header).encode() + b"\n" + self._payloads[worker])
        proc.stdin.close()
        return proc

    def wait_started(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.started.wait(0.05):
            if self.failed.is_set() or time.monotonic() > deadline:
                self.stop(grace=1.0)
                reason = "; ".join(self.fatal.values()) or (
                    f"not every worker became ready within {timeout:g}s "
                    f"({len(self.ready)}/{self.assignment.num_workers} ready)"
                )
                raise ClusterError(f"topology {self.name!r} failed to start: {reason}")

    def stop(self, grace: float) -> None:
        """Ask every worker to stop; kill (by pid) any still running after ``grace``."""
        self.stopping = True
        self.send_all({"cmd": "stop"})
        deadline = time.monotonic() + grace
        for proc in self.processes:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.closing = True
        self._thread.join(timeout=2.0)
        self.server.close()

    # -- control channel ----------------------------------------------------------------

    def send_all(self, message: dict[str, Any]) -> None:
        self.outbox.put((None, message))

    def request(self, cmd: str, timeout: float) -> list[dict[str, Any]]:
        """Send ``cmd`` to every worker and wait for every reply."""
        req_id = next(_request_ids)
        pending = _Request(self.assignment.num_workers)
        with self._lock:
            self.requests[req_id] = pending
        message = {"cmd": cmd, "req": req_id}
        self.send_all(message)
        deadline = time.monotonic() + timeout
        # A worker that was being relaunched missed the message: ask the silent ones again.
        while not pending.done.wait(min(RESEND_SECS, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                break
            for w in range(pending.expected):
                if w not in pending.replies:
                    self.outbox.put((w, message))
        with self._lock:
            self.requests.pop(req_id, None)
        if not pending.done.is_set():
            raise ClusterError(
                f"topology {self.name!r}: {len(pending.replies)}/{pending.expected} workers "
                f"answered {cmd!r} within {timeout:g}s{self._dead_workers()}"
            )
        return [pending.replies[w] for w in sorted(pending.replies)]

    def _dead_workers(self) -> str:
        dead = [
            f"worker {w} exited with code {p.returncode}"
            for w, p in enumerate(self.processes)
            if p.poll() is not None
        ]
        return f" ({'; '.join(dead)})" if dead else ""

    def _serve(self) -> None:
        while not self.closing:
            got = self.server.recv(timeout_ms=5)
            if got is not None:
                self._handle(*got)
            while True:
                try:
                    target, message = self.outbox.get_nowait()
                except queue.Empty:
                    break
                for w in [target] if target is not None else range(len(self.processes)):
                    self.server.send(f"w{w}", message)
            self._check_processes()

    def _handle(self, identity: str, message: dict[str, Any]) -> None:
        kind = message.get("type")
        worker = int(message.get("worker", -1))
        if kind == "register":
            self.endpoints[worker] = message["endpoint"]
            endpoints = {str(w): ep for w, ep in self.endpoints.items()}
            if worker in self.restarting:  # a relaunched worker: peers reconnect to it
                self.restarting.discard(worker)
                self.server.send(f"w{worker}", {"cmd": "start", "endpoints": endpoints})
                for w in self.endpoints:
                    if w != worker:
                        self.server.send(f"w{w}", {"cmd": "peers", "endpoints": endpoints})
            elif len(self.endpoints) == self.assignment.num_workers:
                for w in self.endpoints:
                    self.server.send(f"w{w}", {"cmd": "start", "endpoints": endpoints})
        elif kind == "ready":
            self.ready.add(worker)
            if self.started.is_set():
                if self.active:
                    self.server.send(f"w{worker}", {"cmd": "activate"})
            elif len(self.ready) == self.assignment.num_workers:
                self.server_activate()
                self.started.set()
        elif kind == "error":
            kept = self.errors.setdefault(message["component"], deque(maxlen=ERRORS_KEPT))
            kept.append(message)
        elif kind == "fatal":
            self.fatal[worker] = f"worker {worker}: {message['text']}"
            self.failed.set()
        elif kind == "stopped":
            self.stopped.add(worker)
        elif kind in ("status", "collect"):
            with self._lock:
                pending = self.requests.get(int(message.get("req", -1)))
            if pending is not None:
                pending.replies[worker] = message
                if len(pending.replies) >= pending.expected:
                    pending.done.set()

    def deactivate_all(self) -> None:
        self.active = False
        self.send_all({"cmd": "deactivate"})

    def server_activate(self) -> None:
        for w in range(self.assignment.num_workers):
            self.server.send(f"w{w}", {"cmd": "activate"})

    def _check_processes(self) -> None:
        """Relaunch a worker that died after the topology started; fail the start otherwise."""
        for w, proc in enumerate(self.processes):
            code = proc.poll()
            if code is None or w in self.stopped or self.stopping:
                continue
            text = f"worker {w} (pid {proc.pid}) exited with code {code}"
            if not self.started.is_set():
                if w not in self.fatal:
                    self.fatal[w] = text
                    self.failed.set()
                continue
            self.restarts[w] = self.restarts.get(w, 0) + 1
            kept = self.errors.setdefault("__worker", deque(maxlen=ERRORS_KEPT))
            kept.append(
                {
                    "component": "__worker",
                    "worker": w,
                    "time": time.time(),
                    "text": f"{text}; relaunching (restart {self.restarts[w]})",
                }
            )
            self.ready.discard(w)
            self.restarting.add(w)
            self.processes[w] = self._spawn(w)


_request_ids = itertools.count(1)


class LocalCluster:
    """Runs topologies in local worker processes; use as a context manager.

    ``conf`` is a base configuration merged under each submitted topology's own conf.
    """

    def __init__(self, conf: dict[str, Any] | None = None) -> None:
        self._base_conf = dict(conf or {})
        self._topologies: dict[str, _RunningTopology] = {}
        atexit.register(self.shutdown)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def submit_topology(self, name: str, conf: dict[str, Any] | None, topology: Topology) -> None:
        """Start ``topology`` under ``name``; return once every worker runs its tasks."""
        if not isinstance(topology, Topology):
            raise TypeError(
                f"submit_topology({name!r}): expected a Topology from create_topology(), got "
                f"{type(topology).__name__}"
            )
        if name in self._topologies:
            raise ClusterError(f"a topology named {name!r} is already running")
        merged = cfg.resolve(
            {**self._base_conf, **(conf or {}), cfg.TOPOLOGY_NAME: name}, where=f"topology {name!r}"
        )
        for component in topology.components.values():
            cfg.component_conf(merged, component.id, component.conf)
        running = _RunningTopology(name, topology, merged)
        self._topologies[name] = running
        try:
            running.launch()
            running.wait_started(merged[cfg.WORKER_START_TIMEOUT_SECS])
        except BaseException:
            self._topologies.pop(name, None)
            raise

    def _get(self, name: str) -> _RunningTopology:
        try:
            return self._topologies[name]
        except KeyError:
            known = ", ".join(sorted(self._topologies)) or "none"
            raise ClusterError(f"no topology named {name!r} (running: {known})") from None

    def activate(self, name: str) -> None:
        """Resume ``next_tuple`` on every spout of ``name``."""
        running = self._get(name)
        running.active = True
        running.send_all({"cmd": "activate"})

    def deactivate(self, name: str) -> None:
        """Stop calling ``next_tuple`` on the spouts of ``name`` (bolts keep draining)."""
        running = self._get(name)
        running.active = False
        running.send_all({"cmd": "deactivate"})

    def restarts(self, name: str) -> dict[int, int]:
        """How often each worker of ``name`` was relaunched after dying."""
        return dict(self._get(name).restarts)

    def worker_pids(self, name: str) -> list[int]:
        """Process ids of the topology's workers, by worker index."""
        return [p.pid for p in self._get(name).processes]

    def assignment(self, name: str) -> Assignment:
        return self._get(name).assignment

    def errors(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """Last reported errors per component (time, task, host, text)."""
        return {c: list(e) for c, e in self._get(name).errors.items()}

    def worker_status(self, name: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Every worker's counters (see ``Worker.status``)."""
        return self._get(name).request("status", timeout)

    def stats(self, name: str, window: str = "10m") -> dict[str, Any]:
        """The topology's status report (see :mod:`topology.status_report` for the schema)."""
        running = self._get(name)
        replies = running.request("status", timeout=10.0)
        summary = {
            "name": name,
            "id": name,
            "status": "ACTIVE" if running.active else "INACTIVE",
            "uptime_secs": max((r["uptime_secs"] for r in replies), default=0.0),
            "workers": running.assignment.num_workers,
            "workers_alive": sum(1 for p in running.processes if p.poll() is None),
            "tasks": sum(len(t) for t in running.assignment.worker_tasks),
        }
        beats = {
            r["worker"]: {"pid": r["pid"], "beat_at": r["time"], "stats_at": r["time"]}
            for r in replies
        }
        return build_report(
            summary,
            describe_components(running.topology),
            replies,
            beats,
            self.errors(name),
            window,
        )

    def results(self, name: str, timeout: float = 10.0) -> dict[str, dict[int, Any]]:
        """``collect_results()`` of testing components: component -> task -> result."""
        merged: dict[str, dict[int, Any]] = {}
        for reply in self._get(name).request("collect", timeout):
            for component, by_task in reply["results"].items():
                merged.setdefault(component, {}).update({int(t): r for t, r in by_task.items()})
        return merged

    def wait_until_drained(self, name: str, timeout: float = 60.0, interval: float = 0.05) -> None:
        """Block until spouts stopped emitting and no tuple is queued or in flight.

        Quiescence is detected with two consecutive identical snapshots of every worker's
        counters in which every transferred tuple has been executed and nothing is buffered
        or pending.  After a worker restart (whose lost tuples never balance the counters)
        five identical snapshots with nothing buffered or pending are required instead.
        Raises :class:`ClusterError` after ``timeout`` seconds or when a worker dies.
        """
        running = self._get(name)

        def check() -> None:
            if running.failed.is_set():
                raise ClusterError(f"topology {name!r}: {'; '.join(running.fatal.values())}")

        try:
            wait_until_drained(
                lambda: running.request("status", timeout=10.0),
                lambda: not running.restarts,
                check,
                timeout,
                interval,
                f"topology {name!r}",
            )
        except TimeoutError as exc:
            raise ClusterError(str(exc)) from None

    def kill_topology(self, name: str, wait_secs: float = 0.0) -> None:
        """Deactivate, wait ``wait_secs``, then stop every worker of ``name``."""
        running = self._get(name)
        running.deactivate_all()
        if wait_secs > 0:
            time.sleep(wait_secs)
        running.stop(grace=running.conf[cfg.WORKER_SHUTDOWN_SECS])
        del self._topologies[name]

    def topologies(self) -> list[str]:
        return sorted(self._topologies)

    def shutdown(self) -> None:
        """Kill every topology; safe to call twice."""
        for name in list(self._topologies):
            try:
                self.kill_topology(name)
            except Exception:  # shutting down anyway: make sure processes are gone
                running = self._topologies.pop(name, None)
                if running is not None:
                    for proc in running.processes:
                        if proc.poll() is None:
                            proc.kill()
