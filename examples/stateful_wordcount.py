"""Exactly-once word count: counts in checkpointed state survive a worker killed with -9.

    sparkstorm local examples/stateful_wordcount.py:topology --workers 2 --kill-worker-at 5

sentences (ReplayableSpout) --shuffle--> split (BasicBolt) --fields["word"]--> count
(StatefulBolt)

The counts live in ``self.state``; every second (``topology.state.checkpoint.interval.ms``)
a checkpoint stores them, together with
the spouts' positions (the index of the next sentence).  ``--kill-worker-at 5`` kills a
worker with SIGKILL five seconds into the run: the counts it held in memory are gone, the
worker is relaunched, and every task — the surviving ones too — goes back to the last
complete checkpoint while the spouts re-read from its positions.  ``verify`` then checks
that every word was counted exactly once for the sentences the spouts read: not one lost,
not one twice (the plain ``wordcount.py`` would lose the killed worker's counts).
"""

from __future__ import annotations

from collections import Counter

from topology import BasicBolt, ReplayableSpout, StatefulBolt, TopologyBuilder


def sentence(i: int) -> str:
    return " ".join(f"w{(i * 7 + k * 13) % 1000}" for k in range(10))


class SentenceSpout(ReplayableSpout):
    """Sentence i, i + n, i + 2n, ... (n spout tasks); its position is the next i."""

    outputs = ["sentence"]

    def open(self, conf, context):
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self):
        for _ in range(10):
            self.emit([sentence(self.next)])
            self.next += self.step

    def position(self):
        return self.next

    def seek(self, position):
        self.next = position

    def collect_results(self):
        return {"first": self.first, "step": self.step, "next": self.next}


class SplitBolt(BasicBolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])


class CountBolt(StatefulBolt):
    """A count per word in checkpointed key-value state (the word is the key, as in the
    fields grouping, so the state follows the words when tasks move)."""

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


def verify(results: dict) -> str:
    """Every word's count equals its occurrences in the sentences the spouts read."""
    expected: Counter = Counter()
    sentences = 0
    for spout in results["sentences"].values():
        for i in range(spout["first"], spout["next"], spout["step"]):
            expected.update(sentence(i).split())
            sentences += 1
    counted: Counter = Counter()
    for task_counts in results["count"].values():
        counted.update(task_counts)
    assert counted == expected, (
        f"{sum((expected - counted).values())} words lost, "
        f"{sum((counted - expected).values())} counted twice"
    )
    return f"{sentences:,} sentences, {sum(counted.values()):,} words, each counted exactly once"
