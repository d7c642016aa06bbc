"""The ack/fail tracker: which msg_ids a spout's tasks saw acked and failed, and why.

A tracking spout's ``collect_results()`` is ``{"acked": [msg_id, ...], "failed": [msg_id,
...], "failures": [[msg_id, kind], ...]}`` (``kind``: ``"timeout"``, ``"failed"`` or
``"worker_lost"``), read with ``LocalCluster.results(name)[spout]`` or through
:class:`~topology.testing.capture.Observed`.
"""

from __future__ import annotations

from typing import Any

from acker import FailReason
from topology.components import OutputFieldsDeclarer, Spout
from topology.context import TopologyContext


class TracksAcks:
    """Records the msg_ids acked and failed (mixed into a spout before :class:`Spout`)."""

    acked: list[Any]
    failed: list[Any]
    failures: list[list[Any]]

    def _reset_tracking(self) -> None:
        self.acked, self.failed, self.failures = [], [], []

    def _tracking_results(self) -> dict[str, Any]:
        return {
            "acked": list(self.acked),
            "failed": list(self.failed),
            "failures": [list(f) for f in self.failures],
        }


class AckTracker(TracksAcks, Spout):
    """Wraps any spout and records which msg_ids were acked and failed.

    ``builder.set_spout("s", AckTracker(MySpout()))``; the wrapped spout still gets every
    callback (``fail_with_reason``, hence ``fail``).  Read the record with
    ``LocalCluster.results(name)["s"]``.
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

    def fail_with_reason(self, msg_id: Any, reason: FailReason) -> None:
        self.failed.append(msg_id)
        self.failures.append([msg_id, reason.kind])
        self.spout.fail_with_reason(msg_id, reason)

    def activate(self) -> None:
        self.spout.activate()

    def deactivate(self) -> None:
        self.spout.deactivate()

    def close(self) -> None:
        self.spout.close()

    def collect_results(self) -> dict[str, Any]:
        return self._tracking_results()
