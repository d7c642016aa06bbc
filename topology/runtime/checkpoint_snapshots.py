"""What one task puts in a checkpoint, and how it gets it back (snapshot and restore).

A bolt task's part (:class:`BoltPart`) is its key-value state's changed keys, under the
component's scope when every input is a fields grouping (keys then move with the tasks
that own them) or under the task's own scope otherwise, and a windowed bolt's window
contents.  A spout task's part (:class:`SpoutPart`) is the msg ids the checkpoint covers
and, for a :class:`~topology.stateful.ReplayableSpout`, its position.  Around them, the
tasks' hooks: a stateful bolt's ``pre_checkpoint`` right before its snapshot
(:func:`prepare_bolt`), and ``checkpoint_complete`` once a checkpoint is committed
(:func:`complete_bolt`, :func:`complete_spout`).

The flow around them — barriers, alignment, writing, reporting — is
:class:`~.checkpointing.WorkerCheckpoints`'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acker import FailReason
from topology.assignment import Assignment
from topology.spec import Topology
from topology.state import checkpoint as ck
from topology.state.backends import StateBackend, decode_value, encode_value
from topology.state.kv import KeyValueState, key_owner
from topology.stateful import ReplayableSpout, StatefulBolt
from topology.tuple import Tuple
from topology.windows.bolt import WindowedBolt

from .serialization import encodable
from .tasks import BoltTask, SpoutTask
from .transfer import Lane

#: A task's snapshot: (scope, [(key, value), ...]) per scope it writes.
Writes = list[tuple[str, list[Any]]]


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


def has_state(instance: Any) -> bool:
    """Whether a bolt's snapshot is part of checkpoints (key-value state, or windows)."""
    return isinstance(instance, StatefulBolt | WindowedBolt)


@dataclass
class BoltPart:
    """A bolt task in checkpoints: its aligner's task, output lanes and scopes."""

    task: BoltTask
    lanes: list[Lane]
    scope: str | None = None  # the key-value state's; None: no key-value state
    keep: Callable[[bytes], bool] = lambda key: True
    windows_scope: str | None = None  # a windowed bolt's window contents
    prepared: int = 0  # the last checkpoint this task snapshotted (after pre_checkpoint)
    completed: int = 0  # the last checkpoint it heard committed
    #: The key-value changes of its snapshots not known committed yet, (checkpoint, changes)
    #: oldest first: written again with the next snapshot, so a checkpoint abandoned after
    #: this task stored it loses nothing (the backend drops what it staged).
    unconfirmed: list[tuple[int, list[Any]]] = field(default_factory=list)

    @property
    def stateful(self) -> bool:
        return self.scope is not None or self.windows_scope is not None

    @property
    def aligner(self) -> ck.BarrierAligner:
        aligner = self.task.aligner
        assert aligner is not None  # a checkpointed worker builds every bolt with one
        return aligner


@dataclass
class SpoutPart:
    """A spout task in checkpoints: its epochs, output lanes and scope."""

    task: SpoutTask
    lanes: list[Lane]
    scope: str
    epochs: ck.SpoutEpochs
    replayable: bool
    initial: Any = None
    restored_once: bool = False
    completed: int = 0  # the last checkpoint its checkpoint_complete was called for


def bolt_part(
    task: BoltTask, lanes: list[Lane], topology: Topology, assignment: Assignment
) -> BoltPart:
    """``task``'s part, its state's scopes chosen; a stateful bolt starts on empty state."""
    part = BoltPart(task, lanes)
    instance = task.instance
    index = task.context.task_index
    if isinstance(instance, StatefulBolt):
        if keyed_inputs(topology, task.component):
            count = len(assignment.component_tasks[task.component])
            part.scope = task.component
            part.keep = lambda key, i=index, n=count: _owned(key, i, n)  # type: ignore[misc]
        else:
            part.scope = spout_scope(task.component, index)
        instance.state = KeyValueState()  # the author's attribute (StatefulBolt.state)
    if isinstance(instance, WindowedBolt):
        part.windows_scope = f"{spout_scope(task.component, index)}/windows"
    return part


def spout_part(task: SpoutTask, lanes: list[Lane]) -> SpoutPart:
    """``task``'s part (its collector was given the epochs it keeps)."""
    epochs = task.collector.epochs
    assert epochs is not None, "a checkpointed worker gives every spout collector epochs"
    return SpoutPart(
        task,
        lanes,
        spout_scope(task.component, task.context.task_index),
        epochs,
        isinstance(task.instance, ReplayableSpout),
    )


# -- snapshots ------------------------------------------------------------------------------


def bolt_snapshot(part: BoltPart, checkpoint: int) -> Writes:
    """A bolt task's changed keys (since the last checkpoint it heard committed) and window
    contents (nothing: a stateless bolt)."""
    writes: Writes = []
    instance: Any = part.task.instance
    if part.scope is not None:
        changes = instance.state.take_changes()
        if part.unconfirmed:
            merged = dict(e for _, earlier in part.unconfirmed for e in earlier)
            merged.update(changes)
            writes.append((part.scope, list(merged.items())))
        else:
            writes.append((part.scope, changes))
        part.unconfirmed.append((checkpoint, changes))
    if part.windows_scope is not None:
        blob = encode_value(instance.snapshot_windows(_tuple_data))
        writes.append((part.windows_scope, [(b"windows", blob)]))
    return writes


def prepare_bolt(part: BoltPart, checkpoint: int) -> bool:
    """A stateful bolt task's ``pre_checkpoint(checkpoint)``, before its snapshot; False
    (the error reported as the component's) when it raised: the task declines."""
    instance = part.task.instance
    if isinstance(instance, StatefulBolt):
        try:
            instance.pre_checkpoint(checkpoint)
        except Exception as exc:
            part.task.collector.report_error(exc)
            return False
    part.prepared = checkpoint
    return True


def complete_bolt(part: BoltPart, checkpoint: int) -> None:
    """A bolt task heard that ``checkpoint`` is committed: its changes up to it are stored
    for good; its ``checkpoint_complete``, at most once per checkpoint, increasing, and only
    for one it snapshotted itself."""
    instance = part.task.instance
    part.unconfirmed = [u for u in part.unconfirmed if u[0] > checkpoint]
    if isinstance(instance, StatefulBolt) and part.completed < checkpoint <= part.prepared:
        _completed(part, checkpoint)


def complete_spout(part: SpoutPart, checkpoint: int) -> None:
    """A replayable spout task's ``checkpoint_complete`` (after the acks of ``checkpoint``),
    at most once per checkpoint, increasing."""
    instance = part.task.instance
    if isinstance(instance, ReplayableSpout) and checkpoint > part.completed:
        _completed(part, checkpoint)


def _completed(part: BoltPart | SpoutPart, checkpoint: int) -> None:
    """Call the task's ``checkpoint_complete(checkpoint)`` and note it (errors reported)."""
    part.completed = checkpoint
    try:
        part.task.instance.checkpoint_complete(checkpoint)  # type: ignore[union-attr]
    except Exception as exc:
        part.task.collector.report_error(exc)


def spout_snapshot(part: SpoutPart, checkpoint: int) -> list[tuple[bytes, bytes]]:
    """Close the spout task's epoch at ``checkpoint``: the msg ids the checkpoint covers."""
    ids = part.epochs.begin(checkpoint)
    return [(b"pending", encode_value([i for i in ids if encodable(i)]))]


def spout_position(part: SpoutPart) -> tuple[bytes, bytes]:
    """A replayable spout task's position (raises what its ``position`` raised)."""
    position = part.task.instance.position()  # type: ignore[attr-defined]
    return (b"position", encode_value(position))


# -- restoring ------------------------------------------------------------------------------


def restore_bolt(backend: StateBackend, part: BoltPart, checkpoint: int) -> None:
    """Give a stateful bolt task its state and windows as of ``checkpoint`` (0: none)."""
    instance: Any = part.task.instance
    task = part.task
    if part.windows_scope is not None:
        scope = part.windows_scope
        stored = backend.read(checkpoint, scope, lambda key: True) if checkpoint else {}
        data = decode_value(stored[b"windows"]) if b"windows" in stored else None
        instance.restore_windows(data, lambda d: Tuple(d[0], task.source(d[1], d[2])))
    if part.scope is None:
        return
    entries = backend.read(checkpoint, part.scope, part.keep) if checkpoint else {}
    state = KeyValueState.restore(entries)
    part.unconfirmed = []
    try:
        instance.init_state(state)
    except Exception as exc:
        task.collector.report_error(exc)
    instance.state = state


def restore_spout(backend: StateBackend, part: SpoutPart, checkpoint: int) -> None:
    """Take a spout task back to ``checkpoint``: ack what it covered, then seek a
    replayable spout to its position, or fail the msg ids after it (they replay)."""
    task = part.task
    stored = backend.read(checkpoint, part.scope, lambda key: True) if checkpoint else {}
    acked, failed = part.epochs.roll_back(checkpoint)
    if acked:
        task.ack_all(acked)
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
        task.failed(msg_id, reason)


def _tuple_data(tup: Tuple) -> list[Any]:
    """A held tuple as checkpoint data (values, source task, stream)."""
    return [tup.values, tup.source_task, tup.stream]


def _owned(key: bytes, index: int, tasks: int) -> bool:
    return key_owner(decode_value(key), tasks) == index
