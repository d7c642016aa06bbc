"""Unit tests for emit checking and routing (collector + routing + transfer), in memory.

One worker hosts every task (``senders={}``), so emitted tuples only move from lanes to the
local inbound deque.  The last section drives :class:`Transfer` toward a fake peer sender.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from topology import Bolt, Spout, Stream, TopologyBuilder
from topology.assignment import Assignment, assign
from topology.errors import EmitError
from topology.runtime.collector import BoltCollector, SpoutCollector
from topology.runtime.routing import build_routes
from topology.runtime.serialization import BACKPRESSURE, DATA, decode, encode_backpressure
from topology.runtime.transfer import Transfer
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
    """A single-worker transfer plus collectors built like Worker._build does."""

    def __init__(self, serialize_local: bool = False) -> None:
        self.topology = build_topology()
        counts = {c.id: c.num_tasks for c in self.topology.components.values()}
        self.assignment: Assignment = assign(counts, 1)
        self.inbound: deque[list[Any]] = deque()
        self.transferred: list[tuple[int, str, int]] = []
        self.errors: list[tuple[str, int, str]] = []
        self.transfer = Transfer(
            0,
            self.assignment.worker_of(),
            {},
            self.inbound,
            1000,
            0.001,
            lambda src, stream, n: self.transferred.append((src, stream, n)),
        )
        self.serialize_local = serialize_local

    def tasks(self, component: str) -> list[int]:
        return self.assignment.component_tasks[component]

    def collector(self, component: str, index: int = 0) -> Any:
        task = self.tasks(component)[index]
        routes = build_routes(
            self.topology,
            self.assignment,
            component,
            task,
            self.transfer,
            frozenset(self.assignment.worker_tasks[0]),
        )
        kind = self.topology.components[component].kind
        cls = SpoutCollector if kind == "spout" else BoltCollector
        return cls(
            component,
            task,
            routes,
            lambda c, t, text: self.errors.append((c, t, text)),
            serialize_local=self.serialize_local,
        )


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
    assert sorted(h.transferred) == [(10, "default", 2), (10, "pairs", 1), (10, "pairs", 1)]
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


# -- transfer toward a peer -----------------------------------------------------------------


class FakeSender:
    """A peer's queue: refuses frames while closed, records accepted ones."""

    def __init__(self, open: bool = True) -> None:
        self.open = open
        self.frames: list[bytes] = []
        self.attempts = 0

    def try_send(self, frame: bytes) -> bool:
        self.attempts += 1
        if not self.open:
            return False
        self.frames.append(frame)
        return True


def remote_transfer(
    sender: FakeSender, batch_size: int = 1000, flush_interval: float = 0.0
) -> tuple[Transfer, deque[list[Any]]]:
    """Worker 0 hosts task 1; worker 1 hosts tasks 2, 3, 4."""
    inbound: deque[list[Any]] = deque()
    worker_of = {1: 0, 2: 1, 3: 1, 4: 1}
    t = Transfer(0, worker_of, {1: sender}, inbound, batch_size, flush_interval, lambda *a: None)
    return t, inbound


def sent_values(frames: list[bytes]) -> list[tuple[int, Any]]:
    out = []
    for frame in frames:
        message = decode(frame)
        assert message[0] == DATA
        for dest, _src, _stream, vals, _metas in message[1]:
            out.extend((dest, v) for v in vals)
    return out


def tuples_per_frame(frames: list[bytes]) -> list[int]:
    return [sum(len(g[3]) for g in decode(f)[1]) for f in frames]


def test_remote_lanes_are_sent_not_delivered_locally() -> None:
    sender = FakeSender()
    t, inbound = remote_transfer(sender)
    t.lane(1, "default", 2).push_val(["a"])
    t.lane(1, "default", 2).push_meta(None)
    t.lane(1, "default", 1).push_val(["local"])
    t.lane(1, "default", 1).push_meta(None)
    assert t.flush_local() == 1
    assert list(inbound) == [[1, 1, "default", [["local"]], None]]
    t.flush_remote(now=100.0)
    assert [decode(f) for f in sender.frames] == [[DATA, [[2, 1, "default", [["a"]], None]]]]


def test_congested_frame_is_kept_and_retried_in_order() -> None:
    sender = FakeSender(open=False)
    t, _ = remote_transfer(sender)
    lane = t.lane(1, "default", 2)
    pushed = []
    for batch in range(3):
        for i in range(4):
            v = [f"b{batch}-{i}"]
            lane.push_val(v)
            lane.push_meta(None)
            pushed.append((2, v))
        t.flush_remote(now=100.0 + batch)
        assert t.congested
    assert sender.attempts == 1  # frames queue behind the first refused one untried
    assert sender.frames == []
    assert t.buffered() == 3  # three held frames, nothing lost
    t.retry_overflow()
    assert t.congested and sender.attempts == 2  # still closed
    sender.open = True
    t.retry_overflow()
    assert not t.congested
    assert t.buffered() == 0
    assert sent_values(sender.frames) == pushed


def test_retry_stops_when_the_peer_fills_again() -> None:
    class FillsUp(FakeSender):
        def try_send(self, frame: bytes) -> bool:
            if self.open and len(self.frames) >= 1:
                self.open = False
            return super().try_send(frame)

    sender = FillsUp(open=False)
    t, _ = remote_transfer(sender)
    for i in range(3):
        t.lane(1, "default", 2).push_val([i])
        t.lane(1, "default", 2).push_meta(None)
        t.flush_remote(now=10.0 + i)
    sender.open = True
    t.retry_overflow()
    assert sent_values(sender.frames) == [(2, [0])]
    assert t.congested and t.buffered() == 2
    sender.open = True
    sender.frames.clear()  # the peer drained its queue
    t.retry_overflow()
    assert sent_values(sender.frames) == [(2, [1])]


def test_broadcast_queues_behind_overflow() -> None:
    sender = FakeSender(open=False)
    t, _ = remote_transfer(sender)
    t.lane(1, "default", 2).push_val(["a"])
    t.lane(1, "default", 2).push_meta(None)
    t.flush_remote(now=1.0)
    t.broadcast(encode_backpressure(0, True))
    sender.open = True
    t.retry_overflow()
    assert [decode(f)[0] for f in sender.frames] == [DATA, BACKPRESSURE]
    assert decode(sender.frames[1]) == [BACKPRESSURE, 0, True]


def test_frames_split_across_lanes_at_batch_size() -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender, batch_size=2)
    for dest in (2, 3, 4):
        t.lane(1, "default", dest).push_val([dest])
        t.lane(1, "default", dest).push_meta(None)
    t.flush_remote(now=5.0)
    assert tuples_per_frame(sender.frames) == [2, 1]
    assert sent_values(sender.frames) == [(2, [2]), (3, [3]), (4, [4])]


@pytest.mark.parametrize("layout", [[5], [2, 2]], ids=["one-lane-of-5", "two-lanes-of-2"])
def test_frames_never_exceed_batch_size(layout: list[int]) -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender, batch_size=3)
    pushed = []
    for dest, n in zip((2, 3), layout):
        lane = t.lane(1, "default", dest)
        for i in range(n):
            lane.push_val([i])
            lane.push_meta(None)
            pushed.append((dest, [i]))
    t.flush_remote(now=5.0, force=True)
    assert sent_values(sender.frames) == pushed  # nothing lost either way
    assert max(tuples_per_frame(sender.frames)) <= 3, tuples_per_frame(sender.frames)


def test_flush_remote_waits_for_the_interval_unless_full() -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender, batch_size=3, flush_interval=1.0)
    lane = t.lane(1, "default", 2)
    assert t.flush_remote(now=100.0) is None  # nothing pending
    lane.push_val([0])
    lane.push_meta(None)
    t.flush_remote(now=100.0)  # first flush: last flush was long ago
    assert len(sender.frames) == 1
    lane.push_val([1])
    lane.push_meta(None)
    assert t.flush_remote(now=100.5) == pytest.approx(101.0)  # not due: says when
    assert len(sender.frames) == 1
    assert t.flush_remote(now=101.0) is None  # due now
    assert len(sender.frames) == 2
    for i in range(3):
        lane.push_val([i])
        lane.push_meta(None)
    t.flush_remote(now=101.1)  # a full batch goes at once
    assert len(sender.frames) == 3
    lane.push_val(["forced"])
    lane.push_meta(None)
    t.flush_remote(now=101.2, force=True)
    assert len(sender.frames) == 4
    assert sent_values(sender.frames[-1:]) == [(2, ["forced"])]


def test_tracked_metas_travel_with_their_group() -> None:
    sender = FakeSender()
    t, _ = remote_transfer(sender)
    lane = t.lane(1, "s", 2)
    lane.push_val(["a"])
    lane.push_meta(None)
    lane.push_val(["b"])
    lane.push_meta([7, {1: 2}])
    t.flush_remote(now=1.0)
    (group,) = decode(sender.frames[0])[1]
    assert group == [2, 1, "s", [["a"], ["b"]], [None, [7, {1: 2}]]]
