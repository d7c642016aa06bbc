"""Checkpointed state: what exactly-once costs, and which local store to use.

1. Throughput: the word count of ``bench/wordcount.py`` four ways on LocalCluster —
   stateless without acking, stateless with acking (the baseline: at-least-once), and
   with the count in a ``StatefulBolt`` fed by a ``ReplayableSpout`` with a checkpoint
   every second, on the ``sqlite`` and on the ``directory`` provider.  Figure: words/s
   executed by the count bolt; the ratio to the acked baseline measured in the same run.
2. The store: durable checkpoints of N changed keys each, written through the ``sqlite``
   provider and through a minimal LMDB store with the same protocol (rows staged under
   (checkpoint, epoch), moved to committed at completion, restore = newest committed
   version per key); ms per checkpoint and for a restore.  Needs ``pip install lmdb``.

Run::

    python bench/stateful.py [--workers 2] [--seconds 8] [--warmup 3] [--part both]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from wordcount import SplitBolt, measure, measure_topology  # noqa: E402

from topology import ReplayableSpout, StatefulBolt, TopologyBuilder  # noqa: E402
from topology.state.backends import KEEP_COMPLETE, SqliteBackend  # noqa: E402


class ReplayableSentences(ReplayableSpout):
    """The benchmark's sentences; its position is the next sentence index."""

    outputs = ["sentence"]

    def open(self, conf, context):
        self.i = context.task_index
        self.step = len(context.component_tasks())

    def next_tuple(self):
        i = self.i
        self.i += self.step
        self.emit([" ".join([f"w{(i * 7 + k * 13) % 1000}" for k in range(10)])])

    def position(self):
        return self.i

    def seek(self, position):
        self.i = position


class StatefulCount(StatefulBolt):
    outputs = ["word", "count"]

    def execute(self, tup):
        word = tup.values[0]
        state = self.state
        state.put(word, state.get(word, 0) + 1)


def stateful_topology(workers: int):
    builder = TopologyBuilder()
    builder.set_spout("sentences", ReplayableSentences(), parallelism=workers)
    builder.set_bolt("split", SplitBolt(), parallelism=workers).shuffle_grouping("sentences")
    builder.set_bolt("count", StatefulCount(), parallelism=workers).fields_grouping(
        "split", ["word"]
    )
    return builder.create_topology()


def throughput(workers: int, seconds: float, warmup: float) -> None:
    print("| topology | words/s through count | vs stateless acked |")
    print("|---|---|---|")
    unacked = measure(workers, seconds, warmup, acked=False, conf_extra={})
    base = measure(workers, seconds, warmup, acked=True, conf_extra={})
    print(f"| stateless, unacked (no guarantee) | {unacked:,.0f} | {unacked / base:.0%} |")
    print(f"| stateless, acked (at-least-once) | {base:,.0f} | 100% |", flush=True)
    for provider in ("sqlite", "directory"):
        with tempfile.TemporaryDirectory() as folder:
            conf = {
                "topology.workers": workers,
                "topology.state.provider": provider,
                "topology.state.dir": folder,
                "topology.state.checkpoint.interval.ms": 1000,
            }
            rate = measure_topology(stateful_topology(workers), conf, seconds, warmup)
        print(
            f"| stateful, {provider}, checkpoint every 1 s (exactly-once) | {rate:,.0f} "
            f"| {rate / base:.0%} |",
            flush=True,
        )


class LmdbStore:
    """The checkpoint protocol on LMDB, as small as it gets (for this comparison only)."""

    def __init__(self, path: str, sync: bool) -> None:
        import lmdb

        self.env = lmdb.open(path, map_size=1 << 30, sync=sync, metasync=sync)

    def write(self, checkpoint: int, epoch: int, scope: str, entries) -> None:
        prefix = b"s|%d|%d|%s|" % (checkpoint, epoch, scope.encode())
        with self.env.begin(write=True) as txn:
            for key, value in entries:
                txn.put(prefix + key, value)

    def complete(self, checkpoint: int, epoch: int) -> None:
        prefix = b"s|%d|%d|" % (checkpoint, epoch)
        with self.env.begin(write=True) as txn:
            cursor = txn.cursor()
            moved = []
            if cursor.set_range(prefix):
                for key, value in cursor:
                    if not key.startswith(prefix):
                        break
                    moved.append((key, value))
            for key, value in moved:
                txn.delete(key)
                name = b"c|" + key[len(prefix) :] + b"|"
                txn.put(name + checkpoint.to_bytes(8, "big"), value)
                if checkpoint > KEEP_COMPLETE:  # compaction, as the sqlite provider does
                    txn.delete(name + (checkpoint - KEEP_COMPLETE).to_bytes(8, "big"))
            txn.put(b"done|%d" % checkpoint, b"1")

    def read(self, checkpoint: int, scope: str) -> dict[bytes, bytes]:
        prefix = b"c|" + scope.encode() + b"|"
        out: dict[bytes, bytes] = {}
        with self.env.begin() as txn:
            cursor = txn.cursor()
            if cursor.set_range(prefix):
                for key, value in cursor:
                    if not key.startswith(prefix):
                        break
                    name, version = key[len(prefix) : -9], int.from_bytes(key[-8:], "big")
                    if version <= checkpoint:
                        out[name] = value
        return out


def store(checkpoints: int, sizes: list[int]) -> None:
    print("\n| store | changed keys per checkpoint | ms per checkpoint | restore ms |")
    print("|---|---|---|---|")
    for size in sizes:
        entries = [(msgpack.packb(f"w{k}"), msgpack.packb(k * 31)) for k in range(size)]
        stores = [("sqlite (WAL, synchronous=NORMAL)", None)]
        try:
            import lmdb  # noqa: F401

            stores += [("lmdb (sync off, like WAL NORMAL)", False), ("lmdb (sync on)", True)]
        except ImportError:
            print("| lmdb | - | not installed: pip install lmdb | - |")
        for name, sync in stores:
            with tempfile.TemporaryDirectory() as folder:
                per, restore_ms = time_store(folder, sync, entries, checkpoints)
            print(f"| {name} | {size:,} | {per:.2f} | {restore_ms:.1f} |", flush=True)


def time_store(folder: str, sync: bool | None, entries, checkpoints: int) -> tuple[float, float]:
    """(ms per checkpoint, ms to restore) for the sqlite provider (``sync`` None) or the
    LMDB store."""
    if sync is None:
        backend = SqliteBackend(os.path.join(folder, "state.db"))

        def write(checkpoint: int) -> None:
            backend.write(checkpoint, 1, "count", entries)
            backend.complete(checkpoint, 1, {})

        def read(checkpoint: int) -> dict:
            return backend.read(checkpoint, "count", lambda key: True)
    else:
        lm = LmdbStore(folder, sync)

        def write(checkpoint: int) -> None:
            lm.write(checkpoint, 1, "count", entries)
            lm.complete(checkpoint, 1)

        def read(checkpoint: int) -> dict:
            return lm.read(checkpoint, "count")

    start = time.perf_counter()
    for checkpoint in range(1, checkpoints + 1):
        write(checkpoint)
    per = (time.perf_counter() - start) / checkpoints * 1000
    start = time.perf_counter()
    restored = read(checkpoints)
    restore_ms = (time.perf_counter() - start) * 1000
    assert len(restored) == len(entries), len(restored)
    return per, restore_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--checkpoints", type=int, default=100)
    parser.add_argument("--part", choices=["throughput", "store", "both"], default="both")
    args = parser.parse_args()
    if args.part in ("throughput", "both"):
        throughput(args.workers, args.seconds, args.warmup)
    if args.part in ("store", "both"):
        store(args.checkpoints, [1_000, 10_000])


if __name__ == "__main__":
    main()
