"""Spouts and bolts for the acking integration tests (tests/integration/test_cluster_acking.py).

Kept in an importable module, like ``components.py``, so worker processes can unpickle them
by reference.  Every ``collect_results()`` returns plain msgpack-able data.
"""

from __future__ import annotations

import time
from typing import Any

from acker import FailReason
from topology import Bolt, Spout, TopologyContext, Tuple
from topology.testing import FeederSpout


class ReasonFeeder(FeederSpout):
    """A FeederSpout that also records why each msg_id failed.

    ``reasons`` holds ``[msg_id, kind, component, task, error]`` per failure, in order.
    """

    def open(self, conf: Any, context: TopologyContext) -> None:
        super().open(conf, context)
        self.reasons: list[list[Any]] = []

    def fail_with_reason(self, msg_id: Any, reason: FailReason) -> None:
        self.reasons.append([msg_id, reason.kind, reason.component, reason.task, reason.error])
        self.fail(msg_id)  # FeederSpout.fail records it (and replays when asked to)

    def collect_results(self) -> dict[str, Any]:
        return {**super().collect_results(), "reasons": self.reasons}


class Upper(Bolt):
    """word -> WORD: a plain Bolt that anchors its emit to the input and acks it itself."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup["word"].upper()], anchors=tup)
        self.ack(tup)


class FailOnce(Bolt):
    """Passes ``[value]`` on (anchored); fails the input the first time it sees a multiple
    of ``every`` *after* emitting it, so the downstream bolt sees that value twice.

    Must be fields-grouped on ``value``: the "seen" state is per task, and the replay has
    to reach the task that failed the first attempt.
    """

    outputs = ["value"]

    def __init__(self, every: int = 10) -> None:
        self.every = every

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.task_id = context.task_id
        self.seen: set[int] = set()
        self.failures: list[list[int]] = []  # [value, task]

    def execute(self, tup: Tuple) -> None:
        value = tup["value"]
        self.emit([value], anchors=tup)
        if value % self.every == 0 and value not in self.seen:
            self.seen.add(value)
            self.failures.append([value, self.task_id])
            self.fail(tup, f"rejecting {value} once")
        else:
            self.ack(tup)

    def collect_results(self) -> dict[str, Any]:
        return {"task": self.task_id, "failures": self.failures}


class KeyCounter(Bolt):
    """Counts values per key (``value % keys``); records every ``[value, key]`` it counted,
    replays included, so the test can dedupe them."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.counts: dict[int, int] = {}
        self.records: list[list[int]] = []

    def execute(self, tup: Tuple) -> None:
        value = tup["value"]
        key = value % self.keys
        self.counts[key] = self.counts.get(key, 0) + 1
        self.records.append([value, key])
        self.ack(tup)

    def collect_results(self) -> dict[str, Any]:
        return {"counts": {str(k): c for k, c in self.counts.items()}, "records": self.records}


class NeverAck(Bolt):
    """Receives tuples and neither acks nor fails them."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.received = 0

    def execute(self, tup: Tuple) -> None:
        self.received += 1

    def collect_results(self) -> dict[str, Any]:
        return {"received": self.received}


class PlainRaiser(Bolt):
    """A plain Bolt (no BasicBolt help) that raises ``ValueError`` for the numbers in ``bad``
    and acks the others."""

    def __init__(self, bad: list[int]) -> None:
        self.bad = frozenset(bad)

    def execute(self, tup: Tuple) -> None:
        n = tup["n"]
        if n in self.bad:
            raise ValueError(f"plain bolt cannot handle {n}")
        self.ack(tup)


class Sleeper(Bolt):
    """Sleeps ``delay`` seconds per tuple, then acks it."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.executed = 0

    def execute(self, tup: Tuple) -> None:
        time.sleep(self.delay)
        self.executed += 1
        self.ack(tup)

    def collect_results(self) -> dict[str, Any]:
        return {"executed": self.executed}


class PendingCounter(Spout):
    """Emits ``[0] .. [n-1]`` with msg_ids and tracks its own pending trees (emitted minus
    acked minus failed); records the most pending right after each ``next_tuple`` call."""

    outputs = ["n"]

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.emitted = self.acked = self.failed = 0
        self.max_pending = 0
        self.calls = 0

    def next_tuple(self) -> None:
        self.calls += 1
        if self.emitted < self.n:
            self.emit([self.emitted], msg_id=self.emitted)
            self.emitted += 1
        self.max_pending = max(self.max_pending, self.emitted - self.acked - self.failed)

    def ack(self, msg_id: Any) -> None:
        self.acked += 1

    def fail(self, msg_id: Any) -> None:
        self.failed += 1

    def collect_results(self) -> dict[str, Any]:
        return {
            "emitted": self.emitted,
            "acked": self.acked,
            "failed": self.failed,
            "max_pending": self.max_pending,
            "calls": self.calls,
        }


class Holder(Bolt):
    """Holds every input ``hold`` seconds before acking it, checked on tick tuples; with
    ``reset=True`` it calls ``reset_timeout`` on each held input at every tick."""

    def __init__(self, hold: float, reset: bool) -> None:
        self.hold = hold
        self.reset = reset

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.held: list[tuple[float, Tuple]] = []
        self.resets = 0
        self.acked: list[list[Any]] = []  # [n, seconds held]

    def execute(self, tup: Tuple) -> None:
        now = time.monotonic()
        if not tup.is_tick():
            self.held.append((now, tup))
            return
        keep = []
        for since, held in self.held:
            if now - since >= self.hold:
                self.ack(held)
                self.acked.append([held["n"], now - since])
            else:
                if self.reset:
                    self.reset_timeout(held)
                    self.resets += 1
                keep.append((since, held))
        self.held = keep

    def collect_results(self) -> dict[str, Any]:
        return {"acked": self.acked, "resets": self.resets, "held": len(self.held)}


class BurstSpout(Spout):
    """Emits ``[0] .. [n-1]`` (msg_id = n) all in its first ``next_tuple`` call, then
    nothing; records how long after that call each msg_id was acked or failed."""

    outputs = ["n"]

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.start: float | None = None
        self.acked: list[list[Any]] = []  # [msg_id, seconds after the burst]
        self.failed: list[list[Any]] = []

    def next_tuple(self) -> None:
        if self.start is None:
            self.start = time.monotonic()
            for i in range(self.n):
                self.emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append([msg_id, time.monotonic() - (self.start or 0.0)])

    def fail(self, msg_id: Any) -> None:
        self.failed.append([msg_id, time.monotonic() - (self.start or 0.0)])

    def collect_results(self) -> dict[str, Any]:
        return {"acked": self.acked, "failed": self.failed}
