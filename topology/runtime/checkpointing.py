"""One worker's part in checkpoints and recovery (the protocol: :mod:`topology.state.checkpoint`).

:class:`WorkerCheckpoints` exists only in a checkpointed topology (one with a
:class:`~topology.StatefulBolt`).  The executor hands it barriers, checkpoint control
groups and each turn's clock; it

* keeps the worker's recovery ``epoch`` (stamped on every data frame it sends; frames of
  other epochs are dropped on arrival) and ``paused`` (no spout or tick runs until the
  coordinator resumes the epoch);
* at ``begin(k)`` makes a spout task close its epoch, store its position and the msg ids
  the checkpoint will cover, and put barrier ``k`` on every output lane;
* aligns every bolt task on its input channels, snapshots stateful tasks' changed keys and
  forwards the barrier;
* writes snapshots through a :class:`~topology.state.writer.StateWriter` and reports each
  stored one to the coordinator;
* on ``rollback(epoch, k)`` drops what is in flight, restores state and spout positions
  from checkpoint ``k`` (or fails the spouts' msg ids after it, so they replay), pauses and
  reports;
* hosts the :class:`~topology.state.checkpoint.CheckpointCoordinator` when the
  ``__checkpoint`` task is on this worker, and carries out its actions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acker import FailReason
from topology.assignment import Assignment
from topology.spec import Topology
from topology.state import checkpoint as ck
from topology.state.backends import StateBackend, decode_value, encode_value
from topology.state.kv import KeyValueState, key_owner
from topology.state.writer import StateWriter
from topology.stateful import ReplayableSpout, StatefulBolt
from topology.tuple import Tuple
from topology.windows.bolt import WindowedBolt

from .collector import ErrorReport
from .serialization import encodable
from .tasks import BoltTask, SpoutTask
from .transfer import Lane, Transfer

#: Tuples a bolt task may hold back while it aligns, per input channel waiting; past it the
#: task declines the checkpoint and lets them in (the next checkpoint tries again).
MAX_HELD_TUPLES = 100_000


def spout_scope(component: str, index: int) -> str:
    return f"{component}#{index}"


def keyed_inputs(topology: Topology, component: str) -> bool:
    """Whether every input of ``component`` is a fields grouping (its state is keyed)."""
    inputs = topology.components[component].inputs
    return bool(inputs) and all(i.grouping.kind == "fields" for i in inputs)


def input_channels(
    topology: Topology, assignment: Assignment, component: str
) -> frozenset[ck.Channel]:
    """Every (source task, stream) a task of ``component`` receives tuples from."""
    return frozenset(
        (task, inp.stream)
        for inp in topology.components[component].inputs
        for task in assignment.component_tasks[inp.component]
    )


@dataclass
class _BoltPart:
    task: BoltTask
    lanes: list[Lane]
    scope: str | None = None  # the key-value state's; None: no key-value state
    keep: Callable[[bytes], bool] = lambda key: True
    windows_scope: str | None = None  # a windowed bolt's window contents

    @property
    def stateful(self) -> bool:
        return self.scope is not None or self.windows_scope is not None


@dataclass
class _SpoutPart:
    task: SpoutTask
    lanes: list[Lane]
    scope: str
    epochs: ck.SpoutEpochs
    replayable: bool
    initial: Any = None
    restored_once: bool = False


@dataclass
class CheckpointStats:
    """What the worker's status shows of checkpoints."""

    snapshots: int = 0
    declined: int = 0
    rollbacks: int = 0
    stale_frames: int = 0
    last_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class WorkerCheckpoints:
    """See the module docstring.  Everything runs on the executor thread."""

    def __init__(
        self,
        worker_index: int,
        topology: Topology,
        assignment: Assignment,
        spouts: list[SpoutTask],
        bolts: dict[int, BoltTask],
        transfer: Transfer,
        backend: StateBackend,
        writer: StateWriter,
        report: ErrorReport,
        conf: dict[str, Any],
        now: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.worker_index = worker_index
        self.system_task = -1 - worker_index
        self.epoch = 0
        self.paused = True
        self.transfer = transfer
        transfer.epoch = 0
        self.backend = backend
        self.writer = writer
        self._report = report
        self._clock = clock
        self.stats = CheckpointStats()
        self._failed_epoch = -1
        self._next_status = now
        self._now = now
        #: Set by the executor: drops queued data (inbound, lanes, held frames).
        self.drop_in_flight: Callable[[], None] = lambda: None
        [self.coordinator_task] = assignment.component_tasks[ck.COORDINATOR_COMPONENT]
        self.all_spout_tasks = [
            t
            for c in topology.components.values()
            if c.kind == "spout"
            for t in assignment.component_tasks[c.id]
        ]
        self._bolts: dict[int, _BoltPart] = {}
        for task_id, task in bolts.items():
            task.aligner = ck.BarrierAligner(input_channels(topology, assignment, task.component))
            part = self._bolts[task_id] = _BoltPart(task, self._lanes_of(task))
            if isinstance(task.instance, StatefulBolt):
                index = task.context.task_index
                if keyed_inputs(topology, task.component):
                    count = len(assignment.component_tasks[task.component])
                    part.scope = task.component
                    part.keep = lambda key, i=index, n=count: _owned(key, i, n)  # type: ignore[misc]
                else:
                    part.scope = spout_scope(task.component, index)
                task.instance.state = KeyValueState()
            if isinstance(task.instance, WindowedBolt):
                index = task.context.task_index
                part.windows_scope = f"{spout_scope(task.component, index)}/windows"
            task.collector.on_fail = self.tuple_failed
        self._spouts: dict[int, _SpoutPart] = {}
        max_pending = conf.get("topology.max.spout.pending")
        for spout in spouts:
            epochs = ck.SpoutEpochs(cap=max_pending)
            spout.collector.epochs = epochs
            self._spouts[spout.task_id] = _SpoutPart(
                spout,
                self._lanes_of(spout),
                spout_scope(spout.component, spout.context.task_index),
                epochs,
                isinstance(spout.instance, ReplayableSpout),
            )
        self.coordinator: ck.CheckpointCoordinator | None = None
        if assignment.worker_of()[self.coordinator_task] == worker_index:
            stateful = [
                t
                for c in topology.components.values()
                if has_state(c.instance)
                for t in assignment.component_tasks[c.id]
            ]
            self.coordinator = ck.CheckpointCoordinator(
                assignment.num_workers,
                frozenset(self.all_spout_tasks) | frozenset(stateful),
                float(conf["topology.state.checkpoint.interval.ms"]) / 1000.0,
                float(conf["topology.state.checkpoint.timeout.secs"]),
                now,
                incarnation=backend.reserve(),
                restore=backend.latest(),
            )

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
        aligner = part.task.aligner
        assert aligner is not None
        if aligner.aligning is not None and checkpoint > aligner.aligning:
            held = aligner.give_up()  # a newer barrier overtook: the older one is gone
            if aligner.arrive((src, stream), checkpoint):
                self._aligned(part, checkpoint)
            return held
        if not aligner.arrive((src, stream), checkpoint):
            return []
        self._aligned(part, checkpoint)
        return aligner.release()

    def hold(self, dest: int, group: list[Any]) -> list[list[Any]]:
        """Keep a group that arrived behind a barrier; past the limit give the checkpoint
        up and return every held group to run now."""
        aligner = self._bolts[dest].task.aligner
        assert aligner is not None
        aligner.hold(group, 0 if group[3] is None else len(group[3]))
        if aligner.held_tuples <= MAX_HELD_TUPLES:
            return []
        checkpoint = aligner.aligning
        held = aligner.give_up()
        if checkpoint is not None:
            self._send_done(checkpoint, dest, False)
            self._note(f"task {dest} declined checkpoint {checkpoint}: alignment held too much")
        return held

    def deliver(self, dest: int, stream: str, vals: list[Any], now: float) -> None:
        """Checkpoint control groups (``topology.state.checkpoint`` streams)."""
        if dest == self.coordinator_task and self.coordinator is not None:
            for message in vals:
                self._carry_out(self._to_coordinator(stream, message, now))
        elif dest == self.system_task:
            for message in vals:
                if stream == ck.ROLLBACK:
                    self._rollback(int(message[0]), int(message[1]), now)
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

    def poll(self, now: float) -> None:
        """Each turn: finished writes, the coordinator's timers, status while paused."""
        self.writer.poll()
        self._now = now
        if self.coordinator is not None:
            self._carry_out(self.coordinator.tick(now))
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

    def close(self) -> None:
        """Let queued writes finish, then release the backend."""
        self.writer.close()
        self.backend.close()

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "epoch": self.epoch,
            "paused": self.paused,
            "snapshots": self.stats.snapshots,
            "declined": self.stats.declined,
            "rollbacks": self.stats.rollbacks,
            "stale_frames": self.stats.stale_frames,
            "waiting_acks": sum(p.epochs.waiting for p in self._spouts.values()),
        }
        if self.stats.last_reason:
            out["last_reason"] = self.stats.last_reason
        coordinator = self.coordinator
        if coordinator is not None:
            out["coordinator"] = {
                "last_complete": coordinator.restore,
                "completed": coordinator.completed,
                "abandoned": coordinator.abandoned,
                "recoveries": coordinator.recoveries,
                "last_duration_secs": round(coordinator.last_duration, 3),
                "last_complete_age_secs": (
                    None
                    if coordinator.completed_at is None
                    else round(max(0.0, self._now - coordinator.completed_at), 1)
                ),
                "interval_secs": coordinator.interval,
                "recovering": coordinator.recovering,
            }
        return out

    # -- spouts ---------------------------------------------------------------------------

    def _spout_begin(self, part: _SpoutPart, checkpoint: int) -> None:
        ids = part.epochs.begin(checkpoint)
        entries = [(b"pending", encode_value([i for i in ids if encodable(i)]))]
        if part.replayable:
            try:
                position = part.task.instance.position()  # type: ignore[attr-defined]
                entries.append((b"position", encode_value(position)))
            except Exception as exc:
                part.task.collector.report_error(exc)
                self._send_done(checkpoint, part.task.task_id, False)
                return
        for lane in part.lanes:
            lane.mark_barrier(checkpoint)
        self._store(checkpoint, [(part.scope, entries)], part.task.task_id)

    def _spout_commit(self, part: _SpoutPart, checkpoint: int) -> None:
        acked = part.epochs.commit(checkpoint)
        if acked:
            part.task._ack_all(acked)

    # -- bolts ----------------------------------------------------------------------------

    def _aligned(self, part: _BoltPart, checkpoint: int) -> None:
        """Every input delivered ``checkpoint``: snapshot, then forward the barrier."""
        writes = []
        instance: Any = part.task.instance
        if part.scope is not None:
            writes.append((part.scope, instance.state.take_changes()))
        if part.windows_scope is not None:
            blob = encode_value(instance.snapshot_windows(_tuple_data))
            writes.append((part.windows_scope, [(b"windows", blob)]))
        if writes:
            self._store(checkpoint, writes, part.task.task_id)
        for lane in part.lanes:
            lane.mark_barrier(checkpoint)

    # -- storing ------------------------------------------------------------------------------

    def _store(self, checkpoint: int, writes: list[tuple[str, list[Any]]], task: int) -> None:
        """Write each (scope, entries) of one task's snapshot, then report it stored."""
        epoch, backend = self.epoch, self.backend

        def write() -> None:
            for scope, entries in writes:
                backend.write(checkpoint, epoch, scope, entries)

        def stored(_: Any, error: BaseException | None) -> None:
            if error is not None:
                self._report("__checkpoint", task, f"storing checkpoint {checkpoint}: {error!r}")
            else:
                self.stats.snapshots += 1
            if epoch == self.epoch:
                self._send_done(checkpoint, task, error is None)

        self.writer.submit(write, stored)

    def _send_done(self, checkpoint: int, task: int, ok: bool) -> None:
        if not ok:
            self.stats.declined += 1
        self._send(
            self.system_task, ck.DONE, self.coordinator_task, [self.epoch, checkpoint, task, ok]
        )

    # -- rollback ------------------------------------------------------------------------

    def _rollback(self, epoch: int, checkpoint: int, now: float) -> None:
        if epoch <= self.epoch:
            if epoch == self.epoch and self.paused:
                self._next_status = now  # report again: the coordinator may have missed it
            return
        fresh = self.epoch == 0
        self.epoch = epoch
        self.transfer.epoch = epoch
        self.paused = True
        self._next_status = now
        if not fresh:
            self.stats.rollbacks += 1
        self.drop_in_flight()
        for part in self._bolts.values():
            assert part.task.aligner is not None
            part.task.aligner.reset()
            if part.stateful:
                self._restore_bolt(part, checkpoint)
        for spout in self._spouts.values():
            self._restore_spout(spout, checkpoint)

    def _restore_bolt(self, part: _BoltPart, checkpoint: int) -> None:
        instance: Any = part.task.instance
        task = part.task
        if part.windows_scope is not None:
            read = self.backend.read
            stored = read(checkpoint, part.windows_scope, lambda key: True) if checkpoint else {}
            data = decode_value(stored[b"windows"]) if b"windows" in stored else None
            instance.restore_windows(data, lambda d: Tuple(d[0], task.source(d[1], d[2])))
        if part.scope is None:
            return
        entries = self.backend.read(checkpoint, part.scope, part.keep) if checkpoint else {}
        state = KeyValueState.restore(entries)
        try:
            instance.init_state(state)
        except Exception as exc:
            task.collector.report_error(exc)
        instance.state = state

    def _restore_spout(self, part: _SpoutPart, checkpoint: int) -> None:
        task = part.task
        stored = self.backend.read(checkpoint, part.scope, lambda key: True) if checkpoint else {}
        acked, failed = part.epochs.roll_back(checkpoint)
        if acked:
            task._ack_all(acked)
        first = not part.restored_once
        part.restored_once = True
        if part.replayable:
            instance: Any = task.instance
            try:
                if first and not checkpoint:
                    part.initial = instance.position()  # where a rollback to nothing goes
                elif b"position" in stored:
                    instance.seek(decode_value(stored[b"position"]))
                elif not first:
                    instance.seek(part.initial)
            except Exception as exc:
                task.collector.report_error(exc)
            return
        if first:
            pending = decode_value(stored[b"pending"]) if b"pending" in stored else []
            part.epochs.replayed = {ck.hashable(i) for i in pending}
            return
        reason = FailReason(
            "rollback", task.component, task.task_id, f"replayed from checkpoint {checkpoint}"
        )
        for msg_id in failed:
            task._failed(msg_id, reason)

    # -- the coordinator ------------------------------------------------------------------

    def _to_coordinator(self, stream: str, message: list[Any], now: float) -> list[ck.Action]:
        coordinator = self.coordinator
        assert coordinator is not None
        if stream == ck.DONE:
            epoch, checkpoint, task, ok = message
            return coordinator.done(int(epoch), int(checkpoint), int(task), bool(ok), now)
        if stream == ck.STATUS:
            return coordinator.status(int(message[0]), int(message[1]), now)
        if stream == ck.FAILED:
            return coordinator.failed(int(message[1]), now)
        return []

    def _carry_out(self, actions: list[ck.Action]) -> None:
        src = self.coordinator_task
        for action in actions:
            if isinstance(action, ck.Begin | ck.Commit):
                stream = ck.BEGIN if isinstance(action, ck.Begin) else ck.COMMIT
                for spout in self.all_spout_tasks:
                    self._send(src, stream, spout, [action.epoch, action.checkpoint])
            elif isinstance(action, ck.RollBack):
                for worker in action.workers:
                    self._send(src, ck.ROLLBACK, -1 - worker, [action.epoch, action.checkpoint])
            elif isinstance(action, ck.Resume):
                for worker in action.workers:
                    self._send(src, ck.RESUME, -1 - worker, [action.epoch])
            elif isinstance(action, ck.Store):
                self._complete(action)
            elif isinstance(action, ck.Abandon):
                self._note(f"checkpoint {action.checkpoint} abandoned: {action.reason}")

    def _complete(self, action: ck.Store) -> None:
        backend, coordinator = self.backend, self.coordinator
        assert coordinator is not None

        def stored(_: Any, error: BaseException | None) -> None:
            if error is not None:
                self._report(
                    "__checkpoint",
                    self.coordinator_task,
                    f"completing checkpoint {action.checkpoint}: {error!r}",
                )
            self._carry_out(coordinator.stored(action.checkpoint, error is None, self._clock()))

        self.writer.submit(
            lambda: backend.complete(action.checkpoint, action.epoch, action.info), stored
        )

    # -- plumbing -------------------------------------------------------------------------

    def _send(self, src: int, stream: str, dest: int, message: list[Any]) -> None:
        lane = self.transfer.lane(src, stream, dest)
        lane.push_val(message)
        lane.push_meta(None)

    def _note(self, reason: str) -> None:
        self.stats.last_reason = reason


def has_state(instance: Any) -> bool:
    """Whether a bolt's snapshot is part of checkpoints (key-value state, or windows)."""
    return isinstance(instance, StatefulBolt | WindowedBolt)


def _tuple_data(tup: Tuple) -> list[Any]:
    """A held tuple as checkpoint data (values, source task, stream)."""
    return [tup.values, tup.source_task, tup.stream]


def _owned(key: bytes, index: int, tasks: int) -> bool:
    return key_owner(decode_value(key), tasks) == index
