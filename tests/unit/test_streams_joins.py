"""Unwindowed stream joins on the in-process runner (simulated clock): the regular join
(with and without a TTL) and the interval join, each against a plain-Python nested loop
over the same elements; acking, expiry on the timer, late elements, checkpointed state
surviving a worker restart, and errors naming the operator."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_streams import FAIL_AT_ONCE, Collect, Items, _plain, rows
from topology import ReplayableSpout
from topology.runtime.inprocess import InProcessRunner, ManualClock
from topology.spec import describe_components
from topology.streams import StreamBuilder, joins
from topology.windows.watermark import LowWatermark

pytestmark = pytest.mark.timeout(120)

START = 1000.0  # the simulated clock's start (ManualClock's)
KEYS = st.sampled_from([0, 1, (3, "x")])  # a tuple key comes back from msgpack a list
CHECKPOINTED = {
    "topology.state.provider": "memory",
    "topology.state.checkpoint.interval.ms": 50,
}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[ManualClock]:
    """The runner's clock, which is the joins' processing time too."""
    manual = ManualClock(START)
    monkeypatch.setattr(joins, "wall_clock", manual)
    yield manual


class Timed(ReplayableSpout):
    """``[key, value]`` from ``(at, key, value)`` items, each once the joins' processing
    time reaches ``START + at`` (every due one at each call), its index as msg id;
    replays failed ones."""

    outputs = ["key", "value"]

    def __init__(self, items: list[tuple[float, Any, Any]]) -> None:
        self.items = items

    def open(self, conf: Any, context: Any) -> None:
        self.next, self.acked, self.failed = 0, [], []
        self.again: list[int] = []

    def next_tuple(self) -> None:
        due = self.again
        self.again = []
        while (
            self.next < len(self.items) and joins.wall_clock() >= START + self.items[self.next][0]
        ):
            due.append(self.next)
            self.next += 1
        for i in due:
            _, key, value = self.items[i]
            self.emit([list(key) if isinstance(key, tuple) else key, value], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)
        self.again.append(msg_id)

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position


def pairs(sb: StreamBuilder, name: str, spout: Any, parallelism: int = 1) -> Any:
    return sb.new_stream(spout, parallelism, name=name).map_to_pair(
        lambda r: (tuple(r["key"]) if isinstance(r["key"], list) else r["key"], r["value"])
    )


def drive(runner: InProcessRunner, clock: ManualClock, until: float, step: float = 0.25) -> None:
    """Move the clock to ``START + until`` by ``step``, with turns enough at each reading
    for what is due there to be emitted and joined."""
    while True:
        runner.turn(6)
        if clock() >= START + until:
            return
        clock.advance(step)


def joined(runner: InProcessRunner) -> Counter[Any]:
    return Counter(repr(_plain(row)) for row in rows(runner))


def expected(found: list[tuple[Any, tuple[Any, Any]]]) -> Counter[Any]:
    return Counter(repr(_plain([k, list(ab)])) for k, ab in found)


def acked_all(runner: InProcessRunner, *spouts: tuple[str, int]) -> bool:
    for name, count in spouts:
        tasks = runner.topology.components[name].num_tasks
        acked = [m for i in range(tasks) for m in runner.instance(name, i).acked]
        if sorted(acked) != list(range(count)):
            return False
    return True


# -- the regular join -------------------------------------------------------------------------

ELEMENTS = st.lists(st.tuples(KEYS, st.integers(0, 9)), min_size=1, max_size=12)


def nested_loop(left: list[Any], right: list[Any]) -> list[Any]:
    return [(ka, (va, vb)) for ka, va in left for kb, vb in right if ka == kb]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(left=ELEMENTS, right=ELEMENTS, fusion=st.booleans(), tasks=st.sampled_from([1, 2]))
def test_the_join_emits_each_match_once_as_a_nested_loop_does(
    left: list[Any], right: list[Any], fusion: bool, tasks: int
) -> None:
    sb = StreamBuilder(fusion=fusion)
    a = pairs(sb, "a", Items(left, ["key", "value"]), tasks)
    b = pairs(sb, "b", Items(right, ["key", "value"]))
    a.join(b).to(Collect(), 2, name="collect")
    runner = InProcessRunner(sb.build(), {"topology.workers": 2})
    runner.activate()
    runner.run_until(lambda: acked_all(runner, ("a", len(left)), ("b", len(right))), 500, 0.05)
    assert joined(runner) == expected(nested_loop(left, right))
    assert not runner.errors


TIMED = st.lists(
    st.tuples(st.integers(0, 8), KEYS, st.integers(0, 9)), min_size=2, max_size=10
).map(lambda items: sorted(items, key=lambda i: i[0]))


@settings(max_examples=15, deadline=None, derandomize=True)
@given(left=TIMED, right=TIMED, ttl=st.sampled_from([1, 2, 3.5]))
def test_a_ttl_joins_only_values_younger_than_it_and_the_timer_drops_the_rest(
    left: list[Any], right: list[Any], ttl: float
) -> None:
    clock = ManualClock(START)
    joins.wall_clock, before = clock, joins.wall_clock
    try:
        sb = StreamBuilder()
        a, b = pairs(sb, "a", Timed(left)), pairs(sb, "b", Timed(right))
        a.join(b, ttl=ttl).named("j").to(Collect(), name="collect")
        runner = InProcessRunner(sb.build(), {"topology.workers": 2}, clock=clock)
        runner.activate()
        drive(runner, clock, 10)
        # a value that arrived at t is joined with one arriving at u >= t when u - t < ttl
        want = [
            (ka, (va, vb))
            for ta, ka, va in left
            for tb, kb, vb in right
            if ka == kb and abs(ta - tb) < ttl
        ]
        assert joined(runner) == expected(want)
        drive(runner, clock, 10 + ttl + 60, step=5)  # the timer drops every expired value
        assert runner.instance("j").join.entries == {}
        assert acked_all(runner, ("a", len(left)), ("b", len(right)))
    finally:
        joins.wall_clock = before


# -- the interval join ------------------------------------------------------------------------


def events(max_size: int) -> Any:
    """``(at, key, value)`` with ``value = [event time, n]``: event times run a little out
    of order (by up to 2 s) behind the processing time ``at``."""
    return st.lists(
        st.tuples(st.integers(0, 12), st.sampled_from([0, (3, "x")]), st.integers(0, 2)),
        min_size=2,
        max_size=max_size,
    ).map(
        lambda items: sorted(
            ((at, key, [float(at - back), n]) for n, (at, key, back) in enumerate(items)),
            key=lambda i: i[0],
        )
    )


def between(left: list[Any], right: list[Any], lower: float, upper: float) -> list[Any]:
    return [
        (ka, (va, vb))
        for _, ka, va in left
        for _, kb, vb in right
        if ka == kb and va[0] + lower <= vb[0] <= va[0] + upper
    ]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(
    left=events(12),
    right=events(12),
    bounds=st.sampled_from([(0, 0), (-2, 3), (1, 4), (-3, -1)]),
    tasks=st.sampled_from([1, 2]),
)
def test_the_interval_join_matches_a_nested_loop_when_nothing_is_late(
    left: list[Any], right: list[Any], bounds: tuple[float, float], tasks: int
) -> None:
    clock = ManualClock(START)
    joins.wall_clock, before = clock, joins.wall_clock
    try:
        sb = StreamBuilder()
        a, b = pairs(sb, "a", Timed(left)), pairs(sb, "b", Timed(right)).repartition(tasks)
        lower, upper = bounds
        a.interval_join(b, lower, upper, time=lambda v: v[0], lag=2).named("j").to(
            Collect(), name="collect"
        )
        runner = InProcessRunner(sb.build(), {"topology.workers": 2}, clock=clock)
        runner.activate()
        drive(runner, clock, 15)
        assert joined(runner) == expected(between(left, right, lower, upper))
        assert runner.instance("j").join.late == 0
        assert acked_all(runner, ("a", len(left)), ("b", len(right)))
        assert not runner.errors
    finally:
        joins.wall_clock = before


def test_late_elements_are_dropped_and_counted_and_old_values_leave(clock: ManualClock) -> None:
    # "k" at 10 and 30 on the left; the right's 31 moves the watermark to 31 (lag 0): its
    # 12 comes late; the left's 10 (10 + 5 < 31) leaves, its 30 stays
    left = [(0, "k", [10.0, "a"]), (1, "k", [30.0, "b"])]
    right = [(0, "k", [12.0, "x"]), (1, "k", [31.0, "y"]), (4, "k", [12.0, "late"])]
    sb = StreamBuilder()
    a, b = pairs(sb, "a", Timed(left)), pairs(sb, "b", Timed(right))
    other = b.map_values(lambda v: {"at": v[0], "name": v[1]})
    a.interval_join(other, 0, 5, time=lambda v: v[0], other_time=lambda v: v["at"], lag=0).named(
        "j"
    ).map(lambda kv: [kv[1][0][1], kv[1][1]["name"]]).to(Collect(), name="collect")
    runner = InProcessRunner(sb.build(), {"topology.workers": 1}, clock=clock)
    runner.activate()
    drive(runner, clock, 8)
    assert sorted(map(tuple, (row[0] for row in rows(runner)))) == [("a", "x"), ("b", "y")]
    join = runner.instance("j-map").join
    assert join.watermark == 31.0 and join.late == 1  # (the left input is quiet by then)
    assert join.entries["k"][:4] == [[[30.0, "b"]], [30.0], [{"at": 31.0, "name": "y"}], [31.0]]
    assert acked_all(runner, ("a", 2), ("b", 3))
    assert runner.task("j-map").context.metrics.snapshot()["late_elements"]["value"] == 1


def test_an_input_task_with_nothing_for_the_join_does_not_hold_its_watermark(
    clock: ManualClock,
) -> None:
    """Every left value has key "k", so one of the two tasks grouping them by key never
    sends the join anything: its progress marks let the watermark move all the same."""
    left = [(i, "k", [float(i), f"a{i}"]) for i in range(10)]
    right = [(i, "k", [float(i), f"b{i}"]) for i in range(10)]
    sb = StreamBuilder()
    a = pairs(sb, "a", Timed(left)).repartition(2).group_by_key()
    b = pairs(sb, "b", Timed(right))
    a.interval_join(b, 0, 0, time=lambda v: v[0], lag=1).named("j").to(Collect(), name="c")
    runner = InProcessRunner(sb.build(), {"topology.workers": 2}, clock=clock)
    runner.activate()
    drive(runner, clock, 14)
    assert len(rows(runner, "c")) == 10
    join = max((runner.instance("j", i).join for i in range(2)), key=lambda j: j.watermark)
    assert join.watermark == 8.0  # the latest time, 9, less the lag
    assert sum(len(e[0]) + len(e[2]) for e in join.entries.values()) <= 4  # the rest left


# -- the joins alone, with any order of arrivals and timer calls --------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "a", "b", "timer"]), st.sampled_from([0, 1]), st.integers(0, 30)
    ),
    min_size=20,
    max_size=60,
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(ops=OPS, bounds=st.sampled_from([(0, 0), (-2, 3), (1, 4), (-5, -1)]), lag=st.integers(0, 4))
def test_the_interval_join_keeps_whatever_a_later_element_may_still_match(
    ops: list[tuple[str, int, int]], bounds: tuple[int, int], lag: int
) -> None:
    """Reference: the nested loop over the elements that were not late (older than the
    watermark when they came); the watermark moves at each timer call."""
    lower, upper = bounds
    out: list[Any] = []
    marks = LowWatermark(frozenset({1}), float(lag), None, 0.0)
    join = joins.IntervalJoin(out.append, lower, upper, _first, _first, marks, lambda: 0.0)
    kept: dict[str, list[Any]] = {"a": [], "b": []}
    newest, mark = -math.inf, -math.inf
    for n, (op, key, back) in enumerate(ops):
        ts = n // 2 - back // 4  # times mostly rising, up to 7 s out of order
        if op == "timer":
            join.advance(0.0)
            mark = max(mark, newest - lag)
            assert join.watermark == mark
            continue
        value = (ts, n)
        (join.left if op == "a" else join.right)(1, key, value)
        newest = max(newest, ts)
        if ts >= mark:
            kept[op].append((key, value))
    want = [
        (ka, (va, vb))
        for ka, va in kept["a"]
        for kb, vb in kept["b"]
        if ka == kb and va[0] + lower <= vb[0] <= va[0] + upper
    ]
    assert Counter(out) == Counter(want)
    assert join.late == sum(op != "timer" for op, _, _ in ops) - len(kept["a"]) - len(kept["b"])


@settings(max_examples=200, deadline=None, derandomize=True)
@given(ops=OPS, ttl=st.sampled_from([1, 2.5, 7]))
def test_the_ttl_join_joins_values_younger_than_it_whenever_the_timer_runs(
    ops: list[tuple[str, int, int]], ttl: float
) -> None:
    """Each op's number is processing time (ops in time order); a timer call expires."""
    ops = sorted(ops, key=lambda op: op[2])
    now = 0.0
    out: list[Any] = []
    join = joins.RegularJoin(out.append, ttl, lambda: now)
    for n, (op, key, at) in enumerate(ops):
        now = float(at)
        if op == "timer":
            join.expire()
        else:
            (join.left if op == "a" else join.right)(key, (at, n))
    arrived = [(op, key, (at, n)) for n, (op, key, at) in enumerate(ops) if op != "timer"]
    want = [
        (ka, (va, vb) if sa == "a" else (vb, va))
        for i, (sa, ka, va) in enumerate(arrived)
        for sb, kb, vb in arrived[:i]
        if sa != sb and ka == kb and va[0] - vb[0] < ttl
    ]
    assert Counter(out) == Counter(want)
    now += ttl + 60
    join.expire()
    assert join.entries == {}


def _first(value: Any) -> Any:
    return value[0]


# -- checkpointed -----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["join", "interval_join"])
def test_checkpointed_join_state_survives_a_worker_restart(how: str, clock: ManualClock) -> None:
    """Matches counted per key with ``update_state_by_key`` (exactly once); a worker
    restarted half-way: the joins' stored values come back from the checkpoint, so the
    later elements still find the earlier ones."""
    left = [(i * 0.2, i % 3, [float(i), f"a{i}"]) for i in range(60)]
    right = [(i * 0.2 + 0.1, i % 3, [float(i) + 0.5, f"b{i}"]) for i in range(60)]
    sb = StreamBuilder()
    a = pairs(sb, "a", Timed(left)).repartition(2)
    b = pairs(sb, "b", Timed(right))
    if how == "join":
        both = a.join(b)
        want = nested_loop([(k, v) for _, k, v in left], [(k, v) for _, k, v in right])
    else:
        both = a.interval_join(b, -6, 6, time=lambda v: v[0], lag=1)
        want = between(left, right, -6, 6)  # matches up to 1.2 s (of arrivals) apart
    both.named("j").update_state_by_key(lambda n, _: (n or 0) + 1).named("count")
    runner = InProcessRunner(sb.build(), {"topology.workers": 2, **CHECKPOINTED}, clock=clock)
    runner.activate()
    drive(runner, clock, 6, step=0.05)
    assert any(runner.instance("j", i).state.items() for i in range(2))  # checkpointed
    runner.restart_worker(1)
    drive(runner, clock, 40, step=0.05)
    counts: Counter[Any] = Counter()
    for i in range(2):
        counts.update(dict(runner.instance("count", i).state.items()))
    assert counts == Counter(k for k, _ in want)
    assert not runner.errors


# -- errors and names -------------------------------------------------------------------------


def test_bad_settings_are_refused_naming_the_operator() -> None:
    sb = StreamBuilder()
    a = pairs(sb, "a", Items([], ["key", "value"]))
    b = pairs(sb, "b", Items([], ["key", "value"]))
    with pytest.raises(ValueError, match=r"interval_join\(lower=5, upper=1\): lower must be"):
        a.interval_join(b, 5, 1, time=len)
    with pytest.raises(TypeError, match=r"interval_join\(time=...\) must be a function"):
        a.interval_join(b, 0, 1, time="ts")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"interval_join\(other_time=...\) must be a function"):
        a.interval_join(b, 0, 1, time=len, other_time=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"interval_join\(lag=...\) must be >= 0"):
        a.interval_join(b, 0, 1, time=len, lag=-1)
    with pytest.raises(ValueError, match=r"join\(ttl=...\) must be None"):
        a.join(b, ttl=0)
    with pytest.raises(TypeError, match=r"join\(\) needs a PairStream"):
        a.join(sb.new_stream(Items([]), name="c"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="joined with itself"):
        a.interval_join(a, 0, 1, time=len)
    with pytest.raises(ValueError, match="two StreamBuilders"):
        a.join(pairs(StreamBuilder(), "d", Items([], ["key", "value"])))


def test_a_time_function_giving_no_number_is_reported_naming_the_component(
    clock: ManualClock,
) -> None:
    sb = StreamBuilder()
    a = pairs(sb, "a", Timed([(0, "k", "x")]))
    b = pairs(sb, "b", Timed([(0, "k", "y")]))
    a.interval_join(b, 0, 1, time=lambda v: v).named("ij").to(Collect(), name="collect")
    runner = InProcessRunner(sb.build(), {"topology.workers": 1, **FAIL_AT_ONCE}, clock=clock)
    runner.activate()
    drive(runner, clock, 1)
    assert any(
        component == "ij" and "stream interval join 'ij': the time function gave 'x'" in text
        for component, _, text in runner.errors
    )


def test_joins_are_shown_as_written_and_fuse_what_follows() -> None:
    sb = StreamBuilder()
    a = pairs(sb, "a", Items([], ["key", "value"]))
    b = pairs(sb, "b", Items([], ["key", "value"]))
    a.join(b, ttl=5).map(str).to(Collect(), name="c1")
    a.interval_join(b, 0, 1, time=len).named("recent").to(Collect(), name="c2")
    described = describe_components(sb.build())
    assert described["join-str"]["operators"] == ["join", "map(str)"]
    assert described["recent"]["operators"] == ["interval_join(recent)"]
    conf = sb.topology_builder._components
    ticks = {s.id: s.conf.get("topology.tick.tuple.freq.secs") for s in conf}
    assert ticks["join-str"] == 1.25 and ticks["recent"] == joins.WATERMARK_INTERVAL
