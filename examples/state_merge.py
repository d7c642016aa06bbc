"""Updates without reads: ``state.merge`` counts words and finds where each first
appears, on the disk-backed ``lmdb`` state, exactly once through a kill.

    sparkstorm local examples/state_merge.py:topology --workers 2 --kill-worker-at 5 \\
        -c topology.state.backend=lmdb

sentences (ReplayableSpout) --shuffle--> split (BasicBolt) --fields["word"]--> count,
first (StatefulBolt)

``count`` merges 1 into each word's count (addition, the default ``state_merge``);
``first`` declares ``state_merge = min`` and merges the sentence's number, so a word's
value is the first sentence it appeared in.  Neither reads its state: with ``lmdb`` a
merge into a word the cache does not hold is kept as a delta and combined with the stored
value at the next eviction or checkpoint, without a read per tuple.  ``verify`` checks
both against the sentences the spouts read.
"""

from __future__ import annotations

from collections import Counter

from topology import BasicBolt, ReplayableSpout, StatefulBolt, TopologyBuilder


def sentence(i: int) -> str:
    return " ".join(f"w{(i * 7 + k * 13) % 5000}" for k in range(10))


class SentenceSpout(ReplayableSpout):
    """Sentence i, i + n, i + 2n, ... (n spout tasks) with its number; its position is
    the next i."""

    outputs = ["number", "sentence"]

    def open(self, conf, context):
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self):
        for _ in range(10):
            self.emit([self.next, sentence(self.next)])
            self.next += self.step

    def position(self):
        return self.next

    def seek(self, position):
        self.next = position

    def collect_results(self):
        return {"first": self.first, "step": self.step, "next": self.next}


class SplitBolt(BasicBolt):
    outputs = ["word", "number"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word, tup["number"]])


class CountBolt(StatefulBolt):
    """A count per word by merges of 1 (no read)."""

    def execute(self, tup):
        self.state.merge(tup["word"], 1)

    def collect_results(self):
        return dict(self.state.items())


class FirstSeenBolt(StatefulBolt):
    """The first sentence each word appeared in: merges combined by ``min``."""

    state_merge = min

    def execute(self, tup):
        self.state.merge(tup["word"], tup["number"])

    def collect_results(self):
        return dict(self.state.items())


builder = TopologyBuilder()
builder.set_spout("sentences", SentenceSpout(), parallelism=2)
builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
builder.set_bolt("count", CountBolt(), parallelism=2).fields_grouping("split", ["word"])
builder.set_bolt("first", FirstSeenBolt(), parallelism=2).fields_grouping("split", ["word"])
topology = builder.create_topology()


def verify(results: dict) -> str:
    """Every word's count and first sentence equal those of the sentences read."""
    expected: Counter = Counter()
    first: dict[str, int] = {}
    for spout in results["sentences"].values():
        for i in range(spout["first"], spout["next"], spout["step"]):
            for word in sentence(i).split():
                expected[word] += 1
                first[word] = min(first.get(word, i), i)
    counted: Counter = Counter()
    for task_counts in results["count"].values():
        counted.update(task_counts)
    assert counted == expected, (
        f"{sum((expected - counted).values())} words lost, "
        f"{sum((counted - expected).values())} counted twice"
    )
    seen = {w: n for task in results["first"].values() for w, n in task.items()}
    wrong = sorted(w for w in first if seen.get(w) != first[w])
    assert not wrong, f"{len(wrong)} words with a wrong first sentence, e.g. {wrong[:3]}"
    return f"{sum(counted.values()):,} words of {len(counted):,} kinds, each counted once"
