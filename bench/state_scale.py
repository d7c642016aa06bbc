"""State at scale (issue 44): a per-key count over real key distributions on 10,000,000
keys, on each live-state backend, in the same rounds as the 10,000-key count in memory::

    python3 bench/state_scale.py                                  # 3 M tuples, 10 M keys
    python3 bench/state_scale.py --tuples 300000 --keys 1000000   # a shorter look
    python3 bench/state_scale.py --merge --json out.json          # with state.merge(key, 1)
    python3 bench/state_scale.py -c topology.state.cache.entries=1000000   # a conf A/B

The count is written the way docs/STATE.md teaches: ``self.state.put(k, self.state.get(k,
0) + 1)`` in a :class:`~topology.StatefulBolt` (``--merge``: ``self.state.merge(k, 1)``),
fields-grouped on the key, one spout and one count task per worker, checkpointed every
second to the default provider.  The spouts (a ``ReplayableSpout``) emit ``--tuples``
keys in all, split between them, from one of three streams:

* ``hot``: 40 % of the tuples on a hot set of 1 % of the keys, the rest uniform over all;
* ``zipf``: Zipf(1.1) over the keys' ranks (truncated at ``--keys``);
* ``uniform``: the scrambled sweep of ``bench/state_cases.py`` — key ``(i × 2654435761)
  mod keys`` for i = 0, 1, 2, ..., every key new until all have been seen.

A rank becomes a key through the same scrambling, so hot keys are spread over the key
space.  Keys are drawn from a generator seeded by (task, block of 4,096 positions), so a
replay from a checkpoint emits the same keys.  The baseline is the ``uniform`` stream over
10,000 keys on the ``memory`` backend, through the same spout and bolt.

Every round runs the baseline and then each (stream, backend) case once, each in a fresh
``LocalCluster``; a case's figure is tuples/s from 5 % of its tuples counted to all of
them (the count bolts' ``executed``, polled every 0.05 s), and its ratio is the median of
its per-round ratios to that round's baseline.  Each case also reports every worker's RSS
(sampled every 0.5 s from /proc: total, anonymous, file-backed), the state's size as the
workers report it, and whether the counts are exact: after a drain, the counts' sum and
their key-weighted sum equal those of the keys the spouts emitted.  The RSS of the first
round is drawn into an SVG (``--plot``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from cases import CONF_ENV, executed  # noqa: E402
from state_cases import CountKeys, RssSampler, state_conf, state_size  # noqa: E402
from state_plot import COLOURS, LEFT, TOP, _line, _nice, frame, save  # noqa: E402

from topology import ReplayableSpout, TopologyBuilder  # noqa: E402

#: Odd and not a multiple of 5: a permutation of 0 .. keys - 1 for keys = 10^k.
SCRAMBLE = 2_654_435_761
#: Positions drawn at once by a spout (and the unit a replay regenerates).
BLOCK = 4_096
STREAMS = ("hot", "zipf", "uniform")
BACKENDS = ("memory", "lmdb")
#: The hot stream: this share of the tuples ...
HOT_SHARE = 0.4
#: ... on this share of the keys.
HOT_KEYS = 0.01
ZIPF_S = 1.1
BASELINE_KEYS = 10_000
#: Share of the tuples counted before the clock starts (workers started and warm).
WARM = 0.05
#: Seconds between two looks at the count bolts' ``executed``.
POLL = 0.05
PLOT = os.path.join(HERE, "..", "docs", "img", "state_scale_rss.svg")
#: The plot's right margin, where its legend goes.
LEGEND_WIDTH = 220


def block_keys(stream: str, keys: int, task: int, tasks: int, block: int) -> np.ndarray:
    """The keys a spout task emits at its positions ``block × BLOCK ...`` (deterministic)."""
    if stream not in STREAMS:
        raise ValueError(f"unknown stream {stream!r}: one of {', '.join(STREAMS)}")
    if stream == "uniform":
        local = np.arange(block * BLOCK, (block + 1) * BLOCK, dtype=np.int64)
        ranks = local * tasks + task
    else:
        rng = np.random.default_rng([task, block, STREAMS.index(stream)])
        if stream == "hot":
            hot = rng.random(BLOCK) < HOT_SHARE
            ranks = np.where(
                hot,
                rng.integers(0, max(1, int(keys * HOT_KEYS)), BLOCK),
                rng.integers(0, keys, BLOCK),
            )
        else:
            ranks = np.empty(0, dtype=np.int64)
            while len(ranks) < BLOCK:  # truncated at keys: draw again what falls beyond
                drawn = rng.zipf(ZIPF_S, BLOCK)
                ranks = np.concatenate([ranks, drawn[drawn <= keys] - 1])
            ranks = ranks[:BLOCK]
    return (ranks % keys * SCRAMBLE) % keys


def emitted_sums(stream: str, keys: int, task: int, tasks: int, count: int) -> tuple[int, int]:
    """(tuples, sum of their keys) of a spout task's first ``count`` positions."""
    total = 0
    for block in range(0, (count + BLOCK - 1) // BLOCK):
        drawn = block_keys(stream, keys, task, tasks, block)[: count - block * BLOCK]
        total += int(drawn.sum())
    return count, total


class KeyStream(ReplayableSpout):
    """``quota`` keys of ``stream`` over ``keys`` keys per task; the position is the
    number emitted."""

    outputs = ["key"]

    def __init__(self, stream: str, keys: int, tuples: int) -> None:
        self.stream, self.keys, self.tuples = stream, keys, tuples

    def open(self, conf: Any, context: Any) -> None:
        self.task = context.task_index
        self.tasks = len(context.component_tasks())
        self.quota = self.tuples // self.tasks + (self.task < self.tuples % self.tasks)
        self.seek(0)

    def seek(self, position: Any) -> None:
        self.position_ = position
        self.block = -1
        self.drawn: list[int] = []

    def position(self) -> int:
        return self.position_

    def next_tuple(self) -> None:
        for _ in range(10):
            at = self.position_
            if at >= self.quota:
                return
            block, offset = divmod(at, BLOCK)
            if block != self.block:
                self.block = block
                self.drawn = block_keys(self.stream, self.keys, self.task, self.tasks, block)
                self.drawn = self.drawn.tolist()
            self.emit([self.drawn[offset]])
            self.position_ = at + 1

    def collect_results(self) -> dict[str, Any]:
        tuples, key_sum = emitted_sums(
            self.stream, self.keys, self.task, self.tasks, self.position_
        )
        return {"emitted": tuples, "key_sum": key_sum}


class MergeKeys(CountKeys):
    """The count without a read: ``state.merge(key, 1)`` (addition, the default)."""

    def execute(self, tup: Any) -> None:
        self.state.merge(tup.values[0], 1)


def merge_missing() -> list[str]:
    """The live-state classes without ``merge`` (empty once every backend has it)."""
    from topology.state.live.lmdb_store import LmdbState
    from topology.state.live.memory import KeyValueState

    return [cls.__name__ for cls in (KeyValueState, LmdbState) if not hasattr(cls, "merge")]


def topology(workers: int, stream: str, keys: int, tuples: int, merge: bool) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("keys", KeyStream(stream, keys, tuples), parallelism=workers)
    bolt = MergeKeys() if merge else CountKeys()
    builder.set_bolt("count", bolt, parallelism=workers).fields_grouping("keys", ["key"])
    return builder.create_topology()


def count_rate(cluster: Any, name: str, tuples: int, timeout: float) -> tuple[float, float]:
    """(tuples/s from the first look that saw :data:`WARM` of ``tuples`` counted — or, if
    that look saw them all, the first that saw any — to the look that saw them all,
    seconds from the first look to that one)."""
    started = time.monotonic()
    polls: list[tuple[float, int]] = []
    while True:
        now = time.monotonic()
        done = executed(cluster.worker_status(name))
        polls.append((now, done))
        if done >= tuples:
            break
        if now - started > timeout:
            raise TimeoutError(f"{name}: {done:,} of {tuples:,} tuples counted in {timeout:.0f} s")
        time.sleep(POLL)
    earlier = polls[:-1]
    warm = next((p for p in earlier if p[1] >= tuples * WARM), None)
    warm = warm or next((p for p in earlier if p[1] > 0), None) or (started, 0)
    return (done - warm[1]) / (now - warm[0]), now - started


def run_case(
    stream: str,
    backend: str,
    keys: int,
    tuples: int,
    workers: int,
    merge: bool = False,
    timeout: float = 1800.0,
) -> dict[str, Any]:
    from topology import LocalCluster

    with tempfile.TemporaryDirectory() as folder, LocalCluster() as cluster:
        conf = state_conf(folder, workers, backend)
        cluster.submit_topology("scale", conf, topology(workers, stream, keys, tuples, merge))
        sampler = RssSampler(cluster.worker_pids("scale"))
        sampler.start()
        try:
            rate, secs = count_rate(cluster, "scale", tuples, timeout)
        finally:
            sampler.done.set()
            sampler.join()
        cluster.deactivate("scale")
        cluster.wait_until_drained("scale", timeout=300)
        size = state_size(cluster.worker_status("scale"))
        results = cluster.results("scale", timeout=600)
    spouts, counts = results["keys"].values(), results["count"].values()
    emitted = sum(s["emitted"] for s in spouts)
    exact = sum(c["total"] for c in counts) == emitted and sum(c["key_sum"] for c in counts) == sum(
        s["key_sum"] for s in spouts
    )
    per_worker = list(zip(*(sample[1] for sample in sampler.samples), strict=True))
    return {
        "stream": stream,
        "backend": backend,
        "keys": keys,
        "update": "merge" if merge else "get+put",
        "tuples_per_sec": rate,
        "secs": round(secs, 1),
        "emitted": emitted,
        "exact": exact,
        "keys_held": sum(c["keys"] for c in counts),
        **size,
        "rss_max_mb": [max(s[0] for s in w) for w in per_worker],
        "rss_anon_max_mb": [max(s[1] for s in w) for w in per_worker],
        "rss_file_max_mb": [max(s[2] for s in w) for w in per_worker],
        "rss_series": sampler.samples,
    }


def plan(keys: int, merge: bool) -> list[tuple[str, dict[str, Any]]]:
    """A round's cases, baseline first: ``(name, run_case arguments)``."""
    cases = [("baseline", {"stream": "uniform", "backend": "memory", "keys": BASELINE_KEYS})]
    updates = [False, True] if merge else [False]
    for update in updates:
        for stream in STREAMS:
            for backend in BACKENDS:
                name = f"{stream}-{backend}" + ("-merge" if update else "")
                cases.append((name, {"stream": stream, "backend": backend, "keys": keys}))
                cases[-1][1]["merge"] = update
    return cases


def summary(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per case: median tuples/s, median per-round ratio to the baseline, per-round ratios,
    exact in every round, largest RSS of a worker — over the rounds where the case and its
    baseline both ran (a case that failed in every round keeps its last error)."""
    out: dict[str, dict[str, Any]] = {}
    for name in rounds[0]:
        ran = [r for r in rounds if "error" not in r[name] and "error" not in r["baseline"]]
        if not ran:
            out[name] = {"error": next(r[name].get("error") or "baseline failed" for r in rounds)}
            continue
        runs = [r[name] for r in ran]
        ratios = [r[name]["tuples_per_sec"] / r["baseline"]["tuples_per_sec"] for r in ran]
        out[name] = {
            "stream": runs[0]["stream"],
            "backend": runs[0]["backend"],
            "keys": runs[0]["keys"],
            "update": runs[0]["update"],
            "tuples_per_sec": statistics.median(r["tuples_per_sec"] for r in runs),
            "ratio": statistics.median(ratios),
            "ratios": [round(x, 3) for x in ratios],
            "exact": all(r["exact"] for r in runs),
            "rss_max_mb": max(max(r["rss_max_mb"]) for r in runs),
            "rss_anon_max_mb": max(max(r["rss_anon_max_mb"]) for r in runs),
            "state_keys": max(r["state_keys"] for r in runs),
        }
    return out


def report(table: dict[str, dict[str, Any]], tuples: int, rounds: int) -> None:
    print(
        f"\n## State at scale: {tuples:,} tuples per case, {rounds} round(s), "
        "ratio = median of per-round ratios to the baseline\n"
    )
    print(
        "| case | keys | backend | update | tuples/s (median) | vs memory, 10 k keys "
        "(per round) | max worker RSS, MB (anon) | exact |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, r in table.items():
        if "error" in r:
            print(f"| {name} | error: {r['error']} | | | | | | |")
            continue
        ratios = ", ".join(f"{x:.2f}" for x in r["ratios"])
        print(
            f"| {name} | {r['keys']:,} | {r['backend']} | {r['update']} "
            f"| {r['tuples_per_sec']:,.0f} | {r['ratio']:.2f} ({ratios}) "
            f"| {r['rss_max_mb']:,.0f} ({r['rss_anon_max_mb']:,.0f}) "
            f"| {'yes' if r['exact'] else 'NO'} |"
        )


def write_svg(path: str, cases: dict[str, dict[str, Any]]) -> None:
    """Each case's largest worker RSS over its run (one line per case), one round."""
    named = [(n, c) for n, c in cases.items() if c.get("rss_series")]
    if not named:
        return
    secs = max(c["rss_series"][-1][0] for _, c in named) or 1.0
    top = _nice(max(max(w[0] for w in s[1]) for _, c in named for s in c["rss_series"]))
    title = (
        "Largest worker RSS over each case (solid: lmdb, dashed: memory, grey: 10 k keys in memory)"
    )
    out, xy, plot_w = frame(title, secs, top, right=LEGEND_WIDTH)
    for i, (name, case) in enumerate(named):
        if name == "baseline":
            colour, dash = "#999", ""
        else:
            colour = COLOURS[STREAMS.index(case["stream"]) % len(COLOURS)]
            dash = "" if case["backend"] == "lmdb" else "6,4"
        points = [xy(t, max(w[0] for w in sample)) for t, sample in case["rss_series"]]
        out.append(_line(points, colour, dash))
        y = TOP + 10 + i * 16
        x = LEFT + plot_w + 14
        out.append(_line([(x, y), (x + 24, y)], colour, dash))
        out.append(f'<text x="{x + 30}" y="{y + 4}">{name}</text>')
    save(path, out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=3_000_000, help="tuples per case")
    parser.add_argument("--keys", type=int, default=10_000_000, help="keys of the big cases")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--merge", action="store_true", help="also count with state.merge")
    parser.add_argument("--only", nargs="*", help="case names to run (the baseline always)")
    parser.add_argument("--json", help="write every round's results to this file")
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds a case may take to count"
    )
    parser.add_argument("--plot", default=PLOT, help="the RSS SVG ('' for none)")
    parser.add_argument(
        "-c",
        dest="conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topology conf override for every case (YAML value), as bench/run.py's",
    )
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"-c {item!r}: expected KEY=VALUE")
        overrides[key] = yaml.safe_load(value)
    if overrides:
        os.environ[CONF_ENV] = json.dumps(overrides)  # read by _overrides() in each case
    merge = args.merge
    if merge and (missing := merge_missing()):
        print(
            f"--merge skipped: state.merge does not exist yet ({', '.join(missing)} "
            "without it); running the get+put cases only",
            flush=True,
        )
        merge = False
    cases = plan(args.keys, merge)
    if args.only:
        cases = [c for c in cases if c[0] == "baseline" or c[0] in args.only]
    rounds: list[dict[str, dict[str, Any]]] = []
    for number in range(1, args.rounds + 1):
        done: dict[str, dict[str, Any]] = {}
        rounds.append(done)
        for name, params in cases:
            started = time.monotonic()
            try:
                done[name] = run_case(
                    tuples=args.tuples, workers=args.workers, timeout=args.timeout, **params
                )
            except Exception as error:  # a failed case is a row, not the end of the run
                done[name] = {"error": f"{type(error).__name__}: {error}"}
            shown = {k: v for k, v in done[name].items() if k != "rss_series"}
            print(
                f"  round {number}, {name}: {json.dumps(shown)} "
                f"({time.monotonic() - started:.0f} s)",
                flush=True,
            )
            if args.json:  # after every case: a run cut short keeps what it measured
                with open(args.json, "w") as f:
                    json.dump({"args": vars(args), "rounds": rounds}, f)
        if number == 1 and args.plot:
            write_svg(args.plot, done)
    table = summary(rounds)
    report(table, args.tuples, args.rounds)
    if args.plot:
        print(f"\nRSS over round 1: {os.path.relpath(args.plot)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "summary": table, "rounds": rounds}, f)


if __name__ == "__main__":
    main()
