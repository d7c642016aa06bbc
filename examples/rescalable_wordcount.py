"""A word count whose state survives upgrades and rescales (docs/STATE.md).

    sparkstorm submit examples/rescalable_wordcount.py:topology --name wc
    sparkstorm rebalance wc -e count=4 -e sentences=3     # more tasks, keys move with state
    sparkstorm savepoint wc --dir /tmp/savepoints          # prints the savepoint's path
    sparkstorm kill wc --savepoint --dir /tmp/savepoints   # one more, then stop
    sparkstorm submit examples/rescalable_wordcount_v2.py:topology --name wc \\
        --from-savepoint /tmp/savepoints/savepoint-wc-...  # new code, same counts

sentences (ReplayableSpout over 8 partitions) --shuffle--> split --fields["word"]--> count
(StatefulBolt)

The spout reads ``PARTITIONS`` numbered partitions of sentences; its position is
``{partition: next sentence}`` for the partitions its task reads, so a rescale hands each
partition, with its position, to whichever new task reads it.  The counts are keyed state:
a rescale moves whole key groups to the new tasks through the checkpoint.  The spout emits
at most ``sentences.per.sec`` sentences a second per task (conf; default 200), so that
there is time to rebalance while tuples flow, and stops after ``sentences.per.partition``
(default 5,000) per partition.  ``verify`` checks every word counted exactly once for the
sentences read.
"""

from __future__ import annotations

import time
from collections import Counter

from topology import BasicBolt, ReplayableSpout, StatefulBolt, TopologyBuilder

PARTITIONS = 8


def sentence(i: int) -> str:
    return " ".join(f"w{(i * 7 + k * 13) % 1000}" for k in range(10))


def partition_sentences(partition: int, count: int) -> range:
    """The sentence numbers of ``partition``: partition, partition + 8, ..."""
    return range(partition, count * PARTITIONS, PARTITIONS)


class SentenceSpout(ReplayableSpout):
    """Reads the partitions whose number falls to its task, at a bounded rate."""

    outputs = ["sentence"]

    def open(self, conf, context):
        tasks, index = len(context.component_tasks()), context.task_index
        self.next = {str(p): 0 for p in range(PARTITIONS) if p % tasks == index}
        self.rate = float(conf.get("sentences.per.sec", 200))
        self.limit = int(conf.get("sentences.per.partition", 5_000))
        self.started, self.emitted = time.monotonic(), 0

    def next_tuple(self):
        allowed = (time.monotonic() - self.started) * self.rate
        for partition, at in self.next.items():
            if self.emitted >= allowed:
                return
            if at < self.limit:
                self.emit([sentence(int(partition) + at * PARTITIONS)])
                self.next[partition] = at + 1
                self.emitted += 1

    def position(self):
        return dict(self.next)

    def seek(self, position):  # the default rescale_position merges the old tasks' dicts
        for partition, at in position.items():
            if partition in self.next:
                self.next[partition] = at

    def collect_results(self):
        return dict(self.next)


class SplitBolt(BasicBolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])


class CountBolt(StatefulBolt):
    """A count per word: the word is the state key, as in the fields grouping."""

    def execute(self, tup):
        word = tup["word"]
        self.state.put(word, self.state.get(word, 0) + 1)

    def collect_results(self):
        return dict(self.state.items())


builder = TopologyBuilder()
builder.set_spout("sentences", SentenceSpout(), parallelism=2)
builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
builder.set_bolt("count", CountBolt(), parallelism=2).fields_grouping("split", ["word"])
topology = builder.create_topology()


def expected_counts(positions: dict) -> tuple[Counter, int]:
    """The word counts of the sentences read up to ``positions`` ({partition: next})."""
    expected: Counter = Counter()
    for partition, at in positions.items():
        for i in partition_sentences(int(partition), at):
            expected.update(sentence(i).split())
    return expected, sum(positions.values())


def verify(results: dict, counter: str = "count") -> str:
    """Every word's count equals its occurrences in the sentences the spouts read."""
    positions: dict = {}
    for task_positions in results["sentences"].values():
        positions.update(task_positions)
    expected, sentences = expected_counts(positions)
    counted: Counter = Counter()
    for task_counts in results[counter].values():
        counted.update({w: c if isinstance(c, int) else c["n"] for w, c in task_counts.items()})
    assert counted == expected, (
        f"{sum((expected - counted).values())} words lost, "
        f"{sum((counted - expected).values())} counted twice"
    )
    return f"{sentences:,} sentences, {sum(counted.values()):,} words, each counted exactly once"
