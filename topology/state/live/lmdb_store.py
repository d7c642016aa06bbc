"""The ``lmdb`` live state: a task's keys and values in an LMDB file, a bounded cache of
decoded values in front (the only importer of ``lmdb``).

Chosen over RocksDB by measurement (docs/BENCHMARKS.md, "Live state backend choice").  The
store is a cache of the checkpoints, never durable on its own: LMDB runs without syncs,
and a task's directory is cleared when the task opens it and deleted when it closes
(a restarted task gets its keys back from the checkpoint, :meth:`LmdbState.load`).

The cache is write-back: a put changes only the cached entry; an entry reaches the disk
when it is evicted (an eighth of the cache at a time, in one transaction per
:data:`WRITE_BATCH`) or at :meth:`~LmdbState.take_changes` (every entry changed since), so
a hot key costs a disk write per checkpoint, not per put.

The cache is bounded by bytes (``cache_bytes``; ``cache_entries`` bounds the count too
when given).  An entry costs its encoded key and value plus :data:`OVERHEAD`: exact when
it is read from the store, refreshed whenever :meth:`~LmdbState.flush` writes it (every
checkpoint); a key put before it was ever read costs the cache's mean entry until then.
Eviction is a segmented FIFO, chosen by measurement (``bench/state_cache_policy.py``,
docs/BENCHMARKS.md): a key enters on *probation*; a read that finds it there *protects* it
(protected keys, at most 80 % of the bytes, in the order they were protected; the oldest
go back to probation's young end, where a read protects them again); victims are
probation's oldest, then protected's.  A stream of keys read once cannot push out a hot
set read again and again.  The segments are the cache's two dicts (key -> value), so a hit
on a protected key is one lookup, as in a plain dict, and a hit on probation moves the key
(once).

A :meth:`~LmdbState.merge` into a key the cache holds combines with its value there; into
one it does not hold it records a *delta* (merges of one key combined with each other,
charged to the cache like an entry) without reading the store.  A read of the key
combines its delta with the stored value; an eviction or a checkpoint applies every delta,
keys sorted, in write transactions of :data:`WRITE_BATCH`, each stored value read and
rewritten in place (:meth:`~LmdbState.flush`).  A deferred combination that raises keeps
the stored value and is kept for :meth:`~LmdbState.take_merge_errors` (the runtime
reports it as the component's error).

Memory is bounded: the cache and the keys changed since the last
:meth:`~LmdbState.take_changes` (one checkpoint interval's worth, as with the ``memory``
backend).  :meth:`~LmdbState.cache_stats` counts the reads the cache answered (hits) and
those that went to the store (misses).
LMDB reads through a memory map, and the pages it touches count in the process's RSS (as
*file-backed* memory: the kernel's page cache, which it reclaims under pressure) while
they stay mapped; the file is mapped afresh after :data:`REMAP_READS` disk operations (the
pages stay in the page cache, so reading them again costs no I/O).
"""

from __future__ import annotations

import os
import shutil
import sys
import weakref
import zlib
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import lmdb
import msgpack

from topology import config as cfg
from topology import user_dirs

from ..checkpoint import hashable
from ..kv import DEFAULT_KEY_GROUPS, GROUP_BYTES, stored_key
from ..merges import DEFAULT as DEFAULT_MERGE
from ..merges import Combine
from .base import CacheStats, Change, StateSize
from .codec import stored_value

#: Most writes in one transaction: each one may dirty a page LMDB allocates (4 kB) and
#: keeps for the next transaction, so this bounds that memory (~20 MB).
WRITE_BATCH = 5_000
#: Entries per transaction of a :meth:`~LmdbState.load`.
LOAD_BATCH = 10_000
#: The first map size (address space, not memory or disk); doubled whenever it fills.
INITIAL_MAP_SIZE = 1 << 34
#: Reads and writes after which the file is mapped afresh: LMDB reads (and finds the page
#: to write) through a memory map, and every page it touched stays in the process's RSS
#: (as file-backed pages) until it is unmapped — with the kernel's fault-around, 64 kB per
#: page fault, so this bounds that part of the RSS to ~1 GB or the file's size, whichever
#: is smaller.  Mapping afresh more often costs throughput (every page faults again:
#: 1,024 reads cut random gets by ~45 %, 16,384 by ~9 %; docs/BENCHMARKS.md).
REMAP_READS = 16_384
#: Bytes an entry costs the cache beyond its encoded key and value: the Python objects
#: and the slots of the dicts that hold it, which keep room for the entries evicted since
#: they last grew (tracemalloc over a count evicting as it goes: ~470 bytes an entry with
#: integer keys, ~410 with short strings, encoded key and value included).
OVERHEAD = 448
#: The cache's default bound, per task (``topology.state.cache.bytes``).
DEFAULT_CACHE_BYTES = 64 << 20
_MISS = object()
#: A cached answer "no such key".
ABSENT = object()
#: A deletion, in the changes since the last take_changes.
DELETED = object()
#: A change whose value is a delta not applied yet, in the changes since the last
#: take_changes.
PENDING = object()
#: Deferred merge errors kept for :meth:`LmdbState.take_merge_errors` (more are counted).
MERGE_ERRORS_KEPT = 10
#: CRC-32 of a one-element msgpack array's header: a key's stable hash is the CRC of
#: ``[key]`` (:func:`grouping.hashing.stable_hash`), i.e. of this byte and the key's body.
_ONE_FIELD = zlib.crc32(b"\x91")
#: The open state of each directory in this process: opening a directory again (a task's
#: state replaced at a restore) closes the one before, so its file is not kept alive.
_OPEN: weakref.WeakValueDictionary[str, LmdbState] = weakref.WeakValueDictionary()


def open_environment(path: str, map_size: int = INITIAL_MAP_SIZE) -> lmdb.Environment:
    """The LMDB environment in ``path`` (made 0700 if missing, checked as
    :func:`topology.user_dirs.private_dir` says; its files 0600), without syncs or
    read-ahead."""
    user_dirs.make_dirs(os.path.dirname(path) or ".")
    user_dirs.private_dir(Path(path), cfg.STATE_LOCAL_DIR)
    return lmdb.open(
        path,
        mode=user_dirs.FILE_MODE,
        map_size=map_size,
        max_dbs=2,
        sync=False,
        metasync=False,
        readahead=False,
        meminit=False,
    )


class Stored(tuple[bytes, bytes]):
    """A change already in stored form (key, value): a delta applied on disk, whose
    encoding the next :meth:`LmdbState.take_changes` takes as it is."""

    __slots__ = ()


class LmdbState:
    """One task's live state in LMDB (see the module).  Single-threaded, as a task is;
    :meth:`size` may be called from another thread."""

    #: What :meth:`merge` combines with (the runtime sets the bolt's ``state_merge``).
    combine: Combine = staticmethod(DEFAULT_MERGE)

    def __init__(
        self,
        path: str,
        key_groups: int = DEFAULT_KEY_GROUPS,
        cache_entries: int | None = None,
        write_batch: int = WRITE_BATCH,
        single_field: bool = False,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.path = path
        self.write_batch = write_batch
        self.key_groups = key_groups
        #: Keys are one grouping field's values (:func:`topology.state.kv.key_fields`).
        self.single_field = single_field
        #: Most entries cached (unbounded unless ``cache_entries`` is given)
        self.capacity = sys.maxsize if cache_entries is None else max(1, cache_entries)
        #: Most bytes the cache is charged (see the module)
        self.budget = max(1, cache_bytes)
        before = _OPEN.get(os.path.abspath(path))
        if before is not None:
            before.close()
        _OPEN[os.path.abspath(path)] = self
        shutil.rmtree(path, ignore_errors=True)  # an earlier run's: the checkpoint has it
        self._env = open_environment(path)
        self._open_databases()
        self._reads = 0  # disk reads since the file was mapped
        self._streams = 0  # items() iterations under way (they hold the mapping)
        #: The cache: key -> its latest value, or ABSENT (deleted, or known not on disk),
        #: in two segments — protected (in the order protected: a hit there is one
        #: lookup) and probation (oldest first) — and what each cached key is charged
        self._protected: dict[Any, Any] = {}
        self._probation: dict[Any, Any] = {}
        self._cost: dict[Any, int] = {}
        self._bytes = 0  # charged to the cached keys
        self._protected_bytes = 0
        self._hits = 0
        self._misses = 0
        self._sizes: list[int] = []  # encoded value lengths of the last writes, in order
        #: the cached keys whose value is not on disk yet (a set, in insertion order)
        self._unwritten: dict[Any, None] = {}
        #: the stored form of cached keys read from disk
        self._raw: dict[Any, bytes] = {}
        #: key -> value (or DELETED, or PENDING) for every key changed since the last
        #: take_changes
        self._changed: dict[Any, Any] = {}
        #: key -> its merges combined, for keys not cached (charged OVERHEAD each)
        self._deltas: dict[Any, Any] = {}
        self._merge_errors: list[str] = []
        self._merge_errors_lost = 0
        self._reader: lmdb.Transaction | None = None
        self._size = StateSize(0, 0)
        self._closed = False
        self._pack = msgpack.Packer(use_bin_type=True).pack  # this task's own: not shared

    # -- the author's calls ------------------------------------------------------------------

    def get(self, key: Any, default: Any = None) -> Any:
        if key.__class__ is list:
            key = hashable(key)
        value = self._protected.get(key, _MISS)
        if value is _MISS:
            value = self._lookup(key)
        else:
            self._hits += 1
        return default if value is ABSENT else value

    def put(self, key: Any, value: Any) -> None:
        if key.__class__ is list:
            key = hashable(key)
        self._unwritten[key] = None
        self._changed[key] = value
        if key in self._protected:
            self._protected[key] = value
            return
        probation = self._probation
        held = key in probation
        probation[key] = value  # (a key already there keeps its place)
        if not held:  # a key not read before: the mean entry's cost till written
            if self._deltas and self._deltas.pop(key, _MISS) is not _MISS:
                self._bytes -= OVERHEAD  # its merges are overwritten
            count = len(probation) + len(self._protected) - 1
            self._admit(key, self._bytes // count if count else OVERHEAD)

    def merge(self, key: Any, value: Any) -> None:
        """Combine ``value`` into ``key`` (:attr:`combine`): at once when the key is
        cached, else as a delta, without reading the store (see the module)."""
        if key.__class__ is list:
            key = hashable(key)
        if key in self._protected or key in self._probation:
            old = self._lookup(key)
            self.put(key, value if old is ABSENT else self.combine(old, value))
            return
        deltas = self._deltas
        delta = deltas.get(key, _MISS)
        if delta is _MISS:
            deltas[key] = value
            self._changed[key] = PENDING
            self._bytes += OVERHEAD
            if self._bytes > self.budget:
                self._evict()
        else:
            deltas[key] = self.combine(delta, value)

    def take_merge_errors(self) -> list[str]:
        """The deferred merges that raised since the last call (each kept the stored
        value), one line each, and how many more were not kept; forget them."""
        errors, lost = self._merge_errors, self._merge_errors_lost
        self._merge_errors, self._merge_errors_lost = [], 0
        return errors + ([f"... and {lost} more"] if lost else [])

    def delete(self, key: Any) -> None:
        key = hashable(key)
        if self._held(key):
            self._forget(key)

    def __contains__(self, key: Any) -> bool:
        return self._held(hashable(key))

    def __len__(self) -> int:
        self.flush()
        return self._size.keys

    def __iter__(self) -> Iterator[Any]:
        return (key for key, _ in self.items())

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every (key, value), streamed from a snapshot of the store taken at the first
        step (writes during the iteration are not seen by it)."""
        self.flush()
        for raw_key, raw in self._stream():
            yield stored_key(raw_key), stored_value(raw)

    # -- checkpoints ------------------------------------------------------------------------

    def backlog(self) -> int:
        """How many changes wait for the next :meth:`take_changes`."""
        return len(self._changed)

    def take_changes(self) -> list[Change]:
        """The changes since the last call; every changed entry is written to disk too."""
        self._apply_deltas()
        raw, key_bytes, encode = self._raw, self.key_bytes, self._encode
        changes = [
            v
            if v.__class__ is Stored
            else (raw.get(k) or key_bytes(k), None if v is DELETED else encode(v))
            for k, v in self._changed.items()
        ]
        self._changed = {}
        self.flush()
        return changes

    def load(self, entries: Iterable[tuple[bytes, bytes]]) -> None:
        """Replace everything with ``entries`` (stored form), :data:`LOAD_BATCH` to a
        transaction: memory stays bounded however many there are."""
        self._unwritten, self._raw, self._changed, self._deltas = {}, {}, {}, {}
        self._probation, self._protected, self._cost = {}, {}, {}
        self._bytes = self._protected_bytes = 0
        self._end_read()
        with self._env.begin(write=True) as txn:
            txn.drop(self._values, delete=False)
        self._clear_extra()
        it = iter(entries)
        while batch := list(islice(it, LOAD_BATCH)):
            self._write(lambda txn, b=batch: self._load_batch(txn, b))
        self._measure()

    def expire(self, now: float, budget: int) -> int:
        """Nothing expires without a TTL (see :class:`LmdbTtlState`)."""
        return 0

    def size(self) -> StateSize:
        """Keys and bytes of the file, as of the last write (cheap: no transaction)."""
        return self._size

    def cache_stats(self) -> CacheStats:
        """Reads the cache answered and reads that went to the store, since the task
        opened the state (cheap)."""
        entries = len(self._protected) + len(self._probation)
        return CacheStats(self._hits, self._misses, entries, self._bytes)

    def close(self) -> None:
        """Release the environment and delete the task's directory."""
        if self._closed:
            return
        self._closed = True
        self._end_read()
        self._env.close()
        shutil.rmtree(self.path, ignore_errors=True)

    # -- the cache and the disk ------------------------------------------------------------

    def _fetch(self, key: Any) -> Any:
        """A key's value from disk (:data:`ABSENT` if none), now cached."""
        self._reads += 1
        if self._reads >= REMAP_READS and not self._streams:
            self._remap()
        if self._reader is None:
            self._reader = self._env.begin(db=self._values)
        raw_key = self.key_bytes(key)
        raw = self._reader.get(raw_key)
        self._misses += 1
        if raw is None:
            value, cost = ABSENT, OVERHEAD + len(raw_key)
        else:
            value, cost = self._decode(bytes(raw)), OVERHEAD + len(raw_key) + len(raw)
        if self._deltas and (delta := self._deltas.pop(key, _MISS)) is not _MISS:
            self._bytes -= OVERHEAD
            value = self._combined(key, value, delta)
            self._unwritten[key] = None
            self._changed[key] = value
        self._probation[key] = value
        self._raw[key] = raw_key
        self._admit(key, cost)
        return value

    def _combined(self, key: Any, stored: Any, delta: Any) -> Any:
        """``stored`` (or :data:`ABSENT`) with ``delta`` combined in; the stored value if
        the combination raises (kept for :meth:`take_merge_errors`)."""
        if stored is ABSENT:
            return delta
        try:
            return self.combine(stored, delta)
        except Exception as exc:
            if len(self._merge_errors) < MERGE_ERRORS_KEPT:
                self._merge_errors.append(
                    f"state.merge of key {key!r}: {type(exc).__name__}: {exc} (the stored "
                    f"value {stored!r} is kept; merged {delta!r} dropped)"
                )
            else:
                self._merge_errors_lost += 1
            return stored

    def _lookup(self, key: Any) -> Any:
        """A read of ``key``: its cached value (a hit; read on probation, it is protected
        now) or the store's (a miss, now cached); :data:`ABSENT` if none."""
        value = self._protected.get(key, _MISS)
        if value is not _MISS:
            self._hits += 1
            return value
        value = self._probation.pop(key, _MISS)
        if value is _MISS:
            return self._fetch(key)
        self._hits += 1
        self._protected[key] = value  # protected's young end
        self._protected_bytes += self._cost[key]
        if self._protected_bytes > self.budget * 4 // 5:
            self._demote()
        return value

    def _held(self, key: Any) -> bool:
        return self._lookup(key) is not ABSENT

    def _demote(self) -> None:
        """Move protected's oldest keys back to probation (its young end: a key read
        again there is protected again) till protected holds at most 75 % of the budget
        (it is called above 80 %: keys move in batches)."""
        protected, probation, cost = self._protected, self._probation, self._cost
        over = self._protected_bytes - self.budget * 3 // 4
        victims = []
        for key in protected:  # one pass (a dict emptied from the front is slow to restart)
            if over <= 0:
                break
            victims.append(key)
            over -= cost[key]
        for key in victims:
            probation[key] = protected.pop(key)
            self._protected_bytes -= cost[key]

    def _admit(self, key: Any, cost: int) -> None:
        """Charge ``key``, newly cached on probation; evict when the cache is over its
        bounds."""
        self._cost[key] = cost
        self._bytes += cost
        if self._bytes > self.budget or self._entries() > self.capacity:
            self._evict()

    def _entries(self) -> int:
        return len(self._protected) + len(self._probation)

    def _cached(self, key: Any) -> Any:
        """``key``'s cached value (:data:`_MISS`: not cached), not counted as a read."""
        value = self._protected.get(key, _MISS)
        return self._probation.get(key, _MISS) if value is _MISS else value

    def _uncache(self, key: Any) -> None:
        """Drop ``key`` from the cache (written or not: the caller's concern)."""
        self._raw.pop(key, None)
        cost = self._cost.pop(key, 0)
        self._bytes -= cost
        if (
            self._probation.pop(key, _MISS) is _MISS
            and self._protected.pop(key, _MISS) is not _MISS
        ):
            self._protected_bytes -= cost

    def _forget(self, key: Any) -> None:
        """Record ``key`` deleted (in the cache, then on disk, and for the next checkpoint)."""
        self._unwritten[key] = None
        self._changed[key] = DELETED
        if key in self._protected:
            self._protected[key] = ABSENT
        elif key in self._probation:
            self._probation[key] = ABSENT
        else:  # read, then evicted before this (a tiny cache)
            self._probation[key] = ABSENT
            self._admit(key, OVERHEAD)

    def _evict(self) -> None:
        """Apply the deltas; then, if still over, drop an eighth of the cache (bytes, and
        entries when bounded): probation's oldest keys, then protected's; write in
        batches those not on disk yet."""
        if self._deltas:
            self._apply_deltas()
            if self._bytes <= self.budget and self._entries() <= self.capacity:
                return
        bytes_over = self._bytes - self.budget * 7 // 8
        count_over = self._entries() - (self.capacity - self.capacity // 8)
        unwritten, raw, cost = self._unwritten, self._raw, self._cost
        writes = []
        for segment in (self._probation, self._protected):
            victims = []
            for key in segment:
                if bytes_over <= 0 and count_over <= 0:
                    break
                victims.append(key)
                bytes_over -= cost[key]
                count_over -= 1
            for key in victims:
                value = segment.pop(key)
                raw_key = raw.pop(key, None)
                charged = cost.pop(key)
                self._bytes -= charged
                if segment is self._protected:
                    self._protected_bytes -= charged
                if unwritten.pop(key, _MISS) is None:
                    writes.append((raw_key or self.key_bytes(key), value))
        self._write_all(writes)

    def flush(self) -> None:
        """Apply the deltas; write every cached entry not on disk yet (they stay cached)."""
        self._apply_deltas()
        if not self._unwritten:
            return
        raw, key_bytes, cached = self._raw, self.key_bytes, self._cached
        keys = list(self._unwritten)
        writes = [(raw.get(k) or key_bytes(k), cached(k)) for k in keys]
        self._unwritten = {}
        self._write_all(writes)
        self._recharge(keys, writes, self._sizes)

    def _recharge(self, keys: list[Any], writes: list[tuple[bytes, Any]], sizes: list[int]) -> None:
        """Charge each of ``keys`` (cached, just written) its encoded key and value."""
        cost, protected = self._cost, self._protected
        for key, (raw_key, _), size in zip(keys, writes, sizes, strict=True):
            now = OVERHEAD + len(raw_key) + size
            grown = now - cost[key]
            cost[key] = now
            self._bytes += grown
            if key in protected:
                self._protected_bytes += grown
        if self._protected_bytes > self.budget * 4 // 5:
            self._demote()
        if self._bytes > self.budget:
            self._evict()

    def _apply_deltas(self) -> None:
        """Combine every delta with its key's stored value on disk, keys sorted, in write
        transactions of :attr:`write_batch` (the keys stay uncached); their values go to
        the changes of the next :meth:`take_changes`."""
        deltas = self._deltas
        if not deltas:
            return
        self._deltas = {}
        self._bytes -= OVERHEAD * len(deltas)
        keys = {self.key_bytes(k): k for k in deltas}
        order = sorted(keys)  # (bytes sort several times faster than tuples)
        for at in range(0, len(order), self.write_batch):
            batch = order[at : at + self.write_batch]
            self._write(lambda txn, b=batch: self._apply_batch(txn, b, keys, deltas))
        self._measure()
        self._touched(len(order))

    def _apply_batch(
        self,
        txn: lmdb.Transaction,
        batch: list[bytes],
        keys: dict[bytes, Any],
        deltas: dict[Any, Any],
    ) -> None:
        db, decode, encode, changed = self._values, self._decode, self._encode, self._changed
        combined = self._combined
        cursor = txn.cursor(db=db)  # keys sorted: a seek starts from the page it is on
        seek, stored = cursor.set_key, cursor.value
        puts = []
        for raw_key in batch:
            key = keys[raw_key]
            value = deltas[key]
            if seek(raw_key):
                value = combined(key, decode(stored()), value)
            encoded = encode(value)
            changed[key] = Stored((raw_key, encoded))
            puts.append((raw_key, encoded))
        cursor.putmulti(puts)

    def _write_all(self, writes: list[tuple[bytes, Any]]) -> None:
        """``writes`` (stored key, value or ABSENT) on disk, :attr:`write_batch` to a
        transaction; their encoded values' lengths in :attr:`_sizes` (0: a deletion)."""
        self._sizes = []
        for at in range(0, len(writes), self.write_batch):
            batch = writes[at : at + self.write_batch]
            mark = len(self._sizes)
            self._write(lambda txn, b=batch, m=mark: self._retried(txn, b, m))
        if writes:
            self._measure()
            self._touched(len(writes))  # a write reads its page through the map too

    def _touched(self, pages: int) -> None:
        """Count ``pages`` more reads through the map (a batch's); map the file afresh
        past :data:`REMAP_READS` (a single read counts itself inline: the hot path)."""
        self._reads += pages
        if self._reads >= REMAP_READS and not self._streams:
            self._remap()

    def _retried(self, txn: lmdb.Transaction, writes: list[tuple[bytes, Any]], mark: int) -> None:
        """:meth:`_write_batch`, forgetting the sizes of a try the full map undid."""
        del self._sizes[mark:]
        self._write_batch(txn, writes)

    def _write_batch(self, txn: lmdb.Transaction, writes: list[tuple[bytes, Any]]) -> None:
        db, encode, sizes = self._values, self._encode, self._sizes
        puts = []
        for raw_key, value in writes:
            if value is ABSENT:
                txn.delete(raw_key, db=db)
                sizes.append(0)
            else:
                encoded = encode(value)
                sizes.append(len(encoded))
                puts.append((raw_key, encoded))
        puts.sort()  # neighbours land on the same pages
        txn.cursor(db=db).putmulti(puts)

    def _encode(self, value: Any) -> bytes:
        return self._pack(value)

    def _decode(self, raw: bytes | memoryview) -> Any:
        return stored_value(raw)

    def key_bytes(self, key: Any) -> bytes:
        """:func:`topology.state.kv.key_bytes` of ``key`` with one msgpack encoding (the
        stable hash's is the same bytes)."""
        body = self._pack(key)
        several = not self.single_field and isinstance(key, list | tuple)
        crc = zlib.crc32(body) if several else zlib.crc32(body, _ONE_FIELD)
        return (crc % self.key_groups).to_bytes(GROUP_BYTES, "big") + body

    def _load_batch(self, txn: lmdb.Transaction, batch: list[tuple[bytes, bytes]]) -> None:
        batch.sort()  # neighbours land on the same pages
        txn.cursor(db=self._values).putmulti(batch)

    def _write(self, step: Any) -> None:
        """Run ``step(txn)`` in a write transaction, growing the map when it is full."""
        self._end_read()
        while True:
            try:
                with self._env.begin(write=True) as txn:
                    step(txn)
                return
            except lmdb.MapFullError:
                self._env.set_mapsize(self._env.info()["map_size"] * 2)

    def _end_read(self) -> None:
        """End the read snapshot (an open one would keep the pages it sees from reuse)."""
        if self._reader is not None:
            self._reader.abort()
            self._reader = None

    def _stream(self) -> Iterator[tuple[bytes, bytes]]:
        txn = self._env.begin(db=self._values)
        self._streams += 1
        try:
            yield from txn.cursor()
        finally:
            txn.abort()
            self._streams -= 1
            self._reads = REMAP_READS  # it read every page: unmap them at the next read

    def _remap(self) -> None:
        """Close and reopen the environment: the pages read so far leave the process's
        RSS (they stay in the kernel's page cache, so reading them again is cheap)."""
        self._end_read()
        map_size = self._env.info()["map_size"]
        self._env.close()
        self._env = open_environment(self.path, map_size)
        self._open_databases()
        self._reads = 0

    def _open_databases(self) -> None:
        self._values = self._env.open_db(b"values")

    def _measure(self) -> None:
        """Refresh :meth:`size` (after a write)."""
        info = self._env.info()
        stat = self._env.stat()
        with self._env.begin(db=self._values) as txn:
            keys = int(txn.stat(self._values)["entries"])
        self._size = StateSize(keys, (int(info["last_pgno"]) + 1) * int(stat["psize"]))

    def _clear_extra(self) -> None:
        """Clear what a subclass keeps beside the values (at a load)."""
