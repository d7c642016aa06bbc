"""Collector-level acking: fail, reset_timeout, and untracked, no-op and repeated calls
(harness: ``acking_harness.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from acker import ACK_ACK, ACK_FAIL, ACK_RESET, FailReason, worker_lost
from tests.unit.acking_harness import (  # noqa: F401 - seeded_ids is an autouse fixture
    Harness,
    grow_three_level_tree,
    seeded_ids,
    xor,
)
from topology.tuple import Tuple, TupleSource

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def h() -> Harness:
    return Harness()


# -- fail and reset ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "text"),
    [(ValueError("boom"), "ValueError: boom"), ("bad row", "bad row"), (None, None)],
)
def test_bolt_fail_sends_a_reason_naming_the_bolt(h: Harness, error: Any, text: Any) -> None:
    root, (t5, t6) = h.emit_tree("A")
    h.settle()
    task = h.tasks("mid")[1]
    h.bolts[task].fail(t6, error)
    assert h.bolts[task].failed == 1
    assert h.outbox is not None
    drained = h.outbox.drain()
    reason = FailReason("failed", "mid", task, text)
    assert drained == [(h.outbox.acker_of(root), ACK_FAIL, [root, reason.to_wire()])]
    for dest, stream, values in drained:
        h.ackers[dest].receive(stream, [values])
    h.settle()
    assert h.outcomes == [("fail", "A", reason)]
    # the rest of the failed tree acking later tells the spout nothing more
    h.bolts[h.tasks("mid")[0]].ack(t5)
    assert h.settle() == []
    assert h.pending is not None and len(h.pending) == 0


def test_fail_of_a_multi_root_tuple_fails_every_tree(h: Harness) -> None:
    root_a, (a5, _) = h.emit_tree("A")
    root_b, (b5, _) = h.emit_tree("B")
    mid5 = h.bolts[h.tasks("mid")[0]]
    mid5.emit_direct(h.tasks("leaf")[0], ["j"], anchors=[a5, b5], stream="targeted")
    (joined,) = h.deliver()[h.tasks("leaf")[0]]
    leaf = h.bolts[h.tasks("leaf")[0]]
    leaf.fail(joined, "nope")
    assert h.outbox is not None
    fails = [v for _, s, v in h.outbox.drain() if s == ACK_FAIL]
    reason = FailReason("failed", "leaf", h.tasks("leaf")[0], "nope").to_wire()
    assert sorted(fails) == sorted([[root_a, reason], [root_b, reason]])


def test_a_lost_worker_fails_every_pending_tree_at_once_and_late_acks_count_nothing(
    h: Harness,
) -> None:
    root, mids = h.emit_tree("A")
    h.emit_tree("B")
    h.settle()
    task = next(t for t in h.runner.worker(0).spouts if t.task_id == h.spout_task)
    assert task.fail_pending(worker_lost("worker 1 died")) == 2
    lost = worker_lost("worker 1 died")
    assert h.source.events == [("fail", "A", lost), ("fail", "B", lost)]
    assert str(lost) == "worker lost (worker 1 died)"
    assert task.stats.failed_by == {"worker_lost": 2}
    h.source.events.clear()
    for mid_task, tup in zip(h.tasks("mid"), mids):  # the tree completes after all
        h.bolts[mid_task].ack(tup)
    assert h.settle() == []  # nobody is told twice


def test_reset_timeout_sends_resets_and_postpones_the_spout_timeout(h: Harness) -> None:
    root_a, (a5, a6) = h.emit_tree("A")
    h.emit_tree("B")
    h.settle()
    assert h.pending is not None
    h.t = 20.0
    assert h.pending.expire(20.0) == []
    mid6 = h.bolts[h.tasks("mid")[1]]
    mid6.reset_timeout(a6)
    assert h.outbox is not None
    drained = h.outbox.drain()
    assert drained == [(h.outbox.acker_of(root_a), ACK_RESET, [[root_a]])]
    for dest, stream, values in drained:
        h.ackers[dest].receive(stream, [values])
    h.outbox.drain()
    assert h.settle() == [("reset", root_a)]
    assert h.pending.expire(45.0) == ["B"]  # B was not reset: it times out on schedule
    assert h.pending.expire(59.0) == []
    # a reset does not ack: the tuple can still be acked afterwards
    h.bolts[h.tasks("mid")[0]].ack(a5)
    mid6.ack(a6)
    assert h.settle() == [("ack", "A")]


def test_reset_of_an_untracked_tuple_sends_nothing(h: Harness) -> None:
    src = TupleSource("spout", h.spout_task, "default", ("n",))
    h.bolts[h.tasks("mid")[0]].reset_timeout(Tuple(["x"], src))
    assert h.outbox is not None and h.outbox.drain() == []


# -- untracked, no-op and repeated calls ----------------------------------------------------------


def test_unanchored_bolt_emits_are_untracked(h: Harness) -> None:
    root, (t5, _) = h.emit_tree("A")
    mid5 = h.bolts[h.tasks("mid")[0]]
    mid5.emit(["free"])
    for dest in h.tasks("leaf"):
        assert h.metas(h.tasks("mid")[0], dest) == [None]
    assert t5.ack_val == 0
    leaves = h.deliver()
    for task in h.tasks("leaf"):
        assert [tup.id for tup in leaves[task]] == [None]
        assert [tup.anchors for tup in leaves[task]] == [None]


def test_emits_anchored_to_untracked_tuples_are_untracked(h: Harness) -> None:
    src = TupleSource("spout", h.spout_task, "default", ("n",))
    plain = Tuple(["x"], src)
    mid5 = h.bolts[h.tasks("mid")[0]]
    mid5.emit(["a"], anchors=plain)
    mid5.emit(["b"], anchors=[plain, plain])
    mid5.emit(["c"], anchors=[])
    for dest in h.tasks("leaf"):
        assert h.metas(h.tasks("mid")[0], dest) == [None, None, None]
    assert h.outbox is not None and h.outbox.drain() == []


def test_anchors_are_ignored_without_ackers() -> None:
    h = Harness(with_acks=False)
    src = TupleSource("spout", h.spout_task, "default", ("n",))
    tracked = Tuple(["x"], src, 0x55, 0x77)
    mid5 = h.bolts[h.tasks("mid")[0]]
    mid5.emit(["a"], anchors=tracked)
    for dest in h.tasks("leaf"):
        assert h.metas(h.tasks("mid")[0], dest) == [None]
    mid5.ack(tracked)
    mid5.fail(tracked)
    assert (mid5.acked, mid5.failed) == (1, 1)


def test_acking_an_untracked_tuple_is_a_noop(h: Harness) -> None:
    src = TupleSource("spout", h.spout_task, "default", ("n",))
    plain = Tuple(["x"], src)
    bolt = h.bolts[h.tasks("mid")[0]]
    bolt.ack(plain)
    bolt.fail(plain, "x")
    assert bolt.acked == 1 and bolt.failed == 1
    assert h.outbox is not None and h.outbox.drain() == []
    assert plain.anchors is None and plain.id is None


def test_double_ack_is_harmless(h: Harness) -> None:
    root, (t5, t6) = h.emit_tree("A")
    h.settle()
    mid5, mid6 = (h.bolts[t] for t in h.tasks("mid"))
    mid5.ack(t5)
    assert h.outbox is not None
    first = h.outbox.drain()
    assert first == [(h.outbox.acker_of(root), ACK_ACK, [{root: t5.id}])]
    mid5.ack(t5)  # again: sends nothing
    assert h.outbox.drain() == []
    for dest, stream, values in first:
        h.ackers[dest].receive(stream, [values])
    mid6.ack(t6)
    mid6.ack(t6)
    assert h.settle() == [("ack", "A")]
    assert h.settle() == []


def test_fail_after_ack_and_ack_after_fail_send_nothing(h: Harness) -> None:
    root, (t5, t6) = h.emit_tree("A")
    h.settle()
    mid5, mid6 = (h.bolts[t] for t in h.tasks("mid"))
    mid5.ack(t5)
    assert h.outbox is not None
    h.outbox.drain()
    mid5.fail(t5, "late")
    mid6.fail(t6, "first")
    drained = h.outbox.drain()
    assert [s for _, s, _ in drained] == [ACK_FAIL]
    mid6.ack(t6)
    mid6.fail(t6, "second")
    assert h.outbox.drain() == []


def test_ack_value_is_input_edge_xor_anchored_edges(h: Harness) -> None:
    root, (t5, _) = h.emit_tree("A")
    assert h.outbox is not None
    h.outbox.drain()
    mid5 = h.bolts[h.tasks("mid")[0]]
    mid5.emit(["c1"], anchors=t5)
    mid5.emit(["c2"], anchors=[t5])
    child_edges = [m[0] for dest in h.tasks("leaf") for m in h.metas(h.tasks("mid")[0], dest)]
    assert len(child_edges) == 6
    assert t5.ack_val == xor(child_edges)
    mid5.ack(t5)
    assert h.outbox.drain() == [
        (h.outbox.acker_of(root), ACK_ACK, [{root: t5.id ^ xor(child_edges)}])
    ]
