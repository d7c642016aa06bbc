"""The per-worker outbox of ack traffic toward the acker tasks, combined per executor turn.

The outbox XORs together every ack for the same root within one turn before anything is
sent, so a tree processed inside one worker costs the acker one update per turn instead of
one per tuple.  Roots go to acker ``ackers[root % len(ackers)]``.
"""

from __future__ import annotations

from typing import Any

from .compiled import load
from .protocol import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET, FailReason

#: ``acker._ledger``, whose ``split_acks`` is :func:`_split_acks` compiled, or None.
_ledger: Any = load("acker._ledger")


def _split_acks(acks: dict[int, int], ackers: list[int]) -> dict[int, dict[int, int]]:
    """The non-zero ``acks`` per acker task ``ackers[root % len(ackers)]`` (the reference of
    ``split_acks`` in ``acker/_ledger.c``)."""
    n = len(ackers)
    by_acker: dict[int, dict[int, int]] = {}
    for root, value in acks.items():
        if value:
            acker = ackers[root % n]
            part = by_acker.get(acker)
            if part is None:
                part = by_acker[acker] = {}
            part[root] = value
    return by_acker


class AckOutbox:
    """Ack traffic of one worker toward the acker tasks, combined per turn."""

    def __init__(self, ackers: list[int]) -> None:
        self.ackers = list(ackers)
        self._n = len(self.ackers)
        self._ackers_tuple = tuple(self.ackers)
        #: acker -> this turn's ``[root, edges, spout task]`` (a fresh list after a drain;
        #: the dict itself is never replaced: a spout task's ``SpoutTrees`` holds it).
        self.inits: dict[int, list[list[int]]] = {a: [] for a in self.ackers}
        #: root -> XOR of this turn's acks, for every acker (split by acker when drained);
        #: the same dict for the outbox's lifetime, so callers may hold on to it.
        self.acks: dict[int, int] = {}
        self._fails: dict[int, list[list[Any]]] = {a: [] for a in self.ackers}
        self._resets: dict[int, list[int]] = {a: [] for a in self.ackers}

    def acker_of(self, root: int) -> int:
        return self.ackers[root % self._n]

    def init(self, root: int, value: int, spout_task: int) -> None:
        """A new tree's init (``start_tree`` of this package's C API appends to
        :attr:`inits` itself)."""
        self.inits[self.ackers[root % self._n]].append([root, value, spout_task])

    def ack(self, root: int, value: int) -> None:
        acks = self.acks
        acks[root] = acks.get(root, 0) ^ value

    def fail(self, root: int, reason: FailReason) -> None:
        self._fails[self.acker_of(root)].append([root, reason.to_wire()])

    def reset(self, root: int) -> None:
        self._resets[self.acker_of(root)].append(root)

    def _acks_by_acker(self) -> dict[int, dict[int, int]]:
        """This turn's non-zero combined acks, per acker task; empties ``acks``."""
        acks = self.acks
        if not acks:
            return {}
        ackers, n = self.ackers, self._n
        if n == 1:  # (a copy, filtered only when needed: zeros are rare)
            only = acks.copy()
            if 0 in only.values():
                only = {r: v for r, v in only.items() if v}
            by_acker = {ackers[0]: only}
        elif _ledger is not None:
            by_acker = _ledger.split_acks(acks, self._ackers_tuple)
        else:
            by_acker = _split_acks(acks, self.ackers)
        acks.clear()
        return by_acker

    def drain(self) -> list[tuple[int, str, list[Any]]]:
        """``(acker task, stream, values)`` for everything buffered; empties the outbox."""
        out: list[tuple[int, str, list[Any]]] = []
        acks_by_acker = self._acks_by_acker()
        for acker in self.ackers:
            inits = self.inits[acker]
            if inits:
                out.append((acker, ACK_INIT, [inits]))
                self.inits[acker] = []
            acks = acks_by_acker.get(acker)
            if acks:
                out.append((acker, ACK_ACK, [acks]))
            fails = self._fails[acker]
            if fails:
                out.extend((acker, ACK_FAIL, f) for f in fails)
                self._fails[acker] = []
            resets = self._resets[acker]
            if resets:
                out.append((acker, ACK_RESET, [resets]))
                self._resets[acker] = []
        return out
