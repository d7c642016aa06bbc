"""A map whose entries expire in whole buckets: Storm's RotatingMap.

Entries are inserted into the newest bucket; :meth:`RotatingMap.rotate` drops the oldest
bucket and returns what it held.  Rotating every ``timeout / (buckets - 1)`` seconds
expires an entry between ``timeout`` and ``timeout * buckets / (buckets - 1)`` seconds
after its last insert or :meth:`touch` — cheap timeouts with no per-entry timer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

#: Buckets of every timeout map sparkstorm keeps (spout pending trees, acker ledgers): an
#: entry expires between 1x and 1.5x the timeout after its last insert or touch.
TIMEOUT_BUCKETS = 3

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RotatingMap(Generic[K, V]):
    """Key -> value in ``buckets`` generations (at least 2); values are never None."""

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError(f"RotatingMap needs at least 2 buckets, got {buckets}")
        #: (never replaced: callers, compiled ones too, hold on to it)
        self._buckets: deque[dict[K, V]] = deque({} for _ in range(buckets))

    def __len__(self) -> int:
        return sum(map(len, self._buckets))

    @property
    def buckets(self) -> deque[dict[K, V]]:
        """The generations, newest first, for callers that inline :meth:`get` / :meth:`pop`
        over a batch (read them; insert into ``buckets[0]`` only keys known to be absent)."""
        return self._buckets

    def __contains__(self, key: object) -> bool:
        return any(key in b for b in self._buckets)

    def __iter__(self) -> Iterator[K]:
        for b in self._buckets:
            yield from b

    def get(self, key: K) -> V | None:
        """The value of ``key`` (None when absent: values must not be None)."""
        for b in self._buckets:
            value = b.get(key)
            if value is not None:
                return value
        return None

    def put(self, key: K, value: V) -> None:
        """Insert into the newest bucket (removing any older copy)."""
        newest = self._buckets[0]
        for b in self._buckets:
            if b is not newest:
                b.pop(key, None)
        newest[key] = value

    def put_new(self, key: K, value: V) -> None:
        """:meth:`put` of a key known to be absent (one dict store)."""
        self._buckets[0][key] = value

    def pop(self, key: K) -> V | None:
        """Remove ``key``; its value, or None when absent (values must not be None)."""
        for b in self._buckets:
            value = b.pop(key, None)
            if value is not None:
                return value
        return None

    def touch(self, key: K) -> bool:
        """Move ``key`` to the newest bucket (restart its timeout); False if absent."""
        for b in self._buckets:
            if key in b:
                self._buckets[0][key] = b.pop(key)
                return True
        return False

    def clear(self) -> list[V]:
        """Remove every entry; their values, oldest bucket first."""
        values = [v for b in reversed(self._buckets) for v in b.values()]
        for b in self._buckets:
            b.clear()
        return values

    def rotate(self) -> dict[K, V]:
        """Drop the oldest bucket; return its entries (they have expired)."""
        expired = self._buckets.pop()
        self._buckets.appendleft({})
        return expired

    def rotate_due(self, clock: RotationClock, now: float) -> list[V]:
        """Apply every rotation ``clock`` says is due at ``now``; return the expired values.

        After a long stall more rotations may be due than there are buckets: rotating
        more than ``len(buckets)`` times would only drop empty buckets, so it stops there.
        """
        expired: list[V] = []
        for _ in range(min(clock.due(now), len(self._buckets))):
            expired.extend(self.rotate().values())
        return expired


class RotationClock:
    """Tells when a :class:`RotatingMap` with ``buckets`` buckets must rotate for ``timeout``."""

    def __init__(self, timeout: float, buckets: int, now: float) -> None:
        self.interval = timeout / (buckets - 1)
        self.next_rotation = now + self.interval

    def due(self, now: float) -> int:
        """How many rotations are due at ``now`` (0 usually; more after a long stall)."""
        if now < self.next_rotation:
            return 0
        n = int((now - self.next_rotation) // self.interval) + 1
        self.next_rotation += n * self.interval
        return n
