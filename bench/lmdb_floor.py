"""What LMDB alone costs per key at 10,000,000 keys, from Python: the floor under the
``state-10m`` case of issue 29 (no cache, no checkpoint, no topology).

    python3 bench/lmdb_floor.py [--keys 10000000]     # about a minute

Fills an LMDB file with ``keys`` keys in the live state's stored form (key group +
msgpack), then, over keys in the scrambled order of ``bench/state_cases.py`` (every key a
cache miss, as in that case):

* random ``get`` in one read transaction;
* random ``put`` of the same keys, sorted within a transaction of 5,000 (the store's
  :data:`~topology.state.live.lmdb_store.WRITE_BATCH`) and of 1,000,000 keys, with and
  without ``writemap``;

and prints µs per key.  First, in the same run, it measures the baseline the ``state-10m``
target is a ratio to: the ``state-10k-memory`` case of ``bench/state_cases.py`` (10,000 keys
counted in memory, 2 workers, 10 s after a 5 s warm-up), whose whole cost per tuple is
``2 cores / its tuples/s``.  A count changes every key it reads, so on LMDB one tuple
costs at least a get and a put more; the script prints the ceiling that leaves — the
10,000-key count's cost plus LMDB's get and put, as a share of the 10,000-key count's
throughput — against the target's 50 %.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import zlib

import lmdb
import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SCRAMBLE = 2_654_435_761
#: Workers (and cores) of the in-memory baseline, as in ``state-10k-memory``.
WORKERS = 2
PROBES = 1_000_000


def stored_key(key: int) -> bytes:
    body = msgpack.packb(key)
    return (zlib.crc32(body, zlib.crc32(b"\x91")) % 128).to_bytes(2, "big") + body


def open_env(path: str, writemap: bool) -> lmdb.Environment:
    return lmdb.open(
        path,
        map_size=1 << 34,
        sync=False,
        metasync=False,
        readahead=False,
        meminit=False,
        writemap=writemap,
        max_dbs=2,
    )


def fill(env: lmdb.Environment, keys: int) -> float:
    db = env.open_db(b"values")
    started = time.perf_counter()
    value = msgpack.packb(1)
    for first in range(0, keys, 1_000_000):
        batch = sorted((stored_key(k), value) for k in range(first, min(keys, first + 1_000_000)))
        with env.begin(write=True) as txn:
            txn.cursor(db=db).putmulti(batch)
    return time.perf_counter() - started


def probe_keys(keys: int, offset: int) -> list[bytes]:
    return [stored_key(((i + offset) * SCRAMBLE) % keys) for i in range(PROBES)]


def gets(env: lmdb.Environment, probes: list[bytes]) -> float:
    db = env.open_db(b"values")
    started = time.perf_counter()
    with env.begin(db=db) as txn:
        get = txn.get
        for key in probes:
            get(key)
    return (time.perf_counter() - started) / len(probes) * 1e6


def puts(env: lmdb.Environment, probes: list[bytes], batch: int) -> float:
    db = env.open_db(b"values")
    value = msgpack.packb(2)
    started = time.perf_counter()
    for at in range(0, len(probes), batch):
        writes = sorted((key, value) for key in probes[at : at + batch])
        with env.begin(write=True) as txn:
            txn.cursor(db=db).putmulti(writes)
    return (time.perf_counter() - started) / len(probes) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000_000)
    args = parser.parse_args()
    from state_cases import case_state

    base = case_state(10.0, WORKERS, 10_000, "memory", 5.0)["tuples_per_sec"]
    per_tuple = WORKERS / base * 1e6
    print(f"10,000 keys in memory: {base:,.0f} tuples/s = {per_tuple:.2f} µs per tuple")
    folder = tempfile.mkdtemp(prefix="lmdb-floor-")
    try:
        env = open_env(folder, writemap=False)
        print(f"filled {args.keys:,} keys in {fill(env, args.keys):.1f} s")
        print("| operation, every key a miss | µs per key |")
        print("|---|---|")
        get = gets(env, probe_keys(args.keys, 0))
        print(f"| get | {get:.2f} |")
        offset, cheapest = PROBES, float("inf")
        for writemap in (False, True):
            env.close()
            env = open_env(folder, writemap)
            for batch in (5_000, 1_000_000):
                cost = puts(env, probe_keys(args.keys, offset), batch)
                offset += PROBES
                cheapest = min(cheapest, cost)
                print(f"| put, {batch:,} a transaction, writemap {writemap} | {cost:.2f} |")
        env.close()
        ceiling = per_tuple / (per_tuple + get + cheapest)
        print(
            f"ceiling with nothing but LMDB's get and cheapest put added: {ceiling:.0%} of "
            "the 10,000-key count in memory (target: 50 %)"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
