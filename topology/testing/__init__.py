"""Public testing helpers: feeder spout, capture, ack/fail tracker, simulated time,
run-to-completion, and :class:`LocalStack`, the real ZooKeeper + Spark + nimbus stack on
this machine.

Bounded input is just a finite stream: a :class:`FeederSpout` emits its items once (each
task a share), then what the test :meth:`~FeederSpout.feed` s it while the topology runs;
:func:`complete_topology` runs a topology on a LocalCluster until every tuple has been
processed and returns what each component emitted.

Example::

    builder = TopologyBuilder()
    builder.set_spout("words", FeederSpout(["word"], [["a"], ["b"], ["a"]]))
    builder.set_bolt("count", Count()).fields_grouping("words", ["word"])
    result = complete_topology(builder.create_topology(), {"topology.workers": 2})
    assert sorted(result.tuples("count")) == [["a", 1], ["a", 2], ["b", 1]]

While a topology runs (Storm's ``withSimulatedTime``, ``feed`` and ``advanceClusterTime``)::

    feeder = FeederSpout(["word"])
    builder.set_spout("words", feeder)
    ...
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, with_capture(builder.create_topology()))
        feeder.feed(["a"])
        Capture(cluster, "t").wait_for("count", 1)
        cluster.advance_time(30)                 # ticks and timeouts of 30 s, at once

Modules: :mod:`.feeder` (FeederSpout and its feed; :mod:`.feed`, the feed's sockets),
:mod:`.capture` (CaptureBolt, with_capture, Observed, Capture), :mod:`.tracking`
(AckTracker), :mod:`.complete` (complete_topology); simulated time itself is LocalCluster's
(:mod:`topology.deploy.local.cluster`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .capture import CAPTURE_COMPONENT, Capture, CaptureBolt, Observed, with_capture
from .complete import CompletedTopology, complete_topology
from .feeder import FeedError, FeederSpout
from .tracking import AckTracker

if TYPE_CHECKING:
    from topology.deploy.cluster.stack import LocalStack


def __getattr__(name: str) -> Any:
    if name == "LocalStack":  # imports the whole cluster stack: only when asked for
        from topology.deploy.cluster.stack import LocalStack

        return LocalStack
    raise AttributeError(f"module 'topology.testing' has no attribute {name!r}")


__all__ = [
    "CAPTURE_COMPONENT",
    "AckTracker",
    "Capture",
    "CaptureBolt",
    "CompletedTopology",
    "FeedError",
    "FeederSpout",
    "LocalStack",
    "Observed",
    "complete_topology",
    "with_capture",
]
