"""Stream windows against plain-Python references: incremental aggregations (one
accumulator per key and window), two-phase windows over a plain stream of several tasks,
window bounds, windowed ``top_n`` and ``count_distinct_by_key``, acking and checkpoints —
on the in-process runner."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology import Bolt, ReplayableSpout, StatefulBolt, Tuple
from topology.runtime.inprocess import InProcessRunner
from topology.streams import StreamBuilder, session, sliding, tumbling
from topology.streams.window_aggregates import (
    AggregatingWindows,
    CombiningWindows,
    ForwardGrouping,
    aggregator,
    forward_sources,
)
from topology.streams.window_components import (
    AggregateWindowBolt,
    CombineWindowBolt,
    WindowOperatorBolt,
)

pytestmark = pytest.mark.timeout(120)

END = 10_000.0  # the closers' time: past every window's end (plus the lag)
CLOSERS = 24  # closers per spout task: every downstream task and key gets some


class Events(ReplayableSpout):
    """Emits ``[ts, k, v]`` rows (task i of n: rows i, i+n, ...), then ``CLOSERS`` rows at
    ``END`` of keys ``zz0``.. (not acked: their windows never fire); msg id: the row's
    index; replays what fails; position: the next row."""

    outputs = ["ts", "k", "v"]

    def __init__(
        self,
        rows: list[tuple[float, str, int]],
        per_call: int = 50,
        every: int = 1,
        closing: bool = True,
    ) -> None:
        self.rows = rows
        self.per_call = per_call
        self.every = every  # emit on one call of every ``every``
        self.closing = closing  # (False: only task 0 sends closers)

    def open(self, conf: Any, context: Any) -> None:
        self.index, self.tasks = context.task_index, len(context.component_tasks())
        self.next = self.index
        self.acked: list[int] = []
        self.again: list[int] = []
        self.closed = False
        self.calls = 0

    def next_tuple(self) -> None:
        self.calls += 1
        if self.calls % self.every:
            return
        for _ in range(self.per_call):
            if self.again:
                i = self.again.pop(0)
            elif self.next < len(self.rows):
                i, self.next = self.next, self.next + self.tasks
            else:
                if not self.closed and (self.closing or self.index == 0):
                    self.closed = True
                    for n in range(CLOSERS):
                        self.emit([END, f"zz{n}", 0])
                return
            self.emit(list(self.rows[i]), msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.again.append(msg_id)

    def position(self) -> Any:
        return [self.next, self.closed]

    def seek(self, position: Any) -> None:
        self.next, self.closed = position[0], bool(position[1])
        self.again = []


class Collect(Bolt):
    """Keeps every result (its one value, or the pair)."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.rows: list[Any] = []

    def execute(self, tup: Tuple) -> None:
        self.rows.append(plain(tup.values[0] if len(tup.values) == 1 else list(tup.values)))
        self.ack(tup)


def plain(value: Any) -> Any:
    """Tuples and lists alike (msgpack gives tuples back as lists)."""
    return [plain(v) for v in value] if isinstance(value, list | tuple) else value


def windows_of(ts: float, length: float, step: float) -> list[tuple[float, float]]:
    """The windows [start, end) holding ``ts`` (the engine's definition)."""
    last = math.floor(ts / step) * step
    out = []
    for i in range(math.ceil(length / step)):
        start = last - i * step
        if start <= ts < start + length:
            out.append((start, start + length))
    return out


def reference(
    rows: list[tuple[float, str, int]],
    length: float,
    step: float,
    keyed: bool,
    fold: Callable[[list[Any]], Any],
    bounds: bool,
) -> list[Any]:
    """Every window's result, by one loop over the rows (sorted for comparing)."""
    groups: dict[Any, list[Any]] = defaultdict(list)
    for row in rows:
        for window in windows_of(row[0], length, step):
            groups[(window, row[1] if keyed else None)].append(row)
    out = []
    for ((start, end), key), members in groups.items():
        result = fold(members)
        if bounds:
            result = [start, end, result]
        out.append([key, result] if keyed else result)
    return sorted(out, key=repr)


def run_windows(
    build: Callable[[StreamBuilder, Any], None],
    rows: list[tuple[float, str, int]],
    spouts: int,
    workers: int,
    conf: dict[str, Any] | None = None,
    closing: bool = True,
    per_call: int = 50,
    every: int = 1,
) -> tuple[InProcessRunner, list[Any]]:
    sb = StreamBuilder()
    events = sb.new_stream(Events(rows, per_call, every, closing), spouts, name="events")
    build(sb, events)
    runner = InProcessRunner(sb.build(), {"topology.workers": workers, **(conf or {})})
    runner.activate()
    acked = lambda: sum(len(runner.instance("events", i).acked) for i in range(spouts))  # noqa: E731
    for _ in range(3000):
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
        if acked() >= len(rows):
            break
    for _ in range(40):  # the results' own trees
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
    assert acked() == len(rows), "every element is acked once its last window fired"
    tasks = runner.topology.components["collect"].num_tasks
    out = [r for i in range(tasks) for r in runner.instance("collect", i).rows]
    return runner, [r for r in out if not _closer(r)]


def _closer(result: Any) -> bool:
    return isinstance(result, list) and len(result) == 2 and str(result[0]).startswith("zz")


# -- the operations, each with its fold over a window's rows -----------------------------

PLAIN_OPS: dict[str, tuple[Callable[[Any], Any], Callable[[list[Any]], Any]]] = {
    "count": (lambda w: w.count(), len),
    "reduce": (
        lambda w: w.reduce(_max_v),
        lambda rows: max(r[2] for r in rows),
    ),
    "aggregate_merge": (
        lambda w: w.aggregate(lambda: 0, lambda a, r: a + r["v"], merge=lambda a, b: a + b),
        lambda rows: sum(r[2] for r in rows),
    ),
    "aggregate": (
        lambda w: w.aggregate(lambda: [0, 0], _sum_count, result=lambda a: a[0] * 1000 + a[1]),
        lambda rows: sum(r[2] for r in rows) * 1000 + len(rows),
    ),
    "top_n": (
        lambda w: w.top_n(3, by=lambda r: r["v"]),
        lambda rows: sorted((r[2] for r in rows), reverse=True)[:3],
    ),
}


def _max_v(a: Any, b: Any) -> Any:
    return a if a["v"] >= b["v"] else b


def _sum_count(a: list[int], r: Any) -> list[int]:
    return [a[0] + r["v"], a[1] + 1]


def _plain_result(op: str, result: Any, bounds: bool) -> Any:
    """What of a plain result is compared: the values (elements are dicts with their ts)."""

    def values(x: Any) -> Any:
        if op == "reduce":
            return x["v"] if isinstance(x, dict) else x[1]
        if op == "top_n":
            return [e["v"] for e in x]
        return x

    return [*result[:2], values(result[2])] if bounds else values(result)


KEYED_OPS: dict[str, tuple[Callable[[Any], Any], Callable[[list[Any]], Any]]] = {
    "count_by_key": (lambda w: w.count_by_key(), len),
    "reduce_by_key": (
        lambda w: w.reduce_by_key(lambda a, b: [max(a[0], b[0]), a[1] + b[1]]),
        lambda rows: [max(r[0] for r in rows), sum(r[2] for r in rows)],
    ),
    "aggregate_by_key": (
        lambda w: w.aggregate_by_key(lambda: 1, lambda a, v: a * (v[1] % 7 + 2) % 1_000_003),
        lambda rows: math.prod(r[2] % 7 + 2 for r in rows) % 1_000_003,
    ),
    "count_distinct_by_key": (
        lambda w: w.count_distinct_by_key(),
        lambda rows: len({(r[0], r[2]) for r in rows}),
    ),
    "group_by_key": (
        lambda w: w.group_by_key(),
        lambda rows: sorted([r[0], r[2]] for r in rows),
    ),
}


def rows_strategy() -> Any:
    row = st.tuples(
        st.integers(0, 400).map(lambda n: n / 4),  # 0 .. 100 s, quarter seconds
        st.sampled_from(["a", "b", "c", "d"]),
        st.integers(0, 9),
    )
    return st.lists(row, min_size=1, max_size=60)


SHAPES = st.sampled_from(
    [("tumbling", 5.0, 5.0), ("tumbling", 2.5, 2.5), ("sliding", 6.0, 2.0), ("sliding", 4.0, 1.5)]
)


def windowing(shape: tuple[str, float, float]) -> Any:
    kind, length, step = shape
    w = tumbling(seconds=length) if kind == "tumbling" else sliding(seconds=length, every=step)
    return w.event_time(lambda e: e["ts"], lag=1000.0)  # nothing late: fired by the closers


# -- hypothesis: results equal the reference ----------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rows=rows_strategy(),
    shape=SHAPES,
    op=st.sampled_from(sorted(PLAIN_OPS)),
    spouts=st.integers(1, 3),
    bounds=st.booleans(),
)
def test_plain_windows_equal_the_reference(
    rows: list[tuple[float, str, int]],
    shape: tuple[str, float, float],
    op: str,
    spouts: int,
    bounds: bool,
) -> None:
    apply, fold = PLAIN_OPS[op]

    def build(sb: StreamBuilder, events: Any) -> None:
        windowed = events.window(windowing(shape))
        apply(windowed.with_bounds() if bounds else windowed).to(Collect(), name="collect")

    _, got = run_windows(build, rows, spouts, workers=2)
    got = [_plain_result(op, r, bounds) for r in got]
    got = [r for r in got if not (bounds and r[0] >= END - 100)]
    assert sorted(got, key=repr) == reference(rows, shape[1], shape[2], False, fold, bounds)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rows=rows_strategy(),
    shape=SHAPES,
    op=st.sampled_from(sorted(KEYED_OPS)),
    spouts=st.integers(1, 3),
    tasks=st.integers(1, 3),
    bounds=st.booleans(),
)
def test_keyed_windows_equal_the_reference(
    rows: list[tuple[float, str, int]],
    shape: tuple[str, float, float],
    op: str,
    spouts: int,
    tasks: int,
    bounds: bool,
) -> None:
    apply, fold = KEYED_OPS[op]

    def build(sb: StreamBuilder, events: Any) -> None:
        pairs = events.map_to_pair(lambda e: (e["k"], [e["ts"], e["v"]]))
        windowed = pairs.repartition(tasks).window(_on_first(shape))
        apply(windowed.with_bounds() if bounds else windowed).to(Collect(), name="collect")

    _, got = run_windows(build, rows, spouts, workers=2)
    if op == "group_by_key":  # (values in arrival order: compared as sets)
        got = [[k, [*v[:2], sorted(v[2])] if bounds else sorted(v)] for k, v in got]
    assert sorted(got, key=repr) == reference(rows, shape[1], shape[2], True, fold, bounds)


def _on_first(shape: tuple[str, float, float]) -> Any:
    """The shape on event time read from a pair's value ``[ts, v]``."""
    kind, length, step = shape
    w = tumbling(seconds=length) if kind == "tumbling" else sliding(seconds=length, every=step)
    return w.event_time(lambda v: v[0], lag=1000.0)


def test_a_first_phase_whose_source_goes_quiet_holds_nothing_back() -> None:
    """Spout task 1's elements stop passing the filter at 20 s while it keeps running (a
    row every other call: ten seconds), and it sends no closers: its filter task goes
    quiet (progress marks: it handles input, with nothing for the window), its
    first-phase task hands its open windows over and goes quiet too, and every window
    fires with exactly its elements."""
    rows = [(i / 4, "drop" if i % 2 and i > 80 else "k", i % 10) for i in range(400)]

    def build(sb: StreamBuilder, events: Any) -> None:
        kept = events.filter(lambda e: e["k"] != "drop")
        kept.window(windowing(("tumbling", 10.0, 10.0))).with_bounds().count().to(
            Collect(), name="collect"
        )

    runner, got = run_windows(build, rows, 2, workers=2, closing=False, per_call=1, every=2)
    assert runner.topology.components["count-partial"].parallelism == 2
    kept = [r for r in rows if r[1] != "drop"]
    assert sorted(got) == reference(kept, 10.0, 10.0, False, len, True)


# -- how windows are planned ------------------------------------------------------------


def test_a_plain_window_over_a_parallel_stream_runs_in_two_phases() -> None:
    sb = StreamBuilder()
    events = sb.new_stream(Events([]), 3, name="events")
    events.window(windowing(("tumbling", 10.0, 10.0))).reduce(_max_v).named("q7").to(
        Collect(), name="collect"
    )
    sb.new_stream(Events([]), 1, name="one").window(tumbling(seconds=5)).count().to(Collect())
    pairs = events.map_to_pair(lambda e: (e["k"], e["v"])).repartition(4)
    pairs.window(tumbling(seconds=5)).count_by_key().named("keyed").to(Collect())
    pairs.window(tumbling(count=5)).count_by_key().named("counted").to(Collect())
    components = sb.build().components
    partial, combine = components["q7-partial"], components["q7"]
    assert type(partial.instance) is AggregateWindowBolt and partial.parallelism == 3
    [inp] = partial.inputs
    assert inp.component == "events" and isinstance(inp.grouping.custom, ForwardGrouping)
    assert type(combine.instance) is CombineWindowBolt and combine.parallelism == 1
    assert [i.grouping.kind for i in combine.inputs] == ["global"]
    assert type(components["count"].instance) is AggregateWindowBolt  # one task: one phase
    keyed = components["keyed"]  # keyed windows: over the stream's tasks, by key
    assert type(keyed.instance) is AggregateWindowBolt and keyed.parallelism == 4
    assert [(i.grouping.kind, list(i.grouping.fields)) for i in keyed.inputs] == [
        ("fields", ["key"])
    ]
    assert type(components["counted"].instance) is WindowOperatorBolt  # count windows keep


def test_forward_grouping_pairs_source_and_target_tasks_one_to_one() -> None:
    from grouping import GroupingContext

    targets = (7, 8, 9)
    chosen = {}
    for source in (4, 5, 6):
        g = ForwardGrouping()
        g.prepare(GroupingContext("s", source, "default", ("value",), "t", targets))
        chosen[source] = g.choose_tasks([0])[0]
    assert sorted(chosen.values()) == [7, 8, 9]
    for source, target in chosen.items():
        assert forward_sources(target, (4, 5, 6), targets) == {source}


# -- bounds on count windows and joins ----------------------------------------------------


def test_count_windows_and_joins_carry_their_bounds() -> None:
    rows = [(float(i), "a" if i % 3 else "b", i) for i in range(9)]
    sb = StreamBuilder()
    events = sb.new_stream(Events(rows), 1, name="events")
    pairs = events.map_to_pair(lambda e: (e["k"], e["v"]))
    pairs.window(tumbling(count=2)).with_bounds().count_by_key().to(Collect(), name="collect")
    left = events.map_to_pair(lambda e: (e["k"], [e["ts"], e["v"]]))
    right = events.map_to_pair(lambda e: (e["k"], [e["ts"], -e["v"]]))
    per_5s = tumbling(seconds=5).event_time(lambda v: v[0], lag=1000.0)
    left.window(per_5s).with_bounds().join(right).to(Collect(), name="joined")
    runner = InProcessRunner(sb.build(), {"topology.workers": 1})
    runner.activate()
    for _ in range(200):
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
    got = sorted(r for r in runner.instance("collect").rows if not _closer(r))
    keys = [k for _, k, _ in rows] + [f"zz{n}" for n in range(CLOSERS)]
    expected_counts = []  # windows of 2 elements in arrival order (one task), per key
    for first in range(0, len(keys) - 1, 2):
        for key, n in Counter(keys[first : first + 2]).items():
            expected_counts.append([key, [first, first + 2, n]])
    assert got == sorted(r for r in expected_counts if not _closer(r))
    joined = sorted(r for r in runner.instance("joined").rows if not _closer(r))
    expected = sorted(
        [k, [start, start + 5.0, [[ts, v], [ts2, -w]]]]
        for ts, k, v in rows
        for ts2, k2, w in rows
        if k == k2 and (start := 5.0 * (ts // 5)) == 5.0 * (ts2 // 5)
    )
    assert joined == expected


# -- lateness -----------------------------------------------------------------------------


class Slow(ReplayableSpout):
    """``[ts, k, v]`` rows one per 40 calls (the watermark moves in between), with msg ids."""

    outputs = ["ts", "k", "v"]

    def __init__(self, rows: list[tuple[float, str, int]], *more: list[Any]) -> None:
        self.shares = [rows, *more]  # (task i emits shares[i])

    def open(self, conf: Any, context: Any) -> None:
        self.rows = self.shares[context.task_index]
        self.i, self.calls, self.acked = 0, -1, []

    def next_tuple(self) -> None:
        self.calls += 1
        if self.calls % 40 == 0 and self.i < len(self.rows):
            self.emit(list(self.rows[self.i]), msg_id=self.i)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def position(self) -> int:
        return self.i

    def seek(self, position: Any) -> None:
        self.i = position


@pytest.mark.parametrize("lateness", [0.0, 30.0])
def test_late_elements_go_to_the_late_stream_or_fire_late_panes(lateness: float) -> None:
    rows = [(1.0, "a", 1), (2.0, "a", 2), (12.0, "a", 3), (3.0, "a", 4), (50.0, "a", 0)]
    sb = StreamBuilder()
    per_10s = tumbling(seconds=10).event_time(lambda v: v[0], lag=0.0, allowed_lateness=lateness)
    pairs = sb.new_stream(Slow(rows), name="events").map_to_pair(
        lambda e: (e["k"], [e["ts"], e["v"]])
    )
    windowed = pairs.window(per_10s).with_bounds()
    windowed.count_by_key().to(Collect(), name="collect")
    windowed.late().map(lambda kv: kv[1][0]).to(Collect(), name="late")
    runner = InProcessRunner(sb.build(), {"topology.workers": 1})
    runner.activate()
    for _ in range(400):
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
    got = runner.instance("collect").rows
    late = runner.instance("late").rows
    if lateness:  # [0, 10) fires 2, then a late pane with 3; [10, 20) fires 1
        assert got == [["a", [0.0, 10.0, 2]], ["a", [0.0, 10.0, 3]], ["a", [10.0, 20.0, 1]]]
        assert late == []
    else:
        assert got == [["a", [0.0, 10.0, 2]], ["a", [10.0, 20.0, 1]]]
        assert late == [3.0]
    assert sorted(runner.instance("events").acked) == [0, 1, 2, 3]  # not 50's: still open


def test_a_two_phase_window_sends_late_elements_to_the_late_stream() -> None:
    zero = [(1.0, "a", 1), (2.0, "a", 2), (12.0, "a", 3), (3.0, "a", 4), (50.0, "a", 0)]
    one = [(1.0, "b", 5), (13.0, "b", 6), (50.0, "b", 0)]
    sb = StreamBuilder()
    per_10s = tumbling(seconds=10).event_time(lambda e: e["ts"], lag=0.0)
    windowed = sb.new_stream(Slow(zero, one), 2, name="events").window(per_10s)
    windowed.with_bounds().count().named("counts").to(Collect(), name="collect")
    windowed.late().map(lambda e: e["ts"]).to(Collect(), name="late")
    runner = InProcessRunner(sb.build(), {"topology.workers": 1})
    partial = runner.topology.components["counts-partial-map"]  # (the late stream's map)
    assert type(partial.instance) is AggregateWindowBolt and partial.parallelism == 2
    runner.activate()
    for _ in range(400):
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
    assert runner.instance("collect").rows == [[0.0, 10.0, 3], [10.0, 20.0, 2]]
    assert runner.instance("late").rows == [3.0]


def test_the_combining_phase_merges_late_parts_and_waits_for_every_task() -> None:
    spec = tumbling(seconds=10).event_time(lambda e: e, allowed_lateness=5.0)
    from topology.windows.spec import WindowSpec

    windows = CombiningWindows(
        WindowSpec("tumbling", length=10.0, timestamp_field="value", allowed_lateness=5.0),
        frozenset({1, 2}),
        0.0,
        aggregator("reduce", {}, max),
    )
    assert spec.allowed_lateness == 5.0
    assert windows.partial(1, 0.0, 10.0, 7, None, 0.0) == []
    assert windows.mark(1, 11.0, 0.0) == []  # task 2 has promised nothing yet
    assert windows.partial(2, 0.0, 10.0, 9, None, 0.0) == []
    [fired] = windows.mark(2, 10.0, 0.0)
    assert (fired.start, fired.end, fired.acc) == (0.0, 10.0, 9)
    [again] = windows.partial(1, 0.0, 10.0, 12, None, 0.0)  # task 1's late pane
    assert again.acc == 12
    assert windows.mark(1, 20.0, 0.0) == [] and windows.held() == 1
    assert windows.mark(2, 15.0, 0.0) == [] and windows.held() == 0  # past its lateness


def test_untracked_elements_leave_nothing_but_the_accumulator() -> None:
    from topology.windows.spec import WindowSpec

    windows = AggregatingWindows(
        WindowSpec("sliding", length=10.0, interval=5.0), frozenset(), 0.0, aggregator("count", {})
    )
    for n in range(1000):
        assert windows.add(None, n, None, 0, None, n / 200)
    assert windows.held() == 2  # [-5, 5) and [0, 10): two accumulators, no elements
    assert all(not p.anchors and not p.owned for p in windows.keys[None].values())
    assert [(f.start, f.acc) for f in windows.tick(10.0)] == [(-5.0, 1000), (0.0, 1000)]


# -- checkpoints --------------------------------------------------------------------------


class Store(StatefulBolt):
    """The last result of each window (idempotent: a replayed firing overwrites)."""

    def execute(self, tup: Tuple) -> None:
        if len(tup.values) == 2:  # (k, (start, end, result))
            key, (start, end, result) = tup.values
        else:
            key, (start, end, result) = None, tup.values[0]
        if end < END:
            self.state.put([key, start, end], plain(result))


@pytest.mark.parametrize("keyed", [True, False])
def test_accumulators_survive_worker_restarts_in_a_checkpointed_topology(keyed: bool) -> None:
    rng = random.Random(7)
    rows = [
        (round(i * 0.05 + rng.uniform(0, 2), 2), rng.choice("abcd"), i % 10) for i in range(1500)
    ]
    sb = StreamBuilder()
    events = sb.new_stream(Events(rows, per_call=1, every=2), 2, name="events")
    per_5s = tumbling(seconds=5).event_time(lambda e: e["ts"], lag=1000.0)
    if keyed:
        pairs = events.map_to_pair(lambda e: (e["k"], e))
        pairs.window(per_5s).with_bounds().aggregate_by_key(lambda: 0, lambda a, e: a + e["v"]).to(
            Store(), 2, name="store"
        )
    else:
        events.window(per_5s).with_bounds().aggregate(
            lambda: 0, lambda a, e: a + e["v"], merge=lambda a, b: a + b
        ).to(Store(), name="store")
    conf = {
        "topology.workers": 2,
        "topology.state.provider": "memory",
        "topology.state.checkpoint.interval.ms": 200,
    }
    runner = InProcessRunner(sb.build(), conf)
    runner.activate()

    def turns(n: int) -> None:
        for _ in range(n):
            runner.clock.advance(0.05)  # type: ignore[attr-defined]
            runner.turn()

    turns(60)  # a few hundred rows in, checkpoints taken, every window open
    runner.restart_worker(1)
    turns(40)
    runner.restart_worker(0)
    turns(1500)
    completed = max(
        w.checkpoints.coordinator.completed
        for w in runner.workers.values()
        if w.checkpoints is not None and w.checkpoints.coordinator is not None
    )
    assert completed >= 5
    final = {}
    for i in range(runner.topology.components["store"].num_tasks):
        final.update({tuple(k): v for k, v in runner.instance("store", i).state.items()})
    expected: Counter[tuple[Any, float, float]] = Counter()
    for ts, k, v in rows:
        start = math.floor(ts / 5.0) * 5.0
        expected[(k if keyed else None, start, start + 5.0)] += v
    assert final == dict(expected)


def test_windows_that_keep_their_elements_rank_and_count_distinct_too() -> None:
    rows = [(float(i), "ab"[i % 2], i % 4) for i in range(8)]
    sb = StreamBuilder()
    events = sb.new_stream(Events(rows), 1, name="events")
    events.window(tumbling(count=4)).with_bounds().top_n(2, by=lambda e: e["v"]).map(
        lambda r: [r[0], r[1], [e["v"] for e in r[2]]]
    ).to(Collect(), name="collect")
    pairs = events.map_to_pair(lambda e: (e["k"], [e["ts"], e["v"] % 2]))
    gaps = session(gap_seconds=2.5).event_time(lambda v: v[0], lag=1000.0)
    pairs.window(gaps).with_bounds().count_distinct_by_key().to(Collect(), name="distinct")
    runner = InProcessRunner(sb.build(), {"topology.workers": 1})
    runner.activate()
    for _ in range(200):
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
    # v: 0 1 2 3 | 0 1 2 3 (then the closers, v 0)
    assert runner.instance("collect").rows[:2] == [[0, 4, [3, 2]], [4, 8, [3, 2]]]
    # a: ts 0 2 4 6, b: ts 1 3 5 7: each key one session of 4 distinct values
    distinct = sorted(r for r in runner.instance("distinct").rows if not _closer(r))
    assert distinct == [["a", [0.0, 8.5, 4]], ["b", [1.0, 9.5, 4]]]
