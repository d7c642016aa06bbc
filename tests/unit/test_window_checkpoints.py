"""Window state in checkpoints (topology/runtime/checkpoint/window_snapshots.py): a snapshot writes
only the window slots that changed, changes are written again until a checkpoint holding
them completes, keyed windows are read back by key group into any task count (equal to
one engine's run), slot ownership agrees with the fields grouping's routing, and after a
rescale a window an old task already dropped is not made again."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grouping.base import GroupingContext
from grouping.fields import FieldsGrouping
from topology.runtime.checkpoint.restored_state import Refusals
from topology.runtime.checkpoint.window_snapshots import (
    CLOCKS,
    WindowPart,
    confirm_windows,
    restore_windows,
    windows_snapshot,
)
from topology.state.backends.memory import MemoryBackend
from topology.state.kv import (
    group_owner,
    key_bytes,
    key_group,
    owned_groups,
    stored_group,
    stored_key,
)
from topology.windows.engine import LATE, ON_TIME, KeyFloors, Window, WindowEngine
from topology.windows.spec import WindowSpec

pytestmark = pytest.mark.timeout(120)

SOURCE = 7  # the one input task
GROUPS = 8  # few key groups, so that tasks share and swap them


def _no_refusal(text: str) -> None:
    raise AssertionError(f"a restore of well-formed windows refused: {text}")


#: A restore's refusals where none may happen.
NONE_REFUSED = Refusals(1, "w", _no_refusal, _no_refusal)


class EngineTask:
    """A windowed bolt task as window_snapshots sees it: an engine and a clock."""

    def __init__(self, spec: WindowSpec, now: float = 0.0) -> None:
        self.spec, self.now = spec, now
        self.engine = WindowEngine(spec, frozenset({SOURCE}), now)

    def take_window_changes(self, encode: Callable[[Any], Any]) -> Any:
        return self.engine.take_window_changes(encode)

    def restore_windows(
        self,
        clocks: Any,
        slots: Iterable[tuple[Any, Any]],
        decode: Callable[[Any], Any],
        floors: KeyFloors | None = None,
    ) -> None:
        self.engine = WindowEngine(self.spec, frozenset({SOURCE}), self.now)
        self.engine.restore_windows(clocks, slots, decode, self.now, floors)


def same(x: Any) -> Any:
    return x


def counted(length: int) -> WindowSpec:
    return WindowSpec(kind="tumbling", count_length=length, key_fields=("k",))


def store(backend: MemoryBackend, checkpoint: int, writes: list[Any], done: bool = True) -> None:
    for scope, entries in writes:
        backend.write(checkpoint, 1, scope, entries)
    if done:
        backend.complete(checkpoint, 1, {})


def slot_entries(writes: list[Any]) -> list[bytes]:
    return [key for _, entries in writes for key, _ in entries if key != CLOCKS]


def test_a_snapshot_writes_only_the_slots_that_changed() -> None:
    task, part = EngineTask(counted(3)), WindowPart("w", 0, 1, GROUPS, keyed=True)
    for key in ["a", "b", "c", "d"]:
        task.engine.add(f"{key}1", (key,), SOURCE, None, 0.0)
    first = windows_snapshot(task, part, 1, same)
    assert len(slot_entries(first)) == 4
    assert [scope for scope, _ in first] == ["w/windows", "w#0/windows"]  # slots, clocks
    confirm_windows(part, 1)
    task.engine.add("b2", ("b",), SOURCE, None, 0.0)
    second = windows_snapshot(task, part, 2, same)
    assert slot_entries(second) == [key_bytes(("b",), GROUPS)]  # one key changed: one entry
    confirm_windows(part, 2)
    third = windows_snapshot(task, part, 3, same)
    assert slot_entries(third) == [] and third == [("w#0/windows", third[0][1])]  # clocks


def test_changes_are_written_again_until_a_checkpoint_holding_them_completes() -> None:
    backend, spec = MemoryBackend(), counted(3)
    task, part = EngineTask(spec), WindowPart("w", 0, 1, GROUPS, keyed=False)
    task.engine.add("a1", ("a",), SOURCE, None, 0.0)
    store(backend, 1, windows_snapshot(task, part, 1, same))
    confirm_windows(part, 1)
    task.engine.add("b1", ("b",), SOURCE, None, 0.0)
    store(backend, 2, windows_snapshot(task, part, 2, same), done=False)  # abandoned
    task.engine.add("c1", ("c",), SOURCE, None, 0.0)
    third = windows_snapshot(task, part, 3, same)
    assert sorted(slot_entries(third)) == sorted(key_bytes((k,), GROUPS) for k in "bc")
    store(backend, 3, third)
    confirm_windows(part, 3)
    assert part.unconfirmed == []
    copy = EngineTask(spec)
    restore_windows(backend, copy, part, 3, same, NONE_REFUSED)
    assert sorted(copy.engine.keys) == [("a",), ("b",), ("c",)]
    [window] = copy.engine.add("b2", ("b",), SOURCE, None, 0.0) + copy.engine.add(
        "b3", ("b",), SOURCE, None, 0.0
    )
    assert window.tuples == ["b1", "b2", "b3"]


def test_a_slot_that_is_gone_is_written_as_a_deletion() -> None:
    backend = MemoryBackend()
    spec = WindowSpec(kind="tumbling", length=10.0, key_fields=("k",))  # processing time
    task, part = EngineTask(spec), WindowPart("w", 0, 1, GROUPS, keyed=True)
    task.engine.add("a1", ("a",), SOURCE, None, 1.0)
    task.engine.add("b1", ("b",), SOURCE, None, 1.0)
    store(backend, 1, windows_snapshot(task, part, 1, same))
    confirm_windows(part, 1)
    task.engine.tick(35.0)  # both fired and dropped
    writes = windows_snapshot(task, part, 2, same)
    assert dict(writes[0][1]) == {key_bytes(("a",), GROUPS): None, key_bytes(("b",), GROUPS): None}
    store(backend, 2, writes)
    copy = EngineTask(spec, 36.0)
    restore_windows(backend, copy, part, 2, same, NONE_REFUSED)
    assert copy.engine.keys == {}


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.text(max_size=6),
            st.integers(-(2**63), 2**64 - 1),
            st.none(),
            st.binary(max_size=4),
            st.floats(allow_nan=False),
            st.booleans(),
        ),
        min_size=1,
        max_size=3,
    ),
    tasks=st.integers(1, 8),
    key_groups=st.sampled_from([8, 13, 128]),
)
def test_a_slot_is_owned_by_the_task_the_fields_grouping_sends_its_key_to(
    values: list[Any], tasks: int, key_groups: int
) -> None:
    fields = tuple(f"f{i}" for i in range(len(values)))
    grouping = FieldsGrouping()
    grouping.prepare(
        GroupingContext(
            "src",
            1,
            "default",
            ("x", *fields),
            "windows",
            tuple(range(100, 100 + tasks)),
            grouping_fields=fields,
            key_groups=key_groups,
        )
    )
    [routed] = grouping.choose_tasks(["x", *values])
    slot_key = tuple(values)  # what a WindowedBolt with_key(*fields) keys its windows by
    stored = key_bytes(slot_key, key_groups)
    assert stored_group(stored) in owned_groups(routed - 100, key_groups, tasks)
    assert key_group(stored_key(stored), key_groups) == stored_group(stored)


# -- restore equivalence: N tasks, a checkpoint, M tasks = one engine -------------------------

SPECS = {
    "count": counted(3),
    "count-sliding": WindowSpec(
        kind="sliding", count_length=3, count_interval=2, key_fields=("k",)
    ),
    "tumbling": WindowSpec(kind="tumbling", length=4.0, key_fields=("k",)),
    "sliding": WindowSpec(kind="sliding", length=4.0, interval=2.0, key_fields=("k",)),
}

#: An event: ("add", key) or ("tick",); time moves by one each event.
events = st.lists(
    st.one_of(st.tuples(st.just("add"), st.sampled_from("abcdefghij")), st.just(("tick",))),
    min_size=1,
    max_size=60,
)


def fired(window: Window) -> tuple[Any, ...]:
    return (
        window.key,
        window.start,
        window.end,
        window.pane,
        tuple(window.tuples),
        tuple(window.new),
        tuple(window.expired),
    )


def play(tasks: list[EngineTask], steps: list[tuple[int, tuple[Any, ...]]]) -> list[Any]:
    """Feed ``steps`` (time, event) to ``tasks``, each key to the task owning its key group
    (as the fields grouping routes it); the windows they fire."""
    out = []
    for now, event in steps:
        for task in tasks:
            task.now = now
        if event[0] == "add":
            key = (event[1],)
            task = tasks[group_owner(key_group(key, GROUPS), GROUPS, len(tasks))]
            out += [fired(w) for w in task.engine.add(f"{key[0]}@{now}", key, SOURCE, None, now)]
        else:
            out += [fired(w) for task in tasks for w in task.engine.tick(now)]
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(SPECS)),
    stream=events,
    before=st.integers(1, 4),
    after=st.integers(1, 4),
    cut=st.floats(0.0, 1.0),
    checkpoints=st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), max_size=4),
)
def test_windows_restored_into_another_task_count_fire_as_one_engine_would(
    kind: str,
    stream: list[tuple[Any, ...]],
    before: int,
    after: int,
    cut: float,
    checkpoints: list[tuple[float, bool]],
) -> None:
    """``before`` tasks take checkpoints (some abandoned) up to ``cut``, ``after`` tasks
    restore the last complete one and take the rest: together they fire what one engine
    fed everything fires."""
    spec = SPECS[kind]
    steps = list(enumerate(stream, start=1))
    expected = play([EngineTask(spec)], steps)

    backend = MemoryBackend()
    olds = [EngineTask(spec) for _ in range(before)]
    parts = [WindowPart("w", i, before, GROUPS, keyed=True) for i in range(before)]
    split = int(cut * len(steps))
    completes = {int(at * split): ok for at, ok in checkpoints}
    completes[split] = True  # the one restored
    got, done, at = [], 0, 0
    for number, mark in enumerate(sorted(completes), start=1):
        got += play(olds, steps[at:mark])
        at = mark
        for task, part in zip(olds, parts):
            store(backend, number, windows_snapshot(task, part, number, same), done=False)
        if completes[mark]:
            backend.complete(number, 1, {})
            done = number
            for part in parts:
                confirm_windows(part, number)
    news = [EngineTask(spec, float(split)) for _ in range(after)]
    for index, task in enumerate(news):
        part = WindowPart("w", index, after, GROUPS, True)
        restore_windows(backend, task, part, done, same, NONE_REFUSED)
    got += play(news, steps[split:])
    assert sorted(got, key=repr) == sorted(expected, key=repr)


# -- event time after a rescale --------------------------------------------------------------


def test_after_a_rescale_a_window_its_old_task_dropped_is_not_made_again() -> None:
    spec = WindowSpec(
        kind="tumbling", length=10.0, timestamp_field="ts", key_fields=("k",), allowed_lateness=5.0
    )
    owners = {k: group_owner(key_group((k,), GROUPS), GROUPS, 2) for k in "abcdefgh"}
    fast = next(k for k, o in owners.items() if o == 0)
    slow = next(k for k, o in owners.items() if o == 1)
    backend, tasks = MemoryBackend(), [EngineTask(spec), EngineTask(spec)]
    parts = [WindowPart("w", i, 2, GROUPS, keyed=True) for i in range(2)]
    tasks[0].engine.add("f1", (fast,), SOURCE, 1.0, 0.0)
    tasks[0].engine.add("f2", (fast,), SOURCE, 22.0, 0.0)
    tasks[0].engine.add("f3", (fast,), SOURCE, 100.0, 0.0)
    assert [w.tuples for w in tasks[0].engine.tick(1.0)] == [["f1"], ["f2"]]  # mark 100
    tasks[1].engine.add("s1", (slow,), SOURCE, 11.0, 0.0)
    tasks[1].engine.add("s2", (slow,), SOURCE, 21.0, 0.0)
    assert [w.tuples for w in tasks[1].engine.tick(1.0)] == [["s1"]]  # mark 21: [10, 20)
    for task, part in zip(tasks, parts):
        store(backend, 1, windows_snapshot(task, part, 1, same), done=False)
    backend.complete(1, 1, {})

    one = EngineTask(spec, 2.0)
    restore_windows(backend, one, WindowPart("w", 0, 1, GROUPS, keyed=True), 1, same, NONE_REFUSED)
    engine = one.engine
    assert engine.current == 21.0  # the lowest watermark its keys' old tasks had reached
    assert engine.add("f0", (fast,), SOURCE, 23.0, 2.0) is None  # [20, 30) was dropped
    assert engine.add("s0", (slow,), SOURCE, 12.0, 2.0) == []  # [10, 20) fired, still kept
    engine.add("s9", (slow,), SOURCE, 60.0, 2.0)
    out = [(w.key, w.tuples, w.pane) for w in engine.tick(3.0)]
    assert out == [
        ((slow,), ["s1", "s0"], LATE),  # a late pane, not its on-time pane again
        ((slow,), ["s2"], ON_TIME),
    ]


def test_per_input_marks_are_dropped_when_the_input_tasks_are_others_now() -> None:
    spec = WindowSpec(kind="tumbling", length=10.0, timestamp_field="ts")
    engine = WindowEngine(spec, frozenset({1, 2}), 0.0)
    engine.add("x", None, 1, 30.0, 0.0)
    engine.add("y", None, 2, 20.0, 0.0)
    engine.tick(1.0)  # watermark 20
    clocks, slots = engine.take_window_changes(same)
    same_inputs = WindowEngine(spec, frozenset({1, 2}), 5.0)
    same_inputs.restore_windows(clocks, slots, same, 5.0)
    assert same_inputs.watermark is not None and same_inputs.watermark.max_ts == {1: 30.0, 2: 20.0}
    moved = WindowEngine(spec, frozenset({3, 4}), 5.0)  # an upstream rescale renumbered them
    moved.restore_windows(clocks, slots, same, 5.0)
    assert moved.watermark is not None and moved.watermark.max_ts == {}
    assert moved.watermark.advance(6.0) == moved.current == 20.0  # held, never back
