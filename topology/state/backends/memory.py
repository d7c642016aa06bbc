"""The ``memory`` provider: checkpoints in this process's memory (the in-process runner,
unit tests)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .registry import KEEP_COMPLETE, CheckpointGone, Entries, register, retained

#: The open memory backends by state id (one per topology in this process).
_OPEN: dict[str, MemoryBackend] = {}


@register("memory")
class MemoryBackend:
    """Checkpoints in this process's memory (for tests and the in-process runner)."""

    @classmethod
    def open(cls, conf: Mapping[str, Any], state_id: str) -> MemoryBackend:
        backend = _OPEN.setdefault(state_id, cls())
        backend.retained = retained(conf)
        return backend

    @classmethod
    def remove(cls, conf: Mapping[str, Any], state_id: str) -> None:
        _OPEN.pop(state_id, None)

    def __init__(self, retained: int = KEEP_COMPLETE) -> None:
        #: Complete checkpoints kept (``topology.state.checkpoints.retained``).
        self.retained = retained
        #: Complete checkpoints kept whatever their age (:meth:`pin`).
        self._pinned: set[int] = set()
        #: (scope, key) -> [(checkpoint, value)] committed, oldest first
        self._committed: dict[tuple[str, bytes], list[tuple[int, bytes | None]]] = {}
        #: (checkpoint, epoch) -> rows written, not yet committed
        self._staged: dict[tuple[int, int], list[tuple[str, bytes, bytes | None]]] = {}
        self._complete: dict[int, dict[str, Any]] = {}
        self._highest = 0
        self._lock = threading.Lock()

    def reserve(self) -> int:
        with self._lock:
            self._highest += 1
            return self._highest

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None:
        with self._lock:
            self._highest = max(self._highest, checkpoint)
            rows = self._staged.setdefault((checkpoint, epoch), [])
            rows.extend((scope, key, value) for key, value in entries)

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        with self._lock:
            for scope, key, value in self._staged.pop((checkpoint, epoch), []):
                versions = self._committed.setdefault((scope, key), [])
                versions[:] = [v for v in versions if v[0] != checkpoint] + [(checkpoint, value)]
            for staged in [s for s in self._staged if s[0] <= checkpoint]:
                del self._staged[staged]
            self._complete[checkpoint] = info
            kept = sorted(self._complete)[-self.retained :]
            for old in [c for c in self._complete if c < kept[0] and c not in self._pinned]:
                del self._complete[old]
            oldest = min([kept[0], *self._pinned])
            for versions in self._committed.values():
                older = [v for v in versions if v[0] <= oldest]
                if len(older) > 1:
                    versions[:] = [older[-1]] + [v for v in versions if v[0] > oldest]

    def latest(self) -> int:
        with self._lock:
            return max(self._complete, default=0)

    def scopes(self) -> list[str]:
        with self._lock:
            return sorted({scope for scope, _ in self._committed})

    def pin(self, checkpoint: int) -> None:
        with self._lock:
            if checkpoint not in self._complete:
                raise CheckpointGone(checkpoint, max(self._complete, default=0))
            self._pinned.add(checkpoint)

    def unpin(self, checkpoint: int) -> None:
        with self._lock:
            self._pinned.discard(checkpoint)

    def info(self, checkpoint: int) -> dict[str, Any]:
        with self._lock:
            if checkpoint not in self._complete:
                raise CheckpointGone(checkpoint, max(self._complete, default=0))
            return dict(self._complete[checkpoint])

    def read_all(self, checkpoint: int, scope: str) -> Iterator[tuple[bytes, bytes]]:
        return iter(self.read(checkpoint, scope, lambda key: True).items())

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        out = {}
        with self._lock:
            for (row_scope, key), versions in self._committed.items():
                if row_scope != scope or not keep(key):
                    continue
                valid = [value for k, value in versions if k <= checkpoint]
                if valid and valid[-1] is not None:
                    out[key] = valid[-1]
        return out

    def close(self) -> None:
        pass
