"""Acker stream names and their value shapes, and failure reasons (the wire protocol).

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
id (see :class:`acker.outbox.AckOutbox`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ACKER_COMPONENT = "__acker"
ACK_INIT = "__ack_init"
ACK_ACK = "__ack_ack"
ACK_FAIL = "__ack_fail"
ACK_RESET = "__ack_reset_timeout"
#: Every acker stream (what acker and system sources may send on).
ACK_STREAMS = frozenset({ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET})


@dataclass(frozen=True)
class FailReason:
    """Why a spout tuple failed.

    ``kind`` is ``"timeout"`` (not completed within ``topology.message.timeout.secs``),
    ``"worker_lost"`` (in flight when a worker of the topology died: failed at once rather
    than at the timeout; ``error`` says which worker) or ``"failed"`` (a bolt called
    ``fail``, or raised); then ``component`` and ``task`` name the bolt and ``error`` holds
    the exception text, if any.
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
        if self.kind == "worker_lost":
            return f"worker lost ({self.error})" if self.error else "worker lost"
        where = f" in {self.component!r} task {self.task}" if self.component else ""
        return f"failed{where}" + (f": {self.error.splitlines()[-1]}" if self.error else "")


TIMEOUT = FailReason("timeout")


def worker_lost(why: str) -> FailReason:
    """The reason of trees failed because a worker died (``why`` names it)."""
    return FailReason("worker_lost", error=why)


#: Longest error text a failure reason carries (it travels through the ackers).
MAX_REASON_CHARS = 2000


def clip_text(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail around a note
    saying how much was cut (a traceback's first and last lines are the useful ones)."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 60)
    head, tail = text[: keep // 2], text[len(text) - (keep - keep // 2) :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n... [{cut:,} characters cut] ...\n{tail}"
