"""Streams API cases of ``bench/run.py`` (issue 27): fusion, and the word count as users
write it.

* ``pipeline`` — sentences → a five-step pipeline (``map`` lower → ``filter`` non-empty →
  ``flat_map`` split → ``map`` drop the first letter → ``for_each`` tally), unacked, one
  spout and one pipeline task per worker, written three ways (``variant``): ``fused``
  (Streams API, default), ``unfused`` (``fusion=False``: a component per step) and
  ``handwritten`` (one ``BasicBolt`` doing the five steps).  Figure: sentences/s through
  the tally step (its component's executed tuples; 10 words a sentence when the tally runs
  alone).
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
    [last] = [c for c in topology.components if c.endswith("tally")]
    return topology, last, 1 if variant == "fused" else WORDS_PER_SENTENCE


def case_pipeline(secs: float, workers: int, variant: str, **_: Any) -> dict[str, Any]:
    from cases import _conf, _measure

    from topology import LocalCluster

    topology, last, per_input = pipeline_topology(variant, workers)
    with LocalCluster() as cluster:
        cluster.submit_topology("pipeline", _conf(workers, acked=False), topology)
        measured = _measure(cluster, "pipeline", secs, 3.0, component=last)
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


STREAMS_CASES = {"pipeline": case_pipeline, "wc-examples": case_wc_examples}

if __name__ == "__main__":  # a quick look: python3 bench/streams_cases.py
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(HERE))
    for variant in ("handwritten", "fused", "unfused"):
        started = time.monotonic()
        print(variant, case_pipeline(3.0, 2, variant), f"{time.monotonic() - started:.0f}s")
