"""Bolts for the status-report integration tests (tests/integration/test_cluster_stats.py).

Kept in an importable module, like ``components.py``, so worker processes can unpickle them
by reference.
"""

from __future__ import annotations

from typing import Any

from topology import Bolt, TopologyContext, Tuple


def is_explicit_failure(n: int) -> bool:
    """Values :class:`Judge` fails with ``self.fail(tup, "bad value")``."""
    return n % 5 == 0


def is_raise(n: int) -> bool:
    """Values :class:`Judge` raises on (never also an explicit failure)."""
    return n % 7 == 3 and not is_explicit_failure(n)


class Judge(Bolt):
    """Fails every multiple of 5 explicitly, raises ``ValueError`` on values congruent to
    3 mod 7 (that are not multiples of 5), and acks the rest after emitting them anchored."""

    outputs = ["n"]

    def execute(self, tup: Tuple) -> None:
        n = tup["n"]
        if is_explicit_failure(n):
            self.fail(tup, "bad value")
            return
        if is_raise(n):
            raise ValueError(f"judge cannot take {n}")
        self.emit([n], anchors=tup)
        self.ack(tup)


class CountingSink(Bolt):
    """Acks everything and counts what it received."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.received = 0

    def execute(self, tup: Tuple) -> None:
        self.received += 1
        self.ack(tup)

    def collect_results(self) -> dict[str, Any]:
        return {"received": self.received}
