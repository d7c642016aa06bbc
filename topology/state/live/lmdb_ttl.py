"""The ``lmdb`` live state with ``topology.state.ttl.secs``: :class:`LmdbTtlState`.

Values are stored with their write time (:func:`~.codec.encode_ttl`) and cached as
``(written_at, value)``.  Beside the values, an *expiry index* (a second LMDB database)
holds ``written_at`` (8 bytes, big-endian) + stored key for every write that reached the
disk, oldest first: :meth:`LmdbTtlState.expire` walks it from the start and drops the keys
whose last write is that old.  An index entry left behind by a later write of the same
key is simply removed when the walk reaches it, so the index holds at most the writes of
the last ``ttl`` seconds (one per key and write batch).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

from ..checkpoint import hashable
from ..kv import DEFAULT_KEY_GROUPS, stored_key
from ..merges import merge_eagerly
from .codec import encode_ttl, stored_entry
from .lmdb_store import ABSENT, DEFAULT_CACHE_BYTES, DELETED, WRITE_BATCH, LmdbState

_MISS = object()
#: Index entries an :meth:`~LmdbTtlState.expire` call may look at, per key it may drop.
WALK_PER_DROP = 4


def _stamp(written_at: float) -> bytes:
    return struct.pack(">d", max(0.0, written_at))


class LmdbTtlState(LmdbState):
    """:class:`LmdbState` whose keys expire ``ttl`` seconds after their last put (``clock``
    seconds); an expired key reads as absent and is dropped when read or swept."""

    def __init__(
        self,
        path: str,
        ttl: float,
        clock: Callable[[], float],
        key_groups: int = DEFAULT_KEY_GROUPS,
        cache_entries: int | None = None,
        write_batch: int = WRITE_BATCH,
        single_field: bool = False,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        super().__init__(path, key_groups, cache_entries, write_batch, single_field, cache_bytes)
        self.ttl = ttl
        self.clock = clock

    def _open_databases(self) -> None:
        super()._open_databases()
        self._index = self._env.open_db(b"expiry")

    def _entry(self, key: Any) -> Any:
        """``(written_at, value)`` of ``key``, or :data:`ABSENT`; an expired one is dropped."""
        entry = self._lookup(key)
        if entry is not ABSENT and self.clock() - entry[0] >= self.ttl:
            self._forget(key)
            return ABSENT
        return entry

    def get(self, key: Any, default: Any = None) -> Any:
        entry = self._entry(hashable(key))
        return default if entry is ABSENT else entry[1]

    def put(self, key: Any, value: Any) -> None:
        super().put(key, (self.clock(), value))

    def merge(self, key: Any, value: Any) -> None:
        """A read and a put: an expired key's stored value must not be combined."""
        merge_eagerly(self, key, value)

    def __contains__(self, key: Any) -> bool:
        return self._entry(hashable(key)) is not ABSENT

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every unexpired (key, value), streamed from a snapshot of the store."""
        self.flush()
        now, ttl = self.clock(), self.ttl
        for raw_key, raw in self._stream():
            entry = self._decode(raw)
            if now - entry[0] < ttl:
                yield stored_key(raw_key), entry[1]

    def _encode(self, value: Any) -> bytes:
        return encode_ttl(value[0], value[1])

    def _decode(self, raw: bytes | memoryview) -> Any:
        """A stored value as ``(written_at, value)`` (one stored without a time: now)."""
        written_at, value = stored_entry(raw)
        return (self.clock() if written_at is None else written_at, value)

    def _write_batch(self, txn: Any, writes: list[tuple[bytes, Any]]) -> None:
        super()._write_batch(txn, writes)
        index = self._index
        for raw_key, value in writes:
            if value is not ABSENT:
                txn.put(_stamp(value[0]) + raw_key, b"", db=index)

    def _load_batch(self, txn: Any, batch: list[tuple[bytes, bytes]]) -> None:
        now = self.clock()
        stored = []
        for raw_key, raw in batch:
            written_at, value = stored_entry(raw)
            if written_at is None:  # stored without a TTL: written now
                written_at, raw = now, encode_ttl(now, value)
            stored.append((raw_key, raw))
            txn.put(_stamp(written_at) + raw_key, b"", db=self._index)
        super()._load_batch(txn, stored)

    def _clear_extra(self) -> None:
        with self._env.begin(write=True) as txn:
            txn.drop(self._index, delete=False)

    def expire(self, now: float, budget: int) -> int:
        """Drop up to ``budget`` keys whose last write is ``ttl`` old at ``now``, walking
        at most ``WALK_PER_DROP × budget`` index entries."""
        if budget <= 0:
            return 0
        self.flush()
        dropped: list[int] = [0]
        self._write(lambda txn: self._sweep(txn, now, budget, dropped))
        if dropped[0]:
            self._measure()
        return dropped[0]

    def _sweep(self, txn: Any, now: float, budget: int, dropped: list[int]) -> None:
        dropped[0] = 0
        cursor = txn.cursor(db=self._index)
        walked, limit = 0, WALK_PER_DROP * budget
        found = cursor.first()
        while found and dropped[0] < budget and walked < limit:
            walked += 1
            index_key = cursor.key()
            (written_at,) = struct.unpack(">d", index_key[:8])
            if now - written_at < self.ttl:
                break
            raw_key = index_key[8:]
            raw = txn.get(raw_key, db=self._values)
            if raw is not None and now - self._decode(raw)[0] >= self.ttl:
                txn.delete(raw_key, db=self._values)
                key = stored_key(raw_key)
                self._uncache(key)
                self._changed[key] = DELETED
                dropped[0] += 1
            found = cursor.delete() and bool(cursor.key())  # now on the next entry
