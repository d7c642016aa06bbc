"""Capturing what components emit, per stream: after a run and while a topology runs.

:func:`with_capture` adds a :class:`CaptureBolt` subscribed to every (non-direct) stream;
:class:`Observed` reads what it captured and what tracking spouts recorded;
:class:`Capture` takes fresh observations of a topology running on a LocalCluster (through
``LocalCluster.results``, the ``collect`` control request) and waits, with a bound, for
tuples to show up — failing with what *was* captured, for pytest to show.

Example::

    cluster.submit_topology("t", {}, with_capture(topology))
    capture = Capture(cluster, "t")
    assert capture.wait_for("split", 3) == [["a"], ["b"], ["c"]]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grouping import GroupingSpec
from topology.components import Bolt
from topology.constants import CAPTURE_COMPONENT, DEFAULT_STREAM
from topology.context import TopologyContext
from topology.spec import ComponentSpec, InputSpec, Topology
from topology.tuple import Tuple

if TYPE_CHECKING:
    from topology.deploy.local.cluster import LocalCluster

#: Seconds between two looks of :meth:`Capture.wait_until`.
POLL_SECS = 0.02


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
class Observed:
    """What the capture bolt held and the testing components reported at one moment.

    ``captured``: ``(component, stream, values)`` in arrival order at the capture bolt;
    ``results``: ``collect_results()`` by component, then task.
    """

    captured: list[tuple[str, str, list[Any]]]
    results: dict[str, dict[int, Any]]

    @classmethod
    def from_results(cls, results: dict[str, dict[int, Any]]) -> Observed:
        """Split ``LocalCluster.results`` into the capture bolt's record and the rest."""
        rest = dict(results)
        by_task = rest.pop(CAPTURE_COMPONENT, {})
        captured = [(c, s, v) for r in by_task.values() for c, s, v in r]
        return cls(captured, rest)

    def tuples(self, component: str, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        """Values ``component`` emitted on ``stream``, in arrival order at the capture bolt."""
        return [v for c, s, v in self.captured if c == component and s == stream]

    def counts(self) -> dict[str, int]:
        """Tuples captured per ``"component/stream"``."""
        out: dict[str, int] = {}
        for c, s, _ in self.captured:
            out[f"{c}/{s}"] = out.get(f"{c}/{s}", 0) + 1
        return out

    def acked(self, spout: str) -> list[Any]:
        """msg_ids acked across every task of a FeederSpout / AckTracker spout."""
        return [m for r in self.results.get(spout, {}).values() for m in r["acked"]]

    def failed(self, spout: str) -> list[Any]:
        """msg_ids failed across every task of a FeederSpout / AckTracker spout."""
        return [m for r in self.results.get(spout, {}).values() for m in r["failed"]]

    def failures(self, spout: str) -> list[tuple[Any, str]]:
        """``(msg_id, reason kind)`` of every failure of a FeederSpout / AckTracker spout."""
        return [
            (m, k) for r in self.results.get(spout, {}).values() for m, k in r.get("failures", [])
        ]


class Capture:
    """Observes a topology running on a LocalCluster, submitted ``with_capture``."""

    def __init__(self, cluster: LocalCluster, name: str) -> None:
        self.cluster = cluster
        self.name = name

    def observe(self) -> Observed:
        """What the topology captured and recorded so far (one ``collect`` request)."""
        results = self.cluster.results(self.name)
        if CAPTURE_COMPONENT not in results:
            raise AssertionError(
                f"topology {self.name!r} has no capture bolt: submit with_capture(topology)"
            )
        return Observed.from_results(results)

    def tuples(self, component: str, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        """What ``component`` emitted on ``stream`` so far."""
        return self.observe().tuples(component, stream)

    def wait_until(
        self, done: Callable[[Observed], bool], what: str, timeout: float = 10.0
    ) -> Observed:
        """Look until ``done(observed)`` holds; the observation that satisfied it.

        Raises ``AssertionError`` after ``timeout`` seconds naming ``what`` it waited for
        and what was captured per component and stream.
        """
        deadline = time.monotonic() + timeout
        while True:
            observed = self.observe()
            if done(observed):
                return observed
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"topology {self.name!r}: waited {timeout:g}s for {what}; captured per "
                    f"component/stream: {observed.counts() or 'nothing'}"
                )
            time.sleep(POLL_SECS)

    def wait_for(
        self, component: str, count: int, stream: str = DEFAULT_STREAM, timeout: float = 10.0
    ) -> list[list[Any]]:
        """Wait until ``component`` has emitted at least ``count`` tuples on ``stream``;
        return them all (AssertionError after ``timeout`` seconds, showing those seen)."""

        seen: list[list[Any]] = []

        def enough(observed: Observed) -> bool:
            seen[:] = observed.tuples(component, stream)
            return len(seen) >= count

        try:
            self.wait_until(enough, f"{count} tuple(s) from {component!r} on {stream!r}", timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; {component!r} on {stream!r}: {seen!r:.2000}") from None
        return seen
