"""One topology on a LocalCluster: its worker processes and their control channel.

A :class:`LocalTopology` spawns ``topology.workers`` processes (``python -m
topology.deploy.local.worker_main``), serves their control channel (a ZeroMQ ROUTER) from a
background thread, sends them commands and collects their replies.  Worker deaths are
handed to the supervision planner (:func:`topology.deploy.worker_plan.supervise`), which
decides between relaunching the worker (with backoff) and failing the start.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any

from topology import config as cfg
from topology.assignment import Assignment, assign, task_counts, to_json
from topology.constants import WORKER_COMPONENT
from topology.errors import SparkstormError
from topology.runtime.net.curve import CurveKeys
from topology.runtime.net.data_token import parse_token, peer_fields
from topology.runtime.net.transport import ControlServer
from topology.runtime.settings import WorkerSetup
from topology.spec import Topology, describe_components
from topology.state.backends import remove_state
from topology.stats.carry import Lumps, newest, save_reply, stand_ins

from ..error_log import ERRORS_KEPT, worker_error_entry
from ..shipping import child_env, dumps, module_paths, topology_objects
from ..worker_plan import (
    AttemptView,
    FailTopology,
    KillWorker,
    Launch,
    ReportWorker,
    WorkerAction,
    WorkerHistory,
    WorkerView,
    fails_start,
    restart_policy,
    supervise,
)
from .control_requests import ControlRequests
from .startup_stderr import StartupStderr

#: How long a worker process found exited (not killed by a signal) may take for its last
#: words — the error that ended it — to arrive on the control channel (milliseconds).
LAST_WORDS_MS = 200
#: Traceback lines of a worker's fatal error kept as the reason it died.
REASON_LINES = 12


class ClusterError(SparkstormError):
    """A LocalCluster operation failed (worker crashed, timeout, unknown topology).

    Example:
        >>> from topology import LocalCluster
        >>> with LocalCluster() as cluster:
        ...     cluster.kill_topology("wc")
        Traceback (most recent call last):
        ...
        topology.deploy.local.topology.ClusterError: no topology named 'wc' (running: none)
    """


class LocalTopology:
    """One submitted topology: its worker processes and control-channel state.

    ``simulated_time``: the workers' simulated clock starts at this reading (None: real
    time); :meth:`advance_time` moves it.
    """

    def __init__(
        self,
        name: str,
        topology: Topology,
        conf: dict[str, Any],
        simulated_time: float | None = None,
    ) -> None:
        self.name = name
        #: The simulated time the workers are at (a relaunched worker starts there), or None.
        self.simulated_time = simulated_time
        self.topology = topology
        self.secret = cfg.cluster_secret(conf)  # to the workers apart, never in their conf
        self.conf = cfg.without_credentials(conf)
        self.assignment: Assignment = assign(
            task_counts(topology, conf), conf[cfg.TOPOLOGY_WORKERS]
        )
        curve = CurveKeys.from_secret(self.secret) if self.secret is not None else None
        self.server = ControlServer(curve=curve)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.endpoints: dict[int, str] = {}
        #: Worker -> the data token its current process registered with its endpoint.
        self.tokens: dict[int, bytes] = {}
        self.ready: set[int] = set()
        self.stopped: set[int] = set()
        self.fatal: dict[int, str] = {}
        #: Worker -> the error its current process reported before dying (it had been
        #: running: it is relaunched, and this is why it died).
        self.died_of: dict[int, str] = {}
        self.errors: dict[str, deque[dict[str, Any]]] = {}
        #: Worker -> the stats windows of its tasks as last reported (a relaunch carries them).
        self.carried: dict[int, dict[str, Lumps]] = {}
        self.started = threading.Event()
        self.failed = threading.Event()
        self.outbox: queue.Queue[tuple[int | None, dict[str, Any]]] = queue.Queue()
        self.requests = ControlRequests()  # waiting for the workers' replies
        self.closing = False
        self.stopping = False
        self.active = True
        self.restarting: set[int] = set()
        #: Pids of ended worker processes the other workers were told about ("lost").
        self.lost_pids: set[int] = set()
        self.identities: dict[int, str] = {}
        self.module_paths = module_paths(topology_objects(topology))
        #: Checkpoints of this submission only (removed when it is killed).
        self.state_id = f"{name}-{secrets.token_hex(6)}"
        self.history = WorkerHistory(
            attempt=1, launched=frozenset(range(self.assignment.num_workers))
        )
        self._policy = restart_policy(conf)
        self._payloads: list[bytes] = []
        #: Worker -> what its current process wrote to stderr before its code ran.
        self._startup: dict[int, StartupStderr] = {}
        self._thread = threading.Thread(target=self._serve, name=f"control-{name}", daemon=True)

    # -- lifecycle ----------------------------------------------------------------------

    def launch(self) -> None:
        self._payloads = [
            dumps(
                WorkerSetup(
                    self.name,
                    self.topology,
                    self.conf,
                    self.assignment,
                    w,
                    secret=self.secret,
                    state_id=self.state_id,
                )
            )
            for w in range(self.assignment.num_workers)
        ]
        self.processes = [self._spawn(w) for w in range(self.assignment.num_workers)]
        self._thread.start()

    def _spawn(self, worker: int) -> subprocess.Popen[bytes]:
        """Start the process of ``worker``; it registers itself on the control channel."""
        previous = self._startup.pop(worker, None)
        if previous is not None:
            previous.close()
        self.died_of.pop(worker, None)
        startup = self._startup[worker] = StartupStderr()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "topology.deploy.local.worker_main"],
                stdin=subprocess.PIPE,
                **startup.popen_kwargs(child_env()),
            )
        finally:
            startup.spawned()
        header = {
            "module_paths": self.module_paths,
            "control": self.server.endpoint,
            "identity": self._new_identity(worker),
            "worker": worker,
            "parent_pid": os.getpid(),
            "secret": self.secret.hex() if self.secret is not None else None,
            "carried": self.carried.get(worker),  # a relaunch: the stats of its tasks so far
            "simulated_time": self.simulated_time,
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
        for startup in self._startup.values():
            startup.close()
        remove_state(self.conf, self.state_id)

    # -- control channel ----------------------------------------------------------------

    def send_all(self, message: dict[str, Any]) -> None:
        self.outbox.put((None, message))

    def request(self, cmd: str, timeout: float, **fields: Any) -> list[dict[str, Any]]:
        """Send ``cmd`` (with ``fields``) to every worker and wait for every reply."""
        expected = self.assignment.num_workers
        done, replies = self.requests.ask(cmd, fields, expected, timeout, self.outbox.put)
        if not done:
            raise ClusterError(
                f"topology {self.name!r}: {len(replies)}/{expected} workers "
                f"answered {cmd!r} within {timeout:g}s{self._dead_workers()}"
            )
        return [replies[w] for w in sorted(replies)]

    def status_or_carried(self, timeout: float) -> list[dict[str, Any]]:
        """Every worker's status reply; a worker that does not answer within ``timeout``
        (dead, or relaunched and not ready yet) is counted as what it carries
        (:func:`topology.stats.carry.stand_ins`)."""
        expected = self.assignment.num_workers
        _, replies = self.requests.ask("status", {}, expected, timeout, self.outbox.put)
        missing = set(range(expected)) - set(replies)
        if missing:
            assignment = to_json(self.assignment, 1)
            components = describe_components(self.topology)
            carried = newest(list(self.carried.values()))
            replies |= stand_ins(assignment, components, carried, missing, time.time())
        return [replies[w] for w in sorted(replies)]

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
                self._receive(got)
            while True:
                try:
                    target, message = self.outbox.get_nowait()
                except queue.Empty:
                    break
                for w in [target] if target is not None else range(len(self.processes)):
                    self._send_to(w, message)
            self._check_processes()

    def _receive(self, got: tuple[str, dict[str, Any]]) -> None:
        try:
            self._accept(*got)
        except Exception:  # a message of the wrong shape: nothing of ours sent it
            self.server.dropped += 1

    def _receive_last_words(self, wait_ms: int) -> None:
        """Take in what is already on its way (a worker that ended of an error sent it
        before exiting), waiting at most ``wait_ms`` for the first message."""
        got = self.server.recv(timeout_ms=wait_ms)
        while got is not None:
            self._receive(got)
            got = self.server.recv(timeout_ms=0)

    def _new_identity(self, worker: int) -> str:
        """A fresh, unguessable control identity for ``worker``'s next process: only that
        process learns it (through its stdin), so nobody else can speak or listen for it."""
        identity = f"w{worker}-{secrets.token_hex(16)}"
        self.identities[worker] = identity
        return identity

    def _send_to(self, worker: int, message: dict[str, Any]) -> None:
        identity = self.identities.get(worker)
        if identity is not None:
            self.server.send(identity, message)

    def _accept(self, identity: str, message: dict[str, Any]) -> None:
        """Hand on a message only from one of this topology's workers, about itself."""
        worker = message.get("worker")
        if type(worker) is not int or identity != self.identities.get(worker):
            self.server.dropped += 1
            return
        if not 0 <= worker < self.assignment.num_workers:
            self.server.dropped += 1
            return
        self._handle(identity, message)

    def _handle(self, identity: str, message: dict[str, Any]) -> None:
        kind = message.get("type")
        worker = int(message.get("worker", -1))
        if kind == "register":
            self.endpoints[worker] = message["endpoint"]
            token = parse_token(message.get("token"))
            if token is None:  # (not from our worker code) peers never send to it
                self.tokens.pop(worker, None)
            else:
                self.tokens[worker] = token
            peers = peer_fields(self.endpoints, self.tokens)
            if worker in self.restarting:  # a relaunched worker: peers reconnect to it
                self.restarting.discard(worker)
                self._send_to(worker, {"cmd": "start", **peers})
                for w in self.endpoints:
                    if w != worker:
                        self._send_to(w, {"cmd": "peers", **peers})
            elif len(self.endpoints) == self.assignment.num_workers:
                for w in self.endpoints:
                    self._send_to(w, {"cmd": "start", **peers})
        elif kind == "ready":
            self.ready.add(worker)
            if self.started.is_set():
                if self.active:
                    self._send_to(worker, {"cmd": "activate"})
            elif len(self.ready) == self.assignment.num_workers:
                self.server_activate()
                self.started.set()
        elif kind == "error":
            kept = self.errors.setdefault(message["component"], deque(maxlen=ERRORS_KEPT))
            kept.append(message)
        elif kind == "fatal":
            text = str(message.get("text", ""))
            if fails_start(worker, worker in self.ready, self.history):
                self.fatal[worker] = f"worker {worker}: {text}"
                self.failed.set()
            else:  # it had been running: relaunched once its process is gone
                self.died_of[worker] = text
        elif kind == "stopped":
            self.stopped.add(worker)
        if kind in ("stats", "status"):  # periodic or asked for: what a relaunch carries on
            self.carried[worker] = save_reply(message)
        if kind in ("status", "collect", "time", "log", "log_level"):
            self.requests.reply(worker, message)

    def advance_time(self, to: float, timeout: float) -> None:
        """Move every worker's simulated clock to ``to``; return once each has run its
        timers there (a relaunched worker starts there)."""
        if self.simulated_time is None:
            raise ClusterError(f"topology {self.name!r} does not run on simulated time")
        self.simulated_time = max(self.simulated_time, to)
        self.request("time", timeout, to=to)

    def deactivate_all(self) -> None:
        self.active = False
        self.send_all({"cmd": "deactivate"})

    def server_activate(self) -> None:
        for w in range(self.assignment.num_workers):
            self._send_to(w, {"cmd": "activate"})

    def _check_processes(self) -> None:
        """Hand ended worker processes to the planner: relaunch (with backoff), or fail the
        start."""
        if self.stopping or self.failed.is_set():
            return
        codes = [proc.poll() for proc in self.processes]
        ended = [code is not None and w not in self.stopped for w, code in enumerate(codes)]
        exited = [  # newly found ended by themselves (not by a signal): an error, perhaps
            w
            for w, code in enumerate(codes)
            if ended[w] and code is not None and code >= 0
            if self.processes[w].pid not in self.lost_pids and w not in self.died_of
        ]
        if exited:
            self._receive_last_words(LAST_WORDS_MS)
            if self.failed.is_set():  # one had never been ready: the start failed
                return
        for w, dead in enumerate(ended):
            pid = self.processes[w].pid
            if dead and pid not in self.lost_pids:  # tell the others at once (see Worker)
                self.lost_pids.add(pid)
                # its token dies with it: a ``peers`` sent before its successor registers
                # must not name it, or its peers would send to the dead process again
                self.tokens.pop(w, None)
                for other in range(len(self.processes)):
                    if other != w:
                        self._send_to(other, {"cmd": "lost", "worker": w})
        if not any(ended) and not self.history.pending:
            return
        views = {
            w: WorkerView(
                alive=not ended[w],
                ready=w in self.ready,
                launched=True,
                ended=ended[w],
                error=self._exit_reason(w, code),
            )
            for w, code in enumerate(codes)
        }
        view = AttemptView(self.name, 1, self.assignment.num_workers, views)
        result = supervise(view, self.history, self._policy, time.time())
        self.history = result.history
        for action in result.actions:
            self._carry_out(action)

    def _exit_reason(self, worker: int, code: int | None) -> str | None:
        """How worker ``worker``'s process ended: with the error it reported, or for one
        that never became ready the last line it wrote before its own code ran (e.g. an
        import error)."""
        if code is None:
            return None
        startup = self._startup.get(worker)
        line = startup.last_line() if worker not in self.ready and startup is not None else None
        return exit_reason(self.processes[worker].pid, code, self.died_of.get(worker), line)

    def _carry_out(self, action: WorkerAction) -> None:
        if isinstance(action, Launch):
            self.ready.discard(action.worker)
            self.restarting.add(action.worker)
            self.processes[action.worker] = self._spawn(action.worker)
        elif isinstance(action, ReportWorker):
            kept = self.errors.setdefault(WORKER_COMPONENT, deque(maxlen=ERRORS_KEPT))
            kept.append(worker_error_entry(action.worker, action.text))
        elif isinstance(action, FailTopology):
            self.fatal.setdefault(-1, action.error)
            self.failed.set()
        elif isinstance(action, KillWorker):
            self.processes[action.worker].kill()

    def restarts(self) -> dict[int, int]:
        """How often each worker was relaunched after dying."""
        return {worker: len(times) for worker, times in self.history.restarts.items()}


def exit_reason(pid: int, code: int, error: str | None, startup_line: str | None) -> str:
    """Why a worker process ended, as ``status`` shows it (its last line is the cause):
    ``pid 7 killed by SIGKILL``; ``pid 7 exited with code 1: ValueError: bad`` followed by
    the end of the traceback the worker reported (``error``); or, for a process that died
    before its code ran, with the last line it wrote (``startup_line``)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"pid {pid} killed by {name}"
    text = f"pid {pid} exited with code {code}"
    lines = (error or "").strip().splitlines()
    if lines:
        return f"{text}: {lines[-1]}\n" + "\n".join(lines[-REASON_LINES:])
    return f"{text}: {startup_line}" if startup_line else text
