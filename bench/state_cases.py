"""State larger than memory (issue 29): the cases ``state-10m`` and ``state-10k-memory`` of
``bench/run.py`` (only with ``--only state-``), or standalone::

    python3 bench/state_cases.py                  # the three cases, 10,000,000 keys: ~9 minutes
    python3 bench/state_cases.py --keys 1000000   # a shorter look

The topology: a ``ReplayableSpout`` (one task per worker) emitting key ``(i × 2654435761)
mod keys`` for i = 0, 1, 2, ... — every key once per ``keys`` tuples, in scrambled order —
into a ``StatefulBolt`` counting per key (fields grouping on the key, one task per
worker), checkpointed every second to the ``sqlite`` provider.  ``state-10m``: 10,000,000
keys with ``topology.state.backend: lmdb``; ``state-10m-memory``: the same on the
``memory`` backend (the same checkpoint traffic: what the disk costs); ``state-10k-memory``:
10,000 keys on the ``memory`` backend.  Figures: tuples/s through the count (the median of
three windows after a warm-up), every worker's RSS sampled every half second from /proc (total,
anonymous, file-backed), the state's size as the workers report it, and, after a drain,
whether the counts add up to exactly the tuples the spouts emitted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from cases import _measure, _overrides  # noqa: E402
from state_plot import write_svg  # noqa: E402

from topology import ReplayableSpout, StatefulBolt, TopologyBuilder  # noqa: E402

#: Odd and not a multiple of 5: a permutation of 0 .. keys - 1 for keys = 10^k.
SCRAMBLE = 2_654_435_761
#: Where the driver draws the RSS of the two cases.
PLOT = os.path.join(HERE, "..", "docs", "img", "state_rss.svg")


class ScrambledKeys(ReplayableSpout):
    outputs = ["key"]

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def open(self, conf: Any, context: Any) -> None:
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self) -> None:
        keys, step = self.keys, self.step
        for _ in range(10):
            self.emit([(self.next * SCRAMBLE) % keys])
            self.next += step

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position

    def collect_results(self) -> dict[str, Any]:
        return {"emitted": (self.next - self.first) // self.step}


class CountKeys(StatefulBolt):
    """The count as docs/STATE.md teaches it: a get and a put per (integer) key."""

    def execute(self, tup: Any) -> None:
        key = tup.values[0]
        state = self.state
        state.put(key, state.get(key, 0) + 1)

    def collect_results(self) -> dict[str, Any]:
        keys = total = key_sum = 0
        for key, count in self.state.items():  # streamed from disk with the lmdb backend
            keys += 1
            total += count
            key_sum += key * count
        return {
            "keys": keys,
            "total": total,
            "key_sum": key_sum,
            "state": type(self.state).__name__,
        }


def topology(workers: int, keys: int) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("keys", ScrambledKeys(keys), parallelism=workers)
    builder.set_bolt("count", CountKeys(), parallelism=workers).fields_grouping("keys", ["key"])
    return builder.create_topology()


def rss_mb(pid: int) -> tuple[float, float, float]:
    """(VmRSS, RssAnon, RssFile) of process ``pid``, MB (zeros once it is gone)."""
    found = {"VmRSS": 0.0, "RssAnon": 0.0, "RssFile": 0.0}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                name, _, rest = line.partition(":")
                if name in found:
                    found[name] = int(rest.split()[0]) / 1024
    except OSError:
        pass
    return found["VmRSS"], found["RssAnon"], found["RssFile"]


class RssSampler(threading.Thread):
    """Every worker's RSS every ``interval`` seconds until stopped: ``samples`` holds
    ``[seconds since start, [[total, anon, file] per worker]]``."""

    def __init__(self, pids: list[int], interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pids, self.interval = pids, interval
        self.samples: list[list[Any]] = []
        self.done = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.done.is_set():
            at = round(time.monotonic() - start, 2)
            self.samples.append([at, [[round(v, 1) for v in rss_mb(p)] for p in self.pids]])
            self.done.wait(self.interval)


def state_size(status: list[dict[str, Any]]) -> dict[str, int]:
    tasks = [t for w in status for t in w["tasks"].values() if t["component"] == "count"]
    return {
        "state_keys": sum(t.get("state", {}).get("keys", 0) for t in tasks),
        "state_bytes": sum(t.get("state", {}).get("bytes", 0) for t in tasks),
    }


def state_conf(folder: str, workers: int, backend: str) -> dict[str, Any]:
    """A state case's topology conf: checkpoints every second under ``folder`` (and the
    live state there), ``backend``, and the run's ``-c`` overrides."""
    return {
        "topology.workers": workers,
        "topology.state.dir": os.path.join(folder, "checkpoints"),
        "topology.state.checkpoint.interval.ms": 1000,
        "topology.state.backend": backend,
        "topology.state.local.dir": os.path.join(folder, "live"),
        **_overrides(),
    }


def case_state(
    secs: float, workers: int, keys: int, backend: str, warmup: float = 10.0, **_: Any
) -> dict[str, Any]:
    from topology import LocalCluster

    with tempfile.TemporaryDirectory() as folder, LocalCluster() as cluster:
        conf = state_conf(folder, workers, backend)
        cluster.submit_topology("state", conf, topology(workers, keys))
        sampler = RssSampler(cluster.worker_pids("state"))
        sampler.start()
        measured = _measure(cluster, "state", secs, warmup)
        size = state_size(cluster.worker_status("state"))
        sampler.done.set()
        sampler.join()
        cluster.deactivate("state")
        cluster.wait_until_drained("state", timeout=300)
        results = cluster.results("state", timeout=300)
    emitted = sum(r["emitted"] for r in results["keys"].values())
    counted = results["count"].values()
    series = sampler.samples
    per_worker = list(zip(*(sample[1] for sample in series), strict=True))
    return {
        "tuples_per_sec": measured["words_per_sec"],
        "windows": measured["windows"],
        "keys": keys,
        "backend": backend,
        "state_class": sorted({c["state"] for c in counted}),
        "keys_held": sum(c["keys"] for c in counted),
        "exact": sum(c["total"] for c in counted) == emitted,
        "emitted": emitted,
        **size,
        "rss_max_mb": [max(s[0] for s in w) for w in per_worker],
        "rss_anon_max_mb": [max(s[1] for s in w) for w in per_worker],
        "rss_file_max_mb": [max(s[2] for s in w) for w in per_worker],
        "rss_series": series,
    }


STATE_CASES = {"state": case_state}


def state_plan(workers: int, keys: int = 10_000_000) -> list[tuple[str, str, dict[str, Any]]]:
    """The two cases (``bench/run.py`` adds them only for ``--only state-...``)."""
    big = {"secs": 120.0, "warmup": 15.0, "workers": workers, "keys": keys, "backend": "lmdb"}
    small = {"secs": 30.0, "warmup": 5.0, "workers": workers, "keys": 10_000, "backend": "memory"}
    return [
        ("state-10m", "state", big),
        ("state-10m-memory", "state", {**big, "backend": "memory"}),  # the same checkpoints
        ("state-10k-memory", "state", small),
    ]


def state_report(results: dict[str, dict[str, Any]], plot: str = PLOT) -> None:
    """The cases' table, the ratio (target ≥ 50 %) and the RSS plot."""
    rows = {k: v for k, v in results.items() if k.startswith("state-")}
    if not rows:
        return
    print("\n## State larger than memory (issue 29): tuples/s through a per-key count\n")
    print(
        "| case | keys | backend | tuples/s (windows) | state (keys, MB) "
        "| max RSS per worker, MB: total / anon / file | exact |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        if "error" in r:
            print(f"| {name} | error: {r['error']} | | | | | |")
            continue
        rss = ", ".join(
            f"{t:.0f} / {a:.0f} / {f:.0f}"
            for t, a, f in zip(
                r["rss_max_mb"], r["rss_anon_max_mb"], r["rss_file_max_mb"], strict=True
            )
        )
        windows = ", ".join(f"{w:,}" for w in r["windows"])
        state = f"{r['state_keys']:,}, {r['state_bytes'] / 1e6:,.0f}"
        print(
            f"| {name} | {r['keys']:,} | {r['backend']} | {r['tuples_per_sec']:,.0f} ({windows}) "
            f"| {state} | {rss} | {'yes' if r['exact'] else 'NO'} |"
        )
    big, small = rows.get("state-10m", {}), rows.get("state-10k-memory", {})
    same = rows.get("state-10m-memory", {})
    if big.get("tuples_per_sec") and same.get("tuples_per_sec"):
        ratio = big["tuples_per_sec"] / same["tuples_per_sec"]
        print(f"\n{big['keys']:,} keys on lmdb: {ratio:.1%} of the same keys in memory")
    if big.get("tuples_per_sec") and small.get("tuples_per_sec"):
        ratio = big["tuples_per_sec"] / small["tuples_per_sec"]
        verdict = "pass" if ratio >= 0.5 else "FAIL"
        print(
            f"{big['keys']:,} keys on lmdb: {ratio:.1%} of 10,000 keys in memory "
            f"(target ≥ 50 %): {verdict}"
        )
        write_svg(plot, big, small, same)
        print(f"RSS over the run: {os.path.relpath(plot)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--plot", default=PLOT)
    parser.add_argument("--secs", type=float, help="measured seconds of each case (a check)")
    args = parser.parse_args()
    results = {}
    for name, _, params in state_plan(args.workers, args.keys):
        if args.secs:
            params.update(secs=args.secs, warmup=min(params["warmup"], args.secs / 2))
        started = time.monotonic()
        results[name] = case_state(**params)
        shown = {k: v for k, v in results[name].items() if k != "rss_series"}
        print(f"  {name}: {json.dumps(shown)} ({time.monotonic() - started:.0f} s)", flush=True)
    state_report(results, args.plot)


if __name__ == "__main__":
    main()
