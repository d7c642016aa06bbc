"""Word count: the classic Storm topology, with counts verified at the end.

    sparkstorm local examples/wordcount.py:topology --duration 10

With ``-c sparkstorm.metrics.port=9108`` its metrics are at http://127.0.0.1:9108/metrics
while it runs (``count`` registers a user gauge, ``sparkstorm_user_distinct_words``).

sentences (spout) --shuffle--> split (BasicBolt) --fields["word"]--> count (Bolt)

Sentence i is the ten words ``w{(7*i + 13*k) % 1000}`` for k in 0..9, so ``verify`` can
recompute exactly what every word's count must be from how many sentences each spout task
emitted.
"""

from __future__ import annotations

from collections import Counter

from topology import BasicBolt, Bolt, Spout, TopologyBuilder


def sentence(i: int) -> str:
    return " ".join(f"w{(i * 7 + k * 13) % 1000}" for k in range(10))


class SentenceSpout(Spout):
    """Emits sentence i, i + n, i + 2n, ... (n = number of spout tasks), each with msg_id i."""

    outputs = ["sentence"]

    def open(self, conf, context):
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self):
        self.emit([sentence(self.next)], msg_id=self.next)
        self.next += self.step

    def collect_results(self):
        return {"first": self.first, "step": self.step, "next": self.next}


class SplitBolt(BasicBolt):
    """Splits a sentence into words (BasicBolt: anchored and acked automatically)."""

    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])


class CountBolt(Bolt):
    """Keeps a running count per word and emits [word, count]."""

    outputs = ["word", "count"]

    def prepare(self, conf, context):
        self.counts = Counter()
        # a user metric: read when the worker reports its status, free on the hot path
        context.register_gauge("distinct_words", lambda: len(self.counts), "words seen")

    def execute(self, tup):
        word = tup["word"]
        self.counts[word] += 1
        self.emit([word, self.counts[word]], anchors=tup)
        self.ack(tup)

    def collect_results(self):
        return dict(self.counts)


builder = TopologyBuilder()
builder.set_spout("sentences", SentenceSpout(), parallelism=2)
builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
builder.set_bolt("count", CountBolt(), parallelism=2).fields_grouping("split", ["word"])
topology = builder.create_topology()


def verify(results: dict) -> str:
    """Check every word's count against the sentences the spouts emitted."""
    expected: Counter = Counter()
    sentences = 0
    for state in results["sentences"].values():
        for i in range(state["first"], state["next"], state["step"]):
            expected.update(sentence(i).split())
            sentences += 1
    counted: Counter = Counter()
    for task_counts in results["count"].values():
        overlap = set(counted) & set(task_counts)
        assert not overlap, f"words counted by two tasks: {sorted(overlap)[:5]}"
        counted.update(task_counts)
    assert counted == expected, (
        f"{sum((expected - counted).values())} words missing, "
        f"{sum((counted - expected).values())} extra"
    )
    return f"{sentences:,} sentences, {sum(counted.values()):,} words, every count exact"
