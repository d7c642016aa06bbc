"""Where a worker's time goes: cProfile of the word count of ``bench/run.py`` on the
in-process runner (one process, every task of one worker, real clock).

    python3 bench/hotpath.py [acked|unacked] [--turns 3000] [--top 25] [--readme]

``--readme`` profiles the README-style topology (``bench/readme_topology.py``: BasicBolts,
ticks on, default config) instead of the tuned one.

Prints the functions with the most own time.  Figures under the profiler are slower than
real; read the shares, not the totals.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from readme_topology import readme_word_count  # noqa: E402
from workload import Count, Sentences, word_count  # noqa: E402

from topology import config as cfg  # noqa: E402
from topology.runtime.inprocess import InProcessRunner  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["acked", "unacked"], nargs="?", default="acked")
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--readme", action="store_true", help="the README-style topology")
    args = parser.parse_args()
    acked = args.mode == "acked"
    conf = cfg.resolve(
        {"topology.workers": 1, "topology.acker.executors": None if acked else 0},
        where="topology",
    )
    topology = readme_word_count(1) if args.readme else word_count(1, Sentences(acked), Count())
    runner = InProcessRunner(topology, conf, clock=time.time)
    runner.activate()
    for _ in range(200):  # warm-up
        runner.turn()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.turns):
        runner.turn()
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
