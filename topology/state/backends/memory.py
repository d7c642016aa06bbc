"""The ``memory`` provider: checkpoints in this process's memory (the in-process runner,
unit tests)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from .registry import KEEP_COMPLETE, Entries, register

#: The open memory backends by state id (one per topology in this process).
_OPEN: dict[str, MemoryBackend] = {}


@register("memory")
class MemoryBackend:
    """Checkpoints in this process's memory (for tests and the in-process runner)."""

    @classmethod
    def open(cls, conf: Mapping[str, Any], state_id: str) -> MemoryBackend:
        return _OPEN.setdefault(state_id, cls())

    @classmethod
    def remove(cls, conf: Mapping[str, Any], state_id: str) -> None:
        _OPEN.pop(state_id, None)

    def __init__(self) -> None:
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
            kept = sorted(self._complete)[-KEEP_COMPLETE:]
            for old in [c for c in self._complete if c < kept[0]]:
                del self._complete[old]
            for versions in self._committed.values():
                older = [v for v in versions if v[0] <= kept[0]]
                if len(older) > 1:
                    versions[:] = [older[-1]] + [v for v in versions if v[0] > kept[0]]

    def latest(self) -> int:
        with self._lock:
            return max(self._complete, default=0)

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
