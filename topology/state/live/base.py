"""What a task's live state is: :class:`LiveState`, whichever backend holds it, and
:class:`StateSize`, what it reports (pure)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol, runtime_checkable

#: A change in stored form: (stored key, stored value), the value None for a deleted key.
Change = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class StateSize:
    """How big one task's live state is: ``keys`` held (a disk store: as of its last write
    batch; keys expired but not swept yet included) and ``bytes`` — on disk for a disk
    backend, an estimate of the Python objects' size for ``memory``."""

    keys: int
    bytes: int


@dataclass(frozen=True)
class CacheStats:
    """What a disk backend's cache did since the task opened its state: ``hits`` (reads
    it answered), ``misses`` (reads that went to the store), and what it holds now:
    ``entries`` and the ``bytes`` they are charged."""

    hits: int
    misses: int
    entries: int
    bytes: int


#: Entries sampled for the size estimate of a memory state.
SAMPLE = 32


def estimated_size(data: dict[Any, Any]) -> StateSize:
    """Keys of ``data`` and an estimate of what they take in memory: the dict itself and,
    per entry, the mean size of key and value over the first :data:`SAMPLE` entries."""
    n = len(data)
    sample = list(islice(data.items(), SAMPLE))
    per = sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in sample) / max(1, len(sample))
    return StateSize(n, int(sys.getsizeof(data) + per * n))


@runtime_checkable
class LiveState(Protocol):
    """A :class:`~topology.StatefulBolt` task's state while it runs (``self.state``).

    Keys and values are anything msgpack encodes; lists come back as tuples.  Changes are
    tracked for incremental checkpoints: :meth:`take_changes` gives what changed since its
    last call in *stored form* — key :func:`topology.state.kv.key_bytes` (key group and
    msgpack), value msgpack (or, with a TTL, the TTL-wrapped form
    :func:`topology.state.live.codec.stored_value` reads), ``None`` for a deleted key.
    """

    def get(self, key: Any, default: Any = None) -> Any: ...

    def put(self, key: Any, value: Any) -> None: ...

    def merge(self, key: Any, value: Any) -> None:
        """``put(key, combine(get(key), value))`` (``value`` for an absent key), where
        ``combine`` is the state's :attr:`combine`; a disk backend may defer it without
        reading the store (:mod:`topology.state.merges`)."""
        ...

    def delete(self, key: Any) -> None: ...

    def __contains__(self, key: Any) -> bool: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    def take_merge_errors(self) -> list[str]:
        """Deferred merges whose combination raised since the last call, one line each
        naming the key (the stored value was kept); forgotten here."""
        ...

    #: The function :meth:`merge` combines with (associative).
    combine: Callable[[Any, Any], Any]

    def items(self) -> Iterable[tuple[Any, Any]]:
        """Every (key, value); a disk backend streams them (a snapshot of the store)."""
        ...

    def take_changes(self) -> list[Change]:
        """What changed since the last call, in stored form; forget it."""
        ...

    def load(self, entries: Iterable[tuple[bytes, bytes]]) -> None:
        """Replace the whole content with ``entries`` (stored form), streaming; nothing is
        left to write afterwards (a restore)."""
        ...

    def size(self) -> StateSize:
        """Keys and bytes, cheap enough to call once a second."""
        ...

    def backlog(self) -> int:
        """How many changes wait for the next :meth:`take_changes` (cheap: every turn)."""
        ...

    def expire(self, now: float, budget: int) -> int:
        """Drop up to ``budget`` keys whose TTL passed at ``now``, each recorded as deleted
        for the next :meth:`take_changes`; how many were dropped (0 without a TTL)."""
        ...

    def close(self) -> None:
        """Release memory and files (a disk backend deletes its directory)."""
        ...
