"""Latency against capacity (issue 30): the README-style word count's complete latency at
25, 50 and 75 % of the acked capacity measured in the same run.

``latency-load-N`` (N workers), in one process and on one :class:`topology.LocalCluster`:

1. **capacity** — :mod:`readme_topology` acked, with the default config (and ``-c``
   overrides), spouts unpaced: words/s through ``count`` (the median of three windows
   filling ``secs`` after a 3 s warm-up, :func:`cases._measure`); capacity in sentences/s
   is that over 10 (ten words a sentence).  The topology is then killed.
2. **each load** — the same topology, spouts paced at ``load × capacity / N`` sentences/s
   per task (N spout tasks), run for :data:`workload.WARMUP_SECS` + ``secs``.  Every tree
   emitted after the warm-up records its *complete latency* (emit → the spout's ``ack``,
   Storm UI's figure) into a per-task histogram at three significant digits (0.01 ms steps to
   10 ms); the tasks' histograms are added up and p50 / p99 / p99.9 are taken of the
   union.  ``achieved`` is the sentences/s the spouts really emitted after the warm-up
   (summed over the tasks): a pace the spouts could not hold shows there, below ``rate``.
   ``unacked`` counts the trees emitted after the warm-up that were never acked (failed, or
   still in flight when the results were collected), which no percentile includes.
   Latency counts from the real emit, not from when the pace had the sentence due (as
   Storm's does): a spout held up behind a busy worker emits late and in a burst, so a
   pace not held is read from ``achieved``, and a target at such a load counts as failed.
   ``cpu`` is what the worker processes used over the same window, as a share of one core
   per worker (their user + system time from ``/proc``; None elsewhere): a paced run
   spreads its tuples over many small turns and frames, so it may keep the workers busier
   than its share of the unpaced capacity suggests.

:func:`latency_load_report` prints the table, draws ``docs/img/latency_load.png``
(:mod:`latency_plot`) and returns the targets: p99 ≤ 10 ms at 50 % of capacity and
p99.9 ≤ 50 ms at 75 %, per worker count.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import Counter
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from cases import _measure, _overrides  # noqa: E402
from readme_topology import Sentences, readme_conf, readme_word_count  # noqa: E402
from workload import WARMUP_SECS  # noqa: E402

#: The loads of the curve, as fractions of the measured acked capacity.
LOADS = (0.25, 0.5, 0.75)
#: The targets: (load, percentile key, bound in ms, label).
TARGETS = ((0.5, "p99", 10.0, "p99"), (0.75, "p999", 50.0, "p99.9"))
#: Where the chart goes, relative to the repository root.
PNG_PATH = os.path.join("docs", "img", "latency_load.png")
#: A pace counts as held when the spouts emitted at least this share of it.
HELD = 0.95


def cpu_seconds(pids: list[int]) -> float | None:
    """User + system CPU seconds the processes ``pids`` have used (Linux ``/proc``; None
    where it cannot be read)."""
    total = 0
    try:
        for pid in pids:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except (OSError, IndexError, ValueError):
        return None
    return total / os.sysconf("SC_CLK_TCK")


def busy_share(cluster: Any, name: str, secs: float) -> float | None:
    """Sleep ``secs``; the share of one core per worker that ``name``'s workers used."""
    pids = [int(w["pid"]) for w in cluster.worker_status(name)]
    before, began = cpu_seconds(pids), time.monotonic()
    time.sleep(secs)
    after, elapsed = cpu_seconds(pids), time.monotonic() - began
    if before is None or after is None or not pids:
        return None
    return round((after - before) / elapsed / len(pids), 3)


def bucket(ms: float) -> float:
    """``ms`` at three significant digits (0.01 ms steps from 1 to 10 ms, 0.1 ms to 100 ms)."""
    if ms <= 0.0:
        return 0.0
    return round(ms, max(0, 2 - int(math.floor(math.log10(ms)))))


class PacedSentences(Sentences):
    """:class:`readme_topology.Sentences` paced, with its complete latencies kept as a
    histogram (mergeable across tasks) and its emit rate after the warm-up."""

    def open(self, conf: Any, context: Any) -> None:
        super().open(conf, context)
        self.histogram: Counter[float] = Counter()
        self.failed = 0
        #: (time, sentences sent) when the warm-up ended, once it has.
        self.window: tuple[float, int] | None = None

    def next_tuple(self) -> None:
        super().next_tuple()
        if self.window is None and time.time() - self.started > WARMUP_SECS:
            self.window = (time.time(), self.sent)

    def ack(self, msg_id: Any) -> None:
        at = self.emitted_at.pop(msg_id, None)
        if at is not None and at - self.started > WARMUP_SECS:
            self.histogram[bucket((time.time() - at) * 1000)] += 1

    def fail(self, msg_id: Any) -> None:
        at = self.emitted_at.pop(msg_id, None)
        if at is not None and at - self.started > WARMUP_SECS:
            self.failed += 1

    def collect_results(self) -> dict[str, Any]:
        since, sent = self.window or (time.time(), self.sent)
        in_flight = sum(1 for at in self.emitted_at.values() if at - self.started > WARMUP_SECS)
        return {
            "first": self.first,
            "step": self.step,
            "next": self.next,
            "histogram": sorted(self.histogram.items()),
            "emitted": self.sent - sent,
            "secs": time.time() - since,
            "unacked": self.failed + in_flight,
        }


def paced_word_count(workers: int, rate: float) -> Any:
    """:func:`readme_topology.readme_word_count` with :class:`PacedSentences` at ``rate``
    sentences/s per task."""
    return readme_word_count(workers, spout=PacedSentences(rate))


def merge_percentiles(histograms: list[list[list[float]]]) -> dict[str, float] | None:
    """p50 / p99 / p99.9 of the union of ``[value, count]`` histograms, with the rank rule
    of :func:`workload.percentiles` (the value at index ``int(q × n)`` of the sorted union)."""
    union: Counter[float] = Counter()
    for histogram in histograms:
        for value, count in histogram:
            union[float(value)] += int(count)
    n = sum(union.values())
    if not n:
        return None
    ordered = sorted(union.items())
    out: dict[str, float] = {"n": n}
    for key, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999)):
        rank, seen = min(n - 1, int(q * n)), 0
        for value, count in ordered:
            seen += count
            if seen > rank:
                out[key] = round(value, 3)
                break
    return out


def _load_row(load: float, rate: float, spouts: list[dict[str, Any]]) -> dict[str, Any]:
    """One load's figures from its spout tasks' results (``rate``: sentences/s, all tasks)."""
    emitted = sum(s["emitted"] for s in spouts)
    secs = max((s["secs"] for s in spouts), default=0.0)
    latency = merge_percentiles([s["histogram"] for s in spouts]) or {}
    return {
        "load": load,
        "rate": round(rate, 1),
        "achieved": round(emitted / secs, 1) if secs else 0.0,
        "p50": latency.get("p50"),
        "p99": latency.get("p99"),
        "p999": latency.get("p999"),
        "n": latency.get("n", 0),
        "unacked": sum(s["unacked"] for s in spouts),
    }


def case_latency_load(
    secs: float, workers: int, loads: tuple[float, ...] = LOADS, **_: Any
) -> dict[str, Any]:
    """The acked capacity, then the complete latency at each load of it (module docstring)."""
    from topology import LocalCluster

    conf = {**readme_conf(workers, True), **_overrides()}
    with LocalCluster() as cluster:
        cluster.submit_topology("capacity", conf, readme_word_count(workers))
        measured = _measure(cluster, "capacity", secs, 3.0)
        cluster.kill_topology("capacity", wait_secs=0)
        capacity = measured["words_per_sec"] / 10
        rows = []
        for i, load in enumerate(loads):
            rate = load * capacity / workers
            name = f"paced-{i}"
            cluster.submit_topology(name, conf, paced_word_count(workers, rate))
            time.sleep(WARMUP_SECS)
            cpu = busy_share(cluster, name, secs)
            spouts = list(cluster.results(name)["sentences"].values())
            cluster.kill_topology(name, wait_secs=0)
            rows.append({**_load_row(load, rate * workers, spouts), "cpu": cpu})
    return {
        "workers": workers,
        "capacity_sentences_per_sec": round(capacity, 1),
        "capacity_words_per_sec": round(measured["words_per_sec"], 1),
        "capacity_windows": measured["windows"],
        "loads": rows,
    }


LATENCY_CASES = {"latency-load": case_latency_load}


def latency_plan(workers: list[int], secs: float) -> list[tuple[str, str, dict]]:
    """``bench/run.py``'s plan entries: one ``latency-load-N`` case per worker count."""
    return [(f"latency-load-{w}", "latency-load", {"secs": secs, "workers": w}) for w in workers]


def _workers(name: str, result: dict[str, Any]) -> int:
    return int(result.get("workers") or name.rsplit("-", 1)[1])


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def _held(row: dict[str, Any]) -> bool:
    return bool(row["rate"]) and row["achieved"] >= HELD * row["rate"]


def latency_load_report(results: dict[str, dict[str, Any]]) -> list[tuple[str, str, bool | None]]:
    """Print the latency-vs-load table of the ``latency-load-*`` results, draw the chart
    into :data:`PNG_PATH` and return the target rows ``(what, measured, ok)``."""
    found = {
        _workers(k, v): v
        for k, v in results.items()
        if k.startswith("latency-load-") and "error" not in v
    }
    for name, result in results.items():
        if name.startswith("latency-load-") and "error" in result:
            print(f"\n{name}: error: {result['error']}")
    if not found:
        return []
    print("\n## Latency against the same run's acked capacity (README-style word count)\n")
    for w, r in sorted(found.items()):
        print(
            f"- {w} worker(s): acked capacity {r['capacity_sentences_per_sec']:,.0f} sentences/s"
            f" ({r['capacity_words_per_sec']:,.0f} words/s through count)"
        )
    print(
        "\n| workers | load | sentences/s paced (achieved) | complete p50 / p99 / p99.9 ms"
        " | worker CPU |"
    )
    print("|---|---|---|---|---|")
    for w, r in sorted(found.items()):
        for row in r["loads"]:
            pace = f"{row['rate']:,.0f} ({row['achieved']:,.0f})"
            if not _held(row):
                pace += " — pace not held"
            latency = " / ".join(_ms(row[k]) for k in ("p50", "p99", "p999"))
            cpu = "-" if row.get("cpu") is None else f"{row['cpu']:.0%}"
            print(f"| {w} | {row['load'] * 100:g} % | {pace} | {latency} | {cpu} |")
    try:
        from latency_plot import write_png
    except ImportError:  # Pillow draws the chart; the table and targets stand without it
        print("\n(no chart: pip install pillow to draw docs/img/latency_load.png)")
    else:
        write_png(os.path.join(HERE, "..", PNG_PATH), found)
        print(f"\n![latency against load]({PNG_PATH})")
    return _target_rows(found)


def _target_rows(found: dict[int, dict[str, Any]]) -> list[tuple[str, str, bool | None]]:
    rows: list[tuple[str, str, bool | None]] = []
    for load, key, bound, label in TARGETS:
        for w, r in sorted(found.items()):
            row = next((x for x in r["loads"] if abs(x["load"] - load) < 1e-9), None)
            what = f"{label} ≤ {bound:g} ms at {load * 100:g} % of capacity, {w} worker(s)"
            if row is None or row[key] is None:
                rows.append((what, "not measured", None))
                continue
            measured = f"{row[key]:.1f} ms"
            if not _held(row):
                measured += f" (pace not held: {row['achieved']:,.0f} of {row['rate']:,.0f}/s)"
            rows.append((what, measured, row[key] <= bound and _held(row)))
    return rows
