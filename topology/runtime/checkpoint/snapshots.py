"""What one task puts in a checkpoint, and how it gets it back (snapshot and restore).

A bolt task's part (:class:`BoltPart`) is its key-value state's changed keys, under the
component's scope when every input is a fields grouping (keys then move with the tasks that
own them) or under the task's own scope otherwise, and a windowed bolt's changed window
slots (:mod:`~topology.runtime.checkpoint.window_snapshots`).  A spout task's part
(:class:`SpoutPart`) is the msg ids the checkpoint covers and, for a
:class:`~topology.stateful.ReplayableSpout`, its position.  Around them, the tasks' hooks: a
stateful bolt's ``pre_checkpoint`` right before its snapshot (:func:`prepare_bolt`), and
``checkpoint_complete`` once a checkpoint is committed (:func:`complete_bolt`,
:func:`complete_spout`).

The flow around them — barriers, alignment, writing, reporting — is
:class:`~topology.runtime.checkpoint.worker.WorkerCheckpoints`'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acker import FailReason
from topology.assignment import Assignment
from topology.spec import Topology
from topology.state import checkpoint as ck
from topology.state.backends import StateBackend, encode_value
from topology.state.kv import KeyValueState, owned_groups, single_field_grouping, stored_group
from topology.state.merges import Combine, merge_function
from topology.stateful import ReplayableSpout, StatefulBolt
from topology.tuple import Tuple
from topology.windows.bolt import WindowedBolt

from ..net.codec import encodable
from ..net.transfer import Lane
from ..tasks.task import BoltTask, SpoutTask
from .restored_state import (
    MAX_RESTORED_TASKS,
    Refusals,
    Refused,
    checked_entries,
    decoded,
    read_all_or_report,
    read_or_report,
)
from .state_layout import keyed_inputs, keyed_scope, task_scope
from .window_snapshots import (
    WindowPart,
    confirm_windows,
    restore_windows,
    window_part,
    windows_snapshot,
)

#: A task's snapshot: (scope, [(key, value), ...]) per scope it writes.
Writes = list[tuple[str, list[Any]]]
#: What a spout task stores, and the type each value decodes to.
_SPOUT_KEYS: dict[bytes, type | tuple[type, ...]] = {
    b"position": object,
    b"pending": list,
    b"tasks": int,
}
#: Expired keys a task's snapshot drops at most (``topology.state.ttl.secs``; the rest
#: go at later checkpoints, or when read).
EXPIRE_PER_CHECKPOINT = 10_000
#: Makes a task's empty live key-value state: its arguments name the task's state
#: (``<scope>#<task index>``, unique in the topology) and say whether its keys are one
#: grouping field's values (:func:`topology.state.kv.key_fields`).
StateFactory = Callable[[str, bool], Any]


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
    #: Makes the task's empty key-value state (the live state backend's).
    new_state: StateFactory = lambda name, single: KeyValueState(single_field=single)
    #: Whether the keyed state's keys are one grouping field's values.
    single_field: bool = False
    windows: WindowPart | None = None  # a windowed bolt's windows (window_snapshots)
    prepared: int = 0  # the last checkpoint this task snapshotted (after pre_checkpoint)
    completed: int = 0  # the last checkpoint it heard committed
    #: The key-value changes of its snapshots not known committed yet, (checkpoint, changes)
    #: oldest first: written again with the next snapshot, so a checkpoint abandoned after
    #: this task stored it loses nothing (the backend drops what it staged).
    unconfirmed: list[tuple[int, list[Any]]] = field(default_factory=list)

    @property
    def stateful(self) -> bool:
        return self.scope is not None or self.windows is not None

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
    uid: str
    epochs: ck.SpoutEpochs
    replayable: bool
    initial: Any = None
    restored_once: bool = False
    completed: int = 0  # the last checkpoint its checkpoint_complete was called for
    #: A spout held after a rescale it cannot follow: the entries it stores unchanged at
    #: every checkpoint (its own from before the rescale), else None.
    held: dict[bytes, bytes] | None = None

    @property
    def index(self) -> int:
        return self.task.context.task_index

    @property
    def tasks(self) -> int:
        """How many tasks the spout has now."""
        return len(self.task.context.component_tasks())

    @property
    def scope(self) -> str:
        return task_scope(self.uid, self.index)


def bolt_part(
    task: BoltTask,
    lanes: list[Lane],
    topology: Topology,
    assignment: Assignment,
    key_groups: int,
    new_state: StateFactory | None = None,
) -> BoltPart:
    """``task``'s part, its state's scopes chosen (by the component's uid: state_layout);
    a stateful bolt starts on empty state.  Keyed state is read back by key group: the
    task keeps the groups it owns among the component's tasks now, whatever their number
    when the state was written."""
    part = BoltPart(task, lanes)
    part.new_state = new_state or (
        lambda name, single: KeyValueState(None, key_groups, single)  # no live backend given
    )
    instance = task.instance
    index = task.context.task_index
    uid = topology.components[task.component].state_id
    if isinstance(instance, StatefulBolt):
        part.new_state = _combining(part.new_state, merge_function(instance))
        if keyed_inputs(topology, task.component):
            count = len(assignment.component_tasks[task.component])
            groups = owned_groups(index, key_groups, count)
            part.scope = keyed_scope(uid)
            part.single_field = single_field_grouping(
                topology.components[task.component].data_inputs
            )
            part.keep = lambda key, g=groups: stored_group(key) in g  # type: ignore[misc]
        else:
            part.scope = task_scope(uid, index)
        instance.state = part.new_state(f"{part.scope}#{index}", part.single_field)
    if isinstance(instance, WindowedBolt):
        tasks = len(assignment.component_tasks[task.component])
        part.windows = window_part(topology, task.component, index, tasks, key_groups)
    return part


def _combining(new_state: StateFactory, combine: Combine) -> StateFactory:
    """``new_state`` whose states merge with ``combine`` (the bolt's ``state_merge``)."""

    def made(name: str, single_field: bool) -> Any:
        state = new_state(name, single_field)
        state.combine = combine
        return state

    return made


def spout_part(task: SpoutTask, lanes: list[Lane], topology: Topology) -> SpoutPart:
    """``task``'s part (its collector was given the epochs it keeps)."""
    epochs = task.collector.epochs
    assert epochs is not None, "a checkpointed worker gives every spout collector epochs"
    return SpoutPart(
        task,
        lanes,
        topology.components[task.component].state_id,
        epochs,
        isinstance(task.instance, ReplayableSpout),
    )


# -- snapshots ------------------------------------------------------------------------------


def bolt_snapshot(part: BoltPart, checkpoint: int, now: float) -> Writes:
    """A bolt task's changed keys (since the last checkpoint it heard committed; first up
    to :data:`EXPIRE_PER_CHECKPOINT` keys whose TTL passed by ``now`` are dropped) and
    window contents (nothing: a stateless bolt)."""
    writes: Writes = []
    instance: Any = part.task.instance
    if part.scope is not None:
        instance.state.expire(now, EXPIRE_PER_CHECKPOINT)
        changes = instance.state.take_changes()
        for error in instance.state.take_merge_errors():
            part.task.collector.report_error(error)
        if part.unconfirmed:
            merged = dict(e for _, earlier in part.unconfirmed for e in earlier)
            merged.update(changes)
            writes.append((part.scope, list(merged.items())))
        else:
            writes.append((part.scope, changes))
        part.unconfirmed.append((checkpoint, changes))
    if part.windows is not None:
        writes.extend(windows_snapshot(instance, part.windows, checkpoint, _tuple_data))
    return writes


def writes_size(writes: Writes) -> int:
    """Bytes of a snapshot's entries, keys and values as stored (a deletion: its key)."""
    total = 0
    for _, entries in writes:
        for key, value in entries:
            total += len(key) if isinstance(key, bytes | bytearray | str) else 0
            total += len(value) if isinstance(value, bytes | bytearray | str) else 0
    return total


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
    if part.windows is not None:
        confirm_windows(part.windows, checkpoint)
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
    """Close the spout task's epoch at ``checkpoint``: the msg ids the checkpoint covers,
    and the spout's task count (a restore with another count is a rescale)."""
    ids = part.epochs.begin(checkpoint)
    return [
        (b"pending", encode_value([i for i in ids if encodable(i)])),
        (b"tasks", encode_value(part.tasks)),
    ]


def spout_position(part: SpoutPart) -> tuple[bytes, bytes]:
    """A replayable spout task's position (raises what its ``position`` raised)."""
    position = part.task.instance.position()  # type: ignore[attr-defined]
    return (b"position", encode_value(position))


# -- restoring ------------------------------------------------------------------------------


def _refusals(task: BoltTask | SpoutTask, checkpoint: int) -> Refusals:
    """Where a task's restore from ``checkpoint`` reports what it refused."""
    collector = task.collector
    return Refusals(checkpoint, task.component, collector.report_error, collector.log)


def restore_bolt(backend: StateBackend, part: BoltPart, checkpoint: int) -> int:
    """Give a stateful bolt task its state and windows as of ``checkpoint`` (0: none);
    entries that fail the door's budget are dropped and reported (how many: returned)."""
    instance: Any = part.task.instance
    task = part.task
    refusals = _refusals(task, checkpoint)
    if part.windows is not None:
        decode = lambda d: Tuple(d[0], task.source(d[1], d[2]))  # noqa: E731
        restore_windows(backend, instance, part.windows, checkpoint, decode, refusals)
    if part.scope is None:
        return refusals.close()
    previous = getattr(instance, "state", None)
    if previous is not None:
        previous.close()  # its files, before a new one takes the task's place
    state = part.new_state(f"{part.scope}#{task.context.task_index}", part.single_field)
    if checkpoint:  # streamed: a state larger than memory is never held whole
        keep = part.keep
        read = read_all_or_report(backend, checkpoint, part.scope, refusals)
        stored = ((k, v) for k, v in read if keep(k))
        state.load(checked_entries(stored, part.scope, refusals))
    part.unconfirmed = []
    try:
        instance.init_state(state)
    except Exception as exc:
        task.collector.report_error(exc)
    instance.state = state
    return refusals.close()


def restore_spout(backend: StateBackend, part: SpoutPart, checkpoint: int) -> int:
    """Take a spout task back to ``checkpoint``: ack what it covered, then seek a
    replayable spout to its position, or fail the msg ids after it (they replay).  A
    stored entry that fails the door's budget or its shape is dropped and reported (how
    many: returned)."""
    task = part.task
    refusals = _refusals(task, checkpoint)
    stored = _spout_stored(backend, part, checkpoint, refusals) if checkpoint else {}
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
                instance.seek(stored[b"position"])
            elif not first:
                instance.seek(part.initial)
        except Exception as exc:
            task.collector.report_error(exc)
        return refusals.close()
    if first:
        pending = stored.get(b"pending", [])
        part.epochs.replayed = {ck.hashable(i) for i in pending}
        return refusals.close()
    reason = FailReason(
        "rollback", task.component, task.task_id, f"replayed from checkpoint {checkpoint}"
    )
    for msg_id in failed:
        task.failed(msg_id, reason)
    return refusals.close()


def _spout_read(
    backend: StateBackend, part: SpoutPart, checkpoint: int, index: int, refusals: Refusals
) -> dict[bytes, Any]:
    """Task ``index``'s stored entries, decoded: ``position`` (anything), ``pending`` (a
    list), ``tasks`` (a task count); any other key, and a value that fails the door's
    budget or its shape, is dropped into ``refusals``."""
    scope = task_scope(part.uid, index)
    out: dict[bytes, Any] = {}
    for key, raw in read_or_report(backend, checkpoint, scope, lambda key: True, refusals).items():
        try:
            if key not in _SPOUT_KEYS:
                raise Refused("not a key a spout task stores")
            value = decoded(raw)
            if not isinstance(value, _SPOUT_KEYS[key]):
                raise Refused(f"a {type(value).__name__} where a spout stores its {key.decode()}")
            if key == b"tasks" and (type(value) is not int or not 0 < value <= MAX_RESTORED_TASKS):
                raise Refused(f"{value!r:.40} as a task count, not 1 to {MAX_RESTORED_TASKS:,}")
        except Refused as exc:
            refusals.refuse(scope, key, str(exc))
            continue
        out[key] = value
    return out


def _spout_stored(
    backend: StateBackend, part: SpoutPart, checkpoint: int, refusals: Refusals
) -> dict[bytes, Any]:
    """What a spout task restores from ``checkpoint``: its own entries, or, when the spout
    had another task count then (a rescale), its share of every old task's position
    (:meth:`~topology.stateful.ReplayableSpout.rescale_position`) and no msg ids.

    A spout whose positions cannot be shared out (``rescale_position`` raised) is *held*:
    its error is reported, it emits nothing, and each checkpoint stores its old entries
    unchanged, so rebalancing it back to its old task count resumes exactly where it was."""

    def read(index: int) -> dict[bytes, Any]:
        return _spout_read(backend, part, checkpoint, index, refusals)

    own = read(part.index)
    first = own if part.index == 0 else read(0)
    before = first.get(b"tasks", part.tasks)
    part.held, part.epochs.held = None, False
    if before == part.tasks:
        return own
    olds = [first, *(read(i) for i in range(1, before))]
    positions = [old[b"position"] for old in olds if b"position" in old]
    if not part.replayable or not positions:
        return {}
    spout: Any = part.task.instance
    try:
        position = spout.rescale_position(positions, part.index, part.tasks)
    except Exception as exc:
        part.task.collector.report_error(
            f"{exc} (spout {part.task.component!r} emits nothing until it is rebalanced "
            f"back to {before} tasks: sparkstorm rebalance NAME -e {part.task.component}="
            f"{before})"
        )
        part.held = {key: encode_value(value) for key, value in own.items()}
        part.held[b"tasks"], part.epochs.held = encode_value(before), True
        return {}
    return {b"position": position}


def _tuple_data(tup: Tuple) -> list[Any]:
    """A held tuple as checkpoint data (values, source task, stream)."""
    return [tup.values, tup.source_task, tup.stream]
