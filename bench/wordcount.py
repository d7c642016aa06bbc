"""Word-count throughput on LocalCluster: words/s executed by the count bolt.

Workload (issue 2): sentence i is the ten words ``"w%d" % ((i*7 + k*13) % 1000)`` for k in
0..9; spout -> split (shuffle) -> count (fields on "word"), one task of each component per
worker, acking off.  Run::

    python bench/wordcount.py [--workers 1 2] [--modes unacked acked] [--seconds 10]

Each configuration runs on a fresh LocalCluster: a warm-up, then the count bolt's executed
counter is read at the start and end of the measured window.  Prints a Markdown table
(paste it into docs/BENCHMARKS.md) with the acked/unacked ratio per worker count.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from topology import BasicBolt, Bolt, LocalCluster, Spout, TopologyBuilder  # noqa: E402


class SentenceSpout(Spout):
    outputs = ["sentence"]

    def __init__(self, acked: bool = False) -> None:
        self.acked = acked

    def open(self, conf, context):
        n = len(context.component_tasks())
        self.i = context.task_index
        self.step = n

    def next_tuple(self):
        i = self.i
        self.i += self.step
        words = " ".join([f"w{(i * 7 + k * 13) % 1000}" for k in range(10)])
        self.emit([words], msg_id=i if self.acked else None)


class SplitBolt(BasicBolt):
    outputs = ["word"]

    def process(self, tup):
        emit = self.emit
        for word in tup.values[0].split():
            emit([word])


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def prepare(self, conf, context):
        self.counts = {}

    def execute(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.ack(tup)


def build(workers: int, acked: bool):
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(acked), parallelism=workers)
    builder.set_bolt("split", SplitBolt(), parallelism=workers).shuffle_grouping("sentences")
    builder.set_bolt("count", CountBolt(), parallelism=workers).fields_grouping("split", ["word"])
    return builder.create_topology()


def count_executed(cluster: LocalCluster, name: str) -> int:
    return sum(
        t["executed"]
        for w in cluster.worker_status(name)
        for t in w["tasks"].values()
        if t["component"] == "count"
    )


def measure(workers: int, seconds: float, warmup: float, acked: bool, conf_extra: dict) -> float:
    conf = {"topology.workers": workers, "topology.acker.executors": None if acked else 0}
    conf.update(conf_extra)
    return measure_topology(build(workers, acked), conf, seconds, warmup)


def measure_topology(topology, conf: dict, seconds: float, warmup: float) -> float:
    """Words/s executed by the ``count`` bolt of ``topology`` on a fresh LocalCluster."""
    with LocalCluster() as cluster:
        cluster.submit_topology("bench", conf, topology)
        time.sleep(warmup)
        c0, t0 = count_executed(cluster, "bench"), time.monotonic()
        time.sleep(seconds)
        c1, t1 = count_executed(cluster, "bench"), time.monotonic()
    return (c1 - c0) / (t1 - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--modes", nargs="+", choices=["unacked", "acked"], default=["unacked", "acked"]
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument(
        "-c",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra topology config (value parsed as int when it is one)",
    )
    args = parser.parse_args()
    extra = {}
    for item in args.c:
        key, _, value = item.partition("=")
        extra[key] = int(value) if value.isdigit() else value
    print("| workers | mode | words/s through count |")
    print("|---|---|---|")
    rates: dict[tuple[int, str], float] = {}
    for workers in args.workers:
        for mode in args.modes:
            rate = measure(workers, args.seconds, args.warmup, mode == "acked", extra)
            rates[workers, mode] = rate
            print(f"| {workers} | {mode} | {rate:,.0f} |", flush=True)
    for workers in args.workers:
        if (workers, "acked") in rates and (workers, "unacked") in rates:
            ratio = rates[workers, "acked"] / rates[workers, "unacked"]
            print(f"\n{workers} worker(s): acked / unacked = {ratio:.0%}")


if __name__ == "__main__":
    main()
