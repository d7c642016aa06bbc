"""Unit tests for emit checking and routing (collector + routing + local transfer).

One worker hosts every task, so emitted tuples only move from lanes to the local inbound
deque.  Transfer toward peers is in ``test_transfer.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from topology import Bolt, Spout, Stream, TopologyBuilder
from topology.assignment import Assignment
from topology.constants import DEAD_LETTER_STREAM
from topology.errors import EmitError
from topology.runtime.inprocess import InProcessRunner
from topology.spec import Topology

pytestmark = pytest.mark.timeout(30)


class Words(Spout):
    outputs = {
        "default": ["word"],
        "pairs": ["word", "n"],
        "targeted": Stream(["word"], direct=True),
        "unheard": ["x"],
    }

    def next_tuple(self) -> None:
        pass


class Count(Bolt):
    outputs = {"default": ["word", "count"], "targeted": Stream(["word"], direct=True)}

    def execute(self, tup: Any) -> None:
        pass


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        pass


def build_topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("words", Words())
    b.set_bolt("count", Count(), 3).fields_grouping("words", ["word"])
    b.set_bolt("every", Sink(), 2).all_grouping("words", "pairs")
    b.set_bolt("direct", Sink(), 2).direct_grouping("words", "targeted").direct_grouping(
        "count", "targeted"
    )
    b.set_bolt("sink", Sink(), 2).shuffle_grouping("count")
    return b.create_topology()


class Harness:
    """One worker hosting every task, assembled by an :class:`InProcessRunner` (acking off)
    and never turned: tests call collectors directly and flush lanes themselves."""

    def __init__(self, serialize_local: bool = False) -> None:
        self.topology = build_topology()
        conf = {
            "topology.workers": 1,
            "topology.acker.executors": 0,
            "topology.testing.always.try.serialize": serialize_local,
        }
        self.runner = InProcessRunner(self.topology, conf)
        self.assignment: Assignment = self.runner.assignment
        worker = self.runner.worker(0)
        self.inbound = worker.executor.inbound
        self.transfer = worker.executor.transfer
        self.transferred = worker.transferred
        self.errors = self.runner.errors

    def tasks(self, component: str) -> list[int]:
        return self.assignment.component_tasks[component]

    def collector(self, component: str, index: int = 0) -> Any:
        return self.runner.task(component, index).collector


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_task_layout(h: Harness) -> None:
    # sorted component ids: count, direct, every, sink, words
    assert h.tasks("count") == [1, 2, 3]
    assert h.tasks("direct") == [4, 5]
    assert h.tasks("every") == [6, 7]
    assert h.tasks("sink") == [8, 9]
    assert h.tasks("words") == [10]


# -- emit routing ---------------------------------------------------------------------------


def test_emit_returns_the_target_tasks(h: Harness) -> None:
    spout = h.collector("words")
    (target,) = spout.emit(["storm"])
    assert target in h.tasks("count")
    assert spout.emit(["storm"]) == [target]  # fields grouping: same key, same task
    assert spout.emit(["a", 1], stream="pairs") == h.tasks("every")  # all grouping
    assert spout.emit([1], stream="unheard") == []  # nobody subscribes


def test_fields_grouping_spreads_keys_over_tasks(h: Harness) -> None:
    spout = h.collector("words")
    chosen = {spout.emit([f"w{i}"])[0] for i in range(60)}
    assert chosen == set(h.tasks("count"))


def test_bolt_emit_shuffles_over_subscriber_tasks(h: Harness) -> None:
    bolt = h.collector("count")
    chosen = [bolt.emit(["a", i])[0] for i in range(4)]
    assert sorted(chosen) == [8, 8, 9, 9]  # shuffle: even round-robin spread
    assert bolt.emit_anchored(["b", 1]) != []  # BasicBolt path routes the same way


def test_emit_accepts_any_non_string_iterable_of_values(h: Harness) -> None:
    spout = h.collector("words")
    spout.emit(("a", 1), stream="pairs")
    spout.emit(iter(["b", 2]), stream="pairs")
    h.transfer.flush_local()
    values = [v for g in h.inbound if g[0] == 6 for v in g[3]]
    assert values == [["a", 1], ["b", 2]]
    assert all(type(v) is list for v in values)


def test_flush_local_moves_groups_to_inbound(h: Harness) -> None:
    spout = h.collector("words")
    (t,) = spout.emit(["x"])
    spout.emit(["x"])
    spout.emit(["p", 1], stream="pairs")
    assert not h.inbound  # nothing moves before the flush
    moved = h.transfer.flush_local()
    assert moved == 4
    groups = sorted(h.inbound, key=lambda g: g[0])
    assert groups == [
        [t, 10, "default", [["x"], ["x"]], None],
        [6, 10, "pairs", [["p", 1]], None],
        [7, 10, "pairs", [["p", 1]], None],
    ]
    assert h.transferred.by_task[10] == {"default": 2, "pairs": 2}
    assert h.transfer.buffered() == 0
    assert h.transfer.flush_local() == 0  # lanes are empty after a flush
    assert len(h.inbound) == 3


def test_flush_local_keeps_emit_order(h: Harness) -> None:
    spout = h.collector("words")
    for i in range(50):
        spout.emit([f"v{i}", i], stream="pairs")
    h.transfer.flush_local()
    for dest in (6, 7):
        (group,) = [g for g in h.inbound if g[0] == dest]
        assert group[3] == [[f"v{i}", i] for i in range(50)]


def test_serialize_local_roundtrips_values() -> None:
    h = Harness(serialize_local=True)
    spout = h.collector("words")
    spout.emit([("a", "b")])  # a tuple value comes back as a list, as over the wire
    h.transfer.flush_local()
    (group,) = h.inbound
    assert group[3] == [[["a", "b"]]]

    plain = Harness()
    plain.collector("words").emit([("a", "b")])
    plain.transfer.flush_local()
    assert plain.inbound[0][3] == [[("a", "b")]]


def test_emit_stats(h: Harness) -> None:
    spout = h.collector("words")
    spout.emit(["a"])
    spout.emit(["b", 1], stream="pairs")
    spout.emit(["c"])
    assert spout.emit_calls == 3
    assert {s: r.emitted for s, r in spout._routes.items()} == {
        "default": 2,
        "pairs": 1,
        "targeted": 0,
        "unheard": 0,
        DEAD_LETTER_STREAM: 0,
    }


# -- emit errors ----------------------------------------------------------------------------


def test_undeclared_stream(h: Harness) -> None:
    with pytest.raises(EmitError) as info:
        h.collector("words").emit(["a"], stream="sentences")
    message = str(info.value)
    assert "'words'" in message and "'sentences'" in message
    assert "['default', 'pairs', 'targeted', 'unheard']" in message


def test_undeclared_stream_on_a_component_without_streams(h: Harness) -> None:
    with pytest.raises(EmitError, match=r"'sink'.*'default'.*none"):
        h.collector("sink").emit(["a"])


@pytest.mark.parametrize(
    ("values", "stream", "declared"),
    [
        (["a", 1], "default", "['word']"),
        ([], "default", "['word']"),
        (["a"], "pairs", "['word', 'n']"),
    ],
)
def test_wrong_arity_names_declared_fields(
    h: Harness, values: list, stream: str, declared: str
) -> None:
    with pytest.raises(EmitError) as info:
        h.collector("words").emit(values, stream=stream)
    message = str(info.value)
    assert "'words'" in message and repr(stream) in message
    assert declared in message
    assert f"{len(values)} value(s)" in message


@pytest.mark.parametrize("values", ["storm", b"storm", {"word": "storm"}, 5, None])
def test_values_must_be_a_list(h: Harness, values: Any) -> None:
    with pytest.raises(EmitError) as info:
        h.collector("words").emit(values)
    assert type(values).__name__ in str(info.value)
    assert "list of values" in str(info.value)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        ({"a", "b"}, "set"),
        (object(), "object"),
        ([1, {2}], "list"),
        ({"k": object()}, "dict"),
        (1 + 2j, "complex"),
    ],
)
def test_unencodable_value_names_component_stream_field_and_type(
    h: Harness, value: Any, type_name: str
) -> None:
    spout = h.collector("words")
    with pytest.raises(EmitError) as info:
        spout.emit(["ok", value], stream="pairs")
    message = str(info.value)
    assert "'words'" in message
    assert "'pairs'" in message
    assert "'n'" in message  # the field
    assert f"type {type_name} " in message
    assert h.transfer.flush_local() == 0  # nothing half-emitted
    assert spout.emit_calls == 0


class ArrayLike:
    """Compares element-wise like a numpy array: ``==`` gives no truth value."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("The truth value of an array is ambiguous")

    __hash__ = None  # type: ignore[assignment]


def test_an_array_like_value_gets_the_emit_error_not_its_own(h: Harness) -> None:
    with pytest.raises(EmitError, match=r"type ArrayLike for field 'n'"):
        h.collector("words").emit(["ok", ArrayLike()], stream="pairs")


@pytest.mark.parametrize("value", [[1, [2.5, None]], {"a": [b"x"]}, ("t", 1), 2**63, -(2**63)])
def test_encodable_containers_and_big_ints_pass(h: Harness, value: Any) -> None:
    assert h.collector("words").emit(["k", value], stream="pairs") == h.tasks("every")


@pytest.mark.parametrize(
    "value", [2**64, -(2**63) - 1, "\ud800"], ids=["2**64", "-2**63-1", "surrogate"]
)
def test_scalars_msgpack_cannot_encode_are_rejected_at_emit(h: Harness, value: Any) -> None:
    with pytest.raises(EmitError, match="'n'"):
        h.collector("words").emit(["k", value], stream="pairs")


def test_emit_on_direct_stream_raises(h: Harness) -> None:
    with pytest.raises(EmitError) as info:
        h.collector("words").emit(["a"], stream="targeted")
    message = str(info.value)
    assert "'words'" in message and "'targeted'" in message and "emit_direct" in message
    assert h.transfer.flush_local() == 0


def test_emit_direct_delivers_to_the_named_task(h: Harness) -> None:
    spout = h.collector("words")
    assert spout.emit_direct(5, ["a"], stream="targeted") == [5]
    assert spout.emit_direct(4, ["b"], stream="targeted") == [4]
    h.transfer.flush_local()
    assert sorted(h.inbound) == [
        [4, 10, "targeted", [["b"]], None],
        [5, 10, "targeted", [["a"]], None],
    ]


def test_bolt_emit_direct(h: Harness) -> None:
    bolt = h.collector("count", 1)
    assert bolt.emit_direct(4, ["a"], stream="targeted") == [4]
    assert bolt.emit_direct_anchored(5, ["b"], stream="targeted") == [5]
    h.transfer.flush_local()
    assert sorted(h.inbound) == [
        [4, 2, "targeted", [["a"]], None],
        [5, 2, "targeted", [["b"]], None],
    ]


@pytest.mark.parametrize("task", [1, 10, 99, -1])
def test_emit_direct_to_a_non_subscribed_task(h: Harness, task: int) -> None:
    with pytest.raises(EmitError) as info:
        h.collector("words").emit_direct(task, ["a"], stream="targeted")
    message = str(info.value)
    assert "'words'" in message and f"task {task}" in message and "'targeted'" in message
    assert "[4, 5]" in message  # the valid tasks
    assert h.transfer.flush_local() == 0


def test_emit_direct_on_non_direct_stream(h: Harness) -> None:
    with pytest.raises(EmitError) as info:
        h.collector("words").emit_direct(1, ["a"])
    message = str(info.value)
    assert "'words'" in message and "'default'" in message and "not declared direct" in message
    assert h.transfer.flush_local() == 0


def test_emit_direct_checks_values_too(h: Harness) -> None:
    with pytest.raises(EmitError, match="1 field"):
        h.collector("words").emit_direct(4, ["a", "b"], stream="targeted")
    with pytest.raises(EmitError, match="undeclared stream"):
        h.collector("words").emit_direct(4, ["a"], stream="nope")


def test_rejected_emits_are_not_counted(h: Harness) -> None:
    spout = h.collector("words")
    with pytest.raises(EmitError):
        spout.emit(["a"], stream="targeted")
    with pytest.raises(EmitError):
        spout.emit_direct(99, ["a"], stream="targeted")
    with pytest.raises(EmitError):
        spout.emit_direct(1, ["a"])
    assert spout.emit_calls == 0
    assert all(r.emitted == 0 for r in spout._routes.values())


# -- spout msg ids --------------------------------------------------------------------------


def test_spout_msg_ids_are_acked_at_emit_without_ackers(h: Harness) -> None:
    spout = h.collector("words")
    spout.emit(["a"], msg_id="m1")
    spout.emit(["b"])  # untracked
    spout.emit(["c", 1], msg_id=0, stream="pairs")  # 0 is a valid msg_id
    spout.emit_direct(4, ["d"], msg_id=("m", 2), stream="targeted")
    with pytest.raises(EmitError):
        spout.emit(["e", "too", "many"], msg_id="bad")
    assert spout.acked_at_emit == ["m1", 0, ("m", 2)]


def test_untracked_tuples_have_no_metas(h: Harness) -> None:
    spout = h.collector("words")
    spout.emit(["a"], msg_id="m1")
    h.transfer.flush_local()
    assert h.inbound[0][4] is None


def test_a_stream_nobody_subscribes_to_checks_fields_but_not_encodability(h: Harness) -> None:
    spout = h.collector("words")
    assert spout.emit([{"a", "b"}], stream="unheard") == []  # goes nowhere: not encoded
    assert spout.emit_calls == 1 and spout._routes["unheard"].emitted == 1
    with pytest.raises(EmitError, match=r"2 value\(s\) on stream 'unheard'"):
        spout.emit(["a", "b"], stream="unheard")
    assert h.transfer.flush_local() == 0
    # a test that asks for serialization still gets the error at the emit
    with pytest.raises(EmitError, match=r"type set for field"):
        Harness(serialize_local=True).collector("words").emit([{"a"}], stream="unheard")
