"""Components for the Spark tier (importable, so Spark's Python workers can load them)."""

from __future__ import annotations

import os
import time
from typing import Any

from topology import BasicBolt, Bolt, Spout, TopologyContext, Tuple


class CountingSpout(Spout):
    """Emits 0, 1, 2, ... with msg_ids; replays failures; records what was acked."""

    outputs = ["n"]

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit

    def open(self, conf: Any, context: TopologyContext) -> None:
        tasks = context.component_tasks()
        self.next = context.task_index
        self.step = len(tasks)
        self.replay: list[int] = []
        self.acked: set[int] = set()
        self.emitted = 0

    def next_tuple(self) -> None:
        if self.replay:
            n = self.replay.pop()
        elif self.limit is None or self.next < self.limit:
            n = self.next
            self.next += self.step
        else:
            return
        self.emitted += 1
        self.emit([n], msg_id=n)

    def ack(self, msg_id: Any) -> None:
        self.acked.add(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.replay.append(msg_id)

    def collect_results(self) -> dict[str, Any]:
        return {"acked": sorted(self.acked), "emitted": self.emitted, "pid": os.getpid()}


class PassBolt(BasicBolt):
    outputs = ["n"]

    def process(self, tup: Tuple) -> None:
        self.emit(tup.values)


class SinkBolt(Bolt):
    """Acks everything; remembers the values it saw."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.seen: list[int] = []

    def execute(self, tup: Tuple) -> None:
        self.seen.append(tup.values[0])
        self.ack(tup)

    def collect_results(self) -> list[int]:
        return list(self.seen)


class FailingPrepareBolt(Bolt):
    def prepare(self, conf: Any, context: TopologyContext) -> None:
        raise RuntimeError("cannot open the database")

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


class PacedCountingSpout(CountingSpout):
    """A CountingSpout that sleeps ``pause`` seconds after every ``every`` emits, so a
    bounded run lasts long enough to act on it mid-way (rebalance, kill a worker)."""

    def __init__(self, limit: int | None = None, every: int = 10, pause: float = 0.01) -> None:
        super().__init__(limit)
        self.every = every
        self.pause = pause

    def next_tuple(self) -> None:
        before = self.emitted
        super().next_tuple()
        if self.emitted != before and self.emitted % self.every == 0:
            time.sleep(self.pause)


class HugeErrorBolt(Bolt):
    """Raises an exception with a 1.2 MB message the first time it sees each multiple of
    100 (the replay then goes through); acks the rest."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.failed_once: set[int] = set()

    def execute(self, tup: Tuple) -> None:
        n = tup.values[0]
        if n % 100 == 0 and n not in self.failed_once:
            self.failed_once.add(n)
            raise ValueError("x" * 1_200_000 + " the end of a very long message")
        self.ack(tup)


class StuckBolt(Bolt):
    """Sleeps for ever (in small steps, so a kill can end it) once it sees value 50 — a
    bolt stuck in user code."""

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == 50:
            while True:
                time.sleep(0.05)
        self.ack(tup)


class CrashingBolt(Bolt):
    """Kills its own worker process on value 20: a worker that keeps dying."""

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == 20:
            os._exit(7)
        self.ack(tup)


class Booby:
    """A pickle that, once loaded, creates ``path``: what an attacker would put in
    ZooKeeper in place of a topology's code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (open, (self.path, "w"))
