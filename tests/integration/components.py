"""Spouts and bolts shared by the integration tests.

They live in an importable module (not in test functions) so that the worker processes,
which receive ``sys.path`` from the test process, can unpickle them by reference.

Every recording component exposes ``collect_results()`` returning plain msgpack-able data,
read with ``LocalCluster.results(name)`` or ``CompletedTopology.results``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from topology import BasicBolt, Bolt, Spout, Stream, TopologyContext, Tuple


class Split(BasicBolt):
    """sentence -> one tuple per word."""

    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup["sentence"].split():
            self.emit([word])


class Count(BasicBolt):
    """word -> [word, running count of that word in this task]."""

    outputs = ["word", "count"]

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.counts: dict[str, int] = {}

    def process(self, tup: Tuple) -> None:
        word = tup["word"]
        count = self.counts.get(word, 0) + 1
        self.counts[word] = count
        self.emit([word, count])


class KeyTask(BasicBolt):
    """word -> [word, this task's id, the task the word came from]."""

    outputs = ["word", "task", "source_task"]

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.task_id = context.task_id
        self.worker = context.worker_index

    def process(self, tup: Tuple) -> None:
        self.emit([tup["word"], self.task_id, tup.source_task])

    def collect_results(self) -> dict[str, Any]:
        return {"task": self.task_id, "worker": self.worker}


class Recorder(Bolt):
    """Records every tuple it executes (and counts tick tuples) with where it ran."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.task_id = context.task_id
        self.worker = context.worker_index
        self.worker_tasks = list(context.worker_tasks)
        self.seen: list[list[Any]] = []
        self.ticks: list[list[Any]] = []

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.ticks.append([tup.source_component, tup.stream, list(tup.values)])
        else:
            self.seen.append([tup.source_component, tup.source_task, tup.stream, tup.values])
        self.ack(tup)

    def collect_results(self) -> dict[str, Any]:
        return {
            "task": self.task_id,
            "worker": self.worker,
            "worker_tasks": self.worker_tasks,
            "seen": self.seen,
            "ticks": self.ticks,
        }


class Director(BasicBolt):
    """Sends ``n`` to ``sink`` task ``tasks[n % len(tasks)]`` with emit_direct, and ``n`` on
    the default stream; records what both emits returned."""

    outputs = {"direct": Stream(["n", "target"], direct=True), "default": ["n"]}

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.sink_tasks = context.component_tasks("sink")
        self.returned: list[list[Any]] = []

    def process(self, tup: Tuple) -> None:
        n = tup["n"]
        target = self.sink_tasks[n % len(self.sink_tasks)]
        direct = self.emit_direct(target, [n, target], stream="direct")
        plain = self.emit([n])
        self.returned.append([n, target, list(direct), list(plain)])

    def collect_results(self) -> dict[str, Any]:
        return {"sink_tasks": self.sink_tasks, "returned": self.returned}


class EvenOdd(BasicBolt):
    """Even numbers on ``default`` as [n]; odd ones on ``errors`` as [n, reason]."""

    outputs = {"default": ["n"], "errors": ["n", "reason"]}

    def process(self, tup: Tuple) -> None:
        n = tup["n"]
        if n % 2 == 0:
            self.emit([n])
        else:
            self.emit([n, f"{n} is odd"], stream="errors")


class PositionalStreamEmitter(BasicBolt):
    """Uses the documented positional form ``emit(values, anchors, stream)``."""

    outputs = {"out": ["n"]}

    def process(self, tup: Tuple) -> None:
        self.emit([tup["n"]], None, "out")


class SetEmitter(BasicBolt):
    """Emits a set (which msgpack cannot encode) for the numbers in ``bad``."""

    outputs = {"numbers": ["value"]}

    def __init__(self, bad: list[int]) -> None:
        self.bad = frozenset(bad)

    def process(self, tup: Tuple) -> None:
        n = tup["n"]
        self.emit([{n} if n in self.bad else n], stream="numbers")


class Bloater(BasicBolt):
    """Emits ``size`` bytes for the numbers in ``bad`` (a tuple too big for one frame when
    ``topology.transfer.max.frame.bytes`` is smaller), the number itself for the others."""

    outputs = ["value"]

    def __init__(self, bad: list[int], size: int) -> None:
        self.bad = frozenset(bad)
        self.size = size

    def process(self, tup: Tuple) -> None:
        n = tup["n"]
        self.emit(["x" * self.size if n in self.bad else n])


class Raiser(BasicBolt):
    """Raises ``ValueError`` for the numbers in ``bad``; passes the others on."""

    outputs = ["n"]

    def __init__(self, bad: list[int]) -> None:
        self.bad = frozenset(bad)

    def process(self, tup: Tuple) -> None:
        n = tup["n"]
        if n in self.bad:
            raise ValueError(f"cannot handle {n}")
        self.emit([n])


class EndlessSpout(Spout):
    """Emits [0, payload], [1, payload], ... (untracked) as fast as it is allowed to."""

    outputs = ["n", "payload"]

    def __init__(self, payload_bytes: int = 0) -> None:
        self.payload_bytes = payload_bytes

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.n = 0
        self.payload = b"x" * self.payload_bytes

    def next_tuple(self) -> None:
        self.emit([self.n, self.payload])
        self.n += 1

    def collect_results(self) -> dict[str, Any]:
        return {"emitted": self.n}


class SlowBolt(Bolt):
    """Sleeps ``delay`` seconds per tuple; checks ``n`` arrives as 0, 1, 2, ... (one
    upstream task), so a dropped, duplicated or reordered tuple shows."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.executed = 0
        self.out_of_order: list[list[int]] = []  # [expected, got], first few only

    def execute(self, tup: Tuple) -> None:
        time.sleep(self.delay)
        if tup["n"] != self.executed and len(self.out_of_order) < 10:
            self.out_of_order.append([self.executed, tup["n"]])
        self.executed += 1

    def collect_results(self) -> dict[str, Any]:
        return {"executed": self.executed, "out_of_order": self.out_of_order}


class PidFile(Bolt):
    """Writes its worker's pid to ``directory/<task id>.pid`` in prepare."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        Path(self.directory, f"{context.task_id}.pid").write_text(str(os.getpid()))

    def execute(self, tup: Tuple) -> None:
        pass


class FailingPrepare(Bolt):
    """prepare() raises a RuntimeError with a recognisable text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        raise RuntimeError(f"{self.text} (pid {os.getpid()})")

    def execute(self, tup: Tuple) -> None:
        pass
