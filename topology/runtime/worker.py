"""A worker: hosts a set of tasks in one executor loop and talks to its cluster.

The same :class:`Worker` runs in a subprocess (LocalCluster) and inside a Spark task:
everything it needs arrives in a :class:`~topology.runtime.settings.WorkerSetup`, its tasks
are built by :func:`~topology.runtime.assembly.assemble_worker` around ZeroMQ sockets, and
everything it says to the cluster goes through a :class:`ClusterClient`.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
import time
from typing import Any

from acker.protocol import worker_lost
from topology.constants import SYSTEM_COMPONENT
from topology.stats.carry import Lumps, for_tasks
from topology.stats.rolling import StatsRecorder
from topology.user_dirs import LocalDirError

from .assembly import AssembledWorker, assemble_worker, collect_results
from .cluster_client import STATS_SAVE_SECS, ClusterClient
from .error_reporter import ErrorReporter
from .gil_sharing import GilYield, short_switch_interval
from .net.addressing import Addresses, worker_addresses
from .net.curve import CurveKeys
from .net.data_token import new_token, peers_from, token_text
from .net.transport import DataReceiver, DataSender, Poller
from .settings import WorkerSetup
from .simulated_time import WorkerTime
from .task_status import worker_status
from .worker_log import (
    DEFAULT_CHUNK_BYTES,
    WorkerLog,
    read_log,
    topology_log_dir,
    worker_log_path,
)

_log = logging.getLogger("sparkstorm.worker")

CONTROL_INTERVAL = 0.01


def tune_gc() -> None:
    """Fewer cyclic-GC passes in a worker process.

    The executor allocates many short-lived containers (tuples, value lists, envelopes) that
    reference counting frees at once; with default thresholds the cycle collector runs every
    700 allocations and costs 10-20% of acked throughput.  Objects alive at start-up are
    frozen out of collection.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


class Worker:
    """Builds the tasks of one worker and runs them until told to stop.

    ``simulated_time``: start the topology's timers (ticks, message timeouts, checkpoint
    intervals, windows' processing time) on a simulated clock at this reading; it then
    moves only on the cluster's ``time`` commands (see :mod:`topology.runtime.simulated_time`).
    """

    def __init__(
        self,
        setup: WorkerSetup,
        client: ClusterClient,
        addresses: Addresses | None = None,
        simulated_time: float | None = None,
    ) -> None:
        self.setup = setup
        self.addresses = addresses or worker_addresses(setup.conf, None)
        self.client = client
        self.conf = setup.conf
        #: What the worker reads of its conf (read once).
        self.settings = setup.settings
        self.index = setup.worker_index
        self.runtime: AssembledWorker | None = None
        self.senders: dict[int, DataSender] = {}
        self._last_control = 0.0
        self._report = ErrorReporter(client, setup.topology_name, setup.worker_index)
        self._started = time.monotonic()
        self._stats_interval = self.settings.stats_interval_secs
        self._next_stats = self._started + self._stats_interval
        self._next_save = self._started + STATS_SAVE_SECS
        self._recorders: dict[int, StatsRecorder] = {}
        self._carried: dict[int, Lumps] = {}
        self.sim = WorkerTime(simulated_time) if simulated_time is not None else None
        #: This worker's log file (None before it runs, or when it could not be opened).
        self.log: WorkerLog | None = None
        self.log_error: str | None = None
        self._executor_thread = 0
        self._gil_yield = GilYield()

    def run(self) -> None:
        """Bind, register, build tasks, run the loop; clean up on the way out."""
        with short_switch_interval():  # helper threads get the GIL while the loop is busy
            self._run()

    def _run(self) -> None:
        tune_gc()
        settings = self.settings
        curve = CurveKeys.from_secret(self.setup.secret) if self.setup.secret else None
        receiver = DataReceiver(
            self.addresses.bind,
            self.addresses.advertise,
            settings.transfer_buffer_size,
            settings.max_frame_bytes,
            curve,
        )
        senders: dict[int, DataSender] = {}
        token = new_token()  # this process's: the door lets in only frames that carry it
        try:
            self._open_log()
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "address": self.addresses.advertise,
                "token": token_text(token),
            }
            peers = self.client.register(self.index, receiver.endpoint, info)
            _log.info(
                "worker %d registered at %s (%d peers)",
                self.index,
                receiver.endpoint,
                len(peers) - 1,
            )
            hwm = settings.transfer_buffer_size
            senders = {
                w: DataSender(p.endpoint, hwm, curve, p.token)
                for w, p in peers.items()
                if w != self.index
            }
            self.senders = senders
            simulated = self.sim.clock if self.sim is not None else None
            runtime = self.runtime = assemble_worker(
                self.setup,
                receiver=receiver,
                token=token,
                waiter=Poller(receiver.socket, self.client.socket),
                senders=senders,
                report=self._report,
                on_turn=self._on_turn,
                wall_clock=simulated if simulated is not None else time.time,
                timers=simulated,
            )
            self._bind_client(runtime)
            runtime.start()
            self.client.send({"type": "ready", "worker": self.index})
            _log.info("worker %d running its %d tasks", self.index, len(runtime.tasks()))
            runtime.executor.run()
            runtime.shut_down(time.monotonic())
        finally:
            for s in senders.values():
                s.close()
            receiver.close()
            _log.info("worker %d stopped", self.index)
            if self.log is not None:
                self.log.close()

    def _bind_client(self, runtime: AssembledWorker) -> None:
        """Before the tasks start: stats carried from before a restart, and the client's
        own-thread readers of progress, logs and log levels."""
        now = time.monotonic()
        self._recorders = {task.task_id: StatsRecorder(now) for task in runtime.tasks()}
        mine = [(t.task_id, t.component, t.context.task_index) for t in runtime.tasks()]
        try:  # what this worker's tasks did before a restart or a rebalance
            self._carried = for_tasks(self.client.carried_stats(), mine)
        except Exception as exc:  # counters restart from zero; the worker runs
            self._report(SYSTEM_COMPONENT, -1, f"earlier statistics not read: {exc!r}")
        self.client.bind_progress(runtime.executor.progress)
        self.client.bind_answerer("log", self.read_log)  # off the executor thread
        self.client.bind_answerer("log_level", self.change_log_level)

    def _open_log(self) -> None:
        """Start this worker's log file; without one (a directory it cannot write) the
        worker runs on, the reason reported and given to ``sparkstorm logs``."""
        settings = self.settings
        key = self.setup.state_id or self.setup.topology_name
        path = worker_log_path(self.conf, key, self.index)
        try:
            topology_log_dir(self.conf, key)  # made and checked: private to this user
            self.log = WorkerLog(
                path,
                settings.log_level,
                settings.log_max_bytes,
                settings.log_backups,
                current_task=self._current_task,
            ).install()
        except (OSError, LocalDirError) as exc:
            self.log_error = f"no log file {path}: {exc}"
            self._report(SYSTEM_COMPONENT, -1, self.log_error)
            return
        self._executor_thread = threading.get_ident()
        _log.info(
            "worker %d of %s starting (pid %d)", self.index, self.setup.topology_name, os.getpid()
        )

    def _current_task(self) -> str | None:
        """``component:task`` whose user code the executor runs now, for a line logged on
        the executor's thread (other threads' lines are not any task's)."""
        runtime = self.runtime
        if runtime is None or threading.get_ident() != self._executor_thread:
            return None
        task = runtime.executor.busy_in
        return f"{task.component}:{task.task_id}" if task is not None else None

    # -- control ----------------------------------------------------------------------

    def _on_turn(self, now: float) -> None:
        self._gil_yield.maybe_yield(now)
        if self.sim is not None:
            self._confirm_time()
        if now - self._last_control < CONTROL_INTERVAL:
            return
        self._last_control = now
        if self.log is not None:
            self.log.poll(now)
        for command in self.client.poll_commands():
            try:
                self.handle(command)
            except Exception as exc:  # a command of the wrong shape must not end the worker
                self._report(SYSTEM_COMPONENT, -1, f"command {command.get('cmd')!r}: {exc!r}")
        if now >= self._next_stats:
            self._next_stats = now + self._stats_interval
            self._next_save = now + STATS_SAVE_SECS
            self.client.publish_stats(self.status())
        elif now >= self._next_save:
            self._next_save = now + STATS_SAVE_SECS
            self.client.save_stats(self.status())

    def handle(self, command: dict[str, Any]) -> None:
        """Carry out one command from the cluster."""
        runtime = self.runtime
        assert runtime is not None
        cmd = command.get("cmd")
        if cmd == "activate" or cmd == "deactivate":
            now = runtime.executor.clock()
            for spout in runtime.spouts:
                spout.set_active(cmd == "activate", now)
        elif cmd == "stop":
            runtime.executor.stop()
        elif cmd in ("peers", "lost") and not runtime.executor.running:
            pass  # stopping: peers leave in order, nothing of theirs is lost
        elif cmd == "peers":
            moved = []
            for w, peer in peers_from(command["endpoints"], command.get("tokens") or {}).items():
                sender = self.senders.get(w)
                if sender is None or (sender.endpoint, sender.token) == (peer.endpoint, peer.token):
                    continue
                if sender.reconnect(peer.endpoint, peer.token):  # a new process: held frames go
                    moved.append(w)
            if moved:
                self.fail_pending(f"worker {', '.join(map(str, sorted(moved)))} replaced")
        elif cmd == "lost":
            lost = self.senders.get(command.get("worker"))  # type: ignore[arg-type]
            if lost is not None:
                lost.forget()  # what is sent to it from now on waits for its successor
            self.fail_pending(f"worker {command.get('worker')} died")
        elif cmd == "status":
            self.client.send({"type": "status", "req": command.get("req"), **self.status()})
        elif cmd == "time":
            if self.sim is None:
                self._report(SYSTEM_COMPONENT, -1, "a 'time' command, but time is not simulated")
            else:
                self.sim.advance_to(command["to"], command.get("req"))
        elif cmd == "collect":
            self.client.send(
                {"type": "collect", "req": command.get("req"), **collect_results(runtime)}
            )
        elif cmd == "log":
            self.client.send({"type": "log", "req": command.get("req"), **self.read_log(command)})
        elif cmd == "log_level":
            reply = self.change_log_level(command)
            self.client.send({"type": "log_level", "req": command.get("req"), **reply})

    def change_log_level(self, command: dict[str, Any]) -> dict[str, Any]:
        """Carry out a ``log_level`` command: ``{"level": set, "worker": i}`` or ``{"error":
        why, "worker": i}``.  Safe on any thread: the cluster clients call it from their
        own, so a worker stuck in user code still takes a new level."""
        reply: dict[str, Any] = {"worker": self.index}
        try:
            if self.log is None:
                raise ValueError(self.log_error or "no log file")
            reply["level"] = self.log.set_level(
                command.get("level", ""), command.get("revert_after"), time.monotonic()
            )
        except (ValueError, TypeError) as exc:
            reply["error"] = str(exc)
        return reply

    def _confirm_time(self) -> None:
        """Answer the ``time`` commands whose target the executor's timers have reached."""
        assert self.sim is not None and self.runtime is not None
        at = self.runtime.executor.timers_at
        for req in self.sim.confirmed(at):
            self.client.send({"type": "time", "req": req, "worker": self.index, "now": at})

    def read_log(self, command: dict[str, Any]) -> dict[str, Any]:
        """A chunk of this worker's log for ``sparkstorm logs`` (the command's ``worker``,
        when given, says whose: the others answer with no text).  Safe on any thread: the
        cluster clients call it from their own, so a stuck executor does not hold it up."""
        out: dict[str, Any] = {
            "worker": self.index,
            "host": self._report.host,
            "pid": os.getpid(),
            "path": str(self.log.path) if self.log is not None else None,
        }
        wanted = command.get("worker")
        if wanted is not None and wanted != self.index:
            return {**out, "text": "", "skipped": True}
        if self.log is None:
            return {**out, "text": "", "offset": 0, "error": self.log_error or "no log file"}
        offsets, files = command.get("offsets"), command.get("files")
        offset = offsets.get(str(self.index)) if isinstance(offsets, dict) else None
        file_id = files.get(str(self.index)) if isinstance(files, dict) else None
        try:
            chunk = read_log(
                self.log.path,
                offset if isinstance(offset, int) and offset >= 0 else None,
                int(command.get("max_bytes") or DEFAULT_CHUNK_BYTES),
                command.get("component") if isinstance(command.get("component"), str) else None,
                file_id if isinstance(file_id, int) else None,
            )
        except Exception as exc:  # on a control thread: say why, never raise
            return {**out, "text": "", "offset": 0, "error": str(exc)}
        return {**out, **chunk}

    def fail_pending(self, why: str) -> int:
        """A peer worker died or was replaced: fail the pending trees of this worker's spout
        tasks at once (reason ``worker_lost``) unless ``topology.worker.loss.fails.pending``
        is false; how many failed."""
        runtime = self.runtime
        if runtime is None or not self.settings.worker_loss_fails_pending:
            return 0
        reason = worker_lost(why)
        return sum(spout.fail_pending(reason) for spout in runtime.spouts)

    def status(self) -> dict[str, Any]:
        """Counters of this worker and its tasks (plain data; see ``worker_status``)."""
        assert self.runtime is not None
        now, wall = time.monotonic(), time.time()
        return {
            **worker_status(self.runtime, self._recorders, now, self._carried, wall),
            "pid": os.getpid(),
            "host": self._report.host,
            "errors_suppressed": self._report.suppressed,
            "uptime_secs": round(now - self._started, 1),
            "time": wall,
        }
