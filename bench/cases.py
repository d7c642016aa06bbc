"""The cases of ``bench/run.py``: each measures one configuration and returns plain data.

``bench/run.py`` runs every case in a fresh Python process (``run.py --case NAME PARAMS``)
and collects the JSON it prints.  The cases:

* ``loop`` — the plain single-process loop: generate sentence *i*, split it, count words;
* ``zmq-batch`` / ``zmq-single`` — a hand-written 2-process pipeline: the split process
  pushes msgpack batches of 1,000 words (or one word per message) over pyzmq PUSH/PULL to
  the count process;
* ``wc-local`` / ``wc-spark`` — the word count (spout → split shuffle → count fields),
  acked or not, on LocalCluster or through Spark (ZooKeeper + nimbus + a Spark task per
  worker: the ``sparkstorm local`` path); words/s through the count bolt after a warm-up,
  then the spouts are stopped, the topology drained, and every count checked exact; acked
  with ``topology.max.spout.pending`` 500 (as README recommends) and, ``-unbounded``,
  without a cap (Storm's default);
* ``latency`` — the acked word count with the spouts paced at a fixed sentence rate: p50 /
  p99 / p99.9 from the spout's emit to the count bolt, and of the complete latency;
* ``memory`` — every worker's RSS while a deliberately slow bolt holds the spouts back;
* ``stateful`` — the word count with its count in a ``StatefulBolt`` and a checkpoint a
  second (exactly-once), against the acked one.

Sentence *i* is the ten words ``w{(7i + 13k) mod 1000}``, k = 0..9 (as in bench/wordcount.py).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from workload import (  # noqa: E402
    WARMUP_SECS,
    Count,
    ReplayableSentences,
    Sentences,
    StatefulCount,
    sentence,
    word_count,
)


def executed(status: list[dict[str, Any]], component: str = "count") -> int:
    return sum(
        t["executed"] for w in status for t in w["tasks"].values() if t["component"] == component
    )


def verify(results: dict[str, dict[int, Any]]) -> bool:
    """Every word's count equals its occurrences in the sentences the spouts emitted."""
    expected: Counter = Counter()
    for spout in results["sentences"].values():
        for i in range(spout["first"], spout["next"], spout["step"]):
            expected.update(sentence(i).split())
    counted: Counter = Counter()
    for task in results["count"].values():
        counted.update(task["counts"])
    return counted == expected


def merged(results: dict[str, dict[int, Any]], component: str, key: str) -> Any:
    """The task with the most samples' percentiles (tasks see similar traffic)."""
    found = [r[key] for r in results[component].values() if r.get(key)]
    return max(found, key=lambda p: p["n"]) if found else None


def case_loop(secs: float, **_: Any) -> dict[str, Any]:
    counts: dict[str, int] = {}
    words = i = 0
    start = time.perf_counter()
    while time.perf_counter() - start < secs:
        for _ in range(1000):
            for word in sentence(i).split():
                counts[word] = counts.get(word, 0) + 1
            i += 1
        words += 10_000
    return {"words_per_sec": words / (time.perf_counter() - start)}


def _zmq_counter(port_queue: Any, result_queue: Any, secs: float, warmup: float) -> None:
    import msgpack
    import zmq

    sock = zmq.Context().socket(zmq.PULL)
    port_queue.put(sock.bind_to_random_port("tcp://127.0.0.1"))
    counts: dict[str, int] = {}
    words = 0
    start = time.perf_counter()
    measured_from, measured_words = None, 0
    while True:
        batch = msgpack.unpackb(sock.recv())
        for word in batch:
            counts[word] = counts.get(word, 0) + 1
        words += len(batch)
        now = time.perf_counter()
        if measured_from is None and now - start >= warmup:
            measured_from, measured_words = now, words
        if measured_from is not None and now - measured_from >= secs:
            result_queue.put((words - measured_words) / (now - measured_from))
            return


def case_zmq(secs: float, batch: int, **_: Any) -> dict[str, Any]:
    import msgpack
    import zmq

    ports: Any = multiprocessing.Queue()
    results: Any = multiprocessing.Queue()
    counter = multiprocessing.Process(target=_zmq_counter, args=(ports, results, secs, 2.0))
    counter.start()
    sock = zmq.Context().socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, 1000)
    sock.connect(f"tcp://127.0.0.1:{ports.get()}")
    i = 0
    pending: list[str] = []
    while counter.is_alive() and results.empty():
        for word in sentence(i).split():
            pending.append(word)
            if len(pending) >= batch:
                try:
                    sock.send(msgpack.packb(pending), zmq.NOBLOCK)
                except zmq.Again:
                    sock.send(msgpack.packb(pending))
                pending = []
        i += 1
    rate = results.get(timeout=30)
    counter.join(10)
    sock.close(linger=0)
    return {"words_per_sec": rate}


def _drain_and_verify(cluster: Any, name: str) -> bool:
    cluster.deactivate(name)
    cluster.wait_until_drained(name, timeout=120)
    return verify(cluster.results(name))


#: Windows each throughput case is measured in (its figure is their median: a few seconds
#: of interference from elsewhere on a shared VM move one window, not the figure).
WINDOWS = 3


def _measure(
    cluster: Any,
    name: str,
    secs: float,
    warmup: float,
    component: str = "count",
    count: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """Words/s through the count step (or ``component``; or of the running total ``count``
    returns, a case's own figure): the median of :data:`WINDOWS` consecutive windows
    filling ``secs`` after ``warmup`` (``windows`` lists them all)."""

    def total() -> float:
        return count() if count else executed(cluster.worker_status(name), component)

    time.sleep(warmup)
    rates = []
    c0, t0 = total(), time.monotonic()
    for _ in range(WINDOWS):
        time.sleep(secs / WINDOWS)
        c1, t1 = total(), time.monotonic()
        rates.append((c1 - c0) / (t1 - t0))
        c0, t0 = c1, t1
    return {"words_per_sec": statistics.median(rates), "windows": [round(r) for r in rates]}


#: Environment variable carrying ``-c KEY=VALUE`` overrides (JSON) to each case's process.
CONF_ENV = "SPARKSTORM_BENCH_CONF"


#: ``topology.max.spout.pending`` of the acked word count cases: the cap README recommends
#: for acked topologies (docs/BENCHMARKS_HISTORY.md, "Pending trees and the CPU cache").  The
#: ``-unbounded`` cases run without one, Storm's default.
ACKED_MAX_PENDING = 500


def _conf(workers: int, acked: bool, max_pending: int | None = None) -> dict[str, Any]:
    """The topology conf of a case: its workers, acking and cap on pending trees, then
    ``-c`` overrides."""
    base = {
        "topology.workers": workers,
        "topology.acker.executors": None if acked else 0,
        "topology.max.spout.pending": max_pending,
    }
    return {**base, **_overrides()}


def _overrides() -> dict[str, Any]:
    """The ``-c KEY=VALUE`` overrides this case's process was given."""
    return dict(json.loads(os.environ.get(CONF_ENV) or "{}"))


def case_wc_local(
    secs: float, workers: int, acked: bool, max_pending: int | None = None, **_: Any
) -> dict[str, Any]:
    from topology import LocalCluster

    with LocalCluster() as cluster:
        topology = word_count(workers, Sentences(acked), Count())
        cluster.submit_topology("wc", _conf(workers, acked, max_pending), topology)
        measured = _measure(cluster, "wc", secs, 3.0)
        exact = _drain_and_verify(cluster, "wc")
    return {**measured, "exact": exact}


def case_wc_spark(secs: float, workers: int, acked: bool, **_: Any) -> dict[str, Any]:
    from topology.testing import LocalStack

    started = time.monotonic()
    with LocalStack({}) as stack, stack.cluster() as cluster:
        stack_secs = time.monotonic() - started
        submitted = time.monotonic()
        topology = word_count(workers, Sentences(acked), Count())
        cluster.submit_topology("wc", _conf(workers, acked), topology)
        submit_secs = time.monotonic() - submitted
        measured = _measure(cluster, "wc", secs, 3.0)
        exact = _drain_and_verify(cluster, "wc")
        cluster.kill_topology("wc", wait_secs=0)
    return {
        **measured,
        "exact": exact,
        "stack_start_secs": stack_secs,
        "submit_secs": submit_secs,
    }


def case_latency(secs: float, workers: int, rate: float, **_: Any) -> dict[str, Any]:
    from topology import LocalCluster

    with LocalCluster() as cluster:
        topology = word_count(workers, Sentences(True, rate=rate / workers), Count())
        cluster.submit_topology("lat", _conf(workers, True), topology)
        time.sleep(WARMUP_SECS + secs)
        results = cluster.results("lat")
    return {
        "to_count_ms": merged(results, "count", "latency_ms"),
        "complete_ms": merged(results, "sentences", "complete_ms"),
    }


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def case_memory(secs: float, workers: int, **_: Any) -> dict[str, Any]:
    from topology import LocalCluster

    with LocalCluster() as cluster:
        topology = word_count(workers, Sentences(True), Count(slow_secs=0.0005))
        cluster.submit_topology("mem", _conf(workers, True), topology)
        time.sleep(5.0)
        samples: list[list[float]] = []
        start = time.monotonic()
        while time.monotonic() - start < secs:
            samples.append([_rss_mb(pid) for pid in cluster.worker_pids("mem")])
            time.sleep(secs / 12)
    first, last = samples[0], samples[-1]
    return {
        "rss_first_mb": [round(v, 1) for v in first],
        "rss_last_mb": [round(v, 1) for v in last],
        "rss_max_mb": [round(max(s[w] for s in samples), 1) for w in range(len(first))],
        # after the ramp-up (queues and statistics windows fill in the first half)
        "growth": max(b / a for a, b in zip(samples[len(samples) // 2], last, strict=True)),
        "series_mb": [round(sum(sample), 1) for sample in samples],  # all workers
    }


def _stateful_conf(workers: int, folder: str) -> dict[str, Any]:
    """The stateful case's conf: state in ``folder``, a checkpoint every second, then
    ``-c`` overrides (like every other sparkstorm case)."""
    return {
        "topology.workers": workers,
        "topology.state.dir": folder,
        "topology.state.checkpoint.interval.ms": 1000,
        **_overrides(),
    }


def case_stateful(secs: float, workers: int, **_: Any) -> dict[str, Any]:
    from topology import LocalCluster

    with tempfile.TemporaryDirectory() as folder, LocalCluster() as cluster:
        cluster.submit_topology(
            "st",
            _stateful_conf(workers, folder),
            word_count(workers, ReplayableSentences(), StatefulCount()),
        )
        measured = _measure(cluster, "st", secs, 3.0)
        exact = _drain_and_verify(cluster, "st")
    return {**measured, "exact": exact}


CASES = {
    "loop": case_loop,
    "zmq": case_zmq,
    "wc-local": case_wc_local,
    "wc-spark": case_wc_spark,
    "latency": case_latency,
    "memory": case_memory,
    "stateful": case_stateful,
}
