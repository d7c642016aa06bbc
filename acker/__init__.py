"""The XOR acker: the whole tuple-tree tracking protocol for at-least-once processing.

The runtime talks to this package through one door, :class:`WorkerAcking`
(:mod:`acker.worker`), and the per-task objects it hands out; everything else is the
protocol behind it:

* :mod:`acker.envelope` — a tracked tuple's envelope and XOR anchoring (the hot path).
* :mod:`acker.anchoring` — the bolt side: anchored emits, ack / fail / reset of inputs
  (:class:`BoltAcking`; :class:`NoBoltAcking` without ackers), bound once per collector.
* :mod:`acker.fastpath` — a received tuple's storage (:class:`TupleBase`, under
  ``topology.Tuple``) and the per-word steps, compiled from ``_fastpath.c`` when built.
* :mod:`acker.spout` — the spout side: trees started at emit, outcomes and timeouts
  (:class:`SpoutAcking`; :class:`NoSpoutAcking` without ackers).
* :mod:`acker.pending` — a spout task's pending trees: timeouts, max pending, latency.
* :mod:`acker.outbox` — a worker's ack traffic, XOR-combined per executor turn.
* :mod:`acker.task` — the acker system task around the ledger.
* :mod:`acker.ledger` — the acker's XOR ledger (pure, rotating expiry).
* :mod:`acker.protocol` — stream names and shapes, :class:`FailReason`.
* :mod:`acker.rotating` — Storm's RotatingMap.
"""

from .anchoring import NO_BOLT_ACKING, BoltAcking, NoBoltAcking
from .ledger import AckLedger, Outcome
from .outbox import AckOutbox
from .pending import PendingTrees
from .protocol import (
    ACK_ACK,
    ACK_FAIL,
    ACK_INIT,
    ACK_RESET,
    ACK_STREAMS,
    ACKER_COMPONENT,
    TIMEOUT,
    FailReason,
    worker_lost,
)
from .rotating import RotatingMap
from .spout import NO_SPOUT_ACKING, NoSpoutAcking, SpoutAcking
from .task import AckerTask
from .worker import WorkerAcking

__all__ = [
    "ACK_ACK",
    "ACK_FAIL",
    "ACK_INIT",
    "ACK_RESET",
    "ACK_STREAMS",
    "ACKER_COMPONENT",
    "NO_BOLT_ACKING",
    "NO_SPOUT_ACKING",
    "TIMEOUT",
    "AckLedger",
    "AckOutbox",
    "AckerTask",
    "BoltAcking",
    "FailReason",
    "NoBoltAcking",
    "NoSpoutAcking",
    "Outcome",
    "PendingTrees",
    "RotatingMap",
    "SpoutAcking",
    "WorkerAcking",
    "worker_lost",
]
