"""Acker streams, reasons, and the per-worker outbox that combines ack traffic.

Streams (each tuple carries a *batch*, one tuple per destination task per executor turn):

===================== =========================== ====================================
stream                to the acker                from the acker to a spout task
===================== =========================== ====================================
``__ack_init``        ``[[[root, value, spout]...]]``
``__ack_ack``         ``[{root: xor, ...}]``       ``[[root, ...]]`` completed trees
``__ack_fail``        ``[root, reason]`` (one each) ``[root, reason]`` (one each)
``__ack_reset_timeout`` ``[[root, ...]]``          ``[[root, ...]]`` restart timeouts
===================== =========================== ====================================

Roots are routed to acker ``ackers[root % len(ackers)]`` — a fields grouping on the root
id.  The outbox XORs together every ack for the same root within one turn before anything
is sent, so a tree processed inside one worker costs the acker one update per turn instead
of one per tuple.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ACKER_COMPONENT = "__acker"
ACK_INIT = "__ack_init"
ACK_ACK = "__ack_ack"
ACK_FAIL = "__ack_fail"
ACK_RESET = "__ack_reset_timeout"
ACK_STREAMS = (ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET)


@dataclass(frozen=True)
class FailReason:
    """Why a spout tuple failed.

    ``kind`` is ``"timeout"`` (not completed within ``topology.message.timeout.secs``) or
    ``"failed"`` (a bolt called ``fail``, or raised); then ``component`` and ``task`` name
    the bolt and ``error`` holds the exception text, if any.
    """

    kind: str
    component: str | None = None
    task: int | None = None
    error: str | None = None

    def to_wire(self) -> list[Any]:
        return [self.kind, self.component, self.task, self.error]

    @classmethod
    def from_wire(cls, data: list[Any]) -> FailReason:
        return cls(*data)

    def __str__(self) -> str:
        if self.kind == "timeout":
            return "timeout"
        where = f" in {self.component!r} task {self.task}" if self.component else ""
        return f"failed{where}" + (f": {self.error.splitlines()[-1]}" if self.error else "")


TIMEOUT = FailReason("timeout")


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
