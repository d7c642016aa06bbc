"""Every performance figure of sparkstorm in one run, as ratios to baselines of that run.

    python3 bench/run.py            # quick mode, about 10 minutes
    python3 bench/run.py --full     # for docs/BENCHMARKS.md, about 17 minutes
    python3 bench/run.py --workers 4 --only wc-local   # on a bigger host
    python3 bench/run.py --only loop zmq-batch wc-local -c KEY=VALUE   # a config A/B
    python3 bench/run.py --only zmq-batch wc-readme latency-load peer --peers   # issue 30
    python3 bench/run.py --only wc-readme-1-acked wc-readme-2-acked --poison    # issue 40

Each case runs in a fresh Python process (``--case NAME``) and prints one JSON line; this
driver collects them, prints the tables and the issue-12 targets with pass/fail.  A
throughput figure is the median of three consecutive windows of its run.  The throughput
cases run :data:`ROUNDS` times (``--repeat N``), round-robin so drift on a shared machine
reaches all of them alike: a case reports its median run, and a target that compares two
cases is the median of their per-round ratios (the two ran in the same round, seconds to a
couple of minutes apart).
Quick mode repeats only the cases a target compares and runs the others once.

The cases, one process each, are in ``bench/cases.py`` and, the connectors' (issue 26:
Redis → count → PostgreSQL and a Parquet sink, each against the same topology in
memory), in ``bench/connector_cases.py``; the state cases (issue 29: 10 million keys on
disk against 10,000 in memory, several minutes, so only with ``--only state-``) in
``bench/state_cases.py``; the README-style word count, its targets and the scaling table
(issue 30) in ``bench/readme_cases.py`` and ``bench/readme_report.py``, latency against
the run's capacity in ``bench/latency_cases.py``, the bytewax peer (``--peers``) in
``bench/peer_cases.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from cases import ACKED_MAX_PENDING, CASES, CONF_ENV  # noqa: E402
from connector_cases import CONNECTOR_CASES  # noqa: E402
from latency_cases import LATENCY_CASES, latency_load_report, latency_plan  # noqa: E402
from peer_cases import PEER_CASES, peer_plan  # noqa: E402
from readme_cases import README_CASES  # noqa: E402
from readme_report import (  # noqa: E402
    BASELINE,
    baseline_ratios,
    needs_baseline,
    readme_plan,
    readme_targets,
    scaling_table,
    spread_line,
)
from state_cases import STATE_CASES, state_plan, state_report  # noqa: E402
from streams_cases import STREAMS_CASES  # noqa: E402

from topology.runtime.compiled import describe  # noqa: E402

# -- the driver ----------------------------------------------------------------------------


def run_case(case: str, **params: Any) -> dict[str, Any]:
    """Run one case in a fresh interpreter; its JSON result (or an ``error``)."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    command = [sys.executable, os.path.abspath(__file__), "--case", case, json.dumps(params)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {done.returncode}: {tail}"}


#: Cases ``--repeat`` runs again (throughput; latency and memory cases run once).
REPEATABLE = ("loop", "zmq", "wc-", "stateful", "redis-pg", "parquet", "pipeline", "peer-")
#: Rounds of the repeatable cases unless ``--repeat`` says otherwise: one run of a case
#: lands up to ±15 % off on this VM; the median of three per-round ratios takes one odd
#: round out (two full runs' medians still differed by up to 12 points).
ROUNDS = 3


def compared(name: str) -> bool:
    """Whether quick mode repeats case ``name``: the cases a target compares, and the plain
    loop every "vs plain loop" figure divides by."""
    compares = ("loop", "zmq-batch", "wc-spark", "stateful", "wc-examples", "pipeline")
    compares += ("wc-readme", "peer-")
    compares += CONNECTOR_PREFIXES
    return name.startswith(compares) or (
        name.startswith("wc-local") and not name.endswith("-unbounded")
    )


def throughput(result: dict[str, Any]) -> float | None:
    """A case's figure: words/s, or records/s for the connector cases."""
    value = result.get("words_per_sec") or result.get("records_per_sec")
    return float(value) if value else None


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median throughput (the lower one of an even count), with every
    run's figure in ``runs``; a run that failed is reported if none succeeded."""
    good = [r for r in runs if throughput(r)]
    if not good:
        return runs[0]
    chosen = dict(sorted(good, key=lambda r: throughput(r) or 0.0)[(len(good) - 1) // 2])
    if len(runs) > 1:
        chosen["runs"] = [_rounded(throughput(r)) for r in runs]
        if any("baseline" in r for r in runs):
            chosen["baselines"] = [r.get("baseline") for r in runs]
        if "exact" in chosen:
            chosen["exact"] = all(r.get("exact") for r in good)
    return chosen


def paired_ratios(a: dict[str, Any], b: dict[str, Any]) -> list[float]:
    """``a / b`` of every round both cases completed (their ``runs``, in round order), or of
    their single figures when they ran once."""
    runs_a, runs_b = a.get("runs"), b.get("runs")
    if runs_a and runs_b and len(runs_a) == len(runs_b):
        return [x / y for x, y in zip(runs_a, runs_b) if x and y]
    x, y = throughput(a), throughput(b)
    return [x / y] if x and y else []


def _rounded(value: float | None) -> int | None:
    return round(value) if value else None


def _run_and_print(name: str, case: str, params: dict, round_: int, rounds: int) -> dict[str, Any]:
    begun = time.monotonic()
    result = run_case(case, **params)
    label = f"{name} (run {round_ + 1}/{rounds})" if rounds > 1 else name
    print(f"  {label}: {json.dumps(result)} ({time.monotonic() - begun:.0f} s)", flush=True)
    return result


def plan(
    full: bool,
    workers: list[int],
    only: set[str] | None,
    peers: bool = False,
    batch_count: bool = False,
    poison: bool = False,
) -> list[tuple[str, str, dict]]:
    secs = 10.0 if full else 5.0
    out: list[tuple[str, str, dict]] = [
        ("loop", "loop", {"secs": secs}),
        ("zmq-batch", "zmq", {"secs": secs, "batch": 1000}),
        ("zmq-single", "zmq", {"secs": secs, "batch": 1}),
    ]
    out += readme_plan(workers, secs, batch_count, poison)  # issue 30: what users run
    if peers:
        out += peer_plan(workers, secs)
    for w in workers:
        out.append(
            (f"wc-local-{w}-unacked", "wc-local", {"secs": secs, "workers": w, "acked": False})
        )
        acked = {"secs": secs, "workers": w, "acked": True}
        out.append((f"wc-local-{w}-acked", "wc-local", {**acked, "max_pending": ACKED_MAX_PENDING}))
        out.append((f"wc-local-{w}-acked-unbounded", "wc-local", acked))
    for w in workers:
        out.append(
            (f"wc-spark-{w}-unacked", "wc-spark", {"secs": secs, "workers": w, "acked": False})
        )
    out += latency_plan(workers, secs)  # issue 30: latency against the run's capacity
    for w in workers:
        for rate in (5_000, 20_000):
            out.append(
                (f"latency-{w}-{rate}", "latency", {"secs": secs, "workers": w, "rate": rate})
            )
    out.append(("memory", "memory", {"secs": 60.0 if full else 20.0, "workers": max(workers)}))
    out.append(("stateful", "stateful", {"secs": secs, "workers": max(workers)}))
    connector = {"secs": secs, "workers": max(workers)}
    out.append(("redis-pg", "redis-pg", connector))
    out.append(("redis-pg-memory", "redis-pg", {**connector, "memory": True}))
    out.append(("parquet-sink", "parquet", connector))
    out.append(("parquet-memory", "parquet", {**connector, "memory": True}))
    for variant in ("handwritten", "fused", "unfused"):  # issue 27: fusion
        out.append((f"pipeline-{variant}", "pipeline", {**connector, "variant": variant}))
    for variant in ("handwritten", "streams"):  # the word count examples as users write them
        out.append((f"wc-examples-{variant}", "wc-examples", {"secs": secs, "variant": variant}))
    if only and any(o.startswith("state-") for o in only):  # issue 29: minutes each
        out += state_plan(max(workers))
    if only and any(o.startswith("q0") for o in only):  # issue 42: chained to the spout
        for variant in ("for_each", "sink"):
            for acked in (False, True):
                name = f"q0-{variant}-{'acked' if acked else 'unacked'}"
                out.append((name, "q0", {**connector, "variant": variant, "acked": acked}))
    if only:
        out = [item for item in out if any(item[0].startswith(o) for o in only)]
    return out


def report(results: dict[str, dict[str, Any]], workers: list[int]) -> None:
    def rate(name: str) -> float | None:
        value = results.get(name, {}).get("words_per_sec")
        return float(value) if value else None

    loop, batched = rate("loop"), rate("zmq-batch")
    skip = (*CONNECTOR_PREFIXES, "state-", "latency-load-", "peer-")
    words = {k: v for k, v in results.items() if not k.startswith(skip)}
    if words:
        print("\n## Throughput (words/s through the count step)\n")
        print("| case | words/s | vs plain loop | vs pyzmq batched pipeline | counts exact |")
        print("|---|---|---|---|---|")
    for name, result in words.items():
        value = rate(name)
        if value is None:
            if "error" in result:
                print(f"| {name} | error: {result['error']} | | | |")
            continue
        vs_loop = f"{value / loop:.0%}" if loop else "-"
        vs_zmq = f"{value / batched:.0%}" if batched else "-"
        exact = {True: "yes", False: "NO", None: "-"}[result.get("exact")]
        runs = result.get("runs")
        spread = f" (runs: {', '.join(f'{r:,}' if r else 'error' for r in runs)})" if runs else ""
        print(f"| {name} | {value:,.0f}{spread} | {vs_loop} | {vs_zmq} | {exact} |")
    if BASELINE in results:
        every = [*(results[BASELINE].get("runs") or [throughput(results[BASELINE])])]
        every += [b for r in results.values() for b in r.get("baselines") or []]
        print("\n" + spread_line([float(b) for b in every if b]))
    peer_table(results)
    scaling_table(results, workers)
    latency = {
        k: v
        for k, v in results.items()
        if k.startswith("latency-") and not k.startswith("latency-load-") and "error" not in v
    }
    if latency:
        print("\n## Latency, acked, spouts paced (ms)\n")
        print("| workers | sentences/s | emit → count p50/p99/p99.9 | complete p50/p99/p99.9 |")
        print("|---|---|---|---|")
        for name, r in latency.items():
            _, w, sentences = name.split("-")

            def cell(p: Any) -> str:
                return "-" if not p else f"{p['p50']:.1f} / {p['p99']:.1f} / {p['p999']:.1f}"

            to_count, complete = cell(r["to_count_ms"]), cell(r["complete_ms"])
            print(f"| {w} | {int(sentences):,} | {to_count} | {complete} |")
    if "memory" in results and "error" not in results["memory"]:
        m = results["memory"]
        print("\n## Memory with a slow bolt (RSS per worker, MB)\n")
        print(f"first {m['rss_first_mb']}, last {m['rss_last_mb']}, max {m['rss_max_mb']}")
    spark = [r for k, r in results.items() if k.startswith("wc-spark") and "stack_start_secs" in r]
    if spark:
        print(
            f"\nStart-up: ZooKeeper + Spark + nimbus {spark[0]['stack_start_secs']:.1f} s; "
            f"submit until every worker runs {spark[0]['submit_secs']:.1f} s"
        )
    connector_table(results)
    state_report(results)
    extra = latency_load_report(results)
    extra += readme_targets(results, workers, paired_ratios)
    targets(results, workers, extra)


def peer_table(results: dict[str, dict[str, Any]]) -> None:
    rows = {k: v for k, v in results.items() if k.startswith("peer-")}
    if not rows:
        return
    print("\n## Peers: the same word count on another framework (words/s through the count)\n")
    print("| case | words/s | windows | counts exact |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        if "skipped" in r or "error" in r:
            print(f"| {name} | {r.get('skipped') or 'error: ' + str(r.get('error'))} | | |")
            continue
        runs = r.get("runs")
        spread = f" (runs: {', '.join(f'{x:,}' if x else 'error' for x in runs)})" if runs else ""
        windows = ", ".join(f"{w:,}" for w in r.get("windows", []))
        exact = {True: "yes", False: "NO", None: "-"}[r.get("exact")]
        print(f"| {name} ({r.get('peer', '')}) | {r['words_per_sec']:,.0f}{spread} | {windows} "
              f"| {exact} |")  # fmt: skip


#: Names of the connector cases (their own table: records/s through the sink).
CONNECTOR_PREFIXES = ("redis-pg", "parquet")


def connector_table(results: dict[str, dict[str, Any]]) -> None:
    rows = {k: v for k, v in results.items() if k.startswith(CONNECTOR_PREFIXES)}
    if not rows:
        return
    print("\n## Connectors, exactly-once, 1 s checkpoints (input records/s committed)\n")
    print("| case | records/s (median window) | windows | mean of the windows | notes |")
    print("|---|---|---|---|---|")
    for name, result in rows.items():
        value = throughput(result)
        if value is None:
            print(f"| {name} | error: {result.get('error', 'no figure')} | | | |")
            continue
        runs = result.get("runs")
        spread = f" (runs: {', '.join(f'{r:,}' if r else 'error' for r in runs)})" if runs else ""
        windows = ", ".join(f"{w:,}" for w in result.get("windows", []))
        mean = f"{result['mean_per_sec']:,.0f}" if result.get("mean_per_sec") else "-"
        notes = [
            f"{k} {result[k]:,}" for k in ("executed", "committed", "rows", "files") if k in result
        ]
        if result.get("ran_dry"):
            notes.append("RAN DRY: prefill more entries")
        print(f"| {name} | {value:,.0f}{spread} | {windows} | {mean} | {', '.join(notes)} |")


def targets(
    results: dict[str, dict[str, Any]],
    workers: list[int],
    extra: list[tuple[str, str, bool | None]] = (),  # type: ignore[assignment]
) -> None:
    rows: list[tuple[str, str, bool | None]] = []

    def ratio(a: str, b: str, at_least: float | None, what: str) -> None:
        paired = paired_ratios(results.get(a, {}), results.get(b, {}))
        if b == BASELINE and baseline_ratios(results.get(a, {})):
            paired = baseline_ratios(results[a])  # the pipeline run just before each run
        if paired:
            value = statistics.median(paired)
            # one decimal: a whole percent would print 74.8 % as a failing "75%"
            rounds = len(results.get(a, {}).get("runs") or [None])
            if len(paired) > 1:
                shown = f"{value:.1%} (median of {', '.join(f'{r:.1%}' for r in paired)})"
            else:
                shown = f"{value:.1%}" + (f" (1 of {rounds} rounds)" if rounds > 1 else "")
            rows.append((what, shown, None if at_least is None else value >= at_least))

    top = max(workers)
    ratio(
        f"wc-local-{top}-unacked",
        "zmq-batch",
        0.5,
        f"unacked, {top} workers ≥ 50% of the pyzmq batched pipeline",
    )
    for w in workers:
        ratio(
            f"wc-local-{w}-acked",
            f"wc-local-{w}-unacked",
            0.75,
            f"acked (max spout pending {ACKED_MAX_PENDING}) ≥ 75% of unacked, {w} worker(s)",
        )
        ratio(
            f"wc-local-{w}-acked-unbounded",
            f"wc-local-{w}-unacked",
            None,
            f"acked without a pending cap (Storm's default), {w} worker(s): for reference",
        )
        ratio(
            f"wc-spark-{w}-unacked",
            f"wc-local-{w}-unacked",
            0.9,
            f"Spark ≥ 90% of LocalCluster, {w} worker(s)",
        )
    for w, bound in ((1, 20.0), (2, 10.0)):
        r = results.get(f"latency-{w}-20000", {})
        p = r.get("to_count_ms")
        if p:
            rows.append(
                (
                    f"{w} worker(s), acked, 20,000 sentences/s: p99 ≤ {bound:g} ms",
                    f"{p['p99']:.1f} ms",
                    p["p99"] <= bound,
                )
            )
    ratio(
        "stateful",
        f"wc-local-{top}-acked",
        0.7,
        "stateful, 1 s checkpoints ≥ 70% of stateless acked",
    )
    ratio(
        "redis-pg",
        "redis-pg-memory",
        0.5,
        "redis -> count -> postgres, exactly-once: ≥ 50 % of in-memory",
    )
    ratio("parquet-sink", "parquet-memory", 0.7, "parquet sink: ≥ 70 % of in-memory")
    ratio(
        "pipeline-fused",
        "pipeline-handwritten",
        0.85,
        "five-step pipeline, fused: ≥ 85 % of the same steps in one hand-written bolt",
    )
    ratio("pipeline-fused", "pipeline-unfused", 2.0, "five-step pipeline: fused ≥ 2× unfused")
    ratio(
        "wc-examples-streams",
        "wc-examples-handwritten",
        0.9,
        "examples/streams_wordcount.py ≥ 90 % of examples/wordcount.py",
    )
    if "memory" in results and "growth" in results["memory"]:
        g = results["memory"]["growth"]
        what = "memory flat under a slow bolt (second half: last ≤ 1.1 × middle)"
        rows.append((what, f"{g:.2f}×", g <= 1.1))
    rows += extra
    exact = [r.get("exact") for r in results.values() if "exact" in r]
    if exact:
        rows.append(("every word count exact", f"{sum(map(bool, exact))}/{len(exact)}", all(exact)))
    print("\n## Targets (issues 12, 26, 27 and 30)\n")
    print("| target | measured | |")
    print("|---|---|---|")
    for what, measured, ok in rows:
        verdict = "-" if ok is None else "pass" if ok else "FAIL"
        print(f"| {what} | {measured} | {verdict} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="longer windows (for the docs)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", nargs="+", help="run only cases whose name starts so")
    parser.add_argument(
        "--repeat",
        type=int,
        default=ROUNDS,
        metavar="N",
        help="run the throughput cases (baselines included; in quick mode those a target "
        f"compares) N times, round-robin (default {ROUNDS}); a case reports its median run, "
        "a target the median of its per-round ratios",
    )
    parser.add_argument(
        "-c",
        dest="conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="topology config for every sparkstorm case (value parsed as YAML), for A/Bs",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also run the word count on bytewax (if installed), same workload, same rounds",
    )
    parser.add_argument(
        "--batch-count",
        action="store_true",
        help="also run the README-style cases with a count bolt that uses execute_batch",
    )
    parser.add_argument(
        "--poison",
        action="store_true",
        help="also run the acked README-style case with one poison sentence per 1,000 "
        "(issue 40: its words/s over the clean run's, per round)",
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("params", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat: expected a number >= 1, got {args.repeat}")
    if args.case:
        case = {
            **CASES,
            **CONNECTOR_CASES,
            **STREAMS_CASES,
            **STATE_CASES,
            **README_CASES,
            **PEER_CASES,
            **LATENCY_CASES,
        }[args.case]
        result = case(**json.loads(args.params or "{}"))
        print("RESULT " + json.dumps(result), flush=True)
        return
    overrides = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"-c {item!r}: expected KEY=VALUE")
        overrides[key] = yaml.safe_load(value)
    os.environ[CONF_ENV] = json.dumps(overrides)  # inherited by every case's process
    print(
        f"# sparkstorm bench/run.py {'--full' if args.full else '(quick)'}"
        + (f" --repeat {args.repeat}" if args.repeat != ROUNDS else "")
        + " — "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"{describe()}" + (f", conf {json.dumps(overrides)}" if overrides else "")
    )
    results: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    cases = plan(
        args.full, args.workers, set(args.only or []), args.peers, args.batch_count, args.poison
    )
    repeated = [c for c in cases if c[0].startswith(REPEATABLE) and (args.full or compared(c[0]))]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in repeated}
    baseline = next((c for c in plan(args.full, args.workers, None) if c[0] == BASELINE), None)
    for round_ in range(args.repeat):
        for name, case, params in repeated:
            base = None
            if baseline is not None and needs_baseline(name, args.workers):
                label = f"{BASELINE} before {name}"
                base = throughput(_run_and_print(label, *baseline[1:], round_, args.repeat))
            result = _run_and_print(name, case, params, round_, args.repeat)
            if base is not None:
                result["baseline"] = base
            runs[name].append(result)
    for name, case, params in cases:
        if name in runs:
            results[name] = median_run(runs[name])
        else:
            results[name] = _run_and_print(name, case, params, 0, 1)
    report(results, args.workers)
    print(f"\n{time.monotonic() - started:.0f} s in all")


if __name__ == "__main__":
    main()
