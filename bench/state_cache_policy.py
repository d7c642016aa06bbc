"""Which eviction policy the ``lmdb`` live state's write-back cache keeps: FIFO (the cache
before the byte bound), LRU, CLOCK, a segmented LRU (new keys on probation, a second hit
protects them) and a segmented FIFO (the same without reordering protected keys on a
hit), each byte-bounded, in front of a real LMDB file, on three key streams.

    python3 bench/state_cache_policy.py [--keys 1000000] [--ops 1000000] [--rounds 3]
                                        [--budget BYTES]

The workload is the count docs/STATE.md teaches (``put(k, get(k, 0) + 1)``) over:

* ``hot``: about 40 % of the operations on 1 % of the keys, the rest uniform;
* ``zipf``: Zipf(1.1) over the keys (rank scrambled over the key space);
* ``uniform``: a scrambled sweep, every key new (no policy can hit: the cost of each).

Every policy charges an entry its encoded key and value plus :data:`OVERHEAD` bytes and
flushes changed entries in batches when it evicts, as the store does.  The file is filled
with every key first (each round a new file; the key stream is the same for every
policy).  Per stream and policy it prints the hit rate (gets) and gets + puts per second,
the median over ``--rounds`` rounds, and the median per-round ratio of throughput to FIFO
in the same round: the machine is shared, only ratios in one round compare.  A last row
per stream, ``store``, runs the same count on :class:`LmdbState` itself (the policy kept,
segmented FIFO, with the store's own bookkeeping), loaded with the same keys.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from collections import OrderedDict
from typing import Any

import lmdb
import msgpack
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from topology.state.live.lmdb_store import OVERHEAD, WRITE_BATCH, LmdbState  # noqa: E402

SCRAMBLE = 2_654_435_761
_pack = msgpack.Packer(use_bin_type=True).pack


def key_bytes(key: int) -> bytes:
    body = _pack(key)
    return (zlib.crc32(body) % 1024).to_bytes(2, "big") + body


class Policy:
    """A byte-bounded write-back cache over ``env``; subclasses choose the victims."""

    name = "?"

    def __init__(self, env: lmdb.Environment, budget: int) -> None:
        self.env, self.budget = env, budget
        self.cache: dict[Any, Any] = {}
        self.cost: dict[Any, int] = {}
        self.dirty: set[Any] = set()
        self.bytes = 0
        self.hits = self.misses = 0
        self.reader: Any = env.begin()

    def get(self, key: Any) -> Any:
        value = self.cache.get(key, None)
        if value is None:
            self.misses += 1
            raw = self.reader.get(key_bytes(key))
            value = 0 if raw is None else msgpack.unpackb(raw)
            self.insert(key, value, 2 + len(_pack(key)) + (0 if raw is None else len(raw)))
        else:
            self.hits += 1
            self.touch(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        if key in self.cache:
            self.cache[key] = value
        else:
            self.insert(key, value, 2 + len(_pack(key)) + len(_pack(value)))
        self.dirty.add(key)

    def insert(self, key: Any, value: Any, size: int) -> None:
        size += OVERHEAD
        self.cache[key] = value
        self.cost[key] = size
        self.bytes += size
        if self.bytes > self.budget:
            self.evict(self.bytes - self.budget * 7 // 8)

    def drop(self, victims: list[Any]) -> None:
        cache, cost, dirty = self.cache, self.cost, self.dirty
        writes = []
        for key in victims:
            value = cache.pop(key)
            self.bytes -= cost.pop(key)
            if key in dirty:
                dirty.discard(key)
                writes.append((key_bytes(key), _pack(value)))
        if writes:
            self.reader.abort()
            writes.sort()
            for at in range(0, len(writes), WRITE_BATCH):
                with self.env.begin(write=True) as txn:
                    txn.cursor().putmulti(writes[at : at + WRITE_BATCH])
            self.reader = self.env.begin()

    def touch(self, key: Any) -> None:
        pass

    def evict(self, need: int) -> None:
        raise NotImplementedError


class Fifo(Policy):
    name = "fifo"

    def evict(self, need: int) -> None:
        victims, freed, cost = [], 0, self.cost
        for key in self.cache:
            victims.append(key)
            freed += cost[key]
            if freed >= need:
                break
        self.drop(victims)


class Lru(Fifo):
    """A hit moves the key to the young end (dict order is the recency)."""

    name = "lru"

    def touch(self, key: Any) -> None:
        self.cache[key] = self.cache.pop(key)


class Clock(Policy):
    """A hit sets the key's reference bit; eviction walks from the oldest, giving a
    referenced key a second chance (bit cleared, moved to the young end)."""

    name = "clock"

    def __init__(self, env: lmdb.Environment, budget: int) -> None:
        super().__init__(env, budget)
        self.ref: set[Any] = set()

    def touch(self, key: Any) -> None:
        self.ref.add(key)

    def evict(self, need: int) -> None:
        victims, freed, cost, cache, ref = [], 0, self.cost, self.cache, self.ref
        spared = []
        for key in cache:
            if key in ref:
                ref.discard(key)
                spared.append(key)
                continue
            victims.append(key)
            freed += cost[key]
            if freed >= need:
                break
        for key in spared:
            cache[key] = cache.pop(key)
        self.drop(victims)
        if freed < need:  # all were referenced: a second pass finds them cleared
            self.evict(need - freed)


class Slru(Policy):
    """Segmented LRU: a new key enters on probation; a hit there protects it (at most
    80 % of the budget, the protected overflow demoted to probation's young end)."""

    name = "slru"

    def __init__(self, env: lmdb.Environment, budget: int) -> None:
        super().__init__(env, budget)
        self.probation: OrderedDict[Any, None] = OrderedDict()
        self.protected: OrderedDict[Any, None] = OrderedDict()
        self.protected_bytes = 0

    def insert(self, key: Any, value: Any, size: int) -> None:
        self.probation[key] = None
        super().insert(key, value, size)

    def touch(self, key: Any) -> None:
        if key in self.protected:
            self.protected.move_to_end(key)
            return
        del self.probation[key]
        self.protected[key] = None
        self.protected_bytes += self.cost[key]
        while self.protected_bytes > self.budget * 4 // 5:
            old, _ = self.protected.popitem(last=False)
            self.protected_bytes -= self.cost[old]
            self.probation[old] = None

    def evict(self, need: int) -> None:
        victims, freed, cost = [], 0, self.cost
        while freed < need and self.probation:
            key, _ = self.probation.popitem(last=False)
            victims.append(key)
            freed += cost[key]
        while freed < need and self.protected:
            key, _ = self.protected.popitem(last=False)
            self.protected_bytes -= cost[key]
            victims.append(key)
            freed += cost[key]
        self.drop(victims)


class Sfifo(Slru):
    """Segmented FIFO: as :class:`Slru`, but a hit on a protected key does nothing
    (protected is in order of protection; its overflow goes back to probation, where a
    hit protects it again) — a hit costs one lookup."""

    name = "sfifo"

    def touch(self, key: Any) -> None:
        if key in self.probation:
            super().touch(key)


POLICIES = [Fifo, Lru, Clock, Slru, Sfifo]


def streams(keys: int, ops: int, seed: int = 7) -> dict[str, list[int]]:
    """The three key streams (same for every policy)."""
    rng = np.random.default_rng(seed)
    hot_keys = max(1, keys // 100)
    hot = rng.integers(0, keys, ops)
    on_hot = rng.random(ops) < 0.4
    hot[on_hot] = (rng.integers(0, hot_keys, int(on_hot.sum())) * SCRAMBLE) % keys
    ranks = np.arange(1, keys + 1, dtype=np.float64)
    cdf = np.cumsum(ranks**-1.1)
    cdf /= cdf[-1]
    zipf = (np.searchsorted(cdf, rng.random(ops)) * SCRAMBLE) % keys
    uniform = (np.arange(ops, dtype=np.int64) * SCRAMBLE) % keys
    return {"hot": hot.tolist(), "zipf": zipf.tolist(), "uniform": uniform.tolist()}


def filled(folder: str, keys: int) -> lmdb.Environment:
    env = lmdb.open(folder, map_size=1 << 34, sync=False, metasync=False, readahead=False)
    it = iter(range(keys))
    while batch := sorted((key_bytes(k), _pack(1)) for _, k in zip(range(100_000), it)):
        with env.begin(write=True) as txn:
            txn.cursor().putmulti(batch)
    return env


def run(policy: type[Policy], env: lmdb.Environment, budget: int, stream: list[int]) -> dict:
    cache = policy(env, budget)
    get, put = cache.get, cache.put
    start = time.perf_counter()
    for k in stream:
        put(k, get(k) + 1)
    secs = time.perf_counter() - start
    cache.reader.abort()
    return {"hit": cache.hits / max(1, cache.hits + cache.misses), "ops": 2 * len(stream) / secs}


def run_store(keys: int, budget: int, stream: list[int]) -> dict:
    """The same count on the store itself (:class:`LmdbState`, the policy kept)."""
    folder = tempfile.mkdtemp(prefix="cache-store-")
    state = LmdbState(os.path.join(folder, "s"), 1024, cache_bytes=budget, single_field=True)
    try:
        state.load((state.key_bytes(k), _pack(1)) for k in range(keys))
        get, put = state.get, state.put
        start = time.perf_counter()
        for k in stream:
            put(k, get(k, 0) + 1)
        secs = time.perf_counter() - start
        stats = state.cache_stats()
        return {
            "hit": stats.hits / max(1, stats.hits + stats.misses),
            "ops": 2 * len(stream) / secs,
        }
    finally:
        state.close()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument(
        "--budget", type=int, default=7 << 20, help="cache bytes (7 MiB: 1.5x the hot keys)"
    )
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    keyed = streams(args.keys, args.ops)
    results: dict[tuple[str, str], list[dict]] = {}
    for r in range(args.rounds):
        for name, stream in keyed.items():
            for policy in POLICIES:
                folder = tempfile.mkdtemp(prefix="cache-policy-")
                try:
                    env = filled(folder, args.keys)
                    got = run(policy, env, args.budget, stream)
                    env.close()
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                results.setdefault((name, policy.name), []).append(got)
                print(
                    f"round {r + 1} {name:8} {policy.name:6} hit {got['hit']:.3f} "
                    f"{got['ops'] / 1e6:.2f} M ops/s",
                    file=sys.stderr,
                )
            got = run_store(args.keys, args.budget, stream)
            results.setdefault((name, "store"), []).append(got)
            print(
                f"round {r + 1} {name:8} store  hit {got['hit']:.3f} "
                f"{got['ops'] / 1e6:.2f} M ops/s",
                file=sys.stderr,
            )
    print(
        f"\n{args.keys:,} keys, {args.ops:,} counts, {args.budget / 2**20:.0f} MiB cache, "
        f"{args.rounds} rounds (medians)\n"
    )
    print("| stream | policy | hit rate | gets + puts / s | vs fifo |")
    print("|---|---|---|---|---|")
    for name in keyed:
        base = results[(name, "fifo")]
        for policy_name in [*(p.name for p in POLICIES), "store"]:
            runs = results[(name, policy_name)]
            ratio = statistics.median(a["ops"] / b["ops"] for a, b in zip(runs, base, strict=True))
            hit = statistics.median(x["hit"] for x in runs)
            ops = statistics.median(x["ops"] for x in runs)
            print(f"| {name} | {policy_name} | {hit:.3f} | {ops / 1e6:.2f} M | {ratio:.2f} |")


if __name__ == "__main__":
    main()
