"""Word count with a count bolt that takes a group of tuples at a time (``execute_batch``).

    sparkstorm local examples/batch_count.py:topology --duration 5

The topology of examples/wordcount.py (same spout, split bolt and exact ``verify``), but
``count`` overrides ``Bolt.execute_batch``: the runtime hands it every tuple of one
received group (one split task's words, in order) in one call instead of ``execute`` per
tuple.  It counts the batch with one ``Counter.update``, emits one ``[word, count]`` per
distinct word, anchored to that word's tuples of the batch, and acks every tuple.

sentences (spout) --shuffle--> split (BasicBolt) --fields["word"]--> count (Bolt, batches)
"""

from __future__ import annotations

from collections import Counter

from wordcount import SentenceSpout, SplitBolt, verify  # noqa: F401 - verify: the exact counts

from topology import Bolt, TopologyBuilder


class BatchCountBolt(Bolt):
    """Keeps a running count per word, a batch of tuples at a time."""

    outputs = ["word", "count"]

    def prepare(self, conf, context):
        self.counts = Counter()

    def execute_batch(self, tuples):
        by_word = {}
        for tup in tuples:
            by_word.setdefault(tup["word"], []).append(tup)
        self.counts.update({word: len(tups) for word, tups in by_word.items()})
        for word, tups in by_word.items():
            self.emit([word, self.counts[word]], anchors=tups)
        for tup in tuples:
            self.ack(tup)

    def collect_results(self):
        return dict(self.counts)


builder = TopologyBuilder()
builder.set_spout("sentences", SentenceSpout(), parallelism=2)
builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
builder.set_bolt("count", BatchCountBolt(), parallelism=2).fields_grouping("split", ["word"])
topology = builder.create_topology()
