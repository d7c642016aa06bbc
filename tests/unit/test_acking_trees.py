"""Collector-level acking: the acker layout, the spout side, whole trees, multi-anchoring
(harness: ``acking_harness.py``)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from acker import ACK_ACK, ACK_INIT
from acker.envelope import root_ids
from acker.outbox import AckOutbox
from acker.pending import PendingTrees
from acker.spout import SpoutAcking
from tests.unit.acking_harness import (  # noqa: F401 - seeded_ids is an autouse fixture
    Harness,
    grow_three_level_tree,
    seeded_ids,
    xor,
)
from topology.tuple import Tuple

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def h() -> Harness:
    return Harness()


# -- layout -----------------------------------------------------------------------------------


def test_layout_includes_the_acker_component() -> None:
    h = Harness()
    assert h.acker_ids == [1]  # one acker per worker by default
    assert h.tasks("leaf") == [2, 3, 4]
    assert h.tasks("mid") == [5, 6]
    assert h.tasks("spout") == [7]
    h2 = Harness(ackers=2)
    assert h2.acker_ids == [1, 2]
    assert h2.tasks("spout") == [8]


# -- spout side -------------------------------------------------------------------------------


def test_spout_emit_with_msg_id_registers_a_tree(h: Harness) -> None:
    h.t = 3.0
    tasks = h.spout.emit(["x"], msg_id="m1")
    assert tasks == h.tasks("mid")
    assert h.pending is not None and len(h.pending) == 1
    metas = [m for dest in h.tasks("mid") for m in h.metas(h.spout_task, dest)]
    assert len(metas) == 2
    roots = {m[1] for m in metas}
    assert len(roots) == 1
    (root,) = roots
    assert type(root) is int and root != 0
    edges = [m[0] for m in metas]
    assert len(set(edges)) == 2
    assert h.outbox is not None
    assert h.outbox.drain() == [
        (h.outbox.acker_of(root), ACK_INIT, [[[root, xor(edges), h.spout_task]]])
    ]
    assert h.spout.acked_at_emit == []


def test_spout_init_goes_to_the_acker_of_the_root() -> None:
    h = Harness(ackers=2)
    seen = set()
    for i in range(20):
        h.spout.emit([i], msg_id=i)
        metas = h.metas(h.spout_task, h.tasks("mid")[0])
        root = metas[-1][1]
        assert h.outbox is not None
        ((dest, stream, values),) = h.outbox.drain()
        assert stream == ACK_INIT
        assert dest == h.acker_ids[root % 2]
        assert values[0][0][0] == root
        seen.add(dest)
    assert seen == {1, 2}


def test_spout_emit_direct_with_msg_id_tracks_one_edge(h: Harness) -> None:
    dest = h.tasks("mid")[1]
    assert h.spout.emit_direct(dest, ["d"], msg_id="d1", stream="targeted") == [dest]
    ((edge, root),) = h.metas(h.spout_task, dest, "targeted")
    assert h.outbox is not None
    ((_, stream, values),) = h.outbox.drain()
    assert stream == ACK_INIT
    assert values == [[[root, edge, h.spout_task]]]
    assert h.pending is not None and len(h.pending) == 1


def test_spout_emit_without_msg_id_is_untracked(h: Harness) -> None:
    h.spout.emit(["x"])
    for dest in h.tasks("mid"):
        assert h.metas(h.spout_task, dest) == [None]
    assert h.outbox is not None and h.outbox.drain() == []
    assert h.pending is not None and len(h.pending) == 0
    received = h.deliver()
    assert all(tup.id is None and tup.anchors is None for ts in received.values() for tup in ts)


def test_spout_emit_to_nobody_is_acked_at_emit(h: Harness) -> None:
    assert h.spout.emit(["x"], msg_id="lonely", stream="unheard") == []
    assert h.spout.acked_at_emit == ["lonely"]
    assert h.pending is not None and len(h.pending) == 0
    assert h.outbox is not None and h.outbox.drain() == []


def test_spout_without_ackers_acks_at_emit() -> None:
    h = Harness(with_acks=False)
    h.spout.emit(["x"], msg_id="m")
    assert h.spout.acked_at_emit == ["m"]
    for dest in h.tasks("mid"):
        assert h.metas(h.spout_task, dest) == [None]


# -- whole trees --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_tree_completes_exactly_once_after_the_last_ack(h: Harness, seed: int) -> None:
    h.t = 1.0
    root, to_ack = grow_three_level_tree(h, "m1")
    assert h.settle() == []  # the init alone completes nothing
    random.Random(seed).shuffle(to_ack)  # children may be acked before their parents
    h.t = 4.0
    for i, (task, tup) in enumerate(to_ack):
        h.bolts[task].ack(tup)
        events = h.settle()
        if i < len(to_ack) - 1:
            assert events == [], f"completed after {i + 1} of {len(to_ack)} acks"
    assert h.outcomes == [("ack", "m1")]
    assert h.pending is not None and len(h.pending) == 0
    assert h.pending.mean_complete_latency == pytest.approx(3.0)
    assert all(len(a.ledger) == 0 for a in h.ackers.values())
    assert h.settle() == []


def test_acks_of_one_turn_are_combined_and_complete_the_tree() -> None:
    h = Harness(ackers=2)
    root, to_ack = grow_three_level_tree(h, "m1")
    for task, tup in to_ack:
        h.bolts[task].ack(tup)
    assert h.outbox is not None
    drained = h.outbox.drain()
    acker = h.acker_ids[root % 2]
    # one init and ONE combined ack for 8 acked tuples: the grandchildren's edges cancel,
    # leaving exactly the spout's two edges, i.e. the init value.
    assert [(dest, stream) for dest, stream, _ in drained] == [
        (acker, ACK_INIT),
        (acker, ACK_ACK),
    ]
    ((_, _, [[(_, init_value, _)]]), (_, _, [acks])) = drained
    assert acks == {root: init_value}
    for dest, stream, values in drained:
        h.ackers[dest].receive(stream, [values])
    assert h.ackers[acker].drain() == [(h.spout_task, ACK_ACK, [[root]])]


def test_acks_in_one_turn_after_the_init_turn_complete_the_tree(h: Harness) -> None:
    root, to_ack = grow_three_level_tree(h, "m1")
    assert h.settle() == []  # the init reaches the acker first
    for task, tup in to_ack:
        h.bolts[task].ack(tup)
    assert h.outbox is not None
    drained = h.outbox.drain()
    assert len(drained) == 1
    ((dest, stream, values),) = drained
    assert stream == ACK_ACK and list(values[0]) == [root]  # one combined entry
    h.ackers[dest].receive(stream, [values])
    assert h.ackers[dest].drain() == [(h.spout_task, ACK_ACK, [[root]])]


def test_many_trees_interleaved_complete_independently(h: Harness) -> None:
    rng = random.Random(99)
    work: list[tuple[str, int, Tuple]] = []
    roots = {}
    for i in range(10):
        root, to_ack = grow_three_level_tree(h, f"m{i}")
        roots[root] = f"m{i}"
        work.extend((f"m{i}", task, tup) for task, tup in to_ack)
    h.settle()
    rng.shuffle(work)
    remaining = {m: sum(1 for w in work if w[0] == m) for m in roots.values()}
    for msg_id, task, tup in work:
        h.bolts[task].ack(tup)
        remaining[msg_id] -= 1
        events = h.settle()
        if remaining[msg_id] == 0:
            assert events == [("ack", msg_id)]
        else:
            assert events == []
    assert sorted(h.outcomes) == sorted(("ack", m) for m in roots.values())


def test_trees_completed_in_one_message_are_each_acked_even_when_one_ack_raises(
    h: Harness,
) -> None:
    trees = [grow_three_level_tree(h, f"m{i}") for i in range(4)]
    h.settle()
    heard: list[Any] = []

    def ack(msg_id: Any) -> None:
        heard.append(msg_id)
        if msg_id == "m1":
            raise RuntimeError("the spout's ack broke")

    h.source.ack = ack  # type: ignore[method-assign]
    for _, to_ack in trees:
        for task, tup in to_ack:
            h.bolts[task].ack(tup)
    h.settle()  # one combined ack message, one outcome message with all four roots
    assert heard == ["m0", "m1", "m2", "m3"]
    spout_task = h.runner.task("spout")
    assert spout_task.stats.acked == 4
    assert spout_task.collector.errors_reported == 1
    assert [(c, "the spout's ack broke" in text) for c, _, text in h.errors] == [("spout", True)]
    assert h.pending is not None and len(h.pending) == 0


def test_an_outcome_message_with_a_malformed_root_still_acks_the_trees_before_it(
    h: Harness,
) -> None:
    root, _ = h.emit_tree("m1")
    other, _ = h.emit_tree("m2")
    assert h.acking is not None
    with pytest.raises(TypeError):  # the executor counts it as malformed ack traffic
        h.acking.deliver(h.spout_task, ACK_ACK, [[[root, [1], other]]], h.t)
    assert h.source.events == [("ack", "m1")]
    assert h.pending is not None and len(h.pending) == 1
    assert h.acking.deliver(h.spout_task, ACK_ACK, [[[other]]], h.t)
    assert h.source.events == [("ack", "m1"), ("ack", "m2")]


# -- multi-anchoring ---------------------------------------------------------------------------


def test_multi_anchor_across_two_trees_completes_both_only_when_acked(h: Harness) -> None:
    root_a, (a5, a6) = h.emit_tree("A")
    root_b, (b5, b6) = h.emit_tree("B")
    assert root_a != root_b
    mid5, mid6 = (h.bolts[t] for t in h.tasks("mid"))
    h.settle()
    mid6.ack(a6)
    mid6.ack(b6)
    assert h.settle() == []
    # mid task 5 joins one tuple of each tree
    mid5.emit(["joined"], anchors=[a5, b5])
    leaves = h.deliver()
    children = [(task, tup) for task in h.tasks("leaf") for tup in leaves[task]]
    assert len(children) == 3
    for _, tup in children:
        assert isinstance(tup.anchors, dict)
        assert tup.anchors == {root_a: tup.id, root_b: tup.id}
        assert sorted(root_ids(tup)) == sorted([root_a, root_b])
    mid5.ack(a5)
    mid5.ack(b5)
    assert h.settle() == []
    for i, (task, tup) in enumerate(children):
        h.bolts[task].ack(tup)
        events = h.settle()
        if i < 2:
            assert events == []
    assert sorted(h.outcomes) == [("ack", "A"), ("ack", "B")]
    assert h.pending is not None and len(h.pending) == 0


def test_multi_root_tuple_acks_every_root(h: Harness) -> None:
    root_a, (a5, a6) = h.emit_tree("A")
    root_b, (b5, b6) = h.emit_tree("B")
    mid5, mid6 = (h.bolts[t] for t in h.tasks("mid"))
    for tup in (a6, b6):
        mid6.ack(tup)
    mid5.emit_direct(h.tasks("leaf")[0], ["j"], anchors=[a5, b5], stream="targeted")
    mid5.ack(a5)
    mid5.ack(b5)
    h.settle()
    (joined,) = h.deliver()[h.tasks("leaf")[0]]
    assert joined.anchors == {root_a: joined.id, root_b: joined.id}
    assert h.outcomes == []
    leaf = h.bolts[h.tasks("leaf")[0]]
    leaf.ack(joined)
    assert h.outbox is not None
    drained = h.outbox.drain()
    acks: dict[int, int] = {}
    for _, stream, values in drained:
        assert stream == ACK_ACK
        acks.update(values[0])
    assert acks == {root_a: joined.id, root_b: joined.id}  # one ack per root
    for dest, stream, values in drained:
        h.ackers[dest].receive(stream, [values])
    assert sorted(h.settle()) == [("ack", "A"), ("ack", "B")]


def test_child_of_a_multi_root_tuple_joins_every_tree(h: Harness) -> None:
    """Anchor to a multi-root tuple: the grandchildren join both trees.

    Collectors are pure, so mid task 6's collector stands in for whichever task received
    the joined tuple."""
    root_a, (a5, a6) = h.emit_tree("A")
    root_b, (b5, b6) = h.emit_tree("B")
    mid5, mid6 = (h.bolts[t] for t in h.tasks("mid"))
    mid5.emit_direct(h.tasks("leaf")[1], ["j"], anchors=[a5, b5], stream="targeted")
    (multi,) = h.deliver()[h.tasks("leaf")[1]]
    assert multi.anchors == {root_a: multi.id, root_b: multi.id}
    for bolt, tup in ((mid5, a5), (mid5, b5), (mid6, a6), (mid6, b6)):
        bolt.ack(tup)
    h.settle()
    mid6.emit(["g"], anchors=multi)
    grand = h.deliver()
    kids = [(task, tup) for task in h.tasks("leaf") for tup in grand.get(task, [])]
    assert len(kids) == 3
    for _, tup in kids:
        assert tup.anchors == {root_a: tup.id, root_b: tup.id}
    mid6.ack(multi)
    assert h.settle() == []
    for task, tup in kids:
        assert h.outcomes == []
        h.bolts[task].ack(tup)
        h.settle()
    assert sorted(h.outcomes) == [("ack", "A"), ("ack", "B")]


def test_two_anchors_of_the_same_tree_cancel_the_childs_edge(h: Harness) -> None:
    """Storm's semantics (see ``_push_tracked``): a child anchored to two tuples of one tree
    has its edge XORed into both anchors' ack values, so it cancels out of that tree: the
    envelope carries ``{root: 0}`` and the tree completes without the child's ack."""
    root, (t5, t6) = h.emit_tree("A")
    mid5, mid6 = (h.bolts[t] for t in h.tasks("mid"))
    leaf0 = h.tasks("leaf")[0]
    mid5.emit_direct(leaf0, ["c"], anchors=[t5, t6], stream="targeted")
    ((child_edge, child_roots),) = h.metas(h.tasks("mid")[0], leaf0, "targeted")
    assert child_roots == {root: 0}
    assert t5.ack_val == child_edge and t6.ack_val == child_edge
    (child,) = h.deliver()[leaf0]
    h.settle()
    mid5.ack(t5)
    mid6.ack(t6)
    assert h.settle() == [("ack", "A")]
    h.bolts[leaf0].ack(child)  # its value for the tree is 0: nothing is sent
    assert h.outbox is not None and h.outbox.drain() == []


def test_same_tuple_twice_in_anchors_is_like_no_anchor_for_that_tree(h: Harness) -> None:
    root, (t5, t6) = h.emit_tree("A")
    mid5 = h.bolts[h.tasks("mid")[0]]
    leaf0 = h.tasks("leaf")[0]
    mid5.emit_direct(leaf0, ["c"], anchors=[t5, t5], stream="targeted")
    ((_, child_roots),) = h.metas(h.tasks("mid")[0], leaf0, "targeted")
    assert child_roots == {root: 0}
    assert t5.ack_val == 0


def test_basic_bolt_emit_anchors_to_the_current_input(h: Harness) -> None:
    root, (t5, t6) = h.emit_tree("A")
    mid5, mid6 = (h.bolts[t] for t in h.tasks("mid"))
    mid5.current = t5
    assert mid5.emit_anchored(["c"]) == h.tasks("leaf")
    mid5.current = None
    mid5.ack(t5)
    mid6.ack(t6)
    h.settle()
    leaves = h.deliver()
    kids = [(task, tup) for task in h.tasks("leaf") for tup in leaves[task]]
    assert all(tup.anchors == root for _, tup in kids)
    assert h.outcomes == []
    for task, tup in kids:
        h.bolts[task].ack(tup)
    h.settle()
    assert h.outcomes == [("ack", "A")]


def test_basic_bolt_emit_without_a_current_input_is_untracked(h: Harness) -> None:
    mid5 = h.bolts[h.tasks("mid")[0]]
    mid5.emit_anchored(["c"])
    for dest in h.tasks("leaf"):
        assert h.metas(h.tasks("mid")[0], dest) == [None]


def test_roots_belong_to_an_acker_of_the_spouts_own_worker_when_there_is_one() -> None:
    outbox = AckOutbox([5, 9, 13])  # this worker hosts acker 9 only (position 1)
    spout = SpoutAcking(3, outbox, PendingTrees(30.0, 0.0), local_ackers=(1,))
    lane: list[Any] = []
    push = {7: (lane.append, lane.append)}
    for i in range(200):
        assert spout.track(push, [7], [i], i, 0.0)
    inits = outbox.drain()
    assert [(dest, stream) for dest, stream, _ in inits] == [(9, ACK_INIT)]
    roots = [root for root, _, _ in inits[0][2][0]]
    assert len(set(roots)) == 200 and all(0 < r < 2**64 and r % 3 == 1 for r in roots)
    # every acker here (one worker), or none: roots spread over all of them
    anywhere = SpoutAcking(3, outbox, PendingTrees(30.0, 0.0), local_ackers=(0, 1, 2))
    for i in range(200):
        anywhere.track(push, [7], [i], i, 0.0)
    assert {dest for dest, _, _ in outbox.drain()} == {5, 9, 13}
