"""A windowed bolt task's windows in checkpoints: incremental, and moving with their keys.

A snapshot writes only the window *slots* (the windows of one ``with_key`` value) that
changed since the previous one, one entry per slot: the stored key is the slot key with its
key group in front (:func:`topology.state.kv.key_bytes`), the value the slot's encoded
contents, ``None`` a slot that is gone.  The task-wide clocks (seq, watermark, and the
component's task count when they were written) are one small entry, :data:`CLOCKS`, under
the task's scope ``<uid>#<i>/windows``, written with every snapshot.

Where the slots go (:func:`topology.runtime.checkpoint.state_layout.keyed_windows`):

* **keyed windows** — every input a fields grouping on exactly the window's key fields:
  under the component's scope ``<uid>/windows``.  A restore reads the slots of the key
  groups the task owns now (:func:`topology.state.kv.owned_groups`), which are exactly the
  keys the fields grouping sends it, for any task count (same fields, same
  ``stable_hash``, same key groups).  With the task count it had when the clocks were
  written, a task gets its own clocks back; after a rescale it starts with fresh clocks
  (:meth:`~topology.windows.engine.WindowEngine.restore_windows`): the watermark from the
  lowest one the old owners of its key groups had reached, and per key the old owner's
  watermark as a floor for lateness (:class:`~topology.windows.engine.KeyFloors`);
* **task windows** (any other grouping) — under the task's scope with its clocks; their task
  count cannot change (:func:`~topology.runtime.checkpoint.state_layout.rescale_problem`).

Like key-value changes, a snapshot's slot changes are written again with every later
snapshot (newer over older) until the task hears a checkpoint holding them is complete
(:func:`confirm_windows`), so a checkpoint abandoned after this task stored it loses
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topology.spec import Topology
from topology.state.backends import StateBackend, encode_value
from topology.state.kv import group_owner, key_bytes, key_group, owned_groups, stored_group
from topology.windows.engine import KeyFloors

from .restored_state import (
    MAX_RESTORED_TASKS,
    Refusals,
    Refused,
    checked_slots,
    decoded,
    read_or_report,
)
from .state_layout import keyed_windows, keyed_windows_scope, task_windows_scope

#: The stored key of a task's clocks (never a slot's: those are 2 bytes + msgpack).
CLOCKS = b"clocks"
#: A task's snapshot: (scope, [(key, value), ...]) per scope it writes.
Writes = list[tuple[str, list[Any]]]


@dataclass
class WindowPart:
    """A windowed bolt task's windows in checkpoints: where they go, and the slot changes
    of its snapshots not known committed yet, (checkpoint, {stored key: value}) oldest
    first."""

    uid: str
    index: int
    tasks: int  # the component's task count now
    key_groups: int
    keyed: bool
    unconfirmed: list[tuple[int, dict[bytes, bytes | None]]] = field(default_factory=list)

    @property
    def clocks_scope(self) -> str:
        return task_windows_scope(self.uid, self.index)

    @property
    def slots_scope(self) -> str:
        return keyed_windows_scope(self.uid) if self.keyed else self.clocks_scope

    @property
    def owned(self) -> range:
        """The key groups this task owns now."""
        return owned_groups(self.index, self.key_groups, self.tasks)


def window_part(
    topology: Topology, component: str, index: int, tasks: int, key_groups: int
) -> WindowPart:
    """Task ``index`` (of ``tasks``) of windowed bolt ``component`` in checkpoints."""
    uid = topology.components[component].state_id
    return WindowPart(uid, index, tasks, key_groups, keyed_windows(topology, component))


def windows_snapshot(
    instance: Any, part: WindowPart, checkpoint: int, encode: Callable[[Any], Any]
) -> Writes:
    """The task's window writes for ``checkpoint``: the slots changed since the last
    checkpoint it heard committed, and its clocks (``encode`` turns a held tuple into
    data)."""
    clocks, changes = instance.take_window_changes(encode)
    clocks["tasks"] = part.tasks
    groups = part.key_groups
    encoded = {
        key_bytes(key, groups): None if slot is None else encode_value(slot)
        for key, slot in changes
    }
    merged: dict[bytes, bytes | None] = {}
    for _, earlier in part.unconfirmed:
        merged.update(earlier)
    merged.update(encoded)
    part.unconfirmed.append((checkpoint, encoded))
    clock = (CLOCKS, encode_value(clocks))
    if not part.keyed:
        return [(part.clocks_scope, [*merged.items(), clock])]
    writes: Writes = [(part.slots_scope, list(merged.items()))] if merged else []
    return [*writes, (part.clocks_scope, [clock])]


def confirm_windows(part: WindowPart, checkpoint: int) -> None:
    """``checkpoint`` is complete: its slot changes (and older ones) are stored for good."""
    part.unconfirmed = [u for u in part.unconfirmed if u[0] > checkpoint]


def restore_windows(
    backend: StateBackend,
    instance: Any,
    part: WindowPart,
    checkpoint: int,
    decode: Callable[[Any], Any],
    refusals: Refusals,
) -> None:
    """Give the task its windows as of ``checkpoint`` (0: empty ones; see the module
    docstring for whose slots and which clocks); slots and clocks that fail the door's
    budget or their shape go to ``refusals``."""
    part.unconfirmed = []
    if not checkpoint:
        instance.restore_windows(None, [], decode)
        return
    own = read_or_report(backend, checkpoint, part.clocks_scope, lambda key: True, refusals)
    clocks = _decoded_clocks(own, part.clocks_scope, refusals)
    if not part.keyed:
        entries = ((k, v) for k, v in own.items() if k != CLOCKS)
        slots = checked_slots(entries, part.clocks_scope, refusals)
        instance.restore_windows(clocks, slots, decode)
        return
    owned = part.owned
    mine = lambda key: stored_group(key) in owned  # noqa: E731
    stored = read_or_report(backend, checkpoint, part.slots_scope, mine, refusals)
    slots = checked_slots(stored.items(), part.slots_scope, refusals)
    first = clocks if part.index == 0 else _clocks(backend, checkpoint, part.uid, 0, refusals)
    before = first.get("tasks") if first is not None else None
    if clocks is not None and before == part.tasks:
        instance.restore_windows(clocks, slots, decode)
    elif type(before) is not int or not 0 < before <= MAX_RESTORED_TASKS:
        instance.restore_windows(None, slots, decode)
    else:
        fresh, floors = _rescaled_clocks(backend, checkpoint, part, before, refusals)
        instance.restore_windows(fresh, slots, decode, floors)


def _decoded_clocks(stored: dict[bytes, bytes], scope: str, refusals: Refusals) -> Any:
    """The clocks among a task's ``stored`` entries: a dict with a numeric ``current``,
    or None (absent, or refused into ``refusals``)."""
    if CLOCKS not in stored:
        return None
    try:
        clocks = decoded(stored[CLOCKS])
        if not isinstance(clocks, dict) or not isinstance(clocks.get("current"), int | float):
            raise Refused("window clocks that are not a map with a numeric 'current'")
    except Refused as exc:
        refusals.refuse(scope, CLOCKS, str(exc))
        return None
    return clocks


def _clocks(
    backend: StateBackend, checkpoint: int, uid: str, index: int, refusals: Refusals
) -> Any:
    """Task ``index``'s stored clocks, or None."""
    scope = task_windows_scope(uid, index)
    stored = read_or_report(backend, checkpoint, scope, lambda k: k == CLOCKS, refusals)
    return _decoded_clocks(stored, scope, refusals)


def _rescaled_clocks(
    backend: StateBackend, checkpoint: int, part: WindowPart, before: int, refusals: Refusals
) -> tuple[dict[str, Any], KeyFloors]:
    """Fresh clocks for a task after a rescale from ``before`` tasks: the watermark starts
    at the lowest one the old owners of its key groups had reached, and each key keeps its
    old owner's as a floor."""
    groups = part.key_groups
    marks = []
    for old in range(before):
        clocks = _clocks(backend, checkpoint, part.uid, old, refusals)
        marks.append(float(clocks["current"]) if clocks is not None else float("-inf"))
    mine = [marks[group_owner(g, groups, before)] for g in part.owned]

    def floor_of(key: Any) -> float:
        return marks[group_owner(key_group(key, groups), groups, before)]

    start = min(mine, default=float("-inf"))
    fresh = {"seq": 0, "current": start, "watermark": None}
    return fresh, KeyFloors(floor_of, max(mine, default=float("-inf")))
