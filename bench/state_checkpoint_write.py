"""The ``sqlite`` checkpoint provider's write path for wide checkpoints: rows per second of
``write`` + ``complete``, schema 0 (the provider before, copied below as
:class:`Schema0Store`) against the provider as it is (:class:`SqliteBackend`), in the same
rounds, and the peak size of the WAL.

    python3 bench/state_checkpoint_write.py [--keys 200000] [--checkpoints 10]
                                            [--rounds 3] [--writers 1]

Per round and store, a new file gets ``--checkpoints`` checkpoints of ``--keys`` rows
each (one scope, 10-byte random keys, msgpack counts as values), each written by one
``write`` and made the one to restore by ``complete`` (3 retained, so compaction runs
from the fourth on), on two key streams:

* ``new``: every key new (a uniform sweep over a key space much larger than the run);
* ``half``: half the keys of each checkpoint new, half from earlier checkpoints (the
  compaction then has older rows to drop).

With ``--writers N`` (N > 1) N processes write their own scope into one file at once,
each checkpoint by the first completing it once all N wrote (the worker processes of a
machine, one coordinator), and the figure is all their rows over the wall time.

It prints per stream and store the rows/s (median over the rounds), the median of the
per-round ratios of the new store to schema 0, and the largest WAL seen (sampled after
every write and complete; largest over the rounds).  The machine is shared: only ratios
within one round compare.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import msgpack

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from topology.state.backends import SqliteBackend  # noqa: E402

Entries = list[tuple[bytes, bytes | None]]
RETAINED = 3


class Schema0Store:
    """The ``sqlite`` provider's write path before (main at 4a84830,
    ``topology/state/backends/sqlite.py``), copied for this comparison: a rowid table with
    a ``committed`` flag per row, its primary key index, ``by_checkpoint`` and the partial
    index ``uncommitted``; ``write`` is one ``INSERT OR REPLACE`` transaction per scope,
    ``complete`` flags the rows, drops uncommitted ones and compacts.  (Pins are left out:
    the table is there, empty, as in a run without savepoints.)"""

    def __init__(self, path: str) -> None:
        self.path = path
        self.db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        self.db.execute("PRAGMA synchronous=NORMAL")
        if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self.db.execute("PRAGMA journal_mode=WAL")
        for statement in (
            "CREATE TABLE IF NOT EXISTS entries (scope TEXT, key BLOB, checkpoint INTEGER, "
            "epoch INTEGER, value BLOB, committed INTEGER DEFAULT 0, "
            "PRIMARY KEY (scope, key, checkpoint, epoch))",
            "CREATE INDEX IF NOT EXISTS by_checkpoint ON entries (checkpoint, epoch)",
            "CREATE TABLE IF NOT EXISTS complete (checkpoint INTEGER PRIMARY KEY, info TEXT)",
            "CREATE TABLE IF NOT EXISTS pinned (checkpoint INTEGER PRIMARY KEY, holder BLOB)",
            "CREATE INDEX IF NOT EXISTS uncommitted ON entries (checkpoint) WHERE committed = 0",
            "CREATE TABLE IF NOT EXISTS compacted (upto INTEGER)",
        ):
            self.db.execute(statement)

    def _transaction(self, work: Callable[[sqlite3.Connection], Any]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            work(self.db)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None:
        self._transaction(
            lambda db: db.executemany(
                "INSERT OR REPLACE INTO entries (scope, key, checkpoint, epoch, value) "
                "VALUES (?, ?, ?, ?, ?)",
                ((scope, key, checkpoint, epoch, value) for key, value in entries),
            )
        )

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE entries SET committed = 1 WHERE checkpoint = ? AND epoch = ?",
                (checkpoint, epoch),
            )
            db.execute(
                "DELETE FROM entries INDEXED BY uncommitted "
                "WHERE committed = 0 AND checkpoint <= ?",
                (checkpoint,),
            )
            db.execute(
                "INSERT OR REPLACE INTO complete VALUES (?, ?)", (checkpoint, json.dumps(info))
            )
            kept = [
                row[0]
                for row in db.execute(
                    "SELECT checkpoint FROM complete ORDER BY checkpoint DESC LIMIT ?",
                    (RETAINED,),
                )
            ]
            db.execute(
                "DELETE FROM complete WHERE checkpoint < ? AND checkpoint NOT IN "
                "(SELECT checkpoint FROM pinned)",
                (min(kept),),
            )
            pinned = db.execute("SELECT MIN(checkpoint) FROM pinned").fetchone()[0]
            oldest = min(kept) if pinned is None else min(min(kept), pinned)
            done = int(db.execute("SELECT MAX(upto) FROM compacted").fetchone()[0] or 0)
            if oldest <= done:
                return
            db.execute(
                "DELETE FROM entries WHERE rowid IN (SELECT e.rowid FROM entries n JOIN "
                "entries e ON e.scope = n.scope AND e.key = n.key WHERE n.committed = 1 AND "
                "n.checkpoint > ? AND n.checkpoint <= ? AND e.committed = 1 AND "
                "e.checkpoint < n.checkpoint)",
                (done, oldest),
            )
            db.execute("DELETE FROM compacted")
            db.execute("INSERT INTO compacted VALUES (?)", (oldest,))

        self._transaction(work)

    def close(self) -> None:
        self.db.close()


STORES: dict[str, Callable[[str], Any]] = {
    "schema 0 (before)": Schema0Store,
    "sqlite (now)": lambda path: SqliteBackend(path, RETAINED),
}


def checkpoints(stream: str, keys: int, count: int, seed: int) -> list[Entries]:
    """``count`` checkpoints of ``keys`` rows of ``stream`` (``new`` or ``half``)."""
    rng = random.Random(seed)
    seen: list[bytes] = []
    out = []
    for _ in range(count):
        fresh = keys if stream == "new" or not seen else keys // 2
        rows = [rng.randbytes(10) for _ in range(fresh)]
        rows += rng.sample(seen, keys - fresh) if keys > fresh else []
        seen += rows[:fresh]
        out.append([(key, msgpack.packb(rng.randrange(1 << 20))) for key in rows])
    return out


def wal_size(path: str) -> int:
    try:
        return os.stat(path + "-wal").st_size
    except FileNotFoundError:
        return 0


def run_one(store_name: str, path: str, plan: list[Entries]) -> tuple[float, int]:
    """Seconds to write and complete ``plan``, and the largest WAL seen."""
    store = STORES[store_name](path)
    peak = 0
    start = time.perf_counter()
    for checkpoint, entries in enumerate(plan, 1):
        store.write(checkpoint, 1, "count", entries)
        peak = max(peak, wal_size(path))
        store.complete(checkpoint, 1, {})
        peak = max(peak, wal_size(path))
    seconds = time.perf_counter() - start
    store.close()
    return seconds, peak


def _writer(store_name: str, path: str, plan: list[Entries], index: int, barrier: Any) -> None:
    """One of ``--writers`` processes: its own scope, every checkpoint; the first
    completes each once all wrote."""
    store = STORES[store_name](path)
    for checkpoint, entries in enumerate(plan, 1):
        store.write(checkpoint, 1, f"count#{index}", entries)
        barrier.wait()
        if index == 0:
            store.complete(checkpoint, 1, {})
        barrier.wait()
    store.close()


def run_many(store_name: str, path: str, plans: list[list[Entries]]) -> tuple[float, int]:
    """Wall seconds for ``len(plans)`` processes writing at once, and the largest WAL seen
    (sampled by this process while they run)."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(plans))
    STORES[store_name](path).close()  # the file and its tables, before they race
    procs = [
        ctx.Process(target=_writer, args=(store_name, path, plan, i, barrier))
        for i, plan in enumerate(plans)
    ]
    peak = 0
    start = time.perf_counter()
    for proc in procs:
        proc.start()
    while any(proc.is_alive() for proc in procs):
        peak = max(peak, wal_size(path))
        procs[0].join(0.01)
    seconds = time.perf_counter() - start
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"a writer of {store_name} failed: {proc.exitcode}")
    return seconds, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--checkpoints", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--writers", type=int, default=1)
    ap.add_argument("--streams", default="new,half")
    args = ap.parse_args()
    streams = args.streams.split(",")
    rows_total = args.keys * args.checkpoints * args.writers
    rates: dict[tuple[str, str], list[float]] = {}
    ratios: dict[str, list[float]] = {s: [] for s in streams}
    peaks: dict[tuple[str, str], int] = {}
    names = list(STORES)
    for rnd in range(args.rounds):
        for stream in streams:
            plans = [
                checkpoints(stream, args.keys, args.checkpoints, seed=rnd * 100 + w)
                for w in range(args.writers)
            ]
            order = names if rnd % 2 == 0 else names[::-1]
            seconds: dict[str, float] = {}
            for name in order:
                folder = tempfile.mkdtemp(prefix="ckpt-write-")
                path = os.path.join(folder, "state.sqlite")
                try:
                    if args.writers == 1:
                        secs, peak = run_one(name, path, plans[0])
                    else:
                        secs, peak = run_many(name, path, plans)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                seconds[name] = secs
                rates.setdefault((stream, name), []).append(rows_total / secs)
                peaks[(stream, name)] = max(peaks.get((stream, name), 0), peak)
                print(
                    f"round {rnd + 1} {stream:5} {name:18} {rows_total / secs:>10,.0f} rows/s "
                    f"WAL peak {peak / 2**20:,.1f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
            ratios[stream].append(seconds[names[0]] / seconds[names[1]])
    print(
        f"\n{args.checkpoints} checkpoints x {args.keys:,} rows, {args.writers} writer(s), "
        f"{args.rounds} rounds\n"
    )
    print("| keys | store | rows/s (write + complete) | vs schema 0 | WAL peak |")
    print("|---|---|---|---|---|")
    for stream in streams:
        for name in names:
            rate = statistics.median(rates[(stream, name)])
            ratio = "1.00" if name == names[0] else f"{statistics.median(ratios[stream]):.2f}"
            peak = peaks[(stream, name)] / 2**20
            print(f"| {stream} | {name} | {rate:,.0f} | {ratio} | {peak:,.0f} MiB |")


if __name__ == "__main__":
    main()
