"""Streams API cases of ``bench/run.py`` (issue 27): fusion, and the word count as users
write it.

* ``pipeline`` — sentences → a five-step pipeline (``map`` lower → ``filter`` non-empty →
  ``flat_map`` split → ``map`` drop the first letter → ``for_each`` tally), unacked, one
  spout and one pipeline task per worker, written three ways (``variant``): ``fused``
  (Streams API, default), ``unfused`` (``fusion=False``: a component per step) and
  ``handwritten`` (one ``BasicBolt`` doing the five steps).  Figure: sentences/s through
  the tally step (its component's executed tuples; 10 words a sentence when the tally runs
  alone; fused, the five steps run in the spout's task: the spout's emits).
* ``q0`` — Nexmark's q0/q1 shape (issue 42): a spout generating bid dicts → ``map`` (the
  currency conversion) → ``for_each`` tally (``variant`` ``for_each``: everything in the
  spout's task) or a counting sink bolt (``sink``), unacked or acked (``acked``), one spout
  task per worker.  Figure: events/s through the tally (the spout's emits) or the sink (its
  executed tuples).
* ``wc-examples`` — ``examples/wordcount.py`` and ``examples/streams_wordcount.py`` as
  they are (msg ids, so acked; default config; 2 workers), ``variant`` ``handwritten`` or
  ``streams``.  Figure: words/s through the ``count`` component; the counts are verified
  with the example's own ``verify`` after a drain.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from topology import BasicBolt, Spout, TopologyBuilder  # noqa: E402
from topology.streams import StreamBuilder  # noqa: E402

EXAMPLES = HERE.parent / "examples"
WORDS_PER_SENTENCE = 10


def sentence(i: int) -> str:
    return " ".join([f"W{(i * 7 + k * 13) % 1000}" for k in range(WORDS_PER_SENTENCE)])


class Lines(Spout):
    """Sentence i, i + n, ... (n tasks), ten at a call, without msg ids."""

    outputs = ["line"]

    def open(self, conf: Any, context: Any) -> None:
        self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self) -> None:
        emit = self.emit
        for _ in range(10):
            emit([sentence(self.next)])
            self.next += self.step


class Tally:
    """The pipeline's last step: counts what reaches it (per task)."""

    __name__ = "tally"

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, word: str) -> None:
        self.seen += 1


def not_empty(line: str) -> bool:
    return line != ""


def tail(word: str) -> str:
    return word[1:]


class Pipeline(BasicBolt):
    """The five steps written by hand in one bolt."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.tally = Tally()

    def process(self, tup: Any) -> None:
        line = tup.values[0].lower()
        if line == "":
            return
        tally = self.tally
        for word in line.split():
            tally(word[1:])


def pipeline_topology(variant: str, workers: int) -> tuple[Any, str, int]:
    """The topology, the component running the tally, and sentences per tally input."""
    if variant == "handwritten":
        builder = TopologyBuilder()
        builder.set_spout("lines", Lines(), workers)
        builder.set_bolt("tally", Pipeline(), workers).local_or_shuffle_grouping("lines")
        return builder.create_topology(), "tally", 1
    sb = StreamBuilder(fusion=variant == "fused")
    (
        sb.new_stream(Lines(), workers, name="lines")
        .map(str.lower)
        .filter(not_empty)
        .flat_map(str.split)
        .map(tail)
        .for_each(Tally())
    )
    topology = sb.build()
    if variant == "fused":  # chained into the spout's task
        return topology, "lines", 1
    [last] = [c for c in topology.components if c.endswith("tally")]
    return topology, last, WORDS_PER_SENTENCE


def spout_emits(cluster: Any, name: str) -> int:
    """Every spout task's emits (with operators chained to it: the elements they ran on)."""
    return sum(w["spout_emits"] for w in cluster.worker_status(name))


def case_pipeline(secs: float, workers: int, variant: str, **_: Any) -> dict[str, Any]:
    from cases import _conf, _measure

    from topology import LocalCluster

    topology, last, per_input = pipeline_topology(variant, workers)
    with LocalCluster() as cluster:
        cluster.submit_topology("pipeline", _conf(workers, acked=False), topology)
        count = None
        if topology.components[last].kind == "spout":
            count = lambda: spout_emits(cluster, "pipeline")  # noqa: E731
        measured = _measure(cluster, "pipeline", secs, 3.0, component=last, count=count)
    rate = measured["words_per_sec"] / per_input
    return {
        "words_per_sec": rate,
        "windows": [round(w / per_input) for w in measured["windows"]],
        "components": len(topology.components),
    }


def case_wc_examples(secs: float, variant: str, **_: Any) -> dict[str, Any]:
    from cases import _measure, _overrides

    from cli.loader import load_topology
    from topology import LocalCluster

    name = "wordcount" if variant == "handwritten" else "streams_wordcount"
    topology, module = load_topology(f"{EXAMPLES / name}.py:topology")
    conf = {"topology.workers": 2, **_overrides()}
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", conf, topology)
        measured = _measure(cluster, "wc", secs, 3.0)
        cluster.deactivate("wc")
        cluster.wait_until_drained("wc", timeout=120)
        try:
            module.verify(cluster.results("wc"))
            exact = True
        except AssertionError:
            exact = False
    return {**measured, "exact": exact}


class Bids(Spout):
    """Nexmark-shaped bid dicts, event i, i + n, ... (n tasks), ten at a call; with msg ids
    when ``acked``."""

    outputs = ["event"]

    def __init__(self, acked: bool) -> None:
        self.tracked = acked

    def open(self, conf: Any, context: Any) -> None:
        self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self) -> None:
        emit = self.emit
        for _ in range(10):
            i = self.next
            event = {
                "auction": 1000 + i % 1000,
                "bidder": 1000 + i % 5000,
                "price": (i * 7919) % 100000,
                "channel": f"channel-{i % 7}",
                "url": "https://www.nexmark.com/item.htm?query=1",
                "ts": i * 0.001,
                "extra": "",
            }
            if self.tracked:
                emit([event], msg_id=i)
            else:
                emit([event])
            self.next += self.step


def dollars_to_euros(bid: dict[str, Any]) -> dict[str, Any]:
    return {**bid, "price": bid["price"] * 908 // 1000}


class CountSink(BasicBolt):
    def process(self, tup: Any) -> None:
        pass


def case_q0(secs: float, workers: int, variant: str, acked: bool, **_: Any) -> dict[str, Any]:
    from cases import _conf, _measure

    from topology import LocalCluster

    sb = StreamBuilder()
    bids = sb.new_stream(Bids(acked), workers, name="bids").map(dollars_to_euros)
    if variant == "for_each":
        bids.for_each(Tally())
    else:
        bids.to(CountSink(), workers, name="sink")
    topology = sb.build()
    with LocalCluster() as cluster:
        conf = _conf(workers, acked, 500 if acked else None)
        cluster.submit_topology("q0", conf, topology)
        count = (lambda: spout_emits(cluster, "q0")) if variant == "for_each" else None
        measured = _measure(cluster, "q0", secs, 4.0, component="sink", count=count)
    return {**measured, "components": sorted(topology.components)}


STREAMS_CASES = {"pipeline": case_pipeline, "wc-examples": case_wc_examples, "q0": case_q0}

if __name__ == "__main__":  # a quick look: python3 bench/streams_cases.py
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(HERE))
    for variant in ("handwritten", "fused", "unfused"):
        started = time.monotonic()
        print(variant, case_pipeline(3.0, 2, variant), f"{time.monotonic() - started:.0f}s")
