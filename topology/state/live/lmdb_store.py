"""The ``lmdb`` live state: a task's keys and values in an LMDB file, a bounded cache of
decoded values in front (the only importer of ``lmdb``).

Chosen over RocksDB by measurement (docs/BENCHMARKS.md, "Live state backend choice").  The
store is a cache of the checkpoints, never durable on its own: LMDB runs without syncs,
and a task's directory is cleared when the task opens it and deleted when it closes
(a restarted task gets its keys back from the checkpoint, :meth:`LmdbState.load`).

The cache is write-back: a put changes only the cached entry; an entry reaches the disk
when it is evicted (the oldest eighth of the cache at a time, in one transaction) or at
:meth:`~LmdbState.take_changes` (every entry changed since, in one transaction), so a hot
key costs a disk write per checkpoint, not per put.  Memory is bounded: at most
``cache_entries`` decoded entries (also those known absent) and the keys changed since
the last :meth:`~LmdbState.take_changes` (one checkpoint interval's worth, as with the
``memory`` backend).
LMDB reads through a memory map, and the pages it touches count in the process's RSS (as
*file-backed* memory: the kernel's page cache, which it reclaims under pressure) while
they stay mapped; the file is mapped afresh after :data:`REMAP_READS` disk operations (the
pages stay in the page cache, so reading them again costs no I/O).
"""

from __future__ import annotations

import os
import shutil
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
from .base import Change, StateSize
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
_MISS = object()
#: A cached answer "no such key".
ABSENT = object()
#: A deletion, in the changes since the last take_changes.
DELETED = object()
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


class LmdbState:
    """One task's live state in LMDB (see the module).  Single-threaded, as a task is;
    :meth:`size` may be called from another thread."""

    def __init__(
        self,
        path: str,
        key_groups: int = DEFAULT_KEY_GROUPS,
        cache_entries: int = 100_000,
        write_batch: int = WRITE_BATCH,
        single_field: bool = False,
    ) -> None:
        self.path = path
        self.write_batch = write_batch
        self.key_groups = key_groups
        #: Keys are one grouping field's values (:func:`topology.state.kv.key_fields`).
        self.single_field = single_field
        self.capacity = max(1, cache_entries)
        before = _OPEN.get(os.path.abspath(path))
        if before is not None:
            before.close()
        _OPEN[os.path.abspath(path)] = self
        shutil.rmtree(path, ignore_errors=True)  # an earlier run's: the checkpoint has it
        self._env = open_environment(path)
        self._open_databases()
        self._reads = 0  # disk reads since the file was mapped
        self._streams = 0  # items() iterations under way (they hold the mapping)
        #: key -> its latest value, or ABSENT (deleted, or known not on disk)
        self._cache: dict[Any, Any] = {}
        #: the cached keys whose value is not on disk yet (a set, in insertion order)
        self._unwritten: dict[Any, None] = {}
        #: the stored form of cached keys read from disk
        self._raw: dict[Any, bytes] = {}
        #: key -> value (or DELETED) for every key changed since the last take_changes
        self._changed: dict[Any, Any] = {}
        self._reader: lmdb.Transaction | None = None
        self._size = StateSize(0, 0)
        self._closed = False
        self._pack = msgpack.Packer(use_bin_type=True).pack  # this task's own: not shared

    # -- the author's calls ------------------------------------------------------------------

    def get(self, key: Any, default: Any = None) -> Any:
        if key.__class__ is list:
            key = hashable(key)
        value = self._cache.get(key, _MISS)
        if value is _MISS:
            value = self._fetch(key)
        return default if value is ABSENT else value

    def put(self, key: Any, value: Any) -> None:
        if key.__class__ is list:
            key = hashable(key)
        cache = self._cache
        cache[key] = value
        if len(cache) > self.capacity:
            self._evict()
        self._unwritten[key] = None
        self._changed[key] = value

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
        raw, key_bytes, encode = self._raw, self.key_bytes, self._encode
        changes = [
            (raw.get(k) or key_bytes(k), None if v is DELETED else encode(v))
            for k, v in self._changed.items()
        ]
        self._changed = {}
        self.flush()
        return changes

    def load(self, entries: Iterable[tuple[bytes, bytes]]) -> None:
        """Replace everything with ``entries`` (stored form), :data:`LOAD_BATCH` to a
        transaction: memory stays bounded however many there are."""
        self._cache, self._unwritten, self._raw, self._changed = {}, {}, {}, {}
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
        value = ABSENT if raw is None else self._decode(bytes(raw))
        cache = self._cache
        if len(cache) >= self.capacity:
            self._evict()
        cache[key] = value
        self._raw[key] = raw_key
        return value

    def _held(self, key: Any) -> bool:
        value = self._cache.get(key, _MISS)
        if value is _MISS:
            value = self._fetch(key)
        return value is not ABSENT

    def _forget(self, key: Any) -> None:
        """Record ``key`` deleted (in the cache, then on disk, and for the next checkpoint)."""
        self._cache[key] = ABSENT
        self._unwritten[key] = None
        self._changed[key] = DELETED

    def _evict(self) -> None:
        """Drop the oldest eighth of the cache, writing what is not on disk yet."""
        cache, unwritten, raw = self._cache, self._unwritten, self._raw
        writes = []
        for key in list(islice(cache, max(1, self.capacity // 8))):
            value = cache.pop(key)
            raw_key = raw.pop(key, None)
            if unwritten.pop(key, _MISS) is None:
                writes.append((raw_key or self.key_bytes(key), value))
        self._write_all(writes)

    def flush(self) -> None:
        """Write every cached entry not on disk yet (they stay cached)."""
        if not self._unwritten:
            return
        cache, raw, key_bytes = self._cache, self._raw, self.key_bytes
        writes = [(raw.get(k) or key_bytes(k), cache[k]) for k in self._unwritten]
        self._unwritten = {}
        self._write_all(writes)

    def _write_all(self, writes: list[tuple[bytes, Any]]) -> None:
        """``writes`` (stored key, value or ABSENT) on disk, :attr:`write_batch` to a
        transaction."""
        for at in range(0, len(writes), self.write_batch):
            batch = writes[at : at + self.write_batch]
            self._write(lambda txn, b=batch: self._write_batch(txn, b))
        if writes:
            self._measure()
            self._reads += len(writes)  # a write reads its page through the map too
            if self._reads >= REMAP_READS and not self._streams:
                self._remap()

    def _write_batch(self, txn: lmdb.Transaction, writes: list[tuple[bytes, Any]]) -> None:
        db, encode = self._values, self._encode
        puts = []
        for raw_key, value in writes:
            if value is ABSENT:
                txn.delete(raw_key, db=db)
            else:
                puts.append((raw_key, encode(value)))
        puts.sort()  # neighbours land on the same pages
        txn.cursor(db=db).putmulti(puts)

    def _encode(self, value: Any) -> bytes:
        return self._pack(value)

    def _decode(self, raw: bytes) -> Any:
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
