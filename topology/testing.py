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

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grouping import GroupingSpec

from . import config as cfg
from .components import Bolt, OutputFieldsDeclarer, Spout
from .constants import DEFAULT_STREAM
from .context import TopologyContext
from .errors import SparkstormError
from .spec import ComponentSpec, InputSpec, Topology
from .tuple import Tuple

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


class LocalStack:
    """A real ZooKeeper, a Spark backend and a leader nimbus on this machine.

    ``sparkstorm local`` and the Spark test tier both run on one.  Parts passed in are
    shared and left running on exit (a test session's ZooKeeper and SparkContext); parts
    the stack starts itself are stopped.  On exit every topology under the stack's
    ZooKeeper root is killed first, so no worker outlives it.

    Args:
        conf: cluster conf; ``spark.*`` keys configure a Spark backend started here
            (``spark.master`` defaults to ``local[max(cores, workers),3]``), and
            ``storm.zookeeper.root`` isolates this stack from others on the same ZooKeeper.
        zookeeper: a running :class:`EmbeddedZooKeeper` to use instead of starting one.
        backend: a running ``SparkBackend`` to use instead of starting one.
        progress: called with a line before each slow step (ZooKeeper, Spark, election).

    Example::

        with LocalStack({"topology.workers": 2}) as stack, stack.cluster() as cluster:
            cluster.submit_topology("wc", {"topology.workers": 2}, topology)
    """

    def __init__(
        self,
        conf: dict[str, Any] | None = None,
        zookeeper: Any = None,
        backend: Any = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.conf = dict(conf or {})
        self.zookeeper = zookeeper
        self.backend = backend
        self.nimbus: Any = None
        self._progress = progress or (lambda line: None)
        self._owned: list[Callable[[], None]] = []
        self._nimbus_thread: Any = None

    def start(self, elect_timeout: float = 30.0) -> LocalStack:
        """Start what was not passed in, then a nimbus; return once it leads."""
        from .deploy.embedded_zookeeper import EmbeddedZooKeeper
        from .deploy.nimbus import Nimbus

        try:
            if self.zookeeper is None:
                self._progress("Starting ZooKeeper ...")
                self.zookeeper = EmbeddedZooKeeper().start()
                self._owned.append(self.zookeeper.stop)
            self.conf[cfg.ZK_SERVERS] = ["127.0.0.1"]
            self.conf[cfg.ZK_PORT] = self.zookeeper.port
            if self.backend is None:
                spark = self.spark_conf()
                self._progress(
                    f"ZooKeeper at {self.zookeeper.address}; starting Spark "
                    f"({spark['spark.master']}) ..."
                )
                from .deploy.spark_backend import SparkBackend

                self.backend = SparkBackend(spark, app_name="sparkstorm-local")
                self._owned.append(self.backend.close)
            self.nimbus = Nimbus(self.conf, self.backend)
            self._nimbus_thread = self.nimbus.start()
            if not self.nimbus.is_leader.wait(elect_timeout):
                raise SparkstormError(f"the local nimbus was not elected within {elect_timeout:g}s")
        except BaseException:
            self.stop()
            raise
        return self

    def spark_conf(self) -> dict[str, Any]:
        """The ``spark.*`` keys of the conf, with a local master sized for the workers."""
        spark = {k: v for k, v in self.conf.items() if k.startswith("spark.")}
        workers = int(self.conf.get(cfg.TOPOLOGY_WORKERS, 1))
        spark.setdefault("spark.master", f"local[{max(os.cpu_count() or 1, workers)},3]")
        return spark

    def cluster(self) -> Any:
        """A new :class:`~topology.deploy.cluster.Cluster` client of this stack (a context
        manager: ``with stack.cluster() as cluster``)."""
        from .deploy.cluster import Cluster

        return Cluster(self.conf)

    def stop(self) -> None:
        """Kill this stack's topologies, stop the nimbus, then what the stack started."""
        if self.nimbus is not None:
            try:
                with self.cluster() as cluster:
                    for topology in cluster.topologies():
                        try:
                            cluster.kill_topology(topology["name"], wait_secs=0, timeout=30)
                        except SparkstormError:  # already gone or failed: stopped below
                            pass
            except SparkstormError:  # ZooKeeper gone: the backend stop below still works
                pass
            self.nimbus.shutdown()
            if self._nimbus_thread is not None:
                self._nimbus_thread.join(10)
            for topology_id in self.backend.topologies():  # stragglers of any nimbus
                self.backend.stop(topology_id, wait=10)
            self.nimbus = None
        while self._owned:
            self._owned.pop()()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "AckTracker",
    "CaptureBolt",
    "CompletedTopology",
    "FeederSpout",
    "LocalStack",
    "complete_topology",
    "with_capture",
]
