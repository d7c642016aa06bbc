"""The README-style word count's cases (issue 30), for ``bench/run.py``:

* ``wc-readme`` — :mod:`readme_topology` with the default config, acked or not: words/s
  through ``count`` (the median of three windows after a warm-up), then the spouts are
  stopped, the topology drained and every count checked exact; ``batch``: the count is
  :class:`readme_topology.BatchCount` (``execute_batch``), the cases
  ``wc-readme-{w}-{mode}-batch`` (``bench/run.py --batch-count``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from cases import _drain_and_verify, _measure, _overrides  # noqa: E402
from readme_topology import readme_conf, readme_word_count  # noqa: E402


def case_wc_readme(
    secs: float, workers: int, acked: bool, batch: bool = False, **_: Any
) -> dict[str, Any]:
    from topology import LocalCluster

    with LocalCluster() as cluster:
        conf = {**readme_conf(workers, acked), **_overrides()}
        cluster.submit_topology("wc", conf, readme_word_count(workers, batch=batch))
        measured = _measure(cluster, "wc", secs, 3.0)
        exact = _drain_and_verify(cluster, "wc")
    return {**measured, "exact": exact}


README_CASES = {"wc-readme": case_wc_readme}
