"""The acker system task: applies batched ack traffic to an :class:`AckLedger` and tells
spout tasks which of their trees completed or failed."""

from __future__ import annotations

from typing import Any

from .ledger import AckLedger, Outcome
from .protocol import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET


class AckerTask:
    """One acker task; lives in a worker like any bolt task, fed by the executor."""

    def __init__(self, task_id: int, timeout: float, now: float, expire: bool = True) -> None:
        self.task_id = task_id
        self.ledger = AckLedger(timeout, now, expire)
        self._acked: dict[int, list[int]] = {}
        self._failed: dict[int, list[list[Any]]] = {}
        self._resets: dict[int, list[int]] = {}

    def receive(self, stream: str, vals: list[Any], now: float | None = None) -> None:
        """Apply one received group (a list of batch tuples) of an ``__ack_*`` stream.

        Expiry due by ``now`` is applied first, so it never ages the trees this group adds.
        """
        ledger = self.ledger
        if now is not None:
            ledger.expire(now)
        if stream in (ACK_ACK, ACK_INIT):
            batch = ledger.ack_all if stream == ACK_ACK else ledger.init_all
            failed: list[Outcome] = []
            try:
                for (items,) in vals:
                    batch(items, self._acked, failed)
            finally:  # what settled before a malformed item still reaches its spout
                for settled in failed:
                    self._tell(settled)
        elif stream == ACK_FAIL:
            for root, reason in vals:
                outcome = ledger.fail(root, reason)
                if outcome is not None:
                    self._tell(outcome)
        elif stream == ACK_RESET:
            for (roots,) in vals:
                for root in roots:
                    spout_task = ledger.reset(root)
                    if spout_task is not None:
                        self._resets.setdefault(spout_task, []).append(root)

    def _tell(self, outcome: Outcome) -> None:
        if outcome.acked:
            self._acked.setdefault(outcome.spout_task, []).append(outcome.root)
        else:
            self._failed.setdefault(outcome.spout_task, []).append([outcome.root, outcome.reason])

    def expire(self, now: float) -> int:
        return self.ledger.expire(now)

    def drain(self) -> list[tuple[int, str, list[Any]]]:
        """``(spout task, stream, values)`` for every outcome since the last drain."""
        out: list[tuple[int, str, list[Any]]] = []
        for spout_task, roots in self._acked.items():
            out.append((spout_task, ACK_ACK, [roots]))
        for spout_task, fails in self._failed.items():
            out.extend((spout_task, ACK_FAIL, f) for f in fails)
        for spout_task, roots in self._resets.items():
            out.append((spout_task, ACK_RESET, [roots]))
        self._acked, self._failed, self._resets = {}, {}, {}
        return out
