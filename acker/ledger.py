"""The acker's ledger: one XOR value per tuple tree (pure, clock injected by the caller).

Storm's algorithm.  A spout registers a tree with ``init(root, xor of its edge ids,
spout task)``; every bolt ack XORs ``input edge id ^ ids of the edges it anchored`` into the
root's value.  Every edge id enters the value exactly twice (once when created, once when
acked), so the value returns to 0 exactly when every tuple of the tree has been acked.
Messages may arrive in any order: an ack or fail before its init is kept until the init
says which spout task to tell.

Entries nobody completes expire after ``timeout`` (rotating buckets); the spout owns the
user-visible timeout, so expiry here only frees memory.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .rotating import TIMEOUT_BUCKETS, RotatingMap, RotationClock


class Outcome(NamedTuple):
    """A tree the spout task must be told about: acked (``reason is None``) or failed."""

    root: int
    spout_task: int
    reason: Any = None

    @property
    def acked(self) -> bool:
        return self.reason is None


class _Entry:
    __slots__ = ("value", "spout_task", "reason")

    def __init__(self) -> None:
        self.value = 0
        self.spout_task: int | None = None
        self.reason: Any = None


class AckLedger:
    """XOR values of pending trees, expiring after ``timeout`` seconds of the given clock."""

    def __init__(self, timeout: float, now: float, expire: bool = True) -> None:
        self._entries: RotatingMap[int, _Entry] = RotatingMap(TIMEOUT_BUCKETS)
        self._clock = RotationClock(timeout, TIMEOUT_BUCKETS, now) if expire else None
        self.expired = 0

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, root: int) -> _Entry:
        entry = self._entries.get(root)
        if entry is None:
            entry = _Entry()
            self._entries.put_new(root, entry)
        return entry

    def init(self, root: int, value: int, spout_task: int) -> Outcome | None:
        """Register a tree; may complete it when acks arrived first."""
        entry = self._entry(root)
        entry.value ^= value
        entry.spout_task = spout_task
        return self._settle(root, entry)

    def ack_all(self, acks: dict[int, int], completed: dict[int, list[int]]) -> list[Outcome]:
        """:meth:`ack` for every ``root -> value`` of ``acks`` (one combined batch): the
        completed trees are appended to ``completed[spout task]``; failed ones returned."""
        failed: list[Outcome] = []
        get = self._entries.get
        for root, value in acks.items():
            entry = get(root)
            if entry is None:
                entry = _Entry()
                self._entries.put_new(root, entry)
            entry.value ^= value
            spout_task = entry.spout_task
            if spout_task is None:
                continue  # acks before the init: kept until the init names the spout
            if entry.reason is not None:
                failed.append(Outcome(root, spout_task, entry.reason))
                self._entries.pop(root)
            elif not entry.value:
                self._entries.pop(root)
                roots = completed.get(spout_task)
                if roots is None:
                    completed[spout_task] = [root]
                else:
                    roots.append(root)
        return failed

    def ack(self, root: int, value: int) -> Outcome | None:
        """XOR an ack value in; an outcome when the tree is complete and its spout known."""
        entry = self._entry(root)
        entry.value ^= value
        return self._settle(root, entry)

    def fail(self, root: int, reason: Any) -> Outcome | None:
        """Fail a tree (the first reason wins); an outcome once its spout task is known."""
        entry = self._entry(root)
        if entry.reason is None:
            entry.reason = reason
        return self._settle(root, entry)

    def reset(self, root: int) -> int | None:
        """Restart a tree's expiry; return its spout task (to forward the reset) if known."""
        entry = self._entries.get(root)
        if entry is None:
            return None
        self._entries.touch(root)
        return entry.spout_task

    def _settle(self, root: int, entry: _Entry) -> Outcome | None:
        if entry.spout_task is None:
            return None
        if entry.reason is not None:
            self._entries.pop(root)
            return Outcome(root, entry.spout_task, entry.reason)
        if entry.value == 0:
            self._entries.pop(root)
            return Outcome(root, entry.spout_task)
        return None

    def expire(self, now: float) -> int:
        """Drop entries older than the timeout; return how many were dropped."""
        if self._clock is None:
            return 0
        dropped = len(self._entries.rotate_due(self._clock, now))
        self.expired += dropped
        return dropped
