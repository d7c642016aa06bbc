"""The harness of the collector-level acking tests (``test_acking_*.py``), in memory.

One worker hosts every task, assembled by an :class:`InProcessRunner` and never turned:
the tests call the collectors as user code would and play the executor's part by hand.
They turn lane contents into :class:`Tuple` objects exactly like ``BoltTask._run``
(``Tuple(values, source, meta[0], meta[1])``), feed the outbox's drain to the acker tasks,
and hand acker outcomes to the worker's acking layer, which calls the spout back.

Edge and root ids come from ``getrandbits`` in the modules that make them (the envelope,
the spout's tracking and ``BoltAcking``'s BasicBolt emit), replaced by one seeded
``random.Random``, or from the compiled ``acker.fastpath``, seeded too, so every run sees
the same ids.  Every test runs with the compiled per-word steps (where built) and with
their pure-Python twins (``BoltAcking`` reads ``fastpath.COMPILED`` when it is built).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import acker.anchoring as anchoring_module
import acker.envelope as envelope_module
import acker.fastpath as fastpath
import acker.spout as spout_module
from acker import ACK_RESET, ACKER_COMPONENT, FailReason
from topology import Bolt, Spout, Stream, TopologyBuilder
from topology.runtime.inprocess import InProcessRunner, ManualClock
from topology.runtime.tasks.task import SpoutTask
from topology.spec import Topology
from topology.tuple import Tuple, TupleSource

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


@pytest.fixture(autouse=True, params=["compiled", "pure"] if fastpath.COMPILED else ["pure"])
def seeded_ids(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every acking test runs with the per-word steps of ``acker.fastpath`` in use and,
    where that is the compiled module, again with their pure-Python twins."""
    ids = random.Random(1234).getrandbits
    for module in (envelope_module, spout_module, anchoring_module):
        monkeypatch.setattr(module, "getrandbits", ids)
    fastpath.seed_edges(1234)
    if request.param == "pure":
        monkeypatch.setattr(fastpath, "COMPILED", False)
