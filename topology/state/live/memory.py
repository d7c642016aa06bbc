"""The ``memory`` live state: :class:`~topology.state.kv.KeyValueState` (a dict), and
:class:`TtlKeyValueState`, the same with ``topology.state.ttl.secs`` (pure).

Without a TTL the state is the plain ``KeyValueState``, so its hot path is untouched; the
TTL subclass keeps each key's last write time, oldest first, so :meth:`expire` finds the
expired keys without a scan.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..checkpoint import hashable
from ..kv import _DELETED, DEFAULT_KEY_GROUPS, KeyValueState, key_bytes, stored_key
from .codec import encode_ttl, stored_entry


class TtlKeyValueState(KeyValueState):
    """A ``KeyValueState`` whose keys expire ``ttl`` seconds after their last put
    (``clock`` seconds); an expired key reads as absent and is dropped when read or swept
    (:meth:`expire`), each drop recorded as a deletion for the next checkpoint."""

    def __init__(
        self,
        ttl: float,
        clock: Callable[[], float],
        key_groups: int = DEFAULT_KEY_GROUPS,
        single_field: bool = False,
    ) -> None:
        super().__init__(None, key_groups, single_field)
        self.ttl = ttl
        self.clock = clock
        #: key -> time of its last put, oldest first
        self._written: OrderedDict[Any, float] = OrderedDict()

    def _live(self, key: Any) -> bool:
        """Whether ``key`` is held and not expired (an expired one is dropped)."""
        at = self._written.get(key)
        if at is None:
            return False
        if self.clock() - at < self.ttl:
            return True
        self._drop(key)
        return False

    def _drop(self, key: Any) -> None:
        del self._data[key]
        del self._written[key]
        self._dirty[key] = _DELETED

    def get(self, key: Any, default: Any = None) -> Any:
        key = hashable(key)
        return self._data[key] if self._live(key) else default

    def put(self, key: Any, value: Any) -> None:
        key = hashable(key)
        self._data[key] = value
        self._dirty[key] = value
        self._written[key] = self.clock()
        self._written.move_to_end(key)

    def delete(self, key: Any) -> None:
        key = hashable(key)
        if key in self._data:
            self._drop(key)

    def __contains__(self, key: Any) -> bool:
        return self._live(hashable(key))

    def _unexpired(self) -> list[Any]:
        now, ttl, written = self.clock(), self.ttl, self._written
        return [k for k in self._data if now - written[k] < ttl]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._unexpired())

    def items(self) -> list[tuple[Any, Any]]:
        data = self._data
        return [(k, data[k]) for k in self._unexpired()]

    def take_changes(self) -> list[tuple[bytes, bytes | None]]:
        groups, written, single = self.key_groups, self._written, self.single_field
        changes = [
            (key_bytes(k, groups, single), None if v is _DELETED else encode_ttl(written[k], v))
            for k, v in self._dirty.items()
        ]
        self._dirty = {}
        return changes

    def everything(self) -> list[tuple[bytes, bytes | None]]:
        self._dirty = {}
        groups, written, single = self.key_groups, self._written, self.single_field
        return [
            (key_bytes(k, groups, single), encode_ttl(written[k], v)) for k, v in self._data.items()
        ]

    def load(self, entries: Iterable[tuple[bytes, bytes]]) -> None:
        """Hold exactly ``entries``; a value stored without a write time counts as written
        now.  The oldest write comes first whatever the order of ``entries``."""
        now = self.clock()
        timed = []
        for k, v in entries:
            at, value = stored_entry(v)
            timed.append((now if at is None else at, stored_key(k), value))
        timed.sort(key=lambda t: t[0])
        self._data = {key: value for _, key, value in timed}
        self._written = OrderedDict((key, at) for at, key, _ in timed)
        self._dirty = {}

    def expire(self, now: float, budget: int) -> int:
        dropped = 0
        written, ttl = self._written, self.ttl
        while dropped < budget and written:
            key, at = next(iter(written.items()))
            if now - at < ttl:
                break
            self._drop(key)
            dropped += 1
        return dropped
