"""Bolts for the testing-kit tests (importable, so worker processes can unpickle them)."""

from __future__ import annotations

from typing import Any

from topology import BasicBolt, Bolt, TopologyContext, Tuple


class TickCounter(Bolt):
    """Counts tick tuples; never acks anything else (its trees time out)."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.ticks = 0

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.ticks += 1

    def collect_results(self) -> int:
        return self.ticks


class Shout(BasicBolt):
    """word -> the word upper-cased (default stream) and its length ("lengths" stream)."""

    outputs = {"default": ["upper"], "lengths": ["word", "length"]}

    def process(self, tup: Tuple) -> None:
        word = tup["word"]
        self.emit([word.upper()])
        self.emit([word, len(word)], stream="lengths")
