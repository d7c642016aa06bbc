"""Collector-level acking, in memory: spout and bolt collectors, the outbox, acker tasks.

One worker hosts every task, assembled by an :class:`InProcessRunner` and never turned:
the tests call the collectors as user code would and play the executor's part by hand.
They turn lane contents into :class:`Tuple` objects exactly like ``BoltTask._run``
(``Tuple(values, source, meta[0], meta[1])``), feed the outbox's drain to the acker tasks,
and hand acker outcomes to the worker's acking layer, which calls the spout back.

Edge and root ids come from ``acker.envelope.getrandbits``, replaced by a seeded
``random.Random`` so every run sees the same ids.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import acker.envelope as envelope_module
from acker import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET, ACKER_COMPONENT, FailReason
from acker.envelope import root_ids
from topology import Bolt, Spout, Stream, TopologyBuilder
from topology.runtime.inprocess import InProcessRunner, ManualClock
from topology.runtime.tasks import SpoutTask
from topology.spec import Topology
from topology.tuple import Tuple, TupleSource

pytestmark = pytest.mark.timeout(30)

TIMEOUT = 30.0


class Source(Spout):
    """Never emits by itself; records the outcomes the acking layer reports."""

    outputs = {
        "default": ["n"],
        "unheard": ["n"],
        "targeted": Stream(["n"], direct=True),
    }

    def open(self, conf: Any, context: Any) -> None:
        self.events: list[tuple[Any, ...]] = []

    def next_tuple(self) -> None:
        pass

    def ack(self, msg_id: Any) -> None:
        self.events.append(("ack", msg_id))

    def fail_with_reason(self, msg_id: Any, reason: FailReason) -> None:
        self.events.append(("fail", msg_id, reason))


class Mid(Bolt):
    outputs = {"default": ["n"], "targeted": Stream(["n"], direct=True)}

    def execute(self, tup: Any) -> None:
        pass


class Leaf(Bolt):
    def execute(self, tup: Any) -> None:
        pass


def build_topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("spout", Source())
    b.set_bolt("mid", Mid(), 2).all_grouping("spout").direct_grouping("spout", "targeted")
    b.set_bolt("leaf", Leaf(), 3).all_grouping("mid").direct_grouping("mid", "targeted")
    return b.create_topology()


def xor(values: Any) -> int:
    out = 0
    for v in values:
        out ^= v
    return out


class Harness:
    """A single worker with every task, acking on (``with_acks=False``: no acker tasks)."""

    def __init__(self, ackers: int | None = None, with_acks: bool = True) -> None:
        self.topology = build_topology()
        conf: dict[str, Any] = {
            "topology.workers": 1,
            "topology.message.timeout.secs": TIMEOUT,
            "topology.max.spout.pending.adaptive": False,
        }
        if not with_acks:
            conf["topology.acker.executors"] = 0
        elif ackers is not None:
            conf["topology.acker.executors"] = ackers
        self.runner = InProcessRunner(self.topology, conf, clock=ManualClock(0.0))
        self.conf = self.runner.conf
        self.assignment = self.runner.assignment
        worker = self.runner.worker(0)
        self.inbound = worker.executor.inbound
        self.transfer = worker.executor.transfer
        self.acking = worker.acking
        self.acker_ids = self.assignment.component_tasks.get(ACKER_COMPONENT, [])
        self.outbox = self.acking.outbox if self.acking is not None else None
        self.ackers = self.acking.ackers if self.acking is not None else {}
        self.errors = self.runner.errors
        spout_task = self.runner.task("spout")
        assert isinstance(spout_task, SpoutTask)
        self.spout_task = spout_task.task_id
        self.pending = spout_task.pending
        self.spout = spout_task.collector
        self.source: Source = spout_task.instance  # type: ignore[assignment]
        self.bolts = {task_id: bolt.collector for task_id, bolt in worker.bolts.items()}
        self.outcomes: list[tuple[Any, ...]] = []

    @property
    def t(self) -> float:
        return self.runner.clock()

    @t.setter
    def t(self, value: float) -> None:
        self.runner.clock.time = value  # type: ignore[attr-defined]

    def tasks(self, component: str) -> list[int]:
        return self.assignment.component_tasks[component]

    def metas(self, src: int, dest: int, stream: str = "default") -> list[Any]:
        """Envelopes waiting in the lane (src, stream, dest), without taking them."""
        return list(self.transfer.lane(src, stream, dest).metas)

    def deliver(self) -> dict[int, list[Tuple]]:
        """Flush the lanes; dest task -> the Tuples it receives (as BoltTask builds them)."""
        self.transfer.flush_local()
        received: dict[int, list[Tuple]] = {}
        while self.inbound:
            dest, src, stream, vals, metas = self.inbound.popleft()
            component = self.assignment.task_component[src]
            fields = self.topology.components[component].streams[stream].fields
            source = TupleSource(component, src, stream, fields)
            if metas is None:
                metas = [None] * len(vals)
            for values, meta in zip(vals, metas):
                tup = Tuple(values, source, meta[0], meta[1]) if meta else Tuple(values, source)
                received.setdefault(dest, []).append(tup)
        return received

    def settle(self) -> list[tuple[Any, ...]]:
        """Outbox -> ackers -> the worker's acking layer -> the spout; the spout-side
        events of this round, in order (resets are not calls to the spout: they are noted
        here as they pass)."""
        assert self.outbox is not None and self.acking is not None
        for dest, stream, values in self.outbox.drain():
            self.ackers[dest].receive(stream, [values])
        events: list[tuple[Any, ...]] = []
        for task in self.ackers.values():
            for spout_task, stream, values in task.drain():
                assert spout_task == self.spout_task
                if stream == ACK_RESET:
                    events.extend(("reset", root) for root in values[0])
                assert self.acking.deliver(spout_task, stream, [values], self.t)
                events.extend(self.source.events)
                self.source.events.clear()
        self.outcomes.extend(events)
        return events

    def emit_tree(self, msg_id: Any) -> tuple[int, list[Tuple]]:
        """Spout emit with ``msg_id`` -> (root, the tuples both mid tasks receive)."""
        assert self.outbox is not None
        self.spout.emit([msg_id], msg_id=msg_id)
        received = self.deliver()
        tuples = [tup for task in self.tasks("mid") for tup in received.get(task, [])]
        roots = {tup.anchors for tup in tuples}
        assert len(roots) == 1
        return roots.pop(), tuples


@pytest.fixture(autouse=True)
def seeded_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envelope_module, "getrandbits", random.Random(1234).getrandbits)


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


def grow_three_level_tree(h: Harness, msg_id: Any) -> tuple[int, list[tuple[int, Tuple]]]:
    """spout -> 2 mid tuples -> each anchors 3 leaf tuples; (root, [(task, tuple)] to ack)."""
    root, mids = h.emit_tree(msg_id)
    to_ack: list[tuple[int, Tuple]] = []
    for task, tup in zip(h.tasks("mid"), mids):
        assert tup.source_task == h.spout_task
        assert h.bolts[task].emit([tup[0]], anchors=tup) == h.tasks("leaf")
        to_ack.append((task, tup))
    leaves = h.deliver()
    for task in h.tasks("leaf"):
        assert len(leaves[task]) == 2
        for tup in leaves[task]:
            assert tup.anchors == root
            to_ack.append((task, tup))
    assert len(to_ack) == 8
    return root, to_ack


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
