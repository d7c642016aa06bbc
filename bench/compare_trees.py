"""Throughput of two checkouts of sparkstorm, measured back to back: is a change free?

    git worktree add /tmp/base <commit>            # the "before" tree (build its C modules:
    (cd /tmp/base && python3 setup.py build_ext --inplace -q)
    python3 bench/compare_trees.py /tmp/base . --rounds 3

Each round runs every throughput case of ``bench/run.py`` once in each tree (alternating
which tree goes first), each in a fresh interpreter started from that tree's own
``bench/run.py --case``, so the two figures of a round are seconds apart and share the
machine's mood.  A case's verdict is the median of its per-round ratios (after / before);
a refactoring that claims "no speed change" shows every median within a few percent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

#: (label, case, params) — the repeatable throughput cases of ``bench/run.py``'s quick plan.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("wc-local-1-unacked", "wc-local", {"secs": 5.0, "workers": 1, "acked": False}),
    (
        "wc-local-1-acked",
        "wc-local",
        {"secs": 5.0, "workers": 1, "acked": True, "max_pending": 500},
    ),
    ("wc-local-2-unacked", "wc-local", {"secs": 5.0, "workers": 2, "acked": False}),
    (
        "wc-local-2-acked",
        "wc-local",
        {"secs": 5.0, "workers": 2, "acked": True, "max_pending": 500},
    ),
    ("stateful", "stateful", {"secs": 5.0, "workers": 2}),
]


def run_case(tree: str, case: str, params: dict[str, Any]) -> float | None:
    """Words/s of one case run from ``tree``'s own bench driver, or None if it failed."""
    script = os.path.join(os.path.abspath(tree), "bench", "run.py")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    command = [sys.executable, script, "--case", case, json.dumps(params)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            figure = json.loads(line[len("RESULT ") :]).get("words_per_sec")
            return float(figure) if figure else None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the baseline checkout")
    parser.add_argument("after", help="the changed checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", help="run only cases whose label starts so")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or c[0].startswith(tuple(args.only))]
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in cases}
    for round_ in range(args.rounds):
        for label, case, params in cases:
            order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
            figures = {side: run_case(getattr(args, side), case, params) for side in order}
            before, after = figures["before"], figures["after"]
            ratio = after / before if before and after else None
            if ratio is not None:
                ratios[label].append(ratio)
            shown = f"{ratio:.3f}" if ratio is not None else "failed"
            print(f"round {round_ + 1} {label}: before {before} after {after} ratio {shown}")
            sys.stdout.flush()
    print("\ncase                  median after/before   rounds")
    for label, values in ratios.items():
        median = f"{statistics.median(values):.3f}" if values else "n/a"
        print(f"{label:<22}{median:>22}   {', '.join(f'{v:.3f}' for v in values)}")


if __name__ == "__main__":
    main()
