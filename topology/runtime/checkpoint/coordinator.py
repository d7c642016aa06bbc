"""Hosting the checkpoint coordinator on the worker that runs the ``__checkpoint`` task.

The :class:`~topology.state.checkpoint.CheckpointCoordinator` is pure: it takes the
workers' reports (``DONE``, ``STATUS``, ``FAILED``) and its timer and answers with
actions.  :class:`CoordinatorHost` feeds it and carries the actions out: ``BEGIN`` /
``COMMIT`` to every spout task (``COMMIT`` also to the tasks of stateful bolts:
:func:`commit_bolt_tasks`), ``ROLLBACK`` / ``RESUME`` to workers, the completion record
written through the state writer (then ``COMMIT``), abandoned checkpoints noted.  It
keeps the recent checkpoints' history (:class:`~topology.state.checkpoint_history.
CheckpointHistory`: trigger time, duration, alignment and size per component) for the
worker's status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topology.assignment import Assignment
from topology.spec import Topology
from topology.state import checkpoint as ck
from topology.state.backends import StateBackend
from topology.state.checkpoint_history import CheckpointHistory
from topology.state.writer import StateWriter
from topology.stateful import hears_completions

from ..settings import WorkerSettings
from ..tasks.collector import ErrorReport

#: ``send(src task, stream, dest task, message)``: one control message onto its lane.
Send = Callable[[int, str, int, list[Any]], None]


class CoordinatorHost:
    """The coordinator and what carries out its actions (on the executor thread)."""

    def __init__(
        self,
        *,
        coordinator: ck.CheckpointCoordinator,
        task: int,
        spout_tasks: list[int],
        commit_bolt_tasks: list[int],
        task_components: dict[int, str],
        send: Send,
        note: Callable[[str], None],
        backend: StateBackend,
        writer: StateWriter,
        report: ErrorReport,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
    ) -> None:
        self.coordinator = coordinator
        self.task = task
        self._spout_tasks = spout_tasks
        self._commit_tasks = spout_tasks + commit_bolt_tasks
        self._send = send
        self._note = note
        self._backend = backend
        self._writer = writer
        self._report = report
        self._clock = clock
        self._wall_clock = wall_clock
        self._task_components = task_components
        self.history = CheckpointHistory()

    def deliver(self, stream: str, vals: list[Any], now: float) -> None:
        """Reports from workers (``DONE``, ``STATUS``, ``FAILED``)."""
        for message in vals:
            self.carry_out(self._to_coordinator(stream, message, now))

    def tick(self, now: float) -> None:
        """The coordinator's timers: start, time out, resend."""
        self.carry_out(self.coordinator.tick(now))

    def status(self, now: float) -> dict[str, Any]:
        coordinator = self.coordinator
        return {
            "last_complete": coordinator.restore,
            "completed": coordinator.completed,
            "abandoned": coordinator.abandoned,
            "recoveries": coordinator.recoveries,
            "last_duration_secs": round(coordinator.last_duration, 3),
            "last_complete_age_secs": (
                None
                if coordinator.completed_at is None
                else round(max(0.0, now - coordinator.completed_at), 1)
            ),
            "interval_secs": coordinator.interval,
            "recovering": coordinator.recovering,
            # a checkpoint begun and not yet stored (a stop waits for it)
            "in_progress": coordinator.in_flight is not None or coordinator.storing is not None,
            "history": self.history.rows(),
        }

    def _to_coordinator(self, stream: str, message: list[Any], now: float) -> list[ck.Action]:
        coordinator = self.coordinator
        if stream == ck.DONE:
            epoch, checkpoint, task, ok, alignment_us, size = message
            if ok and coordinator.awaits(epoch, checkpoint, task):
                component = self._task_components.get(task, "?")
                self.history.task_done(checkpoint, component, alignment_us / 1000.0, size)
            return coordinator.done(int(epoch), int(checkpoint), int(task), bool(ok), now)
        if stream == ck.STATUS:
            return coordinator.status(int(message[0]), int(message[1]), now)
        if stream == ck.FAILED:
            return coordinator.failed(int(message[1]), now)
        return []

    def carry_out(self, actions: list[ck.Action]) -> None:
        src, send, history = self.task, self._send, self.history
        for action in actions:
            if isinstance(action, ck.Begin):
                history.begin(action.checkpoint, self._clock(), self._wall_clock())
                for spout in self._spout_tasks:
                    send(src, ck.BEGIN, spout, [action.epoch, action.checkpoint])
            elif isinstance(action, ck.Commit):  # sent once the completion record is durable
                history.completed(action.checkpoint, self._clock())
                for task in self._commit_tasks:
                    send(src, ck.COMMIT, task, [action.epoch, action.checkpoint])
            elif isinstance(action, ck.RollBack):
                history.abandoned(None, "a recovery started", self._clock())
                for worker in action.workers:
                    send(src, ck.ROLLBACK, -1 - worker, [action.epoch, action.checkpoint])
            elif isinstance(action, ck.Resume):
                for worker in action.workers:
                    send(src, ck.RESUME, -1 - worker, [action.epoch])
            elif isinstance(action, ck.Store):
                self._complete(action)
            elif isinstance(action, ck.Abandon):
                history.abandoned(action.checkpoint, action.reason, self._clock())
                self._note(f"checkpoint {action.checkpoint} abandoned: {action.reason}")

    def _complete(self, action: ck.Store) -> None:
        backend, coordinator = self._backend, self.coordinator

        def stored(_: Any, error: BaseException | None) -> None:
            if error is not None:
                self._report(
                    ck.COORDINATOR_COMPONENT,
                    self.task,
                    f"completing checkpoint {action.checkpoint}: {error!r}",
                )
            self.carry_out(coordinator.stored(action.checkpoint, error is None, self._clock()))

        self._writer.submit(
            lambda: backend.complete(action.checkpoint, action.epoch, action.info), stored
        )


def commit_bolt_tasks(topology: Topology, assignment: Assignment) -> list[int]:
    """The bolt tasks ``COMMIT`` goes to besides the spouts': those of stateful bolts
    (:func:`~topology.stateful.hears_completions`; the door,
    :func:`~topology.runtime.net.frames.inbound_routes`, lets it in for the same tasks
    only)."""
    return [
        t
        for c in topology.components.values()
        if c.kind == "bolt" and hears_completions(c.instance)
        for t in assignment.component_tasks[c.id]
    ]


def checkpoint_tasks(topology: Topology, assignment: Assignment) -> list[int]:
    """The tasks whose report completes a checkpoint: every spout and bolt task.  A bolt
    without state reports as soon as the barrier passed it, so a checkpoint is complete
    only once every tuple emitted before it reached every bolt: a plain bolt downstream
    (a sink, a dead-letter bolt) cannot lose what is in flight to it when a worker dies
    after the spouts heard the commit."""
    return [t for c in topology.components.values() for t in assignment.component_tasks[c.id]]


def coordinator_on(
    worker_index: int,
    topology: Topology,
    assignment: Assignment,
    settings: WorkerSettings,
    backend: StateBackend,
    now: float,
) -> ck.CheckpointCoordinator | None:
    """The coordinator, when the ``__checkpoint`` task runs on worker ``worker_index``."""
    [task] = assignment.component_tasks[ck.COORDINATOR_COMPONENT]
    if assignment.worker_of()[task] != worker_index:
        return None
    return ck.CheckpointCoordinator(
        assignment.num_workers,
        frozenset(checkpoint_tasks(topology, assignment)),
        settings.checkpoint_interval_secs,
        settings.checkpoint_timeout_secs,
        now,
        incarnation=backend.reserve(),
        restore=backend.latest(),
    )
