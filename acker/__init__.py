"""The XOR acker: tuple-tree tracking for at-least-once processing.

* :mod:`acker.ledger` — the acker's XOR ledger (pure, rotating expiry).
* :mod:`acker.pending` — a spout task's pending trees: timeouts, max pending, latency.
* :mod:`acker.protocol` — stream names, :class:`FailReason`, the per-worker outbox.
* :mod:`acker.bolt` — the acker system task around the ledger.
* :mod:`acker.rotating` — Storm's RotatingMap.
"""

from .ledger import AckLedger, Outcome
from .pending import PendingTrees
from .protocol import (
    ACK_ACK,
    ACK_FAIL,
    ACK_INIT,
    ACK_RESET,
    ACK_STREAMS,
    ACKER_COMPONENT,
    TIMEOUT,
    AckOutbox,
    FailReason,
)
from .rotating import RotatingMap
from .task import AckerTask

__all__ = [
    "ACK_ACK",
    "ACK_FAIL",
    "ACK_INIT",
    "ACK_RESET",
    "ACK_STREAMS",
    "ACKER_COMPONENT",
    "TIMEOUT",
    "AckLedger",
    "AckOutbox",
    "AckerTask",
    "FailReason",
    "Outcome",
    "PendingTrees",
    "RotatingMap",
]
