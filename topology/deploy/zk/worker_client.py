"""The worker's line to the cluster through ZooKeeper (workers hosted by Spark tasks).

Implements the :class:`~topology.worker.ClusterClient` protocol:

* ``register`` creates the worker's ephemeral heartbeat (endpoint, host, pid, Spark task)
  and waits until every worker of the same assignment attempt has one;
* ZooKeeper watches turn changes into commands: the topology's status (ACTIVE / INACTIVE /
  KILLED) into ``activate`` / ``deactivate``; a new assignment attempt or a removed
  assignment into ``stop``; a peer's changed endpoint into ``peers``; a request written to
  the topology's record (``{"id": n, "cmd": "status" | "collect"}``) into that command;
* ``send`` stores errors under ``/errors`` and replies to requests in the heartbeat.

The kazoo session runs its own thread, so the ephemeral heartbeat stays alive while user
code runs long.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from typing import Any

from .state import ZkState


class WorkerStartError(RuntimeError):
    """Peers did not all register in time."""


class ZkClusterClient:
    """ClusterClient for worker ``worker`` of attempt ``attempt`` of ``topology_id``."""

    socket = None  # nothing for the executor to poll: commands arrive through watches

    def __init__(
        self,
        zk: ZkState,
        topology_id: str,
        worker: int,
        attempt: int,
        start_timeout: float,
        task_info: dict[str, Any] | None = None,
        heartbeat_secs: float = 5.0,
    ) -> None:
        self.zk = zk
        self.topology_id = topology_id
        self.worker = worker
        self.attempt = attempt
        self.start_timeout = start_timeout
        self._commands: queue.Queue[dict[str, Any]] = queue.Queue()
        self._beat: dict[str, Any] = {
            "worker": worker,
            "attempt": attempt,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": time.time(),
            **(task_info or {}),
        }
        self._endpoints: dict[int, str] = {}
        self._heartbeat_secs = heartbeat_secs
        self._beat_lock = threading.Lock()
        self._closed = threading.Event()
        self._status: str | None = None
        self._request_id: int | None = None

    # -- ClusterClient ---------------------------------------------------------------------

    def register(self, worker_index: int, endpoint: str, info: dict[str, Any]) -> dict[int, str]:
        self._beat.update(info, endpoint=endpoint, beat_at=time.time())
        self.zk.register_worker(self.topology_id, self.worker, self._beat)
        assignment = self.zk.read_assignment(self.topology_id)
        expected = assignment["workers"] if assignment else 0
        deadline = time.monotonic() + self.start_timeout
        while True:
            beats = self._current_beats()
            if len(beats) >= expected:
                break
            if time.monotonic() > deadline:
                raise WorkerStartError(
                    f"worker {self.worker}: only {len(beats)}/{expected} workers of attempt "
                    f"{self.attempt} registered within {self.start_timeout:g}s"
                )
            time.sleep(0.05)
        self._endpoints = {w: b["endpoint"] for w, b in beats.items()}
        self.zk.client.DataWatch(self.zk.paths.storm(self.topology_id), self._on_record)
        self.zk.client.DataWatch(self.zk.paths.assignment(self.topology_id), self._on_assignment)
        self.zk.client.ChildrenWatch(
            self.zk.paths.workerbeats(self.topology_id), self._on_beats, send_event=False
        )
        threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True).start()
        return dict(self._endpoints)

    def _heartbeat(self) -> None:
        """Refresh ``beat_at`` even while user code keeps the executor busy."""
        while not self._closed.wait(self._heartbeat_secs):
            try:
                self._write_beat()
            except Exception:  # ZooKeeper away: the session itself decides liveness
                continue

    def _write_beat(self, **changes: Any) -> None:
        with self._beat_lock:
            self._beat.update(changes, beat_at=time.time())
            self.zk.beat(self.topology_id, self.worker, self._beat)

    def publish_stats(self, status: dict[str, Any]) -> None:
        """Put this worker's counters and stats windows in its heartbeat."""
        self._write_beat(stats=status, stats_at=time.time())

    def poll_commands(self) -> list[dict[str, Any]]:
        commands = []
        while True:
            try:
                commands.append(self._commands.get_nowait())
            except queue.Empty:
                return commands

    def send(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "error":
            self.zk.report_error(self.topology_id, message["component"], message)
        elif kind == "ready":
            self._write_beat(ready=True, ready_at=time.time())
        elif kind in ("status", "collect"):
            self._write_beat(reply=message)
        elif kind == "stopped":
            pass

    # -- watches (kazoo's thread) ----------------------------------------------------------

    def _current_beats(self) -> dict[int, dict[str, Any]]:
        beats = self.zk.heartbeats(self.topology_id, attempt=self.attempt)
        return {w: b for w, b in beats.items() if "endpoint" in b}

    def _on_record(self, data: bytes | None, stat: Any) -> None:
        try:
            self._record_changed(data)
        except Exception:  # ZooKeeper going away during shutdown: nothing left to obey
            return

    def _record_changed(self, data: bytes | None) -> None:
        if data is None:
            self._commands.put({"cmd": "stop"})
            return
        record = self.zk.read_record(self.topology_id) or {}
        status = record.get("status")
        if status != self._status:
            self._status = status
            self._commands.put({"cmd": "activate" if status == "ACTIVE" else "deactivate"})
        request = record.get("request")
        if request and request.get("id") != self._request_id:
            self._request_id = request["id"]
            self._commands.put({"cmd": request["cmd"], "req": request["id"]})

    def _on_assignment(self, data: bytes | None, stat: Any) -> None:
        try:
            assignment = self.zk.read_assignment(self.topology_id) if data is not None else None
        except Exception:  # ZooKeeper going away: stop rather than run unsupervised
            assignment = None
        if assignment is None or assignment.get("attempt") != self.attempt:
            self._commands.put({"cmd": "stop"})
            return False  # type: ignore[return-value]  # ends the watch
        return None

    def _on_beats(self, children: list[str]) -> None:
        try:
            beats = self._current_beats()
        except Exception:  # ZooKeeper going away during shutdown
            return
        endpoints = {w: b["endpoint"] for w, b in beats.items()}
        changed = {w: ep for w, ep in endpoints.items() if self._endpoints.get(w) != ep}
        if changed:
            self._endpoints.update(changed)
            self._commands.put(
                {"cmd": "peers", "endpoints": {str(w): ep for w, ep in self._endpoints.items()}}
            )

    def stop_heartbeat(self) -> None:
        self._closed.set()

    def close(self) -> None:
        self.stop_heartbeat()
        self.zk.close()
