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

from .compiled import load

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
    than at the timeout; ``error`` says which worker), ``"failed"`` (a bolt called
    ``fail``, or raised; then ``component`` and ``task`` name the bolt and ``error`` holds
    the exception text, if any) or ``"rollback"`` (a checkpointed topology went back to its
    last checkpoint and replays the msg id).  Every kind is listed in docs/STATUS.md.
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


#: The largest root id or ack value (64-bit unsigned ints: random edge ids; random root
#: ids, drawn so that an acker of the spout's own worker owns them when there is one).
U64_MAX = 2**64 - 1


def _u64s(items: Any) -> bool:
    """``items`` (a list, tuple or dict view) holds only ints in 0 .. 2**64 - 1 (checked
    in C-level passes: no Python code runs per item)."""
    if not items:
        return True
    return set(map(type, items)) == {int} and min(items) >= 0 and max(items) <= U64_MAX


def py_u64_list(items: Any) -> bool:
    """``items`` is a list of ints in 0 .. 2**64 - 1."""
    return type(items) is list and _u64s(items)


def py_u64_map(items: Any) -> bool:
    """``items`` is a dict of ints in 0 .. 2**64 - 1 to such ints."""
    return type(items) is dict and _u64s(items) and _u64s(items.values())


def py_inits_ok(items: Any) -> bool:
    """``items`` is a list of ``[root, value, spout task]`` lists: root and value ints in
    0 .. 2**64 - 1, the spout task an int."""
    if type(items) is not list:
        return False
    if not items:
        return True
    if set(map(type, items)) != {list} or set(map(len, items)) != {3}:
        return False
    roots, values, spouts = zip(*items)
    return _u64s(roots) and _u64s(values) and set(map(type, spouts)) == {int}


#: ``acker._ledger``, whose ``u64_list``, ``u64_map`` and ``inits_ok`` are the three checks
#: above in one compiled pass each, or None.
_ledger: Any = load("acker._ledger")
u64_list = py_u64_list if _ledger is None else _ledger.u64_list
u64_map = py_u64_map if _ledger is None else _ledger.u64_map
inits_ok = py_inits_ok if _ledger is None else _ledger.inits_ok


def _reason_on_wire(reason: Any) -> bool:
    """``reason`` is :meth:`FailReason.to_wire`'s ``[kind, component, task, error]``."""
    if type(reason) is not list or len(reason) != 4:
        return False
    kind, component, task, error = reason
    return (
        type(kind) is str
        and (component is None or type(component) is str)
        and (task is None or type(task) is int)
        and (error is None or type(error) is str)
    )


def check_values(stream: str, vals: list[Any], to_acker: bool) -> str | None:
    """None when every tuple of a received group of ack stream ``stream`` has the shape the
    table above gives (``to_acker``: the group goes to an acker task, else to a spout
    task), else what is wrong.  Cheap: every root is type- and range-checked in bulk."""
    for values in vals:
        if type(values) is not list:
            return "ack traffic whose values are not a list"
        if stream == ACK_FAIL:
            if len(values) != 2 or not u64_list(values[:1]) or not _reason_on_wire(values[1]):
                return "a fail that is not [root, reason]"
            continue
        if len(values) != 1:
            return "ack traffic of the wrong arity"
        (items,) = values
        if stream == ACK_ACK and to_acker:
            if not u64_map(items):
                return "acks that are not {root: value} of 64-bit ints"
        elif stream == ACK_INIT and to_acker:
            if not inits_ok(items):
                return "inits that are not [root, value, spout task] of ints in range"
        elif stream in (ACK_ACK, ACK_RESET):
            if not u64_list(items):
                return "roots that are not a list of 64-bit ints"
        else:
            return f"stream {stream!r} does not go that way"
    return None
