"""One worker's part in checkpoints and recovery (the protocol: :mod:`topology.state.checkpoint`).

:class:`WorkerCheckpoints` exists only in a checkpointed topology (one with a
:class:`~topology.StatefulBolt`); it is the executor's
:class:`~topology.runtime.checkpoint.hooks.CheckpointHooks` there.  The executor hands it
barriers, checkpoint control groups and each turn's clock; it

* keeps the worker's recovery ``epoch`` (stamped on every data frame it sends; frames of
  other epochs are dropped on arrival) and ``paused`` (no spout or tick runs until the
  coordinator resumes the epoch);
* at ``begin(k)`` makes a spout task close its epoch, store its position and the msg ids
  the checkpoint will cover, and put barrier ``k`` on every output lane;
* aligns every bolt task on its input channels, calls a stateful task's
  ``pre_checkpoint``, snapshots its changed keys and forwards the barrier;
* at ``commit(k)`` acks what a spout task's checkpoint covered, then calls the
  ``checkpoint_complete`` of replayable spouts and of stateful bolts that have one;
* writes snapshots through a :class:`~topology.state.writer.StateWriter` and reports each
  stored one to the coordinator;
* on ``rollback(epoch, k)`` drops what is in flight, restores state and spout positions
  from checkpoint ``k`` (or fails the spouts' msg ids after it, so they replay), pauses and
  reports;
* hosts the :class:`~topology.state.checkpoint.CheckpointCoordinator` when the
  ``__checkpoint`` task is on this worker (:mod:`~topology.runtime.checkpoint.coordinator`).

What a task's snapshot holds and how it is restored is
:mod:`~topology.runtime.checkpoint.snapshots`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topology.assignment import Assignment
from topology.spec import Topology
from topology.state import checkpoint as ck
from topology.state.backends import StateBackend
from topology.state.writer import StateWriter

from ..net.transfer import Lane, Transfer
from ..settings import WorkerSettings
from ..tasks.collector import ErrorReport
from ..tasks.task import BoltTask, SpoutTask
from .coordinator import CoordinatorHost, commit_bolt_tasks, coordinator_on
from .hooks import InFlight, RecoveryEpoch
from .snapshots import (
    BoltPart,
    SpoutPart,
    StateFactory,
    Writes,
    bolt_part,
    bolt_snapshot,
    complete_bolt,
    complete_spout,
    input_channels,
    prepare_bolt,
    restore_bolt,
    restore_spout,
    spout_part,
    spout_position,
    spout_snapshot,
    writes_size,
)

#: Tuples a bolt task may hold back while it aligns, per input channel waiting; past it the
#: task declines the checkpoint and lets them in (the next checkpoint tries again).
MAX_HELD_TUPLES = 100_000


@dataclass
class CheckpointStats:
    """What the worker's status shows of checkpoints."""

    snapshots: int = 0
    declined: int = 0
    rollbacks: int = 0
    stale_frames: int = 0
    #: Entries a restore refused (the door's decode budget, their shape).
    restore_refused: int = 0
    last_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: Changes (keys) a worker's stateful tasks may hold that no complete checkpoint has yet,
#: before its spouts and its peers' wait for the checkpoints to catch up (a key changed
#: twice counts once), with the ``memory`` backend (whose state is in memory anyway).
CHANGES_BACKLOG_LIMIT = 1_000_000
#: What a change not yet in a complete checkpoint costs while it waits (tracemalloc: ~80
#: bytes in the state's changed keys, ~100 in a snapshot's list, as much again in the
#: writer's sorted copy).
CHANGE_BYTES = 256
#: Fewest changes a stateful task of a disk backend may hold (a tiny cache still batches).
MIN_TASK_BACKLOG = 10_000


def changes_backlog_limit(backend: str, cache_bytes: int, stateful_tasks: int) -> int:
    """How many changes a worker's ``stateful_tasks`` may hold before its spouts wait: with
    a disk backend, twice each task's cache (``cache_bytes``) in changes of
    :data:`CHANGE_BYTES`, so that a worker's memory follows the cache setting; with
    ``memory``, :data:`CHANGES_BACKLOG_LIMIT`.  Less stops the checkpoints' writes from
    overlapping the counting: on a count whose tuples mostly change a key of their own, the
    cache's worth cost a third of the throughput (hot set, 10 M keys) for ~10 MB of RSS."""
    if backend == "memory":
        return CHANGES_BACKLOG_LIMIT
    per_task = max(MIN_TASK_BACKLOG, 2 * cache_bytes // CHANGE_BYTES)
    return min(CHANGES_BACKLOG_LIMIT, per_task * max(1, stateful_tasks))


class WorkerCheckpoints:
    """See the module docstring: the
    :class:`~topology.runtime.checkpoint.hooks.CheckpointHooks` of a checkpointed worker.
    Everything runs on the executor thread.

    Built before the worker's tasks: the assembly gives each spout collector
    :meth:`spout_epochs`, each bolt task :meth:`aligner` and each bolt collector
    :meth:`tuple_failed` as ``on_fail``, then adds every task (:meth:`add_spout`,
    :meth:`add_bolt`) once its routes exist.  ``epoch`` is shared with the transfer, which
    stamps it on every data frame; only a rollback moves it.
    """

    def __init__(
        self,
        *,
        worker_index: int,
        topology: Topology,
        assignment: Assignment,
        transfer: Transfer,
        epoch: RecoveryEpoch,
        backend: StateBackend,
        writer: StateWriter,
        report: ErrorReport,
        settings: WorkerSettings,
        now: float,
        clock: Callable[[], float] = time.monotonic,
        new_state: StateFactory | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.worker_index = worker_index
        self._wall_clock = wall_clock
        self._key_groups = settings.key_groups
        self._new_state = new_state
        self.system_task = -1 - worker_index
        self._epoch = epoch
        self.paused = True
        self.transfer = transfer
        self.backend = backend
        self.writer = writer
        self._topology = topology
        self._assignment = assignment
        self._report = report
        self._max_pending = settings.max_spout_pending
        self.stats = CheckpointStats()
        self._failed_epoch = -1
        self._next_status = now
        self._now = now
        self._clock = clock
        #: bolt task -> when the first barrier of the checkpoint it aligns on arrived
        self._aligning_since: dict[int, float] = {}
        [self.coordinator_task] = assignment.component_tasks[ck.COORDINATOR_COMPONENT]
        self.all_spout_tasks = [
            t
            for c in topology.components.values()
            if c.kind == "spout"
            for t in assignment.component_tasks[c.id]
        ]
        self._bolts: dict[int, BoltPart] = {}
        self._stateful: list[BoltPart] = []  # the bolts with key-value state
        self._settings = settings
        self._backlog_limit = CHANGES_BACKLOG_LIMIT
        self._spouts: dict[int, SpoutPart] = {}
        coordinator = coordinator_on(worker_index, topology, assignment, settings, backend, now)
        self._host = None
        if coordinator is not None:
            self._host = CoordinatorHost(
                coordinator=coordinator,
                task=self.coordinator_task,
                spout_tasks=self.all_spout_tasks,
                commit_bolt_tasks=commit_bolt_tasks(topology, assignment),
                task_components=assignment.task_component,
                send=self._send,
                note=self._note,
                backend=backend,
                writer=writer,
                report=report,
                clock=clock,
                wall_clock=wall_clock,
            )

    @property
    def epoch(self) -> int:
        """The worker's recovery epoch (0 until the first rollback)."""
        return self._epoch.epoch

    @property
    def coordinator(self) -> ck.CheckpointCoordinator | None:
        """The checkpoint coordinator, when its task runs on this worker."""
        return None if self._host is None else self._host.coordinator

    # -- building the worker's tasks ------------------------------------------------------

    def spout_epochs(self) -> ck.SpoutEpochs:
        """The epochs of a new spout task (for its collector: msg ids wait for the
        checkpoint that holds their effects)."""
        return ck.SpoutEpochs(cap=self._max_pending)

    def aligner(self, component: str) -> ck.BarrierAligner:
        """The barrier aligner of a new task of bolt ``component``, over its inputs."""
        return ck.BarrierAligner(input_channels(self._topology, self._assignment, component))

    def add_spout(self, task: SpoutTask) -> None:
        """Take part ``task`` (built with :meth:`spout_epochs`) in checkpoints."""
        self._spouts[task.task_id] = spout_part(task, self._lanes_of(task), self._topology)

    def add_bolt(self, task: BoltTask) -> None:
        """Take part ``task`` (built with an :meth:`aligner`) in checkpoints; a stateful
        bolt starts on empty state."""
        part = bolt_part(
            task,
            self._lanes_of(task),
            self._topology,
            self._assignment,
            self._key_groups,
            self._new_state,
        )
        if part.scope is not None:
            self._stateful.append(part)
            settings = self._settings
            self._backlog_limit = changes_backlog_limit(
                settings.state_backend, settings.state_cache_bytes, len(self._stateful)
            )
        self._bolts[task.task_id] = part

    def _lanes_of(self, task: SpoutTask | BoltTask) -> list[Lane]:
        """Every output lane of ``task`` (barriers go down each)."""
        routes = task.collector.routes
        return [
            self.transfer.lane(task.task_id, stream, dest)
            for stream, route in routes.items()
            for dest in route.push
        ]

    # -- the executor's hooks -------------------------------------------------------------

    def accepts(self, epoch: Any) -> bool:
        """Whether a data frame stamped ``epoch`` belongs to this worker's epoch (those
        that do not are stale: only their checkpoint control goes in)."""
        if epoch == self.epoch:
            return True
        self.stats.stale_frames += 1
        return False

    def barrier(self, dest: int, src: int, stream: str, checkpoint: Any) -> list[list[Any]]:
        """Barrier ``checkpoint`` reached bolt task ``dest`` on (src, stream); return the
        groups it held back that may go in again (oldest first)."""
        part = self._bolts.get(dest)
        if part is None or type(checkpoint) is not int or self.paused:
            return []
        aligner = part.aligner
        if aligner.aligning is not None and checkpoint > aligner.aligning:
            held = aligner.give_up()  # a newer barrier overtook: the older one is gone
            self._aligning_since[dest] = self._clock()
            if aligner.arrive((src, stream), checkpoint):
                self._aligned(part, checkpoint)
            return held
        if aligner.aligning is None:
            self._aligning_since[dest] = self._clock()
        if not aligner.arrive((src, stream), checkpoint):
            return []
        self._aligned(part, checkpoint)
        return aligner.release()

    def hold(self, dest: int, group: list[Any]) -> list[list[Any]]:
        """Keep a group that arrived behind a barrier; past the limit give the checkpoint
        up and return every held group to run now."""
        aligner = self._bolts[dest].aligner
        aligner.hold(group, 0 if group[3] is None else len(group[3]))
        if aligner.held_tuples <= MAX_HELD_TUPLES:
            return []
        checkpoint = aligner.aligning
        held = aligner.give_up()
        self._aligning_since.pop(dest, None)
        if checkpoint is not None:
            self._send_done(checkpoint, dest, False)
            self._note(f"task {dest} declined checkpoint {checkpoint}: alignment held too much")
        return held

    def deliver(
        self, dest: int, stream: str, vals: list[Any], now: float, in_flight: InFlight
    ) -> bool:
        """Checkpoint control groups (``topology.state.checkpoint`` streams); always
        taken (True).  A rollback has ``in_flight`` drop what is queued."""
        host = self._host
        if dest == self.coordinator_task and host is not None:
            host.deliver(stream, vals, now)
        elif dest == self.system_task:
            for message in vals:
                if stream == ck.ROLLBACK:
                    self._rollback(int(message[0]), int(message[1]), now, in_flight)
                elif stream == ck.RESUME and int(message[0]) == self.epoch:
                    self.paused = False
        elif dest in self._spouts:
            for message in vals:
                epoch, checkpoint = int(message[0]), int(message[1])
                if epoch != self.epoch or self.paused:
                    continue
                if stream == ck.BEGIN:
                    self._spout_begin(self._spouts[dest], checkpoint)
                elif stream == ck.COMMIT:
                    self._spout_commit(self._spouts[dest], checkpoint)
        elif dest in self._bolts and stream == ck.COMMIT:
            for message in vals:
                if int(message[0]) == self.epoch and not self.paused:
                    complete_bolt(self._bolts[dest], int(message[1]))
        return True

    def poll(self, now: float) -> None:
        """Each turn: finished writes, the coordinator's timers, status while paused."""
        self.writer.poll()
        self._now = now
        if self._host is not None:
            self._host.tick(now)
        if self.paused and now >= self._next_status:
            self._next_status = now + ck.RESEND_SECS
            self._send(
                self.system_task, ck.STATUS, self.coordinator_task, [self.worker_index, self.epoch]
            )

    def tuple_failed(self, *_: Any) -> None:
        """A bolt failed a tuple: ask for a replay from the last checkpoint (once per epoch)."""
        if not self.paused and self._failed_epoch != self.epoch:
            self._failed_epoch = self.epoch
            self._send(
                self.system_task, ck.FAILED, self.coordinator_task, [self.worker_index, self.epoch]
            )

    def saturated(self) -> bool:
        """Whether the stateful tasks' changes not yet in a complete checkpoint (waiting
        for a snapshot, or snapshotted and not yet confirmed) pass
        :func:`changes_backlog_limit`: then spouts wait, so a state whose keys change
        faster than checkpoints store them slows the input down instead of filling memory."""
        backlog = 0
        for part in self._stateful:
            backlog += part.task.instance.state.backlog()  # type: ignore[attr-defined]
            for _, changes in part.unconfirmed:
                backlog += len(changes)
        return backlog > self._backlog_limit

    def close(self) -> None:
        """Let queued writes finish, then release the backend and the tasks' live state
        (a disk-backed one deletes its files: the checkpoints hold what matters)."""
        self.writer.close()
        self.backend.close()
        for part in self._stateful:
            part.task.instance.state.close()  # type: ignore[attr-defined]

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "epoch": self.epoch,
            "paused": self.paused,
            "snapshots": self.stats.snapshots,
            "declined": self.stats.declined,
            "rollbacks": self.stats.rollbacks,
            "stale_frames": self.stats.stale_frames,
            "restore_refused": self.stats.restore_refused,
            "waiting_acks": sum(p.epochs.waiting for p in self._spouts.values()),
        }
        if self.stats.last_reason:
            out["last_reason"] = self.stats.last_reason
        if self._host is not None:
            out["coordinator"] = self._host.status(self._now)
        return out

    # -- spouts ---------------------------------------------------------------------------

    def _spout_begin(self, part: SpoutPart, checkpoint: int) -> None:
        entries = spout_snapshot(part, checkpoint)
        if part.held is not None:  # a rescale it cannot follow: keep what it had
            entries = list(part.held.items())
        elif part.replayable:
            try:
                entries.append(spout_position(part))
            except Exception as exc:
                part.task.collector.report_error(exc)
                self._send_done(checkpoint, part.task.task_id, False)
                return
        for lane in part.lanes:
            lane.mark_barrier(checkpoint)
        self._store(checkpoint, [(part.scope, entries)], part.task.task_id)

    def _spout_commit(self, part: SpoutPart, checkpoint: int) -> None:
        acked = part.epochs.commit(checkpoint)
        if acked:
            part.task.ack_all(acked)
        complete_spout(part, checkpoint)

    # -- bolts ----------------------------------------------------------------------------

    def _aligned(self, part: BoltPart, checkpoint: int) -> None:
        """Every input delivered ``checkpoint``: ``pre_checkpoint``, snapshot, then
        forward the barrier.  First the attempts left at the task's inputs waiting for
        another one run (they came before the barrier:
        :mod:`~topology.runtime.tasks.failures`).  A task whose ``pre_checkpoint`` raised
        declines the checkpoint and takes no snapshot (its changed keys go into the next
        one); the barrier goes on, so the tasks after it do not hold their inputs for
        nothing."""
        task = part.task.task_id
        since = self._aligning_since.pop(task, None)
        alignment_us = 0 if since is None else max(0, int((self._clock() - since) * 1e6))
        part.task.settle_failures()
        if not prepare_bolt(part, checkpoint):
            self._send_done(checkpoint, part.task.task_id, False)
            self._note(f"task {part.task.task_id} declined checkpoint {checkpoint}: hook raised")
        else:
            writes = bolt_snapshot(part, checkpoint, self._wall_clock())
            if writes:
                self._store(checkpoint, writes, task, alignment_us)
            else:  # nothing to store: the barrier passed it (coordinator.checkpoint_tasks)
                self._send_done(checkpoint, task, True, alignment_us)
        for lane in part.lanes:
            lane.mark_barrier(checkpoint)

    # -- storing ------------------------------------------------------------------------------

    def _store(self, checkpoint: int, writes: Writes, task: int, alignment_us: int = 0) -> None:
        """Write each (scope, entries) of one task's snapshot, then report it stored (with
        its size, counted on the writer's thread)."""
        epoch, backend = self.epoch, self.backend

        def write() -> int:
            for scope, entries in writes:
                backend.write(checkpoint, epoch, scope, entries)
            return writes_size(writes)

        def stored(size: Any, error: BaseException | None) -> None:
            if error is not None:
                self._report(
                    ck.COORDINATOR_COMPONENT, task, f"storing checkpoint {checkpoint}: {error!r}"
                )
            else:
                self.stats.snapshots += 1
            if epoch == self.epoch:
                ok = error is None
                self._send_done(checkpoint, task, ok, alignment_us, size if ok else 0)

        self.writer.submit(write, stored)

    def _send_done(
        self, checkpoint: int, task: int, ok: bool, alignment_us: int = 0, size: int = 0
    ) -> None:
        if not ok:
            self.stats.declined += 1
        message = [self.epoch, checkpoint, task, ok, int(alignment_us), int(size)]
        self._send(self.system_task, ck.DONE, self.coordinator_task, message)

    # -- rollback ------------------------------------------------------------------------

    def _rollback(self, epoch: int, checkpoint: int, now: float, in_flight: InFlight) -> None:
        if epoch <= self.epoch:
            if epoch == self.epoch and self.paused:
                self._next_status = now  # report again: the coordinator may have missed it
            return
        fresh = self.epoch == 0
        self._epoch.epoch = epoch  # data frames sent from now on carry it
        self.paused = True
        self._next_status = now
        if not fresh:
            self.stats.rollbacks += 1
        in_flight.drop_in_flight()
        self._aligning_since.clear()
        for part in self._bolts.values():
            part.aligner.reset()
            if part.stateful:
                self.stats.restore_refused += restore_bolt(self.backend, part, checkpoint)
        for spout in self._spouts.values():
            self.stats.restore_refused += restore_spout(self.backend, spout, checkpoint)

    # -- plumbing -------------------------------------------------------------------------

    def _send(self, src: int, stream: str, dest: int, message: list[Any]) -> None:
        lane = self.transfer.lane(src, stream, dest)
        lane.push_val(message)
        lane.push_meta(None)

    def _note(self, reason: str) -> None:
        self.stats.last_reason = reason
