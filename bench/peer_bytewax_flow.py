"""The bytewax word count of ``bench/peer_cases.py``, importable by ``python -m bytewax.run``.

``build(folder, batch)`` is the dataflow: a ``DynamicSource`` whose partition on worker *p*
of *P* generates sentence *i* = p, p + P, p + 2P, ... (``batch`` sentences per
``next_batch``), ``flat_map`` splitting them into words, ``key_on`` the word and a running
count per word in ``stateful_map`` (bytewax exchanges each word to the worker owning its key,
like a fields grouping), and a sink that discards the ``(word, count)`` pairs but counts
them.  Each worker's sink adds ``len(batch)`` to a local int and publishes it about every
0.2 s in ``folder/count-<p>`` (written aside, then renamed); the source stops when
``folder/stop`` exists and each worker then writes ``folder/final-<p>``: its sentences
generated and words counted.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import DynamicSource, StatelessSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workload import sentence  # noqa: E402

#: Seconds between two progress files of a worker.
FLUSH_SECS = 0.2
#: Seconds between two looks for the stop file.
STOP_CHECK_SECS = 0.05


def _publish(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as out:
        out.write(text)
    os.replace(path + ".tmp", path)


class _Sentences(StatelessSourcePartition[str]):
    def __init__(self, folder: str, index: int, count: int, batch: int) -> None:
        self.folder, self.index, self.batch = folder, index, batch
        self.next, self.step = index, count
        self.checked = time.monotonic()

    def next_batch(self) -> list[str]:
        now = time.monotonic()
        if now - self.checked >= STOP_CHECK_SECS:
            self.checked = now
            if os.path.exists(os.path.join(self.folder, "stop")):
                raise StopIteration
        i, step = self.next, self.step
        self.next = i + step * self.batch
        return [sentence(j) for j in range(i, self.next, step)]

    def close(self) -> None:
        sent = (self.next - self.index) // self.step
        _publish(os.path.join(self.folder, f"sent-{self.index}"), str(sent))


class _Source(DynamicSource[str]):
    def __init__(self, folder: str, batch: int) -> None:
        self.folder, self.batch = folder, batch

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Sentences:
        return _Sentences(self.folder, worker_index, worker_count, self.batch)


class _Counted(StatelessSinkPartition[Any]):
    def __init__(self, folder: str, index: int) -> None:
        self.path = os.path.join(folder, f"count-{index}")
        self.final = os.path.join(folder, f"final-{index}")
        self.words = 0
        self.flush_at = time.monotonic() + FLUSH_SECS
        _publish(self.path, "0")

    def write_batch(self, items: list[Any]) -> None:
        self.words += len(items)
        now = time.monotonic()
        if now >= self.flush_at:
            self.flush_at = now + FLUSH_SECS
            _publish(self.path, str(self.words))

    def close(self) -> None:
        _publish(self.path, str(self.words))
        _publish(self.final, str(self.words))


class _Sink(DynamicSink[Any]):
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Counted:
        return _Counted(self.folder, worker_index)


def _count(running: int | None, _word: str) -> tuple[int, int]:
    running = (running or 0) + 1
    return running, running


def build(folder: str, batch: int = 1000) -> Dataflow:
    flow = Dataflow("peer_word_count")
    sentences = op.input("sentences", flow, _Source(folder, batch))
    words = op.flat_map("split", sentences, str.split)
    keyed = op.key_on("word", words, lambda word: word)
    counts = op.stateful_map("count", keyed, _count)
    op.output("discard", counts, _Sink(folder))
    return flow
