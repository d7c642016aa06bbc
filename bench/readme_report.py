"""Issue 30's part of ``bench/run.py``: the README-style word count beside the tuned one,
its back-to-back pyzmq baseline, the peers, the scaling figure and the targets.

* ``wc-readme-{w}-unacked`` / ``-acked`` (:mod:`readme_cases`) run in every round; each
  unacked one right after a run of the pyzmq batched pipeline (``zmq-batch``), whose figure
  it keeps as its ``baseline``: the ratio of a round is the case over the pipeline measured
  seconds before it, and the pipeline's own run-to-run spread is printed.
* ``peer-bytewax-{w}`` (``--peers``, :mod:`peer_cases`) run in the same rounds.
* ``latency-load-{w}`` (:mod:`latency_cases`) once: capacity first, then 25/50/75 % of it.
"""

from __future__ import annotations

import statistics
from typing import Any

#: The pipeline every unacked case is compared with, run right before it in each round.
BASELINE = "zmq-batch"


def readme_plan(
    workers: list[int], secs: float, batch: bool = False, poison: bool = False
) -> list[tuple[str, str, dict[str, Any]]]:
    """The README-style cases; with ``batch``, also their twins whose count bolt uses
    ``execute_batch`` (``wc-readme-{w}-{mode}-batch``); with ``poison``, the acked one with
    a poison sentence in every 1,000 (``wc-readme-{w}-acked-poison``, issue 40)."""
    out = []
    for w in workers:
        for acked in (False, True):
            mode = "acked" if acked else "unacked"
            params = {"secs": secs, "workers": w, "acked": acked}
            out.append((f"wc-readme-{w}-{mode}", "wc-readme", params))
            if batch:
                out.append((f"wc-readme-{w}-{mode}-batch", "wc-readme", {**params, "batch": True}))
            if poison and acked:
                out.append(
                    (f"wc-readme-{w}-{mode}-poison", "wc-readme", {**params, "poison": True})
                )
    return out


def needs_baseline(name: str, workers: list[int]) -> bool:
    """Whether case ``name`` is compared with the pyzmq pipeline (so it runs right after
    one, every round)."""
    top = max(workers)
    return name.endswith(("-unacked", "-unacked-batch")) and (
        name.startswith("wc-readme-") or name == f"wc-local-{top}-unacked"
    )


def baseline_ratios(result: dict[str, Any]) -> list[float]:
    """The case over the pipeline run right before it, per round."""
    runs, bases = result.get("runs"), result.get("baselines")
    if not runs or not bases:
        single, base = result.get("words_per_sec"), result.get("baseline")
        return [single / base] if single and base else []
    return [r / b for r, b in zip(runs, bases, strict=False) if r and b]


def spread_line(runs: list[float]) -> str:
    """The pyzmq pipeline's run-to-run spread: every run, median, (max - min) / median."""
    good = [r for r in runs if r]
    if not good:
        return "pyzmq batched pipeline: no run completed"
    mid = statistics.median(good)
    shown = ", ".join(f"{r:,.0f}" for r in good)
    return (
        f"pyzmq batched pipeline, every run of this bench ({len(good)}): {shown} words/s; "
        f"median {mid:,.0f}, spread (max - min) / median {(max(good) - min(good)) / mid:.0%}"
    )


def scaling_table(results: dict[str, dict[str, Any]], workers: list[int]) -> None:
    """Words/s per worker and the efficiency against 1 worker (``--workers 1 2 4 8``)."""
    if len(workers) < 2:
        return
    print("\n## Scaling: README-style word count, default config\n")
    print("| workers | unacked words/s | per worker | efficiency | acked words/s | per worker "
          "| efficiency |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    first = min(workers)
    for w in sorted(workers):
        cells = []
        for mode in ("unacked", "acked"):
            rate = results.get(f"wc-readme-{w}-{mode}", {}).get("words_per_sec")
            one = results.get(f"wc-readme-{first}-{mode}", {}).get("words_per_sec")
            if not rate:
                cells += ["-", "-", "-"]
                continue
            eff = (rate / w) / (one / first) if one else None
            cells += [f"{rate:,.0f}", f"{rate / w:,.0f}", f"{eff:.0%}" if eff else "-"]
        print(f"| {w} | " + " | ".join(cells) + " |")
    print(f"\nEfficiency: words/s per worker over {first} worker(s)'s per worker.")


def readme_targets(
    results: dict[str, dict[str, Any]], workers: list[int], paired: Any
) -> list[tuple[str, str, bool | None]]:
    """Issue 30's targets: ``paired(a, b)`` gives the per-round ratios of two cases."""
    rows: list[tuple[str, str, bool | None]] = []

    def row(what: str, ratios: list[float], at_least: float | None) -> None:
        if not ratios:
            return
        value = statistics.median(ratios)
        shown = f"{value:.2f}×" if at_least and at_least >= 1 else f"{value:.1%}"
        if len(ratios) > 1:
            each = ", ".join(
                f"{r:.2f}×" if at_least and at_least >= 1 else f"{r:.1%}" for r in ratios
            )
            shown += f" (median of {each})"
        rows.append((what, shown, None if at_least is None else value >= at_least))

    for w in workers:
        unacked = results.get(f"wc-readme-{w}-unacked", {})
        row(
            f"README-style, unacked, {w} worker(s) ≥ 45 % of the pyzmq pipeline run just before",
            baseline_ratios(unacked),
            0.45 if w == 2 else None,
        )
        row(
            f"README-style, acked ≥ 75 % of unacked, {w} worker(s), default config",
            paired(results.get(f"wc-readme-{w}-acked", {}), unacked),
            0.75 if w in (1, 2) else None,
        )
        poison = results.get(f"wc-readme-{w}-acked-poison")
        if poison:
            row(
                f"README-style, acked, one poison sentence per 1,000 ≥ 90 % of the clean run, "
                f"{w} worker(s) (each in the dead letters once: {poison.get('exact')})",
                paired(poison, results.get(f"wc-readme-{w}-acked", {})),
                0.9,
            )
        peer = results.get(f"peer-bytewax-{w}")
        if peer and "skipped" not in peer:
            row(
                f"README-style, acked, {w} worker(s) vs bytewax, {w} process(es)",
                paired(results.get(f"wc-readme-{w}-acked", {}), peer),
                {1: 1.0, 2: 1.3}.get(w),
            )
            row(
                f"README-style, unacked, {w} worker(s) vs bytewax, {w} process(es)",
                paired(unacked, peer),
                None,
            )
    return rows
