"""Instructions per word of the hot path: a noise-free A/B figure for small changes.

    python3 bench/instructions.py [acked|unacked] [--max-pending N|none]   # needs valgrind
    python3 bench/instructions.py acked --poison      # one poison sentence per 1,000

Wall-clock A/Bs of a change worth a few percent drown in this machine's ±15 % noise, so
this counts what the CPU executes instead: the word count of ``bench/run.py`` (one worker,
every task in this process on the in-process runner with a manual clock, max spout
pending 2,000 unless ``--max-pending`` says otherwise) runs under
``valgrind --tool=callgrind`` for 20 and then 60 executor turns;
the difference of the two instruction totals divided by the difference of the words
counted is the cost of one word, start-up excluded.  Lower is better; a change that saves
instructions on the hot path saves time, though a memory-bound change can save time
without saving instructions (confirm with ``bench/run.py --only wc-local``).

``--poison`` (issue 40) measures the cost of poison records: the same word count, but
sentence *i* is ``"poison"`` when ``i % 1000 == 999`` and ``split`` raises on it every time
(retried 3 times, then dead-lettered, with the default failure policy); topology time
moves 50 ms a turn so retries fall due.  It prints both figures, the clean one with the
same components and clock, and the difference.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


#: Topology time a turn of the ``--poison`` runs moves (retries fall due: 0.1, 0.3, 0.7 s).
POISON_TURN_SECS = 0.05


def poison_topology(every: int) -> Any:
    """The word count whose sentence i is ``"poison"`` when ``every`` and ``i % every ==
    every - 1``, and whose split raises on it (``every`` 0: none is)."""
    sys.path.insert(0, HERE)
    from workload import Count, Sentences, Split, sentence

    from topology import TopologyBuilder

    class PoisonSentences(Sentences):
        def next_tuple(self) -> None:
            for _ in range(10):
                i = self.next
                self.next += self.step
                poison = every and i % every == every - 1
                self.emit(["poison" if poison else sentence(i), 0.0], msg_id=i)

    class PoisonSplit(Split):
        def process(self, tup: Any) -> None:
            if tup.values[0] == "poison":
                raise ValueError("a poison sentence")
            at = tup.values[1]
            for word in tup.values[0].split():
                self.emit([word, at])

    builder = TopologyBuilder()
    builder.set_spout("sentences", PoisonSentences(True))
    builder.set_bolt("split", PoisonSplit()).shuffle_grouping("sentences")
    builder.set_bolt("count", Count()).fields_grouping("split", ["word"])
    return builder.create_topology()


def run_turns(
    acked: bool, turns: int, max_pending: int | None = 2000, poison: int | None = None
) -> int:
    """Run the word count for ``turns`` executor turns; return the words counted
    (``poison``: the :func:`poison_topology` with that ``every``, time moving)."""
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
    if poison is None:
        topology = word_count(1, Sentences(acked), Count())
    else:
        topology = poison_topology(poison)
    runner = InProcessRunner(topology, conf)
    runner.activate()
    for _ in range(turns):
        if poison is not None:
            runner.clock.advance(POISON_TURN_SECS)  # type: ignore[attr-defined]
        runner.turn()
    (count,) = [t for t in runner.worker(0).executor.bolts.values() if t.component == "count"]
    return int(count.stats.executed)


def measure(mode: str, turns: int, max_pending: str, poison: str = "-") -> tuple[int, int]:
    """(words, instructions) of one run under callgrind (``poison``: ``-``, or the
    :func:`poison_topology`'s ``every``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
            + [os.path.abspath(__file__), "--inner", mode, str(turns), max_pending, poison],
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
    if len(sys.argv) == 6 and sys.argv[1] == "--inner":
        cap = None if sys.argv[4] == "none" else int(sys.argv[4])
        poison = None if sys.argv[5] == "-" else int(sys.argv[5])
        print(run_turns(sys.argv[2] == "acked", int(sys.argv[3]), cap, poison))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modes", nargs="*", help="acked, unacked (default: both)")
    parser.add_argument(
        "--max-pending",
        default="2000",
        help="topology.max.spout.pending of the run: a number, or none (default 2000)",
    )
    parser.add_argument(
        "--poison",
        action="store_true",
        help="one poison sentence per 1,000 (split raises on it), against the same clean",
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
        if args.poison:
            per_word = {}
            for every in ("0", "1000"):
                w1, i1 = measure(mode, 20, args.max_pending, every)
                w2, i2 = measure(mode, 60, args.max_pending, every)
                per_word[every] = (i2 - i1) / (w2 - w1)
            clean, poisoned = per_word["0"], per_word["1000"]
            print(
                f"{mode}, one poison sentence per 1,000: {poisoned:,.0f} instructions per "
                f"word; clean, same components and clock: {clean:,.0f} "
                f"({poisoned / clean - 1:+.1%}) ({path})",
                flush=True,
            )
            continue
        w1, i1 = measure(mode, 20, args.max_pending)
        w2, i2 = measure(mode, 60, args.max_pending)
        print(f"{mode}: {(i2 - i1) / (w2 - w1):,.0f} instructions per word ({path})", flush=True)


if __name__ == "__main__":
    main()
