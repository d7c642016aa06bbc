"""Spouts and bolts for the flow-control integration tests (test_cluster_flow_control.py).

Importable, so worker processes unpickle them by reference; results are plain data.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from tests.integration.stats_components import CountingSink
from topology import Bolt, Spout, TopologyContext, Tuple


class PacedSpout(Spout):
    """Emits ``n`` numbers (tracked), one every ``every`` seconds, then nothing."""

    outputs = ["n"]

    def __init__(self, n: int, every: float) -> None:
        self.n, self.every = n, every

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.sent = 0
        self.acked = 0
        self.next_at = time.monotonic()

    def next_tuple(self) -> None:
        if self.sent < self.n and time.monotonic() >= self.next_at:
            self.emit([self.sent], msg_id=self.sent)
            self.sent += 1
            self.next_at += self.every

    def ack(self, msg_id: Any) -> None:
        self.acked += 1

    def collect_results(self) -> dict[str, Any]:
        return {"sent": self.sent, "acked": self.acked}


class SleepySpout(Spout):
    """Storm-style: sleeps ``nap`` seconds in every ``next_tuple`` and emits one number."""

    outputs = ["n"]

    def __init__(self, nap: float) -> None:
        self.nap = nap

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.sent = 0

    def next_tuple(self) -> None:
        time.sleep(self.nap)
        self.emit([self.sent], msg_id=self.sent)
        self.sent += 1

    def collect_results(self) -> dict[str, Any]:
        return {"sent": self.sent}


class Stall(CountingSink):
    """Blocks the executor for ``secs`` on the tuple ``at`` (user code that does not
    return), then counts and acks like :class:`CountingSink`."""

    def __init__(self, at: int, secs: float) -> None:
        self.at, self.secs = at, secs

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == self.at:
            time.sleep(self.secs)
        super().execute(tup)


class SlowSink(CountingSink):
    """Counts and acks like :class:`CountingSink`, ``secs`` per tuple (trees pile up)."""

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def execute(self, tup: Tuple) -> None:
        time.sleep(self.secs)
        super().execute(tup)


class Chatty(CountingSink):
    """Prints each number it gets and logs it at DEBUG (``sparkstorm logs`` tests)."""

    def execute(self, tup: Tuple) -> None:
        print(f"chatty got {tup.values[0]}")
        logging.getLogger("chatty").debug("debug %s", tup.values[0])
        super().execute(tup)


class PacedIds(Spout):
    """Emits ``n`` ids (tracked) per task, one every ``every`` seconds, distinct across
    tasks (task ``k`` emits ``k*n .. k*n + n-1``); records the ids acked."""

    outputs = ["n"]

    def __init__(self, n: int, every: float) -> None:
        self.n, self.every = n, every

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.base = context.task_index * self.n
        self.sent = 0
        self.acked: list[int] = []
        self.next_at = time.monotonic()

    def next_tuple(self) -> None:
        if self.sent < self.n and time.monotonic() >= self.next_at:
            self.emit([self.base + self.sent], msg_id=self.base + self.sent)
            self.sent += 1
            self.next_at += self.every

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def collect_results(self) -> dict[str, Any]:
        return {"sent": self.sent, "acked": self.acked}


class KeyedSide(Spout):
    """One side of a two-spout join: ids 0 .. n-1 (tracked, msg id = the id), ascending or
    descending, so the other side's ids arrive in the opposite order; a failed id is
    emitted again."""

    outputs = ["id", "side"]

    def __init__(self, n: int, descending: bool) -> None:
        self.n, self.descending = n, descending

    def open(self, conf: Any, context: Any) -> None:
        order = range(self.n) if self.descending else range(self.n - 1, -1, -1)
        self.todo = list(order)  # popped from the end
        self.acked: set[int] = set()
        self.side = "down" if self.descending else "up"

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop()
            self.emit([i, self.side], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.acked.add(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.todo.append(msg_id)

    def collect_results(self) -> dict[str, Any]:
        return {"acked": len(self.acked)}


class PairJoin(Bolt):
    """Holds each id's first side until the other arrives, then acks both."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.waiting: dict[int, Any] = {}
        self.joined = 0

    def execute(self, tup: Any) -> None:
        other = self.waiting.pop(tup["id"], None)
        if other is None or other["side"] == tup["side"]:
            if other is not None:
                self.ack(other)  # a replay of the same side: keep the newest
            self.waiting[tup["id"]] = tup
            return
        self.ack(other)
        self.ack(tup)
        self.joined += 1

    def collect_results(self) -> dict[str, Any]:
        return {"joined": self.joined}
