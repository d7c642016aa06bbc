"""Acking as one worker runs it: the runtime's single door into ``acker/``.

A worker with acking on builds one :class:`WorkerAcking` and asks it for a
:class:`~acker.spout.SpoutAcking` per spout task and a :class:`~acker.anchoring.BoltAcking`
per bolt task (their collectors call them on emit / ack / fail).  The executor then only
does three things with it, each once per turn:

* :meth:`WorkerAcking.deliver` — a received group on an ``__ack_*`` stream, addressed to an
  acker task of this worker or to one of its spout tasks;
* :meth:`WorkerAcking.expire` — timeouts (spout trees and the ackers' ledgers);
* :meth:`WorkerAcking.drain` — this turn's combined ack traffic, as ``(source task,
  destination task, stream, values)`` to put on lanes like any other tuple.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .anchoring import BoltAcking
from .outbox import AckOutbox
from .pending import PendingTrees
from .spout import SpoutAcking
from .task import AckerTask


class WorkerAcking:
    """The outbox, the local acker tasks and the spout trackers of one worker.

    ``acker_tasks`` are every acker task of the topology (roots are spread over them);
    ``local_ackers`` the ones this worker hosts; ``system_src`` the source task id this
    worker's outbox traffic is sent under (negative: not a user task).
    """

    def __init__(
        self,
        acker_tasks: Sequence[int],
        local_ackers: Sequence[int],
        system_src: int,
        timeout: float,
        now: float,
        timeouts_enabled: bool = True,
    ) -> None:
        if not acker_tasks:
            raise ValueError("WorkerAcking needs at least one acker task")
        self.outbox = AckOutbox(list(acker_tasks))
        self.ackers = {t: AckerTask(t, timeout, now, timeouts_enabled) for t in local_ackers}
        self.system_src = system_src
        self._timeout = timeout
        self._timeouts_enabled = timeouts_enabled
        self._spouts: dict[int, SpoutAcking] = {}

    def for_spout(
        self,
        task_id: int,
        now: float,
        max_pending: int | None = None,
        adaptive: bool = True,
        auto: bool = False,
    ) -> SpoutAcking:
        """The tracker of spout task ``task_id``: its outcomes arrive through :meth:`deliver`
        and go to the callbacks its task binds (:meth:`SpoutAcking.bind`)."""
        pending = PendingTrees(
            self._timeout, now, self._timeouts_enabled, max_pending, adaptive, auto
        )
        local = tuple(i for i, task in enumerate(self.outbox.ackers) if task in self.ackers)
        spout = SpoutAcking(task_id, self.outbox, pending, local)
        self._spouts[task_id] = spout
        return spout

    def for_bolt(self, component: str, task_id: int) -> BoltAcking:
        return BoltAcking(component, task_id, self.outbox)

    def deliver(self, dest: int, stream: str, vals: list[Any], now: float) -> bool:
        """Hand one received ack-stream group to acker task or spout task ``dest``; False
        when ``dest`` is neither (the caller counts it as unroutable)."""
        acker = self.ackers.get(dest)
        if acker is not None:
            acker.receive(stream, vals, now)
            return True
        spout = self._spouts.get(dest)
        if spout is not None:
            spout.receive(stream, vals, now)
            return True
        return False

    def expire(self, now: float) -> None:
        """Time out overdue spout trees (``on_failed`` with reason timeout); free the
        ledger entries nobody completed."""
        for spout in self._spouts.values():
            spout.expire(now)
        for acker in self.ackers.values():
            acker.expire(now)

    def drain(self) -> list[tuple[int, int, str, list[Any]]]:
        """``(source task, destination task, stream, values)`` of everything buffered this
        turn: the outbox toward the ackers, and the local ackers' outcomes toward spouts."""
        src = self.system_src
        out = [(src, dest, stream, values) for dest, stream, values in self.outbox.drain()]
        for acker in self.ackers.values():
            task = acker.task_id
            out.extend((task, dest, stream, values) for dest, stream, values in acker.drain())
        return out

    def ledger_sizes(self) -> dict[int, int]:
        """Acker task id -> trees its ledger holds (for status)."""
        return {task: len(acker.ledger) for task, acker in self.ackers.items()}
