"""The worker's line to the cluster through ZooKeeper (workers hosted by Spark tasks).

Implements the :class:`~topology.runtime.cluster_client.ClusterClient` protocol:

* ``register`` creates the worker's ephemeral heartbeat (endpoint and data token, host,
  pid, Spark task) and waits until every worker of the same assignment attempt has one;
  the heartbeat is where peers learn the token, so it must be readable by the owner's
  identity only (:mod:`topology.runtime.net.data_token`);
* ZooKeeper watches turn changes into commands: the topology's status (ACTIVE / INACTIVE /
  KILLED) into ``activate`` / ``deactivate``; a new assignment attempt or a removed
  assignment into ``stop``; a peer's changed endpoint or token into ``peers``, a vanished
  peer into ``lost``; a request written to
  the topology's record (``{"id": n, "cmd": ...}``, checked by :mod:`.requests`) into that
  command (one with a bound answerer, ``log`` or ``log_level``, is answered on the watch
  thread itself);
* ``send`` and ``publish_stats`` only hand data over: errors, replies, readiness and
  stats reach ZooKeeper from a writer thread of this client.

**The data plane never waits on ZooKeeper.**  The executor thread calls ``poll_commands``,
``send`` and ``publish_stats``, none of which touches kazoo: errors go through a bounded
queue (when it is full they are dropped and counted) written at most once a second, never
with a heartbeat write of their own; stats replace the previous ones not yet written, and
a reply the previous reply *to the same command* (the heartbeat's ``replies`` hold the
latest of each, written at once).  The writer thread also refreshes the heartbeat every
``heartbeat_secs`` (so it stays fresh while user code runs long) with the executor's
progress; when ZooKeeper is away it keeps what it could not write and tries again.  When a
session expires and a new one starts, the writer re-creates the ephemeral heartbeat.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from topology.runtime.cluster_client import take_all
from topology.runtime.net.data_token import Peer, parse_token, peer_fields
from topology.stats.carry import Lumps, newest, save_reply
from topology.status import TopologyStatus

from .connection import ZnodeTooLarge
from .records import check_assignment, check_record
from .requests import request_command
from .state import ZkState

#: Errors waiting for the writer thread at most; more are dropped and counted.
ERROR_QUEUE_SIZE = 200
#: Longest wait for one ZooKeeper call of the heartbeat writer (then it tries again).
WRITE_TIMEOUT_SECS = 5.0
#: Errors are written at most this often (each write keeps a component's last 10).
ERROR_WRITE_SECS = 1.0
#: Heartbeat changes written at once; anything else waits for the next beat.
URGENT_CHANGES = ("replies", "stats", "ready")
#: ... and for the last write when the worker stops.
FINAL_WRITE_TIMEOUT_SECS = 1.0
#: A reply stays in the heartbeat (beside the other commands' latest) this many seconds
#: after it was first written (the asking client polls every 50 ms and gives up after its
#: timeout); a beat over the node limit keeps only the newest reply.
REPLY_KEPT_SECS = 30.0


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
        self._errors: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=ERROR_QUEUE_SIZE)
        self.errors_dropped = 0
        self._beat: dict[str, Any] = {
            "worker": worker,
            "attempt": attempt,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": time.time(),
            **(task_info or {}),
        }
        self._changes: dict[str, Any] = {}  # beat fields not yet written
        self._lock = threading.Lock()  # guards _changes
        self._write_lock = threading.Lock()  # one heartbeat write at a time
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._peers: dict[int, Peer] = {}
        self._heartbeat_secs = heartbeat_secs
        self._status: str | None = None
        self._request_id: int | None = None
        self._progress: Callable[[], tuple[float, str | None]] | None = None
        self._answerers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self.writes_failed = 0
        self._write_timeout = WRITE_TIMEOUT_SECS
        #: Requests in the topology record that were not ours to carry out (dropped).
        self.requests_refused = 0
        #: Set once this attempt's workers are told to stop (a vanishing peer is not lost).
        self._stopping = False
        self._reply_written_at: dict[str, float] = {}  # reply type -> when last written
        self._started = False  # whether the persistent "started" mark is written
        self._carry: dict[str, Any] | None = None  # stats to save (guarded by _lock)
        self._carry_wake = threading.Event()

    # -- ClusterClient ---------------------------------------------------------------------

    def register(self, worker_index: int, endpoint: str, info: dict[str, Any]) -> dict[int, Peer]:
        """Create the heartbeat and wait for every peer of this attempt (before the data
        plane runs, so blocking on ZooKeeper here is fine)."""
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
        self._peers = _peers(beats)
        paths = self.zk.paths
        self.zk.client.DataWatch(paths.storm(self.topology_id), self._on_record)
        self.zk.client.DataWatch(paths.assignment(self.topology_id), self._on_assignment)
        self.zk.client.ChildrenWatch(
            paths.workerbeats(self.topology_id), self._on_beats, send_event=False
        )
        self.zk.on_new_session(self._wake.set)
        threading.Thread(target=self._write_loop, name="zk-writer", daemon=True).start()
        threading.Thread(target=self._carry_loop, name="zk-stats-saver", daemon=True).start()
        return dict(self._peers)

    def bind_progress(self, progress: Callable[[], tuple[float, str | None]]) -> None:
        """Where the heartbeat reads the executor's progress (``Executor.progress``)."""
        self._progress = progress

    def bind_answerer(self, cmd: str, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Who answers ``cmd`` requests (``log``, ``log_level``; called on kazoo's watch
        thread, not the executor's: a worker stuck in user code still shows its log and
        takes a new level)."""
        self._answerers[cmd] = answer

    def poll_commands(self) -> list[dict[str, Any]]:
        return take_all(self._commands)

    def send(self, message: dict[str, Any]) -> None:
        """Hand a message to the writer thread; never blocks, never raises."""
        kind = message.get("type")
        if kind == "error":
            try:
                self._errors.put_nowait(message)
            except queue.Full:
                self.errors_dropped += 1
            self._wake.set()
        elif kind == "ready":
            # Sent once, before the executor loop starts: written at once when it can be,
            # so a worker that dies right after is still known to have started.
            self._started = False
            self._update(ready=True, ready_at=time.time())
            try:
                self._write_beat()
            except Exception:  # ZooKeeper away: the writer thread tries again
                self._wake.set()
        elif kind in ("status", "collect", "log", "log_level"):
            self._reply(message)

    def carried_stats(self) -> dict[str, Lumps]:
        """What this worker's tasks did in earlier incarnations (any worker's save: after a
        rebalance a task's history may be in another one's)."""
        return newest(self.zk.carried_stats(self.topology_id))

    def publish_stats(self, status: dict[str, Any]) -> None:
        """Put this worker's counters and stats windows in its next heartbeat write."""
        self._update(stats=status, stats_at=time.time())

    def save_stats(self, status: dict[str, Any]) -> None:
        """Hand the stats windows to the saver thread (its own ZooKeeper node; no heartbeat
        write), so a relaunch after a SIGKILL carries all but the last second."""
        self._save_carried({"stats": status})

    def _reply(self, reply: dict[str, Any]) -> None:
        """Put ``reply`` in the heartbeat's ``replies``, beside the other commands' latest,
        so a ``status`` reply never overwrites a ``log`` reply not yet read (with one slot
        for all, concurrent clients — ``sparkstorm local``'s progress asking ``status``
        every second, ``logs`` — took each other's place)."""
        with self._lock:
            replies = dict(self._changes.get("replies") or {})
            replies[str(reply.get("type"))] = reply
            self._changes["replies"] = replies
        self._wake.set()

    def _update(self, **changes: Any) -> None:
        with self._lock:
            self._changes.update(changes)
        self._wake.set()

    # -- the writer thread -----------------------------------------------------------------

    def _write_loop(self) -> None:
        """Write beats and errors until closed; keep what could not be written for later.

        The heartbeat is written when it is due, or at once for a reply, new stats or
        readiness; errors at most every :data:`ERROR_WRITE_SECS`, after them.  An error
        never causes a heartbeat write: under a stream of errors the writes to ZooKeeper
        stay a few per second, so replies (``sparkstorm logs``) are not held up."""
        next_beat = next_errors = 0.0
        while not self._closed.is_set():
            now = time.monotonic()
            due = next_beat if self._errors.empty() else min(next_beat, next_errors)
            self._wake.wait(max(0.0, due - now))
            self._wake.clear()
            now = time.monotonic()
            try:
                if now >= next_beat or self._urgent():
                    self._write_beat()
                    next_beat = time.monotonic() + self._heartbeat_secs
                if now >= next_errors and not self._errors.empty():
                    next_errors = now + ERROR_WRITE_SECS
                    self._write_errors()
            except Exception:  # ZooKeeper away: what was not written waits for next time
                self.writes_failed += 1
                next_beat = time.monotonic() + min(1.0, self._heartbeat_secs)

    def _urgent(self) -> bool:
        """Whether a change waits that the heartbeat must carry now (not at its next beat)."""
        with self._lock:
            return any(key in self._changes for key in URGENT_CHANGES)

    def _write_beat(self) -> None:
        """Write the heartbeat with every change handed over so far (one writer at a time:
        the writer thread, or the executor thread once, for ``ready``)."""
        with self._write_lock:
            with self._lock:
                changes, self._changes = self._changes, {}
            beat = dict(self._beat, **changes, beat_at=time.time())
            beat["replies"] = self._replies(changes.get("replies") or {})
            if self._progress is not None:
                stalled, busy_in = self._progress()
                beat.update(stalled_secs=round(stalled, 3), busy_in=busy_in)
            beat["errors_dropped"] = self.errors_dropped
            beat["requests_refused"] = self.requests_refused
            self._save_carried(changes)
            try:  # bounded waits: a stuck request must not stop every later beat and reply
                try:
                    self.zk.beat(self.topology_id, self.worker, beat, timeout=self._write_timeout)
                except ZnodeTooLarge:  # several big replies at once: the newest one only
                    newest = max(beat["replies"], key=self._reply_written_at.__getitem__)
                    beat["replies"] = {newest: beat["replies"][newest]}
                    self.zk.beat(self.topology_id, self.worker, beat, timeout=self._write_timeout)
                if beat.get("ready") and not self._started:
                    self.zk.mark_started(
                        self.topology_id, self.worker, self.attempt, timeout=self._write_timeout
                    )
                    self._started = True
            except BaseException:
                with self._lock:  # newer changes win over the ones given back
                    replies = {**changes.get("replies", {}), **self._changes.get("replies", {})}
                    self._changes = {**changes, **self._changes}
                    if replies:
                        self._changes["replies"] = replies
                raise
            self._beat = beat

    def _replies(self, new: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The latest reply to each command for the heartbeat: ``new`` ones over those
        written less than :data:`REPLY_KEPT_SECS` ago (a log chunk or collected results
        are not carried in every beat)."""
        now = time.monotonic()
        for kind in new:
            self._reply_written_at[kind] = now
        replies = {**(self._beat.get("replies") or {}), **new}
        return {
            kind: reply
            for kind, reply in replies.items()
            if now - self._reply_written_at.get(kind, now) <= REPLY_KEPT_SECS
        }

    def _save_carried(self, changes: dict[str, Any]) -> None:
        """Hand the newest stats windows among ``changes`` to the saver thread (the newest
        wins; a slow or failed save never holds up the heartbeat)."""
        reports: list[dict[str, Any]] = [
            r
            for r in (changes.get("stats"), *(changes.get("replies") or {}).values())
            if isinstance(r, dict)
        ]
        reports = [r for r in reports if "tasks" in r]
        if not reports:
            return
        newest_report = max(reports, key=lambda r: float(r.get("time") or 0.0))
        with self._lock:
            self._carry = save_reply(newest_report)
        self._carry_wake.set()

    def _carry_loop(self) -> None:
        """Save what :meth:`_save_carried` handed over until closed."""
        while not self._closed.is_set():
            self._carry_wake.wait(1.0)
            self._carry_wake.clear()
            with self._lock:
                carry, self._carry = self._carry, None
            if carry is None:
                continue
            try:
                self.zk.save_carried_stats(self.topology_id, self.worker, carry)
            except Exception:  # ZooKeeper away or slow: the next report tries again
                self.writes_failed += 1

    def _write_errors(self) -> None:
        """Write the errors queued so far (not those arriving meanwhile: the heartbeat must
        not starve behind a stream of errors), one write per component."""
        batch: dict[str, list[dict[str, Any]]] = {}
        for _ in range(self._errors.qsize()):
            try:
                error = self._errors.get_nowait()
            except queue.Empty:
                break
            batch.setdefault(str(error.get("component")), []).append(error)
        while batch:
            component, errors = next(iter(batch.items()))
            try:
                self.zk.report_errors(
                    self.topology_id, component, errors, timeout=self._write_timeout
                )
            except BaseException:
                for pending in batch.values():
                    for error in pending:
                        self._requeue(error)
                raise
            del batch[component]

    def _requeue(self, error: dict[str, Any]) -> None:
        try:
            self._errors.put_nowait(error)
        except queue.Full:
            self.errors_dropped += 1

    # -- watches (kazoo's thread) ----------------------------------------------------------

    def _current_beats(self) -> dict[int, dict[str, Any]]:
        """The heartbeats of this attempt that name an endpoint and a data token."""
        beats = self.zk.heartbeats(self.topology_id, attempt=self.attempt)
        return {w: b for w, b in beats.items() if "endpoint" in b and "token" in b}

    def _on_record(self, data: bytes | None, stat: Any) -> None:
        if data is None:  # the topology was removed
            self._stopping = True
            self._commands.put({"cmd": "stop"})
            return
        record = self.zk.checked(self.zk.paths.storm(self.topology_id), data, check_record, stat)
        if record is None:  # not a record of ours (the refusal is logged): ignore it
            return
        status = record.get("status")
        if status != self._status:
            self._status = status
            self._commands.put(
                {"cmd": "activate" if status == TopologyStatus.ACTIVE else "deactivate"}
            )
        request = record.get("request")
        if isinstance(request, dict) and request.get("id") != self._request_id:
            self._request_id = request.get("id")
            command = request_command(request)
            if command is None:  # not a request any client of ours writes: ignore it
                self.requests_refused += 1
            elif command["cmd"] in self._answerers:
                # answered here, not by the executor: a worker stuck in user code still does
                answer = self._answerers[command["cmd"]]
                reply = {"type": command["cmd"], "req": command["req"], **answer(command)}
                self._reply(reply)
                self._wake.set()
            else:
                self._commands.put(command)

    def _on_assignment(self, data: bytes | None, stat: Any) -> bool | None:
        """Stop when the assignment is gone or replaced by another attempt."""
        if data is not None:
            path = self.zk.paths.assignment(self.topology_id)
            assignment = self.zk.checked(path, data, check_assignment, stat)
            if assignment is None or assignment["attempt"] == self.attempt:
                return None  # refused (and logged), or still ours
        self._stopping = True  # peers vanishing from now on are stopping too, not lost
        self._commands.put({"cmd": "stop"})
        return False  # ends the watch

    def _on_beats(self, children: list[str]) -> None:
        try:
            beats = self._current_beats()
        except Exception:  # ZooKeeper going away: the next change brings the endpoints
            return
        peers = _peers(beats)
        for gone in sorted(set(self._peers) - set(peers) - {self.worker}):
            # its session ended: the process died (or lost ZooKeeper); what it held is lost
            # (unless the whole attempt is stopping: then every worker leaves in order)
            if not self._stopping:
                self._commands.put({"cmd": "lost", "worker": gone})
            del self._peers[gone]  # after the command: tests wait on this
        changed = {w: p for w, p in peers.items() if self._peers.get(w) != p}
        if changed:  # a new process: its endpoint and token together
            self._peers.update(changed)
            endpoints = {w: p.endpoint for w, p in self._peers.items()}
            tokens = {w: p.token for w, p in self._peers.items() if p.token is not None}
            self._commands.put({"cmd": "peers", **peer_fields(endpoints, tokens)})

    def stop_heartbeat(self) -> None:
        """Stop the writer thread after one last attempt to write what is pending."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._wake.set()
        self._write_timeout = FINAL_WRITE_TIMEOUT_SECS  # a worker's exit waits little for it
        try:
            self._write_errors()
            self._write_beat()
        except Exception:  # ZooKeeper away at exit: nothing more to do
            pass

    def close(self) -> None:
        self.stop_heartbeat()
        self.zk.close()


def _peers(beats: dict[int, dict[str, Any]]) -> dict[int, Peer]:
    """Each worker's endpoint and data token, from heartbeats checked at the door
    (:func:`~.records.check_heartbeat`)."""
    return {w: Peer(b["endpoint"], parse_token(b.get("token"))) for w, b in beats.items()}
