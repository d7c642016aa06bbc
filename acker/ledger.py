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

from .compiled import load
from .rotating import TIMEOUT_BUCKETS, RotatingMap, RotationClock

#: ``acker._ledger`` (the loops of :meth:`AckLedger.ack_all` and :meth:`AckLedger.init_all`
#: compiled, same behaviour) when it was built, else None: the Python below runs.
_compiled: Any = load("acker._ledger")
#: True when the compiled loops are in use.
COMPILED = _compiled is not None


class Outcome(NamedTuple):
    """A tree the spout task must be told about: acked (``reason is None``) or failed."""

    root: int
    spout_task: int
    reason: Any = None

    @property
    def acked(self) -> bool:
        return self.reason is None


#: A ledger entry is a list ``[value, spout_task, reason]``: the XOR of the tree's
#: outstanding edges, the spout task once the init named it (None before), the first
#: fail reason (None while not failed).  A list, not an object: one is made per tree.
_VALUE, _SPOUT, _REASON = 0, 1, 2


def _add_completed(completed: dict[int, list[int]], spout_task: int, root: int) -> None:
    roots = completed.get(spout_task)
    if roots is None:
        completed[spout_task] = [root]
    else:
        roots.append(root)


class AckLedger:
    """XOR values of pending trees, expiring after ``timeout`` seconds of the given clock.

    The batch methods :meth:`init_all` and :meth:`ack_all` take what one ack message holds
    and append their outcomes to the caller's ``completed`` and ``failed`` as they go, so
    outcomes settled before a malformed item (which raises ``TypeError``) are not lost.
    """

    def __init__(self, timeout: float, now: float, expire: bool = True) -> None:
        self._entries: RotatingMap[int, list[Any]] = RotatingMap(TIMEOUT_BUCKETS)
        self._clock = RotationClock(timeout, TIMEOUT_BUCKETS, now) if expire else None
        self.expired = 0

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, root: int) -> list[Any]:
        entry = self._entries.get(root)
        if entry is None:
            entry = [0, None, None]
            self._entries.put_new(root, entry)
        return entry

    def init(self, root: int, value: int, spout_task: int) -> Outcome | None:
        """Register a tree; may complete it when acks arrived first."""
        return self._one(self.init_all, [[root, value, spout_task]])

    def ack(self, root: int, value: int) -> Outcome | None:
        """XOR an ack value in; an outcome when the tree is complete and its spout known."""
        return self._one(self.ack_all, {root: value})

    @staticmethod
    def _one(batch: Any, items: Any) -> Outcome | None:
        completed: dict[int, list[int]] = {}
        failed: list[Outcome] = []
        batch(items, completed, failed)
        if failed:
            return failed[0]
        for spout_task, (root,) in completed.items():
            return Outcome(root, spout_task)
        return None

    def init_all(
        self, inits: list[list[int]], completed: dict[int, list[int]], failed: list[Outcome]
    ) -> None:
        """:meth:`init` for every ``[root, value, spout task]`` of ``inits``: trees complete
        at once (their acks came first, or they have no edges) are appended to
        ``completed[spout task]``, trees failed before their init to ``failed``.  An
        item that is not a list or tuple of a root and two ints raises ``TypeError``."""
        if _compiled is not None:
            _compiled.init_all(self._entries.buckets, inits, completed, failed, Outcome)
            return
        buckets = self._entries.buckets
        newest = buckets[0]
        for item in inits:
            if type(item) not in (list, tuple) or len(item) != 3:
                raise TypeError(f"an init of the wrong shape: {item!r:.80}")
            root, value, spout_task = item
            if type(value) is not int or type(spout_task) is not int:
                raise TypeError(f"an init of the wrong shape: {item!r:.80}")
            for bucket in buckets:  # RotatingMap.get, inlined: this runs once per tree
                entry = bucket.get(root)
                if entry is not None:
                    break
            else:  # the usual case: the init comes first
                if value:
                    newest[root] = [value, spout_task, None]
                else:  # a tree without edges is complete already
                    _add_completed(completed, spout_task, root)
                continue
            entry[_VALUE] ^= value
            entry[_SPOUT] = spout_task
            outcome = self._settle(root, entry)
            if outcome is not None:
                if outcome.reason is None:
                    _add_completed(completed, spout_task, root)
                else:
                    failed.append(outcome)

    def ack_all(
        self, acks: dict[int, int], completed: dict[int, list[int]], failed: list[Outcome]
    ) -> None:
        """:meth:`ack` for every ``root -> value`` of ``acks`` (one combined batch): the
        trees it completes are appended to ``completed[spout task]``, the failed ones it
        settles to ``failed``.  ``acks`` must be a dict (``TypeError``)."""
        if _compiled is not None:
            _compiled.ack_all(self._entries.buckets, acks, completed, failed, Outcome)
            return
        if type(acks) is not dict:
            raise TypeError(f"acks must be a dict, got {type(acks).__name__}")
        buckets = self._entries.buckets
        for root, value in acks.items():
            for bucket in buckets:  # RotatingMap.get, inlined: this runs once per tree
                entry = bucket.get(root)
                if entry is not None:
                    break
            else:  # acks before the init: kept until the init names the spout
                buckets[0][root] = [0 ^ value, None, None]  # (0 ^: ints only)
                continue
            entry[_VALUE] ^= value
            spout_task = entry[_SPOUT]
            if spout_task is None:
                continue
            if entry[_REASON] is not None:
                failed.append(Outcome(root, spout_task, entry[_REASON]))
                bucket.pop(root)
            elif not entry[_VALUE]:
                bucket.pop(root)
                roots = completed.get(spout_task)  # _add_completed, inlined
                if roots is None:
                    completed[spout_task] = [root]
                else:
                    roots.append(root)

    def fail(self, root: int, reason: Any) -> Outcome | None:
        """Fail a tree (the first reason wins); an outcome once its spout task is known."""
        entry = self._entry(root)
        if entry[_REASON] is None:
            entry[_REASON] = reason
        return self._settle(root, entry)

    def reset(self, root: int) -> int | None:
        """Restart a tree's expiry; return its spout task (to forward the reset) if known."""
        entry = self._entries.get(root)
        if entry is None:
            return None
        self._entries.touch(root)
        return entry[_SPOUT]

    def _settle(self, root: int, entry: list[Any]) -> Outcome | None:
        spout_task = entry[_SPOUT]
        if spout_task is None:
            return None
        if entry[_REASON] is not None:
            self._entries.pop(root)
            return Outcome(root, spout_task, entry[_REASON])
        if entry[_VALUE] == 0:
            self._entries.pop(root)
            return Outcome(root, spout_task)
        return None

    def expire(self, now: float) -> int:
        """Drop entries older than the timeout; return how many were dropped."""
        if self._clock is None:
            return 0
        dropped = len(self._entries.rotate_due(self._clock, now))
        self.expired += dropped
        return dropped
