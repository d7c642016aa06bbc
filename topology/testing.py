"""Public testing helpers: feeder spout, capture bolt, ack/fail tracker, run-to-completion,
and :class:`LocalStack`, the real ZooKeeper + Spark + nimbus stack on this machine.

Bounded input is just a finite stream: a :class:`FeederSpout` emits its items once (each
task a share) and then stays quiet; :func:`complete_topology` runs a topology on a
LocalCluster until every tuple has been processed and returns what each component emitted.

Example::

    builder = TopologyBuilder()
    builder.set_spout("words", FeederSpout(["word"], [["a"], ["b"], ["a"]]))
    builder.set_bolt("count", Count()).fields_grouping("words", ["word"])
    result = complete_topology(builder.create_topology(), {"topology.workers": 2})
    assert sorted(result.tuples("count")) == [["a", 1], ["a", 2], ["b", 1]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grouping import GroupingSpec

from .components import Bolt, OutputFieldsDeclarer, Spout
from .constants import DEFAULT_STREAM
from .context import TopologyContext
from .spec import ComponentSpec, InputSpec, Topology
from .tuple import Tuple

if TYPE_CHECKING:
    from .deploy.local_stack import LocalStack

CAPTURE_COMPONENT = "__capture"


class _TracksAcks:
    """Records the msg_ids acked and failed (the ack/fail tracker behaviour)."""

    acked: list[Any]
    failed: list[Any]

    def _reset_tracking(self) -> None:
        self.acked, self.failed = [], []

    def _tracking_results(self) -> dict[str, Any]:
        return {"acked": list(self.acked), "failed": list(self.failed)}


class FeederSpout(_TracksAcks, Spout):
    """Emits a fixed list of tuples once, spread over its tasks, then nothing.

    Item ``i`` is emitted by task ``i % parallelism`` with ``msg_id=i`` (unless
    ``msg_ids=False``).  With ``replay_failed=True`` a failed item is emitted again.
    """

    def __init__(
        self,
        fields: Sequence[str],
        items: Iterable[Sequence[Any]],
        stream: str = DEFAULT_STREAM,
        msg_ids: bool = True,
        replay_failed: bool = False,
    ) -> None:
        self._fields = list(fields)
        self._stream = stream
        self._items = [list(v) for v in items]
        self._msg_ids = msg_ids
        self._replay = replay_failed

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self._fields, self._stream)

    def open(self, conf: Any, context: TopologyContext) -> None:
        n = len(context.component_tasks())
        self._queue = list(range(context.task_index, len(self._items), n))
        self._queue.reverse()
        self._reset_tracking()

    def next_tuple(self) -> None:
        if self._queue:
            i = self._queue.pop()
            self.emit(self._items[i], msg_id=i if self._msg_ids else None, stream=self._stream)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)
        if self._replay:
            self._queue.append(msg_id)

    def collect_results(self) -> dict[str, Any]:
        return self._tracking_results()


class AckTracker(_TracksAcks, Spout):
    """Wraps any spout and records which msg_ids were acked and failed.

    ``builder.set_spout("s", AckTracker(MySpout()))``; the wrapped spout still gets every
    callback.  Read the record with ``LocalCluster.results(name)["s"]``.
    """

    def __init__(self, spout: Spout) -> None:
        self.spout = spout

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.spout.declare_output_fields(declarer)

    def open(self, conf: Any, context: TopologyContext) -> None:
        self._reset_tracking()
        self.spout._collector = self._collector
        self.spout.emit = self._collector.emit  # type: ignore[method-assign]
        self.spout.emit_direct = self._collector.emit_direct  # type: ignore[method-assign]
        self.spout.open(conf, context)

    def next_tuple(self) -> None:
        self.spout.next_tuple()

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)
        self.spout.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)
        self.spout.fail(msg_id)

    def activate(self) -> None:
        self.spout.activate()

    def deactivate(self) -> None:
        self.spout.deactivate()

    def close(self) -> None:
        self.spout.close()

    def collect_results(self) -> dict[str, Any]:
        return self._tracking_results()


class CaptureBolt(Bolt):
    """Records every tuple it receives as ``(source component, stream, values)`` and acks it."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.captured: list[tuple[str, str, list[Any]]] = []

    def execute(self, tup: Tuple) -> None:
        if not tup.is_tick():
            self.captured.append((tup.source_component, tup.stream, tup.values))
        self.ack(tup)

    def collect_results(self) -> list[tuple[str, str, list[Any]]]:
        return list(self.captured)


def with_capture(topology: Topology) -> Topology:
    """A copy of ``topology`` plus a capture bolt subscribed (global grouping) to every
    non-direct stream of every component."""
    inputs = [
        InputSpec(c.id, stream, GroupingSpec("global"))
        for c in topology.components.values()
        for stream, declared in c.streams.items()
        if not declared.direct
    ]
    capture = ComponentSpec(CAPTURE_COMPONENT, "bolt", CaptureBolt(), 1, 1, {}, inputs)
    return topology.with_component(capture)


@dataclass
class CompletedTopology:
    """What :func:`complete_topology` observed."""

    captured: list[tuple[str, str, list[Any]]]
    results: dict[str, dict[int, Any]]
    errors: dict[str, list[dict[str, Any]]]
    status: list[dict[str, Any]] = field(default_factory=list)

    def tuples(self, component: str, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        """Values ``component`` emitted on ``stream``, in arrival order at the capture bolt."""
        return [v for c, s, v in self.captured if c == component and s == stream]

    def acked(self, spout: str) -> list[Any]:
        """msg_ids acked across every task of a FeederSpout / AckTracker spout."""
        return [m for r in self.results.get(spout, {}).values() for m in r["acked"]]

    def failed(self, spout: str) -> list[Any]:
        """msg_ids failed across every task of a FeederSpout / AckTracker spout."""
        return [m for r in self.results.get(spout, {}).values() for m in r["failed"]]


def complete_topology(
    topology: Topology,
    conf: dict[str, Any] | None = None,
    timeout: float = 60.0,
    capture: bool = True,
    name: str = "completed",
) -> CompletedTopology:
    """Run ``topology`` on a fresh LocalCluster until it drains; return what it did."""
    from .deploy.local_cluster import LocalCluster

    run = with_capture(topology) if capture else topology
    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, run)
        cluster.wait_until_drained(name, timeout=timeout)
        results = cluster.results(name)
        status = cluster.worker_status(name)
        errors = cluster.errors(name)
    captured = [tuple(x) for r in results.pop(CAPTURE_COMPONENT, {}).values() for x in r]
    return CompletedTopology(captured, results, errors, status)


def __getattr__(name: str) -> Any:
    if name == "LocalStack":  # imports the deployment layer: only when asked for
        from .deploy.local_stack import LocalStack

        return LocalStack
    raise AttributeError(f"module 'topology.testing' has no attribute {name!r}")


__all__ = [
    "AckTracker",
    "CaptureBolt",
    "CompletedTopology",
    "FeederSpout",
    "LocalStack",
    "complete_topology",
    "with_capture",
]
