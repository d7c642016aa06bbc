"""Components of the savepoint integration tests (shipped to worker processes by module):
version 2 of the stateful word count, whose bolt class changed."""

from __future__ import annotations

from typing import Any

from topology import Spout, StatefulBolt, TopologyBuilder, Tuple


class CountWordsV2(StatefulBolt):
    """The word count's next version: another class, other output fields in another order
    (``count, word``), the same state (a count per word) under the same uid."""

    outputs = ["count", "word"]

    def execute(self, tup: Tuple) -> None:
        word = tup["word"]
        count = self.state.get(word, 0) + 1
        self.state.put(word, count)
        self.emit([count * 1, word])

    def check_state(self, key: Any, value: Any) -> None:
        if not isinstance(key, str) or not isinstance(value, int):
            raise TypeError(f"a count per word, got {key!r}: {value!r}")

    def collect_results(self) -> dict[str, int]:
        return dict(self.state.items())


def upgraded_word_count(
    spout: Spout, bolt_id: str = "counter", uid: str | None = "count", tasks: int = 2
) -> Any:
    """Version 2: the counting bolt renamed to ``bolt_id`` (its state found by ``uid``), as
    ``tasks`` tasks."""
    builder = TopologyBuilder()
    builder.set_spout("words", spout, 1)
    builder.set_bolt(bolt_id, CountWordsV2(), tasks, uid=uid).fields_grouping("words", ["word"])
    return builder.create_topology()
