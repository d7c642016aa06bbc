"""The Streams API on the in-process runner (simulated clock): each operator's semantics,
fusion on and off giving the same results, acking through fused operators, names and
fused groups in the topology's description, and errors that name the operator."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topology import Bolt, ReplayableSpout, Spout, TopologyValidationError, Tuple
from topology.runtime.inprocess import InProcessRunner
from topology.spec import describe_components
from topology.streams import StreamBuilder, tumbling

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

pytestmark = pytest.mark.timeout(60)


class Items(ReplayableSpout):
    """Emits its items once (task i every n-th), each with its index as msg id; records
    acks and fails; replays a failed item."""

    outputs = ["item"]

    def __init__(self, items: list[Any], fields: list[str] | None = None) -> None:
        self.items = items
        if fields is not None:
            self.outputs = fields  # type: ignore[misc]

    def open(self, conf: Any, context: Any) -> None:
        self.next = context.task_index
        self.step = len(context.component_tasks())
        self.acked: list[int] = []
        self.failed: list[int] = []
        self.again: list[int] = []

    def next_tuple(self) -> None:
        if self.again:
            i = self.again.pop(0)
        elif self.next < len(self.items):
            i, self.next = self.next, self.next + self.step
        else:
            return
        item = self.items[i]
        self.emit(list(item) if isinstance(item, tuple) else [item], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)
        self.again.append(msg_id)

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position


class Collect(Bolt):
    """Keeps every tuple's values (per task)."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.rows: list[list[Any]] = []

    def execute(self, tup: Tuple) -> None:
        self.rows.append(list(tup.values))
        self.ack(tup)


def run(builder: StreamBuilder, turns: int = 60, workers: int = 2, **conf: Any) -> InProcessRunner:
    runner = InProcessRunner(builder.build(), {"topology.workers": workers, **conf})
    runner.activate()
    for _ in range(turns):
        runner.clock.advance(0.05)  # type: ignore[attr-defined]
        runner.turn()
    return runner


def rows(runner: InProcessRunner, component: str = "collect") -> list[list[Any]]:
    tasks = runner.topology.components[component].num_tasks
    return [row for i in range(tasks) for row in runner.instance(component, i).rows]


def values(runner: InProcessRunner, component: str = "collect") -> list[Any]:
    return [row[0] for row in rows(runner, component)]


SENTENCES = ["a b c", "b c", "c", "", "a a"]


def word_counts(fusion: bool) -> tuple[InProcessRunner, StreamBuilder]:
    sb = StreamBuilder(fusion=fusion)
    (
        sb.new_stream(Items(SENTENCES), parallelism=2, name="lines")
        .flat_map(str.split)
        .map(str.upper)
        .filter(lambda w: w != "B")
        .key_by(lambda w: w)
        .count_by_key()
        .to(Collect(), 2, name="collect")
    )
    return run(sb), sb


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_word_count_gives_the_same_counts_fused_or_not_and_acks_every_sentence(
    fusion: bool,
) -> None:
    runner, _ = word_counts(fusion)
    finals: dict[str, int] = {}
    for word, count in rows(runner):
        finals[word] = max(finals.get(word, 0), count)
    assert finals == {"A": 3, "C": 3}
    spouts = [runner.instance("lines", i) for i in range(2)]
    assert sorted(m for s in spouts for m in s.acked) == list(range(len(SENTENCES)))
    assert not any(s.failed for s in spouts)


def test_fusion_runs_stateless_operators_in_one_component_and_describes_them() -> None:
    _, fused = word_counts(True)
    described = describe_components(fused.build())
    # chained into the spout's task, which keeps the spout's name
    assert sorted(described) == ["collect", "count_by_key", "lines"]
    assert described["lines"]["kind"] == "spout"
    assert described["lines"]["operators"] == [
        "spout(Items)",
        "flat_map(split)",
        "map(upper)",
        "filter",
        "key_by",
    ]
    assert described["count_by_key"]["inputs"][0]["grouping"] == "fields"
    _, unfused = word_counts(False)
    assert len(describe_components(unfused.build())) == 7


def test_pair_operators_branch_union_and_repartition() -> None:
    sb = StreamBuilder()
    numbers = sb.new_stream(Items(list(range(10))), name="numbers")
    small, big = numbers.branch(lambda n: n < 3, lambda n: n >= 7)
    pairs = small.union(big).repartition(3).map_to_pair(lambda n: (n % 2, n))
    (
        pairs.map_values(lambda n: n * 10)
        .flat_map_values(lambda n: [n, n + 1])
        .peek(lambda kv: None)
        .to(Collect(), name="collect")
    )
    runner = run(sb)
    assert sorted(map(tuple, rows(runner))) == sorted(
        (n % 2, v) for n in [0, 1, 2, 7, 8, 9] for v in (n * 10, n * 10 + 1)
    )
    [spread] = [c for c in runner.topology.components.values() if c.id.startswith("repartition")]
    assert spread.num_tasks == 3
    assert spread.id == "repartition-map_to_pair-map_values-flat_map_values-peek"


def test_running_aggregations_per_key() -> None:
    sb = StreamBuilder()
    pairs = sb.new_stream(Items([("a", 1), ("b", 2), ("a", 3), ("a", 4)], ["k", "v"]), name="kv")
    keyed = pairs.map_to_pair(lambda row: (row["k"], row["v"]))
    keyed.reduce_by_key(lambda x, y: x + y).to(Collect(), name="collect")
    keyed.aggregate_by_key(list, lambda acc, v: [*acc, v], result=len).to(Collect(), name="sizes")
    runner = run(sb, workers=1)
    assert sorted(map(tuple, rows(runner))) == [("a", 1), ("a", 4), ("a", 8), ("b", 2)]
    assert sorted(map(tuple, rows(runner, "sizes"))) == [("a", 1), ("a", 2), ("a", 3), ("b", 1)]


def test_group_by_key_sends_every_value_of_a_key_to_one_task() -> None:
    sb = StreamBuilder()
    keys = [f"k{i % 7}" for i in range(70)]
    (
        sb.new_stream(Items(keys), parallelism=2, name="keys")
        .key_by(lambda k: k)
        .group_by_key()
        .to(Collect(), 3, name="collect")
    )
    runner = run(sb)
    owners: dict[str, set[int]] = {}
    for task in range(3):
        for key, _ in runner.instance("collect", task).rows:
            owners.setdefault(key, set()).add(task)
    assert len(owners) == 7 and all(len(tasks) == 1 for tasks in owners.values())


def test_count_windows_per_key_and_over_all_elements() -> None:
    sb = StreamBuilder()
    letters = sb.new_stream(Items(list("aabacbaab")), name="letters")
    letters.window(tumbling(count=3)).count().to(Collect(), name="counts")
    letters.window(tumbling(count=3)).reduce(lambda x, y: x + y).to(Collect(), name="joined")
    runner = run(sb, workers=1)
    assert values(runner, "counts") == [3, 3, 3]
    assert values(runner, "joined") == ["aab", "acb", "aab"]


class Timed(Spout):
    """``[user, ts]`` events from a list, a few per executor turn (time moves with them)."""

    outputs = ["user", "ts"]

    def __init__(self, events: list[tuple[str, float]]) -> None:
        self.events = events

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        """One event every 40 calls (2 s of simulated time: the watermark moves between)."""
        self.calls = getattr(self, "calls", -1) + 1
        if self.calls % 40 == 0 and self.i < len(self.events):
            self.emit(list(self.events[self.i]), msg_id=self.i)
            self.i += 1


def test_event_time_windows_count_per_key_and_late_elements_go_to_their_stream() -> None:
    events = [("u1", 1.0), ("u2", 2.0), ("u1", 4.0), ("u1", 12.0), ("u1", 3.0), ("u2", 30.0)]
    sb = StreamBuilder()
    windowed = (
        sb.new_stream(Timed(events), name="events")
        .key_by(lambda e: e["user"])
        .window(tumbling(seconds=10).event_time(lambda e: e["ts"], lag=0.0))
    )
    windowed.count_by_key().to(Collect(), name="collect")
    windowed.late().map(lambda kv: kv[1]["ts"]).to(Collect(), name="late")
    runner = run(sb, turns=300, workers=1)
    assert sorted(map(tuple, rows(runner))) == [("u1", 1), ("u1", 2), ("u2", 1)]
    assert values(runner, "late") == [3.0]  # after the watermark passed 10 (12 - 0 lag)


JOIN_WINDOW = tumbling(count=6)
LEFT = [("k1", "l1"), ("k2", "l2"), ("k3", "l3")]
RIGHT = [("k1", "r1"), ("k1", "r1b"), ("k4", "r4")]


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("join", [("k1", ("l1", "r1")), ("k1", ("l1", "r1b"))]),
        (
            "left_outer_join",
            [
                ("k1", ("l1", "r1")),
                ("k1", ("l1", "r1b")),
                ("k2", ("l2", None)),
                ("k3", ("l3", None)),
            ],
        ),
        ("right_outer_join", [("k1", ("l1", "r1")), ("k1", ("l1", "r1b")), ("k4", (None, "r4"))]),
        (
            "full_outer_join",
            [
                ("k1", ("l1", "r1")),
                ("k1", ("l1", "r1b")),
                ("k2", ("l2", None)),
                ("k3", ("l3", None)),
                ("k4", (None, "r4")),
            ],
        ),
        (
            "co_group_by_key",
            [
                ("k1", (["l1"], ["r1", "r1b"])),
                ("k2", (["l2"], [])),
                ("k3", (["l3"], [])),
                ("k4", ([], ["r4"])),
            ],
        ),
    ],
)
def test_window_joins_with_missing_sides(how: str, expected: list[Any]) -> None:
    sb = StreamBuilder()
    left = sb.new_stream(Items(LEFT, ["k", "v"]), name="left").map_to_pair(
        lambda r: (r["k"], r["v"])
    )
    right = sb.new_stream(Items(RIGHT, ["k", "v"]), name="right").map_to_pair(
        lambda r: (r["k"], r["v"])
    )
    joined = getattr(left.window(JOIN_WINDOW), how)(right)
    joined.map(lambda kv: kv).to(Collect(), name="collect")
    runner = run(sb, workers=1)
    assert sorted(_plain(values(runner))) == sorted(_plain(expected))


def _plain(value: Any) -> Any:
    """Tuples and lists alike (msgpack gives tuples back as lists)."""
    return [_plain(v) for v in value] if isinstance(value, list | tuple) else value


class Boom(Exception):
    pass


def test_an_operator_that_raises_fails_its_input_and_the_spout_replays_it() -> None:
    seen: set[int] = set()

    def flaky(n: int) -> int:
        if n == 3 and n not in seen:
            seen.add(n)
            raise Boom("first time")
        return n

    sb = StreamBuilder()
    sb.new_stream(Items(list(range(6))), name="numbers").map(flaky).to(Collect(), name="collect")
    runner = run(sb, workers=1, **FAIL_AT_ONCE)
    spout = runner.instance("numbers")
    assert spout.failed == [3]
    assert sorted(spout.acked) == list(range(6))
    assert sorted(values(runner)) == list(range(6))
    assert any(
        # (chained into the spout's task: the spout's error)
        "Boom: first time" in text and component == "numbers"
        for component, _, text in runner.errors
    )


def test_bad_use_is_refused_with_messages_naming_the_fix() -> None:
    sb = StreamBuilder()
    stream = sb.new_stream(Items([1]), name="n")
    with pytest.raises(TypeError, match="map\\(\\) takes a function"):
        stream.map(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="window\\(\\) takes tumbling"):
        stream.window(10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a class: instantiate it"):
        sb.new_stream(Items)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parallelism must be >= 1"):
        stream.repartition(0)
    with pytest.raises(ValueError, match="apply the window's aggregation first"):
        stream.window(tumbling(count=2)).late()
    with pytest.raises(TypeError, match="tumbling\\(\\) takes seconds=... or count="):
        tumbling()
    stream.map(str).named("no spaces allowed")
    with pytest.raises(TopologyValidationError, match="no spaces allowed"):
        sb.build()
    built = StreamBuilder()
    built.new_stream(Items([1]), name="n").for_each(print)
    built.build()
    with pytest.raises(TopologyValidationError, match="built already"):
        built.new_stream(Items([1]))


def test_hand_written_components_mix_with_streams() -> None:
    class Doubler(Bolt):
        outputs = ["n", "twice"]

        def execute(self, tup: Tuple) -> None:
            n = tup["item"]  # straight after a hand-written spout: its own fields
            self.emit([n, n * 2], anchors=tup)
            self.ack(tup)

    sb = StreamBuilder()
    (
        sb.new_stream(Items([1, 2, 3]), name="n")
        .to(Doubler(), name="doubler")
        .map(lambda row: row["n"] + row["twice"])
        .to(Collect(), name="collect")
    )
    counter = Counter(values(run(sb, workers=1)))
    assert counter == Counter([3, 6, 9])


def turn_until(runner: InProcessRunner, component: str, done: Any, timeout: float = 10.0) -> None:
    """Turn until ``done()``, waiting on ``component``'s async completions between turns."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "condition not met in time"
        runner.turn()
        calls = runner.instance(component)._calls
        if calls is not None and calls.in_flight:
            calls.wait(0.01)


@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "unordered"])
def test_map_async_overlaps_calls_and_fused_operators_follow_it(ordered: bool) -> None:
    in_flight: list[int] = []
    most: list[int] = [0]

    async def lookup(n: int) -> int:
        in_flight.append(n)
        most[0] = max(most[0], len(in_flight))
        await asyncio.sleep(0.02 if n % 2 else 0.0)
        in_flight.remove(n)
        return n * 10

    sb = StreamBuilder()
    (
        sb.new_stream(Items(list(range(40))), name="numbers")
        .map_async(lookup, capacity=8, ordered=ordered)
        .map(lambda n: n + 1)
        .to(Collect(), name="collect")
    )
    runner = InProcessRunner(sb.build(), {"topology.workers": 1})
    runner.activate()
    component = "lookup-map"  # the operator after the call runs in its component
    turn_until(runner, component, lambda: len(rows(runner)) == 40)
    got = values(runner)
    assert sorted(got) == [n * 10 + 1 for n in range(40)]
    if ordered:
        assert got == [n * 10 + 1 for n in range(40)]
    assert 1 < most[0] <= 8  # calls overlapped, never more than the capacity
    spout = runner.instance("numbers")
    turn_until(runner, component, lambda: len(spout.acked) == 40)
    assert sorted(spout.acked) == list(range(40)) and spout.failed == []


def test_visualize_shows_fused_operators_in_every_format() -> None:
    from cli.drawing import to_dot, to_mermaid, to_text

    _, fused = word_counts(True)
    described = describe_components(fused.build())
    text = to_text(described)
    assert "fused: spout(Items) > flat_map(split) > map(upper) > filter > key_by" in text
    assert "operator: count_by_key" in text
    assert "fused: spout(Items) > flat_map(split)" in to_dot(described)
    assert "fused: spout(Items) #gt; flat_map(split)" in to_mermaid(described)


MYPY_SNIPPET = """
from topology.streams import StreamBuilder
from topology import Spout

def lengths(sb: StreamBuilder, spout: Spout) -> None:
    words = sb.new_stream(spout).map(str).map(len)
    reveal_type(words)
    words.map(lambda n: n.upper())
    pairs = words.key_by(str).count_by_key()
    reveal_type(pairs)
"""


@pytest.mark.timeout(180)
def test_streams_are_typed_for_mypy(tmp_path: Any) -> None:
    from mypy import api

    snippet = tmp_path / "snippet.py"
    snippet.write_text(MYPY_SNIPPET)
    out, _, _ = api.run([str(snippet), "--no-incremental", "--follow-imports=silent"])
    assert 'Revealed type is "topology.streams.api.Stream[int]"' in out, out
    assert '"int" has no attribute "upper"' in out, out
    assert 'Revealed type is "topology.streams.api.PairStream[str, int]"' in out, out


def inc(n: int) -> int:
    return n + 1


def double(n: int) -> int:
    return n * 2


def is_even(n: int) -> bool:
    return n % 2 == 0


def twice(n: int) -> list[int]:
    return [n, n]


def small(n: int) -> bool:
    return n < 20


OPERATORS = {
    "inc": lambda s: s.map(inc),
    "double": lambda s: s.map(double),
    "even": lambda s: s.filter(is_even),
    "twice": lambda s: s.flat_map(twice),
    "peek": lambda s: s.peek(inc),
    "spread": lambda s: s.repartition(2),
    "branch": lambda s: s.branch(small, is_even)[0].union(s.branch(small, is_even)[1]),
}


def pipeline_results(ops: list[str], fusion: bool) -> tuple[Counter[Any], Counter[Any]]:
    sb = StreamBuilder(fusion=fusion)
    stream = sb.new_stream(Items(list(range(12))), parallelism=2, name="numbers")
    for op in ops:
        stream = OPERATORS[op](stream)
    stream.to(Collect(), name="collect")
    stream.key_by(lambda n: n % 3).count_by_key().named("count")
    runner = run(sb, turns=40)
    counts: Counter[Any] = Counter()
    for task in range(2):
        counts.update(runner.instance("count", task).aggregates)
    return Counter(values(runner)), counts


@settings(max_examples=25, deadline=None, derandomize=True)
@given(ops=st.lists(st.sampled_from(sorted(OPERATORS)), max_size=6))
def test_any_pipeline_gives_the_same_results_fused_and_unfused(ops: list[str]) -> None:
    assert pipeline_results(ops, True) == pipeline_results(ops, False)


# -- found in review ----------------------------------------------------------------------------


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_tuple_keys_work_across_workers_in_aggregations_windows_and_joins(fusion: bool) -> None:
    """msgpack gives a tuple back as a list: keys are made hashable again on arrival."""
    sb = StreamBuilder(fusion=fusion)
    words = sb.new_stream(Items(["ab", "c", "ab", "de"]), parallelism=2, name="w")
    keyed = words.key_by(lambda w: (w, len(w)))
    keyed.count_by_key().named("count")
    keyed.window(tumbling(count=2)).join(keyed.map_values(len)).to(Collect(), 3, name="collect")
    runner = run(sb, workers=3)
    finals: dict[Any, int] = {}
    for task in range(runner.topology.components["count"].num_tasks):
        for key, n in runner.instance("count", task).aggregates.items():
            finals[key] = n
    assert finals == {("ab", 2): 2, ("c", 1): 1, ("de", 2): 1}
    assert not runner.errors


def test_branch_asks_its_predicates_once_per_element() -> None:
    calls: Counter[str] = Counter()

    def first(n: int) -> bool:
        calls["first"] += 1
        return n % 2 == 0

    def second(n: int) -> bool:
        calls["second"] += 1
        return True

    sb = StreamBuilder(fusion=False)
    evens, rest = sb.new_stream(Items(list(range(10))), name="n").branch(first, second)
    evens.to(Collect(), name="collect")
    rest.to(Collect(), name="rest")
    runner = run(sb, workers=1)
    assert sorted(values(runner)) == [0, 2, 4, 6, 8]
    assert sorted(values(runner, "rest")) == [1, 3, 5, 7, 9]
    assert calls == {"first": 10, "second": 5}


def test_a_pair_operator_that_returns_no_pair_fails_naming_it() -> None:
    sb = StreamBuilder()
    sb.new_stream(Items([1, 2]), name="n").map_to_pair(lambda n: n).count_by_key().named("c")
    runner = run(sb, workers=1, turns=5, **FAIL_AT_ONCE)
    assert any(
        "map_to_pair: the function must return a (key, value) pair, got 1" in text
        for _, _, text in runner.errors
    )


def test_long_chains_and_operators_with_nothing_after_them_compile() -> None:
    sb = StreamBuilder()
    stream = sb.new_stream(Items([1, 2]), name="n")
    for _ in range(25):
        stream = stream.flat_map(lambda n: [n])
    stream.to(Collect(), name="collect")
    stream.flat_map(lambda n: [n])  # a flat_map nobody reads
    assert sorted(values(run(sb, workers=1))) == [1, 2]


def test_a_hand_written_stateful_sink_makes_the_stream_aggregations_checkpointed() -> None:
    from topology import StatefulBolt

    class Store(StatefulBolt):
        def execute(self, tup: Tuple) -> None:
            self.state.put(tup.values[0], tup.values[1])

    sb = StreamBuilder()
    counts = sb.new_stream(Items(["a"]), name="n").key_by(lambda w: w).count_by_key()
    counts.to(Store(), name="store")
    component = sb.build().components["count_by_key"].instance
    assert type(component).__name__ == "KeyedStateBolt"  # state restored with the sink's


def test_late_twice_is_one_stream_and_names_are_checked() -> None:
    sb = StreamBuilder()
    windowed = sb.new_stream(Items([1]), name="n").window(tumbling(count=1))
    windowed.count()
    assert windowed.late().node is windowed.late().node
    mixed = StreamBuilder()
    mixed.topology_builder.set_spout("collect", Items([1]))
    mixed.new_stream(Items([1]), name="n").to(Collect(), name="collect")
    with pytest.raises(TopologyValidationError, match="has a component of that name already"):
        mixed.build()
    built = StreamBuilder()
    stream = built.new_stream(Items([1]), name="n")
    built.build()
    with pytest.raises(TopologyValidationError, match="built already"):
        stream.named("late")


def test_checkpointed_aggregations_nothing_reads_update_their_state_by_merge() -> None:
    """A count, a reduction and an aggregate given ``merge`` at the end of their stream
    update by ``state.merge`` (no read); one whose running results flow on reads."""
    words = ["a", "bb", "a", "ccc", "a", "bb"]
    sb = StreamBuilder()
    pairs = sb.new_stream(Items(words), name="n").key_by(lambda w: w)
    pairs.count_by_key().named("counts")
    pairs.map_values(len).reduce_by_key(lambda x, y: x + y).named("lengths")
    pairs.map_values(lambda w: [w]).aggregate_by_key(
        list, lambda a, v: [*a, *v], merge=lambda a, b: [*a, *b], result=len
    ).named("seen")
    pairs.count_by_key().named("running").to(Collect(), name="collect")
    pairs.update_state_by_key(lambda old, w: (old or 0) + 1).named("state")  # checkpointed
    runner = run(sb, workers=1)
    merging = {
        name: runner.instance(name)._delta_of is not None
        for name in ("counts", "lengths", "seen", "running")
    }
    assert merging == {"counts": True, "lengths": True, "seen": True, "running": False}
    assert runner.instance("counts").collect_results() == {"a": 3, "bb": 2, "ccc": 1}
    assert runner.instance("lengths").collect_results() == {"a": 3, "bb": 4, "ccc": 3}
    assert runner.instance("seen").collect_results() == {"a": 3, "bb": 2, "ccc": 1}
    assert sorted(map(tuple, rows(runner))) == sorted(
        [("a", 1), ("bb", 1), ("a", 2), ("ccc", 1), ("a", 3), ("bb", 2)]
    )
