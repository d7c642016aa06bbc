"""Version 2 of examples/rescalable_wordcount.py, restored from its savepoint (docs/STATE.md).

    sparkstorm kill wc --savepoint --dir /tmp/savepoints
    sparkstorm submit examples/rescalable_wordcount_v2.py:topology --name wc \\
        --from-savepoint /tmp/savepoints/savepoint-wc-...

What changed, and how the state follows:

* the counting bolt is renamed ``counter`` — ``uid="count"`` keeps it on the state that
  version 1 stored as ``count``;
* it keeps ``{"n": count, "longest": longest word so far}`` per word instead of a number, and
  reads version 1's numbers as it meets them (``upgrade``);
* ``check_state`` runs at submit on every restored entry: a value neither version wrote
  (say, a savepoint of another topology) is refused then, naming the component and the
  key, instead of failing inside ``execute`` later.
"""

from __future__ import annotations

from rescalable_wordcount import SentenceSpout, SplitBolt
from rescalable_wordcount import verify as verify_v1

from topology import StatefulBolt, TopologyBuilder


def upgrade(value):
    """A stored count of either version, as version 2's dict."""
    return value if isinstance(value, dict) else {"n": value, "longest": ""}


class CountBolt(StatefulBolt):
    def check_state(self, key, value):
        """Called at submit for every restored entry: refuse what neither version wrote."""
        if not isinstance(key, str) or not isinstance(upgrade(value).get("n"), int):
            raise ValueError(f"not a word count: {value!r}")

    def execute(self, tup):
        word = tup["word"]
        entry = upgrade(self.state.get(word, 0))
        longest = max(entry["longest"], word, key=len)
        self.state.put(word, {"n": entry["n"] + 1, "longest": longest})

    def collect_results(self):
        return dict(self.state.items())


builder = TopologyBuilder()
builder.set_spout("sentences", SentenceSpout(), parallelism=2)
builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
builder.set_bolt("counter", CountBolt(), parallelism=2, uid="count").fields_grouping(
    "split", ["word"]
)
topology = builder.create_topology()


def verify(results: dict) -> str:
    return verify_v1(results, counter="counter")
