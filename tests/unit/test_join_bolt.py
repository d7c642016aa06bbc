"""JoinBolt (Storm's ``org.apache.storm.bolt.JoinBolt``) end to end on the in-process runner
(simulated clock): inner joins of two and three streams, left joins with a missing side,
event-time windows with a late and a missing side, the selection's output names, outputs
anchored to exactly their inputs (with ackers), the errors found when the topology is built,
a property test against a nested-loop join per window, and the SingleJoin example."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.loader import load_topology
from topology import Bolt, OutputFieldsDeclarer, Spout, TopologyBuilder, TopologyValidationError
from topology import Tuple as StormTuple
from topology.runtime.inprocess import InProcessRunner
from topology.windows.engine import Window
from topology.windows.join import JoinBolt, parse_selection

pytestmark = pytest.mark.timeout(60)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
END = 1000.0


class Rows(Spout):
    """Emits ``rows`` — ``(stream, values)``, or ``(stream, values, False)`` untracked — one
    per call, msg id = the row's index; rows appended to ``queue`` later are sent too.
    Records every ack and fail."""

    def __init__(self, streams: dict[str, list[str]], rows: list[tuple[Any, ...]]) -> None:
        self.streams, self.rows = streams, rows

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, fields in self.streams.items():
            declarer.declare(fields, stream)

    def open(self, conf: Any, context: Any) -> None:
        self.queue = list(self.rows)
        self.i = 0
        self.acked: list[int] = []
        self.failed: list[int] = []

    def next_tuple(self) -> None:
        if self.i < len(self.queue):
            stream, values, *tracked = self.queue[self.i]
            self.emit(values, self.i if tracked != [False] else None, stream)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


class Sink(Bolt):
    """Records ``(stream, values)``; fails the rows ``fail_when`` picks, acks the rest."""

    def __init__(self, fail_when: Callable[[list[Any]], bool] | None = None) -> None:
        self.fail_when = fail_when

    def prepare(self, conf: Any, context: Any) -> None:
        self.rows: list[tuple[str, list[Any]]] = []

    def execute(self, tup: StormTuple) -> None:
        self.rows.append((tup.stream, list(tup.values)))
        if self.fail_when is not None and self.fail_when(list(tup.values)):
            self.fail(tup)
        else:
            self.ack(tup)


def fields(name: str) -> list[str]:
    return {"a": ["k", "va", "ts"], "b": ["k", "vb", "ts"], "c": ["k", "vc", "ts"]}[name]


def two_spouts(joiner: JoinBolt, left: Rows, right: Rows, sink: Sink | None = None) -> Any:
    """``orders`` and ``users`` spouts into ``join`` (one task), its outputs into ``sink``."""
    builder = TopologyBuilder()
    builder.set_spout("orders", left)
    builder.set_spout("users", right)
    builder.set_bolt("join", joiner).shuffle_grouping("orders").shuffle_grouping("users")
    declarer = builder.set_bolt("sink", sink or Sink()).shuffle_grouping("join")
    if joiner.window_spec.late_stream:
        declarer.shuffle_grouping("join", joiner.window_spec.late_stream)
    return builder.create_topology()


def run(topology: Any, seconds: float = 12.0, step: float = 0.05) -> InProcessRunner:
    runner = InProcessRunner(topology, {"topology.workers": 1})
    runner.activate()
    advance(runner, seconds, step)
    return runner


def advance(runner: InProcessRunner, seconds: float, step: float = 0.05) -> None:
    for _ in range(round(seconds / step)):
        runner.clock.advance(step)  # type: ignore[attr-defined]
        runner.turn()


def output(runner: InProcessRunner, stream: str = "default") -> list[list[Any]]:
    return [values for s, values in runner.instance("sink").rows if s == stream]


ORDERS = {"default": ["user_id", "order"]}
USERS = {"default": ["user_id", "name"]}


def test_inner_join_of_two_streams_drops_the_unmatched_and_multiplies_the_matches() -> None:
    orders = Rows(ORDERS, [("default", [1, "o1"]), ("default", [2, "o2"]), ("default", [9, "o9"])])
    users = Rows(USERS, [("default", [1, "ann"]), ("default", [1, "al"]), ("default", [2, "bo"])])
    joiner = (
        JoinBolt("orders", "user_id")
        .join("users", "user_id", "orders")
        .select("orders:user_id, order, name")
        .with_tumbling_window(seconds=5)
    )
    runner = run(two_spouts(joiner, orders, users))
    assert runner.topology.components["join"].streams["default"].fields == (
        "user_id",
        "order",
        "name",
    )
    assert output(runner) == [[1, "o1", "ann"], [1, "o1", "al"], [2, "o2", "bo"]]
    assert sorted(runner.instance("orders").acked) == [0, 1, 2]  # o9 too: it left its window
    assert sorted(runner.instance("users").acked) == [0, 1, 2]


CITIES = {
    "users": ["user_id", "name", "city"],
    "stores": ["store", "city"],
    "cities": ["city_name", "country"],
}
CITY_ROWS = [
    ("users", [1, "ann", "pune"]),
    ("users", [2, "bob", "oslo"]),
    ("users", [3, "cid", "rome"]),
    ("stores", ["s1", "pune"]),
    ("stores", ["s2", "pune"]),
    ("stores", ["s3", "oslo"]),
    ("cities", ["pune", "in"]),
    ("cities", ["rome", "it"]),
]


def by_stream(joiner: JoinBolt, spout: Rows, streams: list[str]) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("feed", spout)
    declarer = builder.set_bolt("join", joiner)
    for stream in streams:
        declarer.shuffle_grouping("feed", stream)
    builder.set_bolt("sink", Sink()).shuffle_grouping("join")
    return builder.create_topology()


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("inner", [["ann", "s1", "pune", "in"], ["ann", "s2", "pune", "in"]]),
        (
            "left",
            [["ann", "s1", "pune", "in"], ["ann", "s2", "pune", "in"], ["bob", "s3", "oslo", None]],
        ),
    ],
)
def test_a_three_stream_join_by_stream_name(kind: str, expected: list[list[Any]]) -> None:
    """users ⋈ stores on city, then cities on stores.city (Storm's three-stream test)."""
    joiner = JoinBolt("users", "city", by="stream").join("stores", "city", "users")
    third = joiner.join if kind == "inner" else joiner.left_join
    third("cities", "city_name", "stores").select("name, store, users:city, country")
    joiner.with_tumbling_window(seconds=5)
    runner = run(by_stream(joiner, Rows(CITIES, CITY_ROWS), list(CITIES)))
    assert output(runner) == expected
    assert sorted(runner.instance("feed").acked) == list(range(len(CITY_ROWS)))


def test_a_left_join_keeps_the_left_side_with_none_for_the_missing_right_side() -> None:
    joiner = (
        JoinBolt("users", "city", by="stream")
        .left_join("stores", "city", "users")
        .select(["users:city", "stores:city", "name", "store"])
        .with_tumbling_window(seconds=5)
    )
    runner = run(by_stream(joiner, Rows(CITIES, CITY_ROWS), ["users", "stores"]))
    # the clashing names keep their stream; a missing side's fields are None
    declared = runner.topology.components["join"].streams["default"].fields
    assert declared == ("users:city", "stores:city", "name", "store")
    assert output(runner) == [
        ["pune", "pune", "ann", "s1"],
        ["pune", "pune", "ann", "s2"],
        ["oslo", "oslo", "bob", "s3"],
        ["rome", None, "cid", None],
    ]


@pytest.mark.parametrize("kind", ["inner", "left"])
def test_event_time_windows_with_a_late_and_a_missing_side(kind: str) -> None:
    """[0, 10): click 1 with its view, click 2 whose view comes after the window fired (to
    the late stream, not joined); [10, 20): click 4 alone, view 3 alone."""
    clicks = Rows(
        {"default": ["id", "ts"]},
        [("default", [1, 1.0]), ("default", [2, 3.0]), ("default", [4, 12.0])]
        + [("default", [None, END], False)],
    )
    views = Rows(
        {"default": ["id", "ts", "page"]},
        [("default", [1, 2.0, "home"]), ("default", [3, 14.0, "cart"])]
        + [("default", [None, END, None], False)],
    )
    joiner = JoinBolt("orders", "id")
    (joiner.join if kind == "inner" else joiner.left_join)("users", "id", "orders")
    joiner.select("orders:id, orders:ts, page").with_tumbling_window(seconds=10)
    joiner.with_timestamp_field("ts").with_lag(1.0).with_watermark_interval(0.5)
    joiner.with_late_tuple_stream("late")
    topology = two_spouts(joiner, clicks, views)
    runner = run(topology, seconds=4.0)
    runner.instance("users").queue.append(("default", [2, 4.0, "late"]))
    advance(runner, 4.0)
    if kind == "inner":
        assert output(runner) == [[1, 1.0, "home"]]
    else:
        assert output(runner) == [[1, 1.0, "home"], [2, 3.0, None], [4, 12.0, None]]
    assert output(runner, "late") == [[{"id": 2, "ts": 4.0, "page": "late"}]]
    assert sorted(runner.instance("orders").acked) == [0, 1, 2]
    assert sorted(runner.instance("users").acked) == [0, 1, 3]  # 3: the late view


def test_each_output_is_anchored_to_exactly_its_inputs_and_every_input_is_acked_once() -> None:
    """o1 joins ann and al; the sink fails [1, o1, al]: o1 and al fail, ann (whose only
    output was acked) and everything else is acked, each input exactly once."""
    orders = Rows(ORDERS, [("default", [1, "o1"]), ("default", [2, "o2"]), ("default", [3, "o3"])])
    users = Rows(
        USERS,
        [("default", [1, "ann"]), ("default", [1, "al"]), ("default", [2, "bo"])]
        + [("default", [7, "zed"])],
    )
    joiner = (
        JoinBolt("orders", "user_id")
        .join("users", "user_id", "orders")
        .select("orders:user_id, order, name")
        .with_tumbling_window(seconds=5)
    )
    sink = Sink(fail_when=lambda row: row[2] == "al")
    runner = run(two_spouts(joiner, orders, users, sink))
    assert output(runner) == [[1, "o1", "ann"], [1, "o1", "al"], [2, "o2", "bo"]]
    left, right = runner.instance("orders"), runner.instance("users")
    assert (Counter(left.acked), left.failed) == (Counter({1: 1, 2: 1}), [0])
    assert (Counter(right.acked), right.failed) == (Counter({0: 1, 2: 1, 3: 1}), [1])


def problems_of(build: Callable[[], Any]) -> str:
    with pytest.raises(TopologyValidationError) as err:
        build()
    return str(err.value)


def orders_users(joiner: JoinBolt) -> Callable[[], Any]:
    return lambda: two_spouts(joiner, Rows(ORDERS, []), Rows(USERS, []))


def window(joiner: JoinBolt) -> JoinBolt:
    joiner.with_tumbling_window(seconds=5)
    return joiner


def test_errors_found_when_the_topology_is_built_name_the_bolt_the_stream_and_the_field() -> None:
    text = problems_of(orders_users(window(JoinBolt("orders", "user_id").select("order"))))
    assert (
        "join bolt 'join': input 'users' stream 'default' is not part of the join "
        "(joined components: 'orders')"
    ) in text
    unknown = window(JoinBolt("orders", "user_id").join("userz", "user_id", "orders"))
    text = problems_of(orders_users(unknown.select("order")))
    assert "join bolt 'join': the join names component 'userz', but the bolt has no input" in text
    base = "join bolt 'join': "
    cases = {
        "join field 'uid' of 'users': input 'users' stream 'default' has no field 'uid' "
        "(fields: ['user_id', 'name'])": ("uid", "order"),
        "select 'nmae': no joined component declares field 'nmae'": ("user_id", "nmae"),
        "select 'users:nmae': input 'users' stream 'default' has no field 'nmae'": (
            "user_id",
            "users:nmae",
        ),
        "select 'user_id': field 'user_id' is declared by components 'orders', 'users': "
        "write 'orders:user_id' or 'users:user_id'": ("user_id", "user_id"),
        "select 'shop:order': 'shop' is not a joined component (joined: 'orders', 'users')": (
            "user_id",
            "shop:order",
        ),
    }
    for message, (field, selection) in cases.items():
        joiner = window(JoinBolt("orders", "user_id").join("users", field, "orders"))
        assert base + message in problems_of(orders_users(joiner.select(selection)))
    no_select = window(JoinBolt("orders", "user_id").join("users", "user_id", "orders"))
    assert base + "no select(...): name the output fields" in problems_of(orders_users(no_select))


def test_a_selection_made_after_set_bolt_and_an_unknown_stream_are_refused() -> None:
    joiner = window(JoinBolt("orders", "user_id").join("users", "user_id", "orders"))
    builder = TopologyBuilder()
    builder.set_spout("orders", Rows(ORDERS, []))
    builder.set_spout("users", Rows(USERS, []))
    builder.set_bolt("join", joiner).shuffle_grouping("orders").shuffle_grouping("users")
    joiner.select("orders:user_id, name")
    text = problems_of(builder.create_topology)
    assert "call select() and with_output_stream() before set_bolt" in text
    by = window(JoinBolt("users", "city", by="stream").join("shops", "city", "users"))
    by.select("name")
    text = problems_of(lambda: by_stream(by, Rows(CITIES, []), ["users", "stores"]))
    assert "the join names stream 'shops', but the bolt has no input from stream 'shops'" in text
    assert "input 'feed' stream 'stores' is not part of the join" in text


def test_with_several_tasks_each_input_must_be_grouped_by_its_join_field() -> None:
    joiner = JoinBolt("orders", "user_id").join("users", "user_id", "orders")
    window(joiner.select("order, name"))
    builder = TopologyBuilder()
    builder.set_spout("orders", Rows(ORDERS, []))
    builder.set_spout("users", Rows(USERS, []))
    join = builder.set_bolt("join", joiner, 2).fields_grouping("orders", ["user_id"])
    join.shuffle_grouping("users")
    text = problems_of(builder.create_topology)
    assert (
        "join bolt 'join': input 'users' stream 'default' reaches its 2 tasks by shuffle "
        "grouping: tuples with equal 'user_id' may land in different tasks and never join "
        "(group it by fields ['user_id'])"
    ) in text
    assert "input 'orders'" not in text


def test_mistakes_in_the_chain_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="to 'users', which is not part of the join yet"):
        JoinBolt("orders", "user_id").join("items", "id", "users")
    with pytest.raises(ValueError, match="'orders' is already part of the join"):
        JoinBolt("orders", "user_id").join("orders", "id", "orders")
    with pytest.raises(ValueError, match="must be a plain field name"):
        JoinBolt("orders", "user_id").join("users", "users:id", "orders")
    with pytest.raises(ValueError, match="by must be 'source' or 'stream'"):
        JoinBolt("orders", "user_id", by="component")
    with pytest.raises(ValueError, match="selected twice"):
        JoinBolt("orders", "user_id").select("a:x, a:x")
    with pytest.raises(ValueError, match="is not 'field' or 'stream:field'"):
        JoinBolt("orders", "user_id").select("a:")


def test_output_names_are_the_field_names_unless_two_selected_fields_share_one() -> None:
    names = [s.output for s in parse_selection(" a:id , b:id, name ,c:x")]
    assert names == ["a:id", "b:id", "name", "x"]
    assert [s.output for s in parse_selection(["id", "b:id"])] == ["id", "b:id"]


class RecordingJoin(JoinBolt):
    """Records each firing: its tuples and the rows emitted with their anchors, as
    ``(stream, values)``."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.log: list[tuple[list[Any], list[Any]]] = []

    def execute(self, window: Window) -> None:
        emitted: list[Any] = []
        emit = self.emit

        def spy(values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
            emitted.append((list(values), [(t.stream, list(t.values)) for t in anchors]))
            return emit(values, anchors, stream)

        self.emit = spy  # type: ignore[method-assign]
        try:
            super().execute(window)
        finally:
            self.emit = emit  # type: ignore[method-assign]
        self.log.append(([(t.stream, list(t.values)) for t in window.tuples], emitted))


def nested_loop_join(
    tuples: list[tuple[str, list[Any]]], left: dict[str, bool], priors: dict[str, str]
) -> list[tuple[list[Any], list[Any]]]:
    """The join of a, b, c on field ``k`` (index 0), row by row (the oracle)."""
    rows: list[dict[str, Any]] = [{"a": t} for t in tuples if t[0] == "a"]
    for stream in ("b", "c"):
        out = []
        for row in rows:
            prior = row[priors[stream]]
            hits = [
                t
                for t in tuples
                if t[0] == stream and prior is not None and prior[1][0] is not None
                if t[1][0] == prior[1][0]
            ]
            out.extend({**row, stream: hit} for hit in hits)
            if not hits and left[stream]:
                out.append({**row, stream: None})
        rows = out
    return [
        (
            [row["a"][1][0], row["a"][1][1]]
            + [None if row[s] is None else row[s][1][1] for s in "bc"],
            [row[s] for s in "abc" if row[s] is not None],
        )
        for row in rows
    ]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from("abc"), st.sampled_from([0, 1, None])), min_size=4, max_size=60
    ),
    width=st.sampled_from([4, 8, 16, 64]),
    left_b=st.booleans(),
    left_c=st.booleans(),
    c_prior=st.sampled_from("ab"),
)
def test_each_window_matches_a_nested_loop_join_of_its_tuples(
    rows: list[tuple[str, int | None]], width: int, left_b: bool, left_c: bool, c_prior: str
) -> None:
    """Row i is stamped i: event-time windows of ``width`` hold rows by index, whatever
    order the streams arrive in."""
    joiner = RecordingJoin("a", "k", by="stream")
    (joiner.left_join if left_b else joiner.join)("b", "k", "a")
    (joiner.left_join if left_c else joiner.join)("c", "k", c_prior)
    joiner.select("a:k, va, vb, vc").with_tumbling_window(seconds=width)
    joiner.with_timestamp_field("ts").with_lag(100).with_watermark_interval(0.5)
    sent = [(s, [k, i, i]) for i, (s, k) in enumerate(rows)] + [("a", [None, -1, END], False)]
    feed = Rows({s: fields(s) for s in "abc"}, sent)
    runner = InProcessRunner(by_stream(joiner, feed, ["a", "b", "c"]), {"topology.workers": 1})
    runner.activate()
    advance(runner, 2.0)
    log = runner.instance("join").log
    assert len(log) == len({i // width for i in range(len(rows))})
    for tuples, emitted in log:
        expected = nested_loop_join(tuples, {"b": left_b, "c": left_c}, {"b": "a", "c": c_prior})
        assert emitted == expected
    assert sorted(runner.instance("feed").acked) == list(range(len(rows)))


def results(runner: InProcessRunner) -> dict[str, dict[int, Any]]:
    """What ``LocalCluster.results`` gives: component -> task -> ``collect_results()``."""
    out: dict[str, dict[int, Any]] = {}
    for worker in runner.workers.values():
        for task in worker.tasks():
            collect = getattr(task.instance, "collect_results", None)
            if collect is not None:
                out.setdefault(task.component, {})[task.task_id] = collect()
    return out


def test_the_single_join_example_joins_every_id_like_the_hand_written_join() -> None:
    _, module = load_topology(f"{EXAMPLES / 'single_join_joinbolt.py'}:topology")
    runner = InProcessRunner(module.topology, {"topology.workers": 2})
    runner.activate()
    for _ in range(2_000):
        done = results(runner)
        if all(sum(r["acked"] for r in done[s].values()) == module.IDS for s in ("gender", "age")):
            break
        advance(runner, 0.01, 0.01)
    assert "all 1,000 ids joined" in module.verify(results(runner))
    assert runner.errors == []
