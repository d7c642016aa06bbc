"""The key-value state a :class:`~topology.StatefulBolt` task keeps (pure).

Keys and values are anything msgpack encodes.  The state remembers which keys changed since
the last snapshot, so a checkpoint writes only those (incremental snapshots).  Keys belong
to tasks the way a fields grouping sends them: key ``k`` belongs to task index
``stable_hash(k) % tasks`` (``k`` a list or tuple is taken as several fields, anything else
as one), so a bolt subscribed with ``fields_grouping(..., [f])`` that uses the value of
``f`` as its state key finds, after a restart or a rebalance, exactly the keys its tuples
bring — the state moves with the keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgpack

from grouping.hashing import stable_hash

from .checkpoint import hashable

_DELETED = object()


def key_bytes(key: Any) -> bytes:
    """The stored form of a state key (its msgpack encoding)."""
    return msgpack.packb(key, use_bin_type=True)


def key_owner(key: Any, tasks: int) -> int:
    """The task index that owns ``key`` among ``tasks`` tasks (as fields grouping routes)."""
    fields = list(key) if isinstance(key, list | tuple) else [key]
    return stable_hash(fields) % tasks


class KeyValueState:
    """One task's state: ``get`` / ``put`` / ``delete``, ``in``, ``len``, iteration."""

    def __init__(self, data: dict[Any, Any] | None = None) -> None:
        self._data: dict[Any, Any] = dict(data or {})
        self._dirty: dict[Any, Any] = {}

    def get(self, key: Any, default: Any = None) -> Any:
        return self._data.get(hashable(key), default)

    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` (both msgpack-encodable)."""
        key = hashable(key)
        self._data[key] = value
        self._dirty[key] = value

    def delete(self, key: Any) -> None:
        key = hashable(key)
        if key in self._data:
            del self._data[key]
            self._dirty[key] = _DELETED

    def __contains__(self, key: Any) -> bool:
        return hashable(key) in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._data))

    def items(self) -> list[tuple[Any, Any]]:
        return list(self._data.items())

    def take_changes(self) -> list[tuple[bytes, bytes | None]]:
        """The changes since the last call, encoded (``None`` for a deleted key), and forget
        them: what the next snapshot writes."""
        changes = [
            (key_bytes(key), None if value is _DELETED else msgpack.packb(value, use_bin_type=True))
            for key, value in self._dirty.items()
        ]
        self._dirty = {}
        return changes

    def everything(self) -> list[tuple[bytes, bytes | None]]:
        """Every entry, encoded (a full snapshot)."""
        self._dirty = {}
        return [
            (key_bytes(key), msgpack.packb(value, use_bin_type=True))
            for key, value in self._data.items()
        ]

    @classmethod
    def restore(cls, entries: dict[bytes, bytes]) -> KeyValueState:
        """A state holding ``entries`` (stored form), with nothing to write yet."""
        data = {
            hashable(msgpack.unpackb(k, raw=False, strict_map_key=False)): msgpack.unpackb(
                v, raw=False, strict_map_key=False
            )
            for k, v in entries.items()
        }
        return cls(data)
