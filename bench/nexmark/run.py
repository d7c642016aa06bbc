"""Nexmark on sparkstorm, beside the plain-Python loop and bytewax, in the same rounds.

    python3 bench/nexmark/run.py --queries q0,q1 --events 1000000 --workers 1 2 --rounds 3
    python3 bench/nexmark/run.py --queries q0,q1,q2,q7 --events 20000 --rounds 1   # smoke

For each round and query:

* **loop** — the query's plain-Python reference (``reference.py``) over the same events
  generated in this process, and the digest of its output, on one core: the floor of the
  work itself.  Its digest is what the others must equal (checked every round).
* **sparkstorm** — the Streams version (``queries.py``) on a ``LocalCluster`` of each
  ``--workers`` count: a :class:`~nexmark.spout.NexmarkSpout` task per worker generating its
  share of the events, the query, and a :class:`~nexmark.sinks.DigestSink`.  Unacked by
  default (``--acked``: msg ids with ackers).  CPU is the workers' user + system time from
  ``/proc/<pid>/stat`` between the submit's return (workers running, generator tables
  built) and the last output; wall time from the submit's return to the last output.
* **bytewax** — bytewax 0.21.1 running the same query (``bytewax_flows.py``, q0-q8) in
  as many processes, started as a cluster (``python -m bytewax.run ... -i p -a ...``);
  CPU and wall time from each process's first batch to its sink's close.

It prints, per query and worker count, events/s, events/s per core, the ratio of
sparkstorm's events/s to the one-core loop's events/s (``x loop``) and to bytewax's with
as many processes (``x bytewax``) — medians of the per-round ratios — bytewax's events/s
and per core, and whether every round was exact.

Hashes in the digests need one ``PYTHONHASHSEED`` everywhere: the runner re-executes itself
with ``PYTHONHASHSEED=0``, which its workers inherit.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
# ``nexmark`` is imported as a package of bench/ (the workers import it so, from the path
# the spout's module came from), never from this script's own directory.
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != HERE]
sys.path.insert(0, os.path.dirname(BENCH))
sys.path.insert(0, BENCH)

from bytewax_cluster import launch  # noqa: E402

from nexmark import queries, reference  # noqa: E402
from nexmark.generator import GeneratorConfig, generator  # noqa: E402
from nexmark.sinks import DigestSink, latest_digest, read_digests, rows_digest  # noqa: E402
from nexmark.spout import NexmarkSpout  # noqa: E402

FLOW = os.path.join(HERE, "bytewax_flows.py")
BYTEWAX_QUERIES = ("q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8")
#: Generated events a chunk of the loop's input.
CHUNK = 10_000


def _events(config: GeneratorConfig, events: int) -> Any:
    gen = generator(config)
    return itertools.chain.from_iterable(
        gen.events(n, min(n + CHUNK, events)) for n in range(0, events, CHUNK)
    )


def digest_of(name: str, result: Any) -> tuple[int, int]:
    """The digest of a query result (the reference's form, or what it collects)."""
    if name in queries.COLLECTED:
        result = queries.COLLECTED[name](result)
    if isinstance(result, dict):
        return latest_digest(result)
    return rows_digest(result)


def run_loop(name: str, events: int, config: GeneratorConfig, folder: str) -> dict[str, Any]:
    """The reference over freshly generated events, and its digest, on this core."""
    generator(config)  # its tables are built before the clock starts, as in the spouts
    reference.SORTED = name in queries.COLLECTED  # (q5's rows are regrouped by window)
    started, cpu = time.perf_counter(), time.process_time()
    try:
        result = reference.QUERIES[name](_events(config, events))
        if name == "q10":
            writer = queries.PartitionWriter(os.path.join(folder, "loop-q10"))
            for row in result:
                writer(row)
            writer.flush()
        digest = digest_of(name, result)
    finally:
        reference.SORTED = True
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - started
    return {"events_per_sec": events / wall, "per_core": events / cpu, "digest": list(digest)}


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (every thread), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError), open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / tick


def run_sparkstorm(
    name: str, events: int, workers: int, config: GeneratorConfig, acked: bool, expected: Any
) -> dict[str, Any]:
    from topology import LocalCluster
    from topology.streams import StreamBuilder

    folder = tempfile.mkdtemp(prefix="nexmark-")
    try:
        sb = StreamBuilder()
        spout = NexmarkSpout(events, config, msg_ids=acked, report=folder)
        stream = sb.new_stream(spout, workers, name="nexmark")
        options = {"folder": os.path.join(folder, "q10")} if name == "q10" else {}
        queries.QUERIES[name](stream, DigestSink(folder, name in queries.UPDATING), **options)
        conf = {
            "topology.workers": workers,
            "topology.acker.executors": None if acked else 0,
            # (a windowed query's tuples are acked when their window fires: no cap)
            "topology.max.spout.pending": 500 if acked and name not in queries.WINDOWED else None,
            "topology.message.timeout.secs": 300,
        }
        with LocalCluster() as cluster:
            cluster.submit_topology("nexmark", conf, sb.build())
            pids = cluster.worker_pids("nexmark")
            cpu0, t0 = _cpu_seconds(pids), time.time()
            done = _wait_spouts(folder, workers, timeout=900)
            cluster.wait_until_drained("nexmark", timeout=900)
            found = _wait_output(folder, expected[0], timeout=30)
            cpu = _cpu_seconds(pids) - cpu0
            errors = cluster.errors("nexmark")
        end = max([found["last_at"], *done])
        exact = [found["count"], found["sum"]] == list(expected)
        if name == "q10":
            exact = exact and list(rows_digest(queries.read_partitions(options["folder"]))) == list(
                expected
            )
        return {
            "events_per_sec": events / max(end - t0, 1e-9),
            "per_core": events / max(cpu, 1e-9),
            "cpu_secs": cpu,
            "exact": exact,
            "errors": sum(len(v) for v in errors.values()),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait_spouts(folder: str, tasks: int, timeout: float) -> list[float]:
    """Wait until every spout task emitted its last event (the files they write then: no
    request to the workers while they run); the wall times they did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return [_json(folder, f"spout-{i}.json")["done_at"] for i in range(tasks)]
        except (FileNotFoundError, ValueError):
            time.sleep(0.1)
    raise TimeoutError("the spouts did not finish")


def _wait_output(folder: str, count: int, timeout: float) -> dict[str, Any]:
    """The sinks' digests once they hold ``count`` results (or stopped changing for 3 s:
    event-time windows fire on the watermark's timer after the topology looks drained)."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while True:
        found = read_digests(folder)
        if found["count"] == count and time.monotonic() - since > 0.3:
            return found
        if found != last:
            last, since = found, time.monotonic()
        elif time.monotonic() - since > 3.0 or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def run_bytewax(
    name: str, events: int, workers: int, config: GeneratorConfig, expected: Any
) -> dict[str, Any]:
    try:
        import bytewax  # noqa: F401
    except ImportError:
        return {"skipped": "bytewax is not installed (pip install bytewax==0.21.1)"}
    folder = tempfile.mkdtemp(prefix="nexmark-bytewax-")
    flow = f"{FLOW}:build({name!r}, {folder!r}, {events}, {config.seed}, {config.first_event_rate})"
    procs = []
    try:
        procs = launch(flow, folder, workers, HERE)
        for p, proc in enumerate(procs):
            if proc.wait(timeout=900) != 0:
                with open(os.path.join(folder, f"log-{p}"), errors="replace") as log:
                    tail = log.read()[-1500:]
                raise RuntimeError(f"bytewax process {p} exited {proc.returncode}:\n{tail}")
        starts = [_json(folder, f"start-{p}.json") for p in range(workers)]
        ends = [_json(folder, f"bytewax-{p}.json") for p in range(workers)]
    finally:
        for proc in procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        shutil.rmtree(folder, ignore_errors=True)
    cpu = sum(e["cpu"] - s["cpu"] for s, e in zip(starts, ends))
    wall = max(e["at"] for e in ends) - min(s["at"] for s in starts)
    digest = [sum(e["count"] for e in ends), sum(e["sum"] for e in ends) & ((1 << 64) - 1)]
    return {
        "events_per_sec": events / wall,
        "per_core": events / cpu,
        "exact": digest == list(expected),
    }


def _json(folder: str, name: str) -> dict[str, Any]:
    with open(os.path.join(folder, name)) as f:
        return dict(json.load(f))


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _fmt(value: float | None, ratio: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if ratio else f"{value / 1000:,.0f} k"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", default="q0,q1,q2", help="comma-separated, or 'all'")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=int, default=10_000, help="events/s of event time")
    parser.add_argument("--acked", action="store_true", help="msg ids with ackers")
    parser.add_argument("--no-bytewax", action="store_true")
    parser.add_argument("--json", help="write every round's figures to this file")
    parser.add_argument(
        "--markdown", action="store_true", help="also print the table as docs/BENCHMARKS.md has it"
    )
    args = parser.parse_args(argv)
    names = [f"q{i}" for i in range(23)] if args.queries == "all" else args.queries.split(",")
    config = GeneratorConfig(seed=args.seed, first_event_rate=args.rate)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for name in names:
            lacking = queries.missing(name)
            if lacking:
                print(f"round {r + 1} {name}: skipped, needs {', '.join(lacking)}", flush=True)
                continue
            with tempfile.TemporaryDirectory() as folder:
                loop = run_loop(name, args.events, config, folder)
            row: dict[str, Any] = {"round": r + 1, "query": name, "loop": loop, "by_workers": {}}
            for w in args.workers:
                found: dict[str, Any] = {
                    "sparkstorm": run_sparkstorm(
                        name, args.events, w, config, args.acked, loop["digest"]
                    )
                }
                if name in BYTEWAX_QUERIES and not args.no_bytewax:
                    found["bytewax"] = run_bytewax(name, args.events, w, config, loop["digest"])
                row["by_workers"][w] = found
                s, b = found["sparkstorm"], found.get("bytewax", {})
                print(
                    f"round {r + 1} {name} w={w}: sparkstorm {_fmt(s['events_per_sec'])}/s "
                    f"({_fmt(s['per_core'])}/s/core, exact {s['exact']}), loop "
                    f"{_fmt(loop['events_per_sec'])}/s, bytewax "
                    f"{_fmt(b.get('events_per_sec'))}/s (exact {b.get('exact', '-')})",
                    flush=True,
                )
            rounds.append(row)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rounds, out, indent=1)
    _report(rounds, names, args)
    if args.markdown:
        _markdown(rounds, names, args)
    return 0


#: Flink 1.13's throughput per core on Nexmark (8 workers, exactly once, RocksDB), as the
#: nexmark/nexmark project's README publishes it (k events/s per core; no figure: none
#: published).
FLINK_PER_CORE_K = {
    "q0": 155,
    "q1": 158,
    "q2": 175,
    "q3": 152,
    "q4": 34,
    "q5": 22,
    "q7": 12,
    "q8": 146,
    "q9": 14,
    "q11": 40,
    "q12": 76,
    "q15": 72,
    "q17": 117,
    "q18": 54,
    "q19": 44,
    "q20": 19,
    "q22": 130,
}


def _medians(mine: list[dict[str, Any]], w: int) -> dict[str, Any]:
    runs = [r["by_workers"][w] for r in mine]
    s = [run["sparkstorm"] for run in runs]
    b = [run.get("bytewax") or {} for run in runs]
    loops = [r["loop"]["events_per_sec"] for r in mine]
    return {
        "events_per_sec": _median([x["events_per_sec"] for x in s]),
        "per_core": _median([x["per_core"] for x in s]),
        "loop": _median(loops),
        "x_loop": _median([x["events_per_sec"] / lp for x, lp in zip(s, loops)]),
        "bytewax": _median([y.get("events_per_sec") for y in b]),
        "bytewax_per_core": _median([y.get("per_core") for y in b]),
        "x_bytewax": _median(
            [
                x["events_per_sec"] / y["events_per_sec"]
                for x, y in zip(s, b)
                if y.get("events_per_sec")
            ]
        ),
        "exact": all(x["exact"] for x in s) and all(y.get("exact", True) for y in b),
    }


def _markdown(rounds: list[dict[str, Any]], names: list[str], args: Any) -> None:
    """The table docs/BENCHMARKS.md keeps: per query and worker count, beside Flink's
    published per-core figure."""
    print(
        "\n| query | workers | events/s | per core | x one-core loop | x bytewax "
        "| bytewax per core | Flink 1.13 per core | exact |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in names:
        mine = [r for r in rounds if r["query"] == name]
        for w in args.workers if mine else []:
            m = _medians(mine, w)
            flink = FLINK_PER_CORE_K.get(name)
            print(
                f"| {name} | {w} | {_fmt(m['events_per_sec'])} | {_fmt(m['per_core'])} "
                f"| {_fmt(m['x_loop'], True)} | {_fmt(m['x_bytewax'], True)} "
                f"| {_fmt(m['bytewax_per_core'])} | {f'{flink} k' if flink else '—'} "
                f"| {'yes' if m['exact'] else 'NO'} |"
            )


def _report(rounds: list[dict[str, Any]], names: list[str], args: Any) -> None:
    """The table: medians over the rounds; each ratio the median of the rounds' own
    ratios (``x loop``: events/s to the one-core loop's events/s; ``x bytewax``: events/s
    to bytewax's with as many processes)."""
    mode = "acked" if args.acked else "unacked"
    print(
        f"\nNexmark, {args.events:,} events, {args.rounds} round(s), {mode}, "
        f"{os.cpu_count()} cores; medians of the rounds (ratios: of each round's figures)"
    )
    print(
        f"{'query':6} {'w':>2} {'events/s':>10} {'per core':>10} {'loop':>10} "
        f"{'x loop':>7} {'bytewax':>10} {'/core':>10} {'x bytewax':>9}  exact"
    )
    for name in names:
        mine = [r for r in rounds if r["query"] == name]
        if not mine:
            continue
        for w in args.workers:
            m = _medians(mine, w)
            print(
                f"{name:6} {w:>2} {_fmt(m['events_per_sec']):>10} {_fmt(m['per_core']):>10} "
                f"{_fmt(m['loop']):>10} {_fmt(m['x_loop'], True):>7} "
                f"{_fmt(m['bytewax']):>10} {_fmt(m['bytewax_per_core']):>10} "
                f"{_fmt(m['x_bytewax'], True):>9}  {'yes' if m['exact'] else 'NO'}"
            )


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":  # one string hash everywhere (the digests)
        os.execve(
            sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    sys.exit(main())
