"""Entry point of a LocalCluster worker process: ``python -m topology.deploy.local.worker_main``.

Reads from stdin one JSON line (sys.path, control endpoint, identity, parent pid, the
simulated time to start at when the cluster simulates time) and then
the cloudpickled :class:`~topology.runtime.settings.WorkerSetup`; runs the worker; exits
when told to stop, or at once when the parent process disappears (so workers never outlive
a test).
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

import zmq

from topology.errors import ConfigError
from topology.logs import configure_logging
from topology.runtime.cluster_client import take_all
from topology.runtime.net.curve import CurveKeys
from topology.runtime.net.data_token import Peer, peers_from
from topology.runtime.net.transport import ControlClient
from topology.runtime.worker import Worker
from topology.stats.carry import Lumps, newest

from ..shipping import adopt_module_paths
from .startup_stderr import restore_stderr

#: A status request waits this long for the executor before the control thread answers
#: it from the last status (the executor is inside user code that does not return).
STUCK_ANSWER_SECS = 1.0
#: Longest the control thread sleeps between looks at unanswered status requests (seconds);
#: messages in either direction wake it at once.
CONTROL_POLL_SECS = 0.1


class LocalClusterClient:
    """The worker side of LocalCluster's control channel.

    Once registered, a thread of its own owns the socket: commands go into a queue the
    executor polls, messages from the executor go out through another; so a status request
    is answered even while user code holds the executor (from the last status, marked
    ``stale``, with where the executor is stuck), and nothing the executor sends waits.
    """

    def __init__(
        self,
        endpoint: str,
        identity: str,
        curve: CurveKeys | None = None,
        carried: dict[str, Any] | None = None,
    ) -> None:
        self._control = ControlClient(endpoint, identity, curve)
        # the executor waits on ``socket``: the control thread rings it when commands come
        wake_endpoint = f"inproc://control-wake-{id(self):x}"
        self.socket: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PAIR)
        self.socket.bind(wake_endpoint)
        self._bell: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PAIR)
        self._bell.connect(wake_endpoint)
        # ... and the executor rings the control thread when it has something to send
        out_endpoint = f"inproc://control-out-{id(self):x}"
        self._out_rx: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PAIR)
        self._out_rx.bind(out_endpoint)
        self._out_tx: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PAIR)
        self._out_tx.connect(out_endpoint)
        self._answered: deque[Any] = deque(maxlen=64)  # status requests answered
        self._commands: queue.Queue[dict[str, Any]] = queue.Queue()
        self._outbound: queue.Queue[dict[str, Any]] = queue.Queue()
        self._carried = carried or {}
        self._last_status: dict[str, Any] | None = None
        self._progress: Callable[[], tuple[float, str | None]] | None = None
        self._answerers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def register(self, worker_index: int, endpoint: str, info: dict[str, Any]) -> dict[int, Peer]:
        """Send the endpoint and ``info`` (its data token too: the control channel is only
        this worker's and its cluster's) and wait for ``start``, which names every peer."""
        self._control.send(
            {"type": "register", "worker": worker_index, "endpoint": endpoint, **info}
        )
        while True:
            message = self._control.recv(timeout_ms=1000)
            if message is None:
                continue
            if message.get("cmd") == "start":
                self._thread = threading.Thread(target=self._serve, name="control", daemon=True)
                self._thread.start()
                return peers_from(message["endpoints"], message.get("tokens") or {})
            self._commands.put(message)

    def bind_progress(self, progress: Callable[[], tuple[float, str | None]]) -> None:
        """Where the control thread reads the executor's progress (``Executor.progress``)."""
        self._progress = progress

    def bind_answerer(self, cmd: str, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Who answers ``cmd`` requests (``log``, ``log_level``): the control thread calls
        it, so a worker's log can be read and its level changed while user code holds its
        executor (when they are needed most)."""
        self._answerers[cmd] = answer

    def poll_commands(self) -> list[dict[str, Any]]:
        try:
            while True:
                self.socket.recv(zmq.NOBLOCK)  # the rings that woke the executor
        except zmq.Again:
            pass
        return take_all(self._commands)

    def send(self, message: dict[str, Any]) -> None:
        if message.get("type") == "status":
            self._last_status = message
            self._answered.append(message.get("req"))
        if self._thread is None:  # before registration, or after the thread ended
            self._control.send(message)
        else:
            self._outbound.put(message)
            try:
                self._out_tx.send(b"", zmq.NOBLOCK)
            except zmq.Again:  # rung often enough already
                pass

    def carried_stats(self) -> dict[str, Lumps]:
        """What this worker's tasks did before it was relaunched (saved by the parent)."""
        return newest([self._carried])

    def publish_stats(self, status: dict[str, Any]) -> None:
        """Every stats interval: the parent saves the windows (a relaunch carries them)."""
        self._last_status = status
        self.send({"type": "stats", **status})

    def save_stats(self, status: dict[str, Any]) -> None:
        """Between two publications: the parent saves the windows (one message, cheap)."""
        self.publish_stats(status)

    def close(self) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        self._flush()
        self._control.close()
        for s in (self._bell, self.socket, self._out_tx, self._out_rx):
            s.close(linger=0)

    # -- the control thread ------------------------------------------------------------

    def _serve(self) -> None:
        waiting: list[tuple[float, dict[str, Any]]] = []  # status requests not answered
        poller = zmq.Poller()
        poller.register(self._control.socket, zmq.POLLIN)
        poller.register(self._out_rx, zmq.POLLIN)
        while not self._closed.is_set():
            poller.poll(int(CONTROL_POLL_SECS * 1000))
            try:
                while True:
                    self._out_rx.recv(zmq.NOBLOCK)
            except zmq.Again:
                pass
            self._flush()
            message = self._control.recv_nowait()
            if message is not None:
                try:
                    self._bell.send(b"", zmq.NOBLOCK)
                except zmq.Again:  # rung often enough already: the executor is busy
                    pass
            while message is not None:
                cmd = message.get("cmd")
                answer = self._answerers.get(cmd) if isinstance(cmd, str) else None
                if answer is not None:
                    self._control.send({"type": cmd, "req": message.get("req"), **answer(message)})
                    message = self._control.recv_nowait()
                    continue
                self._commands.put(message)
                if message.get("cmd") == "status":
                    waiting.append((time.monotonic(), message))
                message = self._control.recv_nowait()
            waiting = self._answer_stuck(waiting)

    def _answer_stuck(
        self, waiting: list[tuple[float, dict[str, Any]]]
    ) -> list[tuple[float, dict[str, Any]]]:
        """Answer, from the last status, requests the executor has not answered within
        ``STUCK_ANSWER_SECS`` while it is inside one turn; return those still waiting."""
        if not waiting:
            return waiting
        answered = self._last_status
        stalled, busy_in = self._progress() if self._progress is not None else (0.0, None)
        still = []
        for since, request in waiting:
            req = request.get("req")
            if req in self._answered:
                continue  # the executor answered it
            if time.monotonic() - since < STUCK_ANSWER_SECS or stalled < STUCK_ANSWER_SECS:
                still.append((since, request))
            elif answered is not None:
                stale = {**answered, "type": "status", "req": req, "stale": True}
                self._control.send({**stale, "stalled_secs": stalled, "busy_in": busy_in})
        return still

    def _flush(self) -> None:
        while True:
            try:
                self._control.send(self._outbound.get_nowait())
            except queue.Empty:
                return


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)


def main() -> int:
    restore_stderr()  # our code runs: write to the parent's stderr from now on
    configure_logging()
    header = json.loads(sys.stdin.buffer.readline())
    adopt_module_paths(header["module_paths"])
    threading.Thread(target=_watch_parent, args=(header["parent_pid"],), daemon=True).start()

    import cloudpickle

    secret = bytes.fromhex(header["secret"]) if header.get("secret") else None
    curve = CurveKeys.from_secret(secret) if secret is not None else None
    client = LocalClusterClient(header["control"], header["identity"], curve, header.get("carried"))
    try:
        setup = cloudpickle.loads(sys.stdin.buffer.read())
        Worker(setup, client, simulated_time=header.get("simulated_time")).run()
    except BaseException as exc:  # report why this worker died, then die
        # a conf this host cannot honour (e.g. a refused directory) is one line; else the trace
        text = (
            str(exc) if isinstance(exc, ConfigError) else "".join(traceback.format_exception(exc))
        )
        client.send({"type": "fatal", "worker": header["worker"], "text": text.rstrip()})
        client.close()
        raise
    client.send({"type": "stopped", "worker": header["worker"]})
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
