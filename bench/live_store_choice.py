"""LMDB or RocksDB as the disk-backed live state of a StatefulBolt task: measured.

Each engine runs in a fresh process (``--engine NAME``), on a temporary directory, with the
settings a live store uses (no durability of its own: checkpoints are the durable copy —
LMDB ``sync=False, metasync=False, readahead=False``; RocksDB without its WAL), on the
stored form of the state (keys: 2-byte key group + msgpack key, values: msgpack ints):

1. **bulk load** of ``--keys`` entries in random order, in batches of 10,000 (a restore);
2. **hot put/get**: ``--ops`` read-modify-writes (a count), 90 % on a working set of 10,000
   hot keys and 10 % uniform over all keys; writes batched 1,000 at a time (a batch not yet
   written is read from memory first, as the live store does);
3. **cold get**: ``--ops`` gets uniform over all keys;
4. **cold put/get**: ``--ops`` read-modify-writes uniform over all keys (nearly every one
   a different key: a state far larger than its cache), batched as in 2;

then the process's RSS (anonymous and file-backed, from /proc) and the files' size on
disk.  Run::

    python3 bench/live_store_choice.py [--keys 1000000] [--ops 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import msgpack

HOT_KEYS = 10_000
LOAD_BATCH = 10_000
WRITE_BATCH = 1_000


def stored_key(i: int) -> bytes:
    """A key in stored form: a 2-byte key group and the msgpack of ``f"k{i}"``."""
    return (i % 128).to_bytes(2, "big") + msgpack.packb(f"k{i}")


def rss() -> dict[str, float]:
    """This process's VmRSS, RssAnon, RssFile and VmHWM (peak), in MB."""
    out = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[name] = round(int(rest.split()[0]) / 1024, 1)
    return out


def disk_mb(folder: str) -> float:
    used = 0
    for root, _, files in os.walk(folder):
        for name in files:
            used += os.stat(os.path.join(root, name)).st_blocks * 512
    return round(used / 2**20, 1)


class Engine:
    """What the measurement needs of a store: batched writes, single gets, close."""

    def write(self, batch: list[tuple[bytes, bytes]]) -> None: ...
    def get(self, key: bytes) -> bytes | None: ...
    def close(self) -> None: ...


class Lmdb(Engine):
    def __init__(self, folder: str) -> None:
        import lmdb

        self.env = lmdb.open(
            folder, map_size=1 << 36, sync=False, metasync=False, readahead=False, max_dbs=2
        )
        self.reader: Any = None

    def write(self, batch: list[tuple[bytes, bytes]]) -> None:
        if self.reader is not None:  # a read snapshot kept open pins old pages
            self.reader.abort()
            self.reader = None
        with self.env.begin(write=True) as txn:
            for key, value in batch:
                txn.put(key, value)

    def get(self, key: bytes) -> bytes | None:
        if self.reader is None:
            self.reader = self.env.begin()
        value: bytes | None = self.reader.get(key)
        return value

    def close(self) -> None:
        if self.reader is not None:
            self.reader.abort()
        self.env.close()


class Rocks(Engine):
    def __init__(self, folder: str) -> None:
        from rocksdict import Options, Rdict, WriteOptions

        options = Options(raw_mode=True)
        self.db = Rdict(folder, options)
        writes = WriteOptions()
        writes.disable_wal = True
        self.db.set_write_options(writes)

    def write(self, batch: list[tuple[bytes, bytes]]) -> None:
        from rocksdict import WriteBatch

        wb = WriteBatch(raw_mode=True)
        for key, value in batch:
            wb.put(key, value)
        self.db.write(wb)

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self.db.get(key)
        return value

    def close(self) -> None:
        self.db.close()


ENGINES: dict[str, Callable[[str], Engine]] = {"lmdb": Lmdb, "rocksdb": Rocks}


def read_modify_write(engine: Engine, picks: list[int]) -> None:
    """Count the picked keys: get, add one, put; writes batched, a batch read first."""
    pending: dict[bytes, bytes] = {}
    for i in picks:
        key = stored_key(i)
        raw = pending.get(key) or engine.get(key)
        pending[key] = msgpack.packb(msgpack.unpackb(raw) + 1 if raw else 1)
        if len(pending) >= WRITE_BATCH:
            engine.write(list(pending.items()))
            pending = {}
    engine.write(list(pending.items()))


def measure(engine_name: str, keys: int, ops: int) -> dict[str, Any]:
    rng = random.Random(7)
    folder = tempfile.mkdtemp(prefix=f"live-{engine_name}-")
    try:
        engine = ENGINES[engine_name](folder)
        order = list(range(keys))
        rng.shuffle(order)
        start = time.perf_counter()
        for at in range(0, keys, LOAD_BATCH):
            engine.write([(stored_key(i), msgpack.packb(i)) for i in order[at : at + LOAD_BATCH]])
        load_s = time.perf_counter() - start
        after_load = rss()
        del order
        hot = [rng.randrange(keys) for _ in range(HOT_KEYS)]
        picks = [rng.choice(hot) if rng.random() < 0.9 else rng.randrange(keys) for _ in range(ops)]
        start = time.perf_counter()
        read_modify_write(engine, picks)
        hot_s = time.perf_counter() - start
        after_hot = rss()
        cold = [stored_key(rng.randrange(keys)) for _ in range(ops)]
        start = time.perf_counter()
        for key in cold:
            assert engine.get(key) is not None
        cold_s = time.perf_counter() - start
        start = time.perf_counter()
        read_modify_write(engine, [rng.randrange(keys) for _ in range(ops)])
        cold_rmw_s = time.perf_counter() - start
        engine.close()
        return {
            "engine": engine_name,
            "load_per_sec": round(keys / load_s),
            "hot_ops_per_sec": round(ops / hot_s),
            "cold_gets_per_sec": round(ops / cold_s),
            "cold_rmw_per_sec": round(ops / cold_rmw_s),
            "rss_after_load": after_load,
            "rss_after_hot": after_hot,
            "rss_end": rss(),
            "disk_mb": disk_mb(folder),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        print("RESULT " + json.dumps(measure(args.engine, args.keys, args.ops)), flush=True)
        return
    print(f"# {args.keys:,} keys, {args.ops:,} operations, {os.cpu_count()} cores")
    print(
        "\n| engine | bulk load (entries/s) | hot put/get (ops/s) | cold get (gets/s) "
        "| cold put/get (ops/s) | RSS after load: total / anon / file (MB) | peak RSS (MB) "
        "| on disk (MB) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in ENGINES:
        command = [sys.executable, __file__, "--engine", name]
        command += ["--keys", str(args.keys), "--ops", str(args.ops)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
        if not lines:
            print(f"| {name} | error: {done.stderr.strip()[-200:]} | | | | | | |")
            continue
        r = json.loads(lines[-1][len("RESULT ") :])
        load = r["rss_after_load"]
        print(
            f"| {name} | {r['load_per_sec']:,} | {r['hot_ops_per_sec']:,} "
            f"| {r['cold_gets_per_sec']:,} | {r['cold_rmw_per_sec']:,} "
            f"| {load['VmRSS']} / {load['RssAnon']} / {load['RssFile']} "
            f"| {r['rss_end']['VmHWM']} | {r['disk_mb']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
