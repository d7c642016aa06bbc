"""The README-style word count's cases (issue 30), for ``bench/run.py``:

* ``wc-readme`` — :mod:`readme_topology` with the default config, acked or not: words/s
  through ``count`` (the median of three windows after a warm-up), then the spouts are
  stopped, the topology drained and every count checked exact; ``batch``: the count is
  :class:`readme_topology.BatchCount` (``execute_batch``), the cases
  ``wc-readme-{w}-{mode}-batch`` (``bench/run.py --batch-count``); ``poison``: one
  sentence in 1,000 makes ``split`` raise, every time (issue 40), the cases
  ``wc-readme-{w}-acked-poison`` (``bench/run.py --poison``): exact when every other
  sentence's words are counted once and every poison sentence is in the dead letters once.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from cases import _drain_and_verify, _measure, _overrides  # noqa: E402
from readme_topology import is_poison, readme_conf, readme_word_count  # noqa: E402
from workload import sentence  # noqa: E402


def case_wc_readme(
    secs: float, workers: int, acked: bool, batch: bool = False, poison: bool = False, **_: Any
) -> dict[str, Any]:
    from topology import LocalCluster

    with LocalCluster() as cluster:
        conf = {**readme_conf(workers, acked), **_overrides()}
        topology = readme_word_count(workers, batch=batch, poison=poison)
        cluster.submit_topology("wc", conf, topology)
        measured = _measure(cluster, "wc", secs, 3.0)
        if not poison:
            return {**measured, "exact": _drain_and_verify(cluster, "wc")}
        cluster.deactivate("wc")
        cluster.wait_until_drained("wc", timeout=120)
        exact, dead = verify_poison(cluster.results("wc"))
    return {**measured, "exact": exact, "dead_letters": dead}


def verify_poison(results: dict[str, dict[int, Any]]) -> tuple[bool, int]:
    """(every clean sentence's words counted once and every poison sentence emitted in
    the dead letters once, how many dead letters)."""
    expected: Counter = Counter()
    poison = []
    for spout in results["sentences"].values():
        for i in range(spout["first"], spout["next"], spout["step"]):
            if is_poison(i):
                poison.append(f"poison {i}")
            else:
                expected.update(sentence(i).split())
    counted: Counter = Counter()
    for task in results["count"].values():
        counted.update(task["counts"])
    dead = [s for task in results["dead-letters"].values() for s in task]
    return counted == expected and sorted(dead) == sorted(poison), len(dead)


README_CASES = {"wc-readme": case_wc_readme}
