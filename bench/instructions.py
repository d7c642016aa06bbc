"""Instructions per word of the hot path: a noise-free A/B figure for small changes.

    python3 bench/instructions.py [acked|unacked] [--max-pending N|none]   # needs valgrind

Wall-clock A/Bs of a change worth a few percent drown in this machine's ±15 % noise, so
this counts what the CPU executes instead: the word count of ``bench/run.py`` (one worker,
every task in this process on the in-process runner with a manual clock, max spout
pending 2,000 unless ``--max-pending`` says otherwise) runs under
``valgrind --tool=callgrind`` for 20 and then 60 executor turns;
the difference of the two instruction totals divided by the difference of the words
counted is the cost of one word, start-up excluded.  Lower is better; a change that saves
instructions on the hot path saves time, though a memory-bound change can save time
without saving instructions (confirm with ``bench/run.py --only wc-local``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_turns(acked: bool, turns: int, max_pending: int | None = 2000) -> int:
    """Run the word count for ``turns`` executor turns; return the words counted."""
    import gc

    sys.path.insert(0, HERE)
    from workload import Count, Sentences, word_count

    from topology import config as cfg
    from topology.runtime.inprocess import InProcessRunner

    gc.freeze()
    gc.set_threshold(50_000, 20, 20)  # as a worker runs (topology.runtime.worker.tune_gc)
    conf = cfg.resolve(
        {
            "topology.workers": 1,
            "topology.acker.executors": None if acked else 0,
            "topology.max.spout.pending": max_pending,
            "topology.max.spout.pending.adaptive": False,
        },
        where="topology",
    )
    runner = InProcessRunner(word_count(1, Sentences(acked), Count()), conf)
    runner.activate()
    for _ in range(turns):
        runner.turn()
    (count,) = [t for t in runner.worker(0).executor.bolts.values() if t.component == "count"]
    return int(count.stats.executed)


def measure(mode: str, turns: int, max_pending: str) -> tuple[int, int]:
    """(words, instructions) of one run under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
            + [os.path.abspath(__file__), "--inner", mode, str(turns), max_pending],
            capture_output=True,
            text=True,
            check=True,
        )
    words = int(proc.stdout.split()[-1])
    collected = re.search(r"Collected : (\d+)", proc.stderr)
    if collected is None:
        raise SystemExit(f"no instruction count from valgrind:\n{proc.stderr[-2000:]}")
    return words, int(collected.group(1))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--inner":
        cap = None if sys.argv[4] == "none" else int(sys.argv[4])
        print(run_turns(sys.argv[2] == "acked", int(sys.argv[3]), cap))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modes", nargs="*", help="acked, unacked (default: both)")
    parser.add_argument(
        "--max-pending",
        default="2000",
        help="topology.max.spout.pending of the run: a number, or none (default 2000)",
    )
    args = parser.parse_args()
    if args.max_pending != "none" and not (args.max_pending.isdigit() and int(args.max_pending)):
        parser.error(f"--max-pending: expected a number >= 1 or none, got {args.max_pending!r}")
    if shutil.which("valgrind") is None:
        raise SystemExit("bench/instructions.py needs valgrind (apt-get install valgrind)")
    sys.path.insert(0, os.path.join(HERE, ".."))
    from topology.runtime.compiled import describe  # the measured processes' environment

    path = describe()
    for mode in args.modes or ["unacked", "acked"]:
        if mode not in ("acked", "unacked"):
            parser.error(f"unknown mode {mode!r}: expected acked or unacked")
        w1, i1 = measure(mode, 20, args.max_pending)
        w2, i2 = measure(mode, 60, args.max_pending)
        print(f"{mode}: {(i2 - i1) / (w2 - w1):,.0f} instructions per word ({path})", flush=True)


if __name__ == "__main__":
    main()
