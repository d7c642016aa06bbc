"""The word count written the way README teaches it (issue 30): what users run.

``Split`` and ``Count`` are :class:`~topology.BasicBolt`s (anchored and acked for them),
the spout emits every sentence with a msg id, ``count`` gets a tick tuple every second,
and the topology conf is the default one (only ``topology.workers``, and for the unacked
figure ``topology.acker.executors: 0``, are set) — no ``topology.max.spout.pending``, no
batching options.  The workload is the benchmark's (:func:`workload.sentence`), so its
words/s compare with the tuned ``wc-local`` cases and the pyzmq pipeline.

``rate`` paces the spouts (sentences/s per task) and records the *complete latency* of
every tree — emit to the spout's ``ack``, what Storm's UI calls it — after a warm-up.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import workload  # noqa: E402
from workload import sentence  # noqa: E402

from topology import BasicBolt, Bolt, Spout, TopologyBuilder  # noqa: E402

#: Seconds between the count's tick tuples (README's "tick tuples on").
TICK_SECS = 1


class Sentences(workload.Sentences):
    """Sentence i, i + n, ... (n tasks), one per call, each with msg id i; ``rate``
    sentences/s per task when set (then complete latencies are recorded: ``ack`` and
    ``collect_results`` are :class:`workload.Sentences`')."""

    outputs = ["sentence"]

    def __init__(self, rate: float | None = None) -> None:
        super().__init__(True, rate)

    def next_tuple(self) -> None:
        if self.rate is not None:
            if (time.time() - self.started) * self.rate <= self.sent:
                return
            self.emitted_at[self.next] = time.time()
        self.emit([sentence(self.next)], msg_id=self.next)
        self.next += self.step
        self.sent += 1

    def fail(self, msg_id: Any) -> None:
        self.emitted_at.pop(msg_id, None)


class Split(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        for word in tup["sentence"].split():
            self.emit([word])


class Count(BasicBolt):
    """README's count as a BasicBolt: emits ``[word, count]``; a tick notes how many
    distinct words it has seen."""

    outputs = ["word", "count"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: Counter[str] = Counter()
        self.ticks = 0

    def process(self, tup: Any) -> None:
        if tup.is_tick():
            self.ticks += 1
            return
        word = tup["word"]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])

    def collect_results(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "ticks": self.ticks}


class BatchCount(Bolt):
    """The count with ``execute_batch`` (the A/B of issue 30): one ``Counter.update`` per
    received group, one ``[word, count]`` per distinct word anchored to its tuples, every
    tuple acked."""

    outputs = ["word", "count"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: Counter[str] = Counter()
        self.ticks = 0

    def execute_batch(self, tuples: list[Any]) -> None:
        by_word: dict[str, list[Any]] = {}
        for tup in tuples:
            if tup.is_tick():
                self.ticks += 1
            else:
                by_word.setdefault(tup["word"], []).append(tup)
        counts = self.counts
        for word, tups in by_word.items():
            counts[word] += len(tups)
            self.emit([word, counts[word]], anchors=tups)
        for tup in tuples:
            self.ack(tup)

    def collect_results(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "ticks": self.ticks}


#: One sentence in this many is poison (``i % POISON_EVERY == POISON_EVERY - 1``).
POISON_EVERY = 1000


def is_poison(i: int) -> bool:
    return i % POISON_EVERY == POISON_EVERY - 1


class PoisonSentences(Sentences):
    """:class:`Sentences`, but sentence i is ``"poison <i>"`` when :func:`is_poison`."""

    def next_tuple(self) -> None:
        i = self.next
        if not is_poison(i):
            super().next_tuple()
            return
        self.emit([f"poison {i}"], msg_id=i)
        self.next += self.step
        self.sent += 1


class PoisonSplit(BasicBolt):
    """:class:`Split` that raises on a poison sentence, every time."""

    outputs = ["word"]

    def process(self, tup: Any) -> None:
        sentence = tup["sentence"]
        if sentence.startswith("poison"):
            raise ValueError(f"cannot split {sentence!r}")
        for word in sentence.split():
            self.emit([word])


class DeadLetters(Bolt):
    """Keeps the sentence of every dead letter (README's ``.dead_letters()`` bolt)."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.sentences: list[str] = []

    def execute(self, tup: Any) -> None:
        self.sentences.append(tup["values"][0])
        self.ack(tup)

    def collect_results(self) -> list[str]:
        return self.sentences


def readme_word_count(
    workers: int,
    rate: float | None = None,
    spout: Spout | None = None,
    batch: bool = False,
    poison: bool = False,
) -> Any:
    """The README-style topology, one task of each component per worker (``spout``: another
    sentences spout in place of :class:`Sentences` paced at ``rate``; ``batch``: the count
    is :class:`BatchCount`; ``poison``: one sentence in :data:`POISON_EVERY` makes ``split``
    raise, and a ``dead-letters`` bolt takes every component's dead letters)."""
    builder = TopologyBuilder()
    sentences = spout or (PoisonSentences(rate) if poison else Sentences(rate))
    builder.set_spout("sentences", sentences, parallelism=workers)
    split = PoisonSplit() if poison else Split()
    builder.set_bolt("split", split, parallelism=workers).shuffle_grouping("sentences")
    count = BatchCount() if batch else Count()
    builder.set_bolt("count", count, parallelism=workers).fields_grouping(
        "split", ["word"]
    ).add_configuration("topology.tick.tuple.freq.secs", TICK_SECS)
    if poison:
        builder.set_bolt("dead-letters", DeadLetters()).dead_letters()
    return builder.create_topology()


def readme_conf(workers: int, acked: bool) -> dict[str, Any]:
    """The default config but for the workers (and acking off for the unacked figure)."""
    conf: dict[str, Any] = {"topology.workers": workers}
    if not acked:
        conf["topology.acker.executors"] = 0
    return conf
