"""Components of the stateful integration tests (shipped to worker processes by module)."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.integration.helpers import wait_for
from topology import ReplayableSpout, Spout, StatefulBolt, TopologyBuilder, TopologyContext, Tuple


def word_list(n: int, seed: int = 7, vocabulary: int = 50) -> list[str]:
    rng = random.Random(seed)
    return [f"w{rng.randrange(vocabulary)}" for _ in range(n)]


class Pacer:
    """At most ``rate`` emits a second since it was made, ``most`` per ``next_tuple``."""

    def __init__(self, rate: float, most: int = 50) -> None:
        self.rate, self.most = rate, most
        self.started = time.monotonic()
        self.used = 0

    def allowed(self) -> int:
        """How many may be emitted now (each one counted as used)."""
        due = int((time.monotonic() - self.started) * self.rate) - self.used
        n = max(0, min(due, self.most))
        self.used += n
        return n


class IndexedWords(ReplayableSpout):
    """Emits ``words`` (task ``i`` of ``n`` every ``n``-th from ``i``) with msg id = index;
    the next index is its position.  At most ``rate`` words per second since ``open`` (so a
    kill lands mid-run)."""

    outputs = ["word"]

    def __init__(self, words: list[str], rate: float = 10_000.0) -> None:
        self.words = words
        self.rate = rate

    def open(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.stride = len(context.component_tasks(context.component_id))
        self.next = context.task_index
        self.acked = 0
        self.pacer = Pacer(self.rate)

    def next_tuple(self) -> None:
        for _ in range(self.pacer.allowed()):
            if self.next >= len(self.words):
                return
            self.emit([self.words[self.next]], msg_id=self.next)
            self.next += self.stride

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = int(position)

    def ack(self, msg_id: Any) -> None:
        self.acked += 1

    def collect_results(self) -> dict[str, Any]:
        return {"acked": self.acked, "next": self.next, "done": self.next >= len(self.words)}


class ReplayOnFailWords(Spout):
    """The ordinary Storm spout: keeps what it emitted until acked, emits it again on
    ``fail`` (same values, same msg id).  No positions.  At most ``rate`` words a second."""

    outputs = ["word"]

    def __init__(self, words: list[str], rate: float = 10_000.0) -> None:
        self.words = words
        self.rate = rate

    def open(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.stride = len(context.component_tasks(context.component_id))
        self.next = context.task_index
        self.pending: dict[int, str] = {}
        self.replay: list[int] = []
        self.acked = 0
        self.failed = 0
        self.pacer = Pacer(self.rate)

    def next_tuple(self) -> None:
        for _ in range(self.pacer.allowed()):
            if self.replay:
                i = self.replay.pop()
            elif self.next < len(self.words):
                i, self.next = self.next, self.next + self.stride
            else:
                return
            self.pending[i] = self.words[i]
            self.emit([self.words[i]], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.pending.pop(msg_id, None)
        self.acked += 1

    def fail(self, msg_id: Any) -> None:
        self.failed += 1
        self.replay.append(msg_id)

    def collect_results(self) -> dict[str, Any]:
        done = self.next >= len(self.words) and not self.pending and not self.replay
        return {"acked": self.acked, "failed": self.failed, "done": done}


class CountWords(StatefulBolt):
    """Counts words in its key-value state; emits nothing."""

    def execute(self, tup: Tuple) -> None:
        word = tup["word"]
        self.state.put(word, self.state.get(word, 0) + 1)

    def collect_results(self) -> dict[str, int]:
        return dict(self.state.items())


class MergeWords(CountWords):
    """Counts words by ``state.merge(word, 1)``: no read (addition, the default)."""

    def execute(self, tup: Tuple) -> None:
        self.state.merge(tup["word"], 1)


class HookedSink(StatefulBolt):
    """Counts tuples in its state and records its checkpoint hooks: each ``pre_checkpoint``
    stages the checkpoint's id in the state, each ``checkpoint_complete`` is listed with
    the id staged then (a two-phase-commit sink's transaction)."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.prepared: list[int] = []
        self.completed: list[list[int]] = []

    def execute(self, tup: Tuple) -> None:
        self.state.put("seen", self.state.get("seen", 0) + 1)

    def pre_checkpoint(self, checkpoint: int) -> None:
        self.state.put("staged", checkpoint)
        self.prepared.append(checkpoint)

    def checkpoint_complete(self, checkpoint: int) -> None:
        self.completed.append([checkpoint, self.state.get("staged", 0)])

    def collect_results(self) -> dict[str, Any]:
        return {"prepared": self.prepared, "completed": self.completed}


def hooked_topology(spout: Spout, sinks: int = 2) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", spout, 1)
    builder.set_bolt("count", CountWords(), 2).fields_grouping("words", ["word"])
    builder.set_bolt("sink", HookedSink(), sinks).shuffle_grouping("words")
    return builder.create_topology()


def state_conf(folder: Any, workers: int, interval_ms: int) -> dict[str, Any]:
    """Conf of a checkpointed topology keeping its state in ``folder``."""
    return {
        "topology.workers": workers,
        "topology.state.dir": str(folder),
        "topology.state.checkpoint.interval.ms": interval_ms,
    }


def stateful_word_count(spout: Spout, counters: int = 3, merge: bool = False) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", spout, 1)
    bolt = MergeWords() if merge else CountWords()
    builder.set_bolt("count", bolt, counters).fields_grouping("words", ["word"])
    return builder.create_topology()


def finished(results: dict[str, dict[int, Any]]) -> bool:
    """Every spout task read its whole input (and, without positions, had it all acked)."""
    spouts = results.get("words", {})
    return bool(spouts) and all(r["done"] for r in spouts.values())


def merged_counts(results: dict[str, dict[int, Any]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for counts in results.get("count", {}).values():
        total.update(counts)
    return total


def settled_counts(
    results: Callable[[], dict[str, dict[int, Any]]], timeout: float, pause: float
) -> Counter[str]:
    """The counts once every spout task finished and they stopped changing over ``pause``
    (longer than a checkpoint interval: the last commit released what it held)."""
    wait_for(results, finished, timeout, interval=0.5)
    last: Counter[str] | None = None
    while True:
        time.sleep(pause)
        counts = merged_counts(results())
        if counts == last:
            return counts
        last = counts
