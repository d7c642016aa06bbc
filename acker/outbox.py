"""The per-worker outbox of ack traffic toward the acker tasks, combined per executor turn.

The outbox XORs together every ack for the same root within one turn before anything is
sent, so a tree processed inside one worker costs the acker one update per turn instead of
one per tuple.  Roots go to acker ``ackers[root % len(ackers)]``.
"""

from __future__ import annotations

from typing import Any

from .protocol import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET, FailReason


class AckOutbox:
    """Ack traffic of one worker toward the acker tasks, combined per turn."""

    def __init__(self, ackers: list[int]) -> None:
        self.ackers = list(ackers)
        self._n = len(self.ackers)
        self._inits: dict[int, list[list[int]]] = {a: [] for a in self.ackers}
        self._acks: dict[int, dict[int, int]] = {a: {} for a in self.ackers}
        self._fails: dict[int, list[list[Any]]] = {a: [] for a in self.ackers}
        self._resets: dict[int, list[int]] = {a: [] for a in self.ackers}

    def acker_of(self, root: int) -> int:
        return self.ackers[root % self._n]

    def init(self, root: int, value: int, spout_task: int) -> None:
        self._inits[self.ackers[root % self._n]].append([root, value, spout_task])

    def ack(self, root: int, value: int) -> None:
        acks = self._acks[self.ackers[root % self._n]]
        acks[root] = acks.get(root, 0) ^ value

    def fail(self, root: int, reason: FailReason) -> None:
        self._fails[self.acker_of(root)].append([root, reason.to_wire()])

    def reset(self, root: int) -> None:
        self._resets[self.acker_of(root)].append(root)

    def drain(self) -> list[tuple[int, str, list[Any]]]:
        """``(acker task, stream, values)`` for everything buffered; empties the outbox."""
        out: list[tuple[int, str, list[Any]]] = []
        for acker in self.ackers:
            inits = self._inits[acker]
            if inits:
                out.append((acker, ACK_INIT, [inits]))
                self._inits[acker] = []
            acks = self._acks[acker]
            if acks:
                nonzero = {r: v for r, v in acks.items() if v}
                if nonzero:
                    out.append((acker, ACK_ACK, [nonzero]))
                self._acks[acker] = {}
            fails = self._fails[acker]
            if fails:
                out.extend((acker, ACK_FAIL, f) for f in fails)
                self._fails[acker] = []
            resets = self._resets[acker]
            if resets:
                out.append((acker, ACK_RESET, [resets]))
                self._resets[acker] = []
        return out
