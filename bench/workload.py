"""The workload of every sparkstorm benchmark: the word count topology and its components.

Sentence *i* is the ten words ``w{(7i + 13k) mod 1000}``, k = 0..9; spout (``Sentences``)
→ ``Split`` (BasicBolt, shuffle) → ``Count`` (Bolt, fields on ``word``), one task of each
per worker; every tuple carries its emit time for the latency figures.  ``bench/run.py``
measures it; ``bench/hotpath.py`` and ``bench/instructions.py`` profile it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from topology import (  # noqa: E402  (a checkout that is not pip-installed works too)
    BasicBolt,
    Bolt,
    ReplayableSpout,
    Spout,
    StatefulBolt,
    TopologyBuilder,
)


def sentence(i: int) -> str:
    return " ".join([f"w{(i * 7 + k * 13) % 1000}" for k in range(10)])


# -- the topology ---------------------------------------------------------------------------


class Sentences(Spout):
    """Sentence i, i + n, ... (n tasks); ``rate`` sentences/s per task when set (paced:
    the emit time travels in the tuple for latency)."""

    outputs = ["sentence", "at"]

    def __init__(self, acked: bool, rate: float | None = None) -> None:
        self.acked, self.rate = acked, rate

    def open(self, conf, context):
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())
        self.started = time.time()
        self.sent = 0
        self.emitted_at: dict[int, float] = {}
        self.complete_ms: list[float] = []

    def next_tuple(self):
        burst = 10
        if self.rate is not None:
            burst = min(10, int((time.time() - self.started) * self.rate) - self.sent)
        for _ in range(burst):
            i = self.next
            self.next += self.step
            self.sent += 1
            now = time.time()
            if self.rate is not None and self.acked:
                self.emitted_at[i] = now
            self.emit([sentence(i), now], msg_id=i if self.acked else None)

    def ack(self, msg_id):
        at = self.emitted_at.pop(msg_id, None)
        if at is not None and at - self.started > WARMUP_SECS:
            self.complete_ms.append((time.time() - at) * 1000)

    def collect_results(self):
        return {
            "first": self.first,
            "step": self.step,
            "next": self.next,
            "complete_ms": percentiles(self.complete_ms),
        }


class Split(BasicBolt):
    outputs = ["word", "at"]

    def process(self, tup):
        at = tup.values[1]
        for word in tup.values[0].split():
            self.emit([word, at])


class Count(Bolt):
    """Counts words; records emit-to-here latencies unless it is the deliberately slow
    bolt of the memory case (whose figure must be the runtime's memory, not this list)."""

    def __init__(self, slow_secs: float = 0.0) -> None:
        self.slow_secs = slow_secs

    def prepare(self, conf, context):
        self.counts: dict[str, int] = {}
        self.latency_ms: list[float] = []
        self.started = time.time()

    def execute(self, tup):
        word, at = tup.values
        self.counts[word] = self.counts.get(word, 0) + 1
        if not self.slow_secs and at - self.started > WARMUP_SECS and len(self.latency_ms) < 2e6:
            self.latency_ms.append((time.time() - at) * 1000)
        if self.slow_secs:
            time.sleep(self.slow_secs)
        self.ack(tup)

    def collect_results(self):
        return {"counts": self.counts, "latency_ms": percentiles(self.latency_ms)}


class ReplayableSentences(ReplayableSpout):
    outputs = ["sentence", "at"]

    def open(self, conf, context):
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self):
        for _ in range(10):
            self.emit([sentence(self.next), 0.0])
            self.next += self.step

    def position(self):
        return self.next

    def seek(self, position):
        self.next = position

    def collect_results(self):
        return {"first": self.first, "step": self.step, "next": self.next}


class StatefulCount(StatefulBolt):
    def execute(self, tup):
        word = tup.values[0]
        self.state.put(word, self.state.get(word, 0) + 1)

    def collect_results(self):
        return {"counts": dict(self.state.items())}


#: Seconds from a task's start before latencies are recorded.
WARMUP_SECS = 3.0


def word_count(workers: int, spout: Spout, count: Bolt) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("sentences", spout, parallelism=workers)
    builder.set_bolt("split", Split(), parallelism=workers).shuffle_grouping("sentences")
    builder.set_bolt("count", count, parallelism=workers).fields_grouping("split", ["word"])
    return builder.create_topology()


def percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"n": len(ordered), "p50": at(0.5), "p99": at(0.99), "p999": at(0.999)}
