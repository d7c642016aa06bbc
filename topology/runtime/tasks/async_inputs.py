"""The executor's side of async bolt tasks: outcomes drained each turn, input parked at capacity.

An :class:`~topology.async_bolt.AsyncBolt` task has calls in flight on its own asyncio
thread.  :class:`AsyncInputs` (one per executor, everything on the executor thread):

* :meth:`AsyncInputs.pump`, at the start of each turn: every async task emits, acks or
  fails what its calls finished (or what timed out by topology time); then its parked
  groups go back to the front of the inbound queue once it can take the first of them.
* :meth:`AsyncInputs.park`: a group for a task at capacity — or behind groups parked for it,
  or a barrier while it has calls in flight — waits here instead of running.  Parked tuples
  stay counted in the executor's inbound count, so spouts and peers are held back as for any
  full queue; the task never buffers input of its own.  A barrier parked until no call is in
  flight, and no input of the task waits for another attempt (those are made at once
  meanwhile: :meth:`~topology.runtime.tasks.failures.Parking.hurry`), makes the outputs of
  the inputs before it go before it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from topology.async_bolt import AsyncBolt

from .failures import Parking
from .task import BoltTask


class AsyncInputs:
    """Parked groups and per-turn draining of the async bolt tasks among ``bolts``."""

    def __init__(
        self, bolts: Iterable[BoltTask], inbound: deque[list[Any]], retries: Parking
    ) -> None:
        #: (task, its calls) of every async bolt task of the worker.
        self.tasks = [(t, t.calls) for t in bolts if t.calls is not None]
        self._inbound = inbound
        self._parked: dict[int, deque[list[Any]]] = {}
        self._retries = retries

    def park(self, dest: int, calls: AsyncBolt, group: list[Any]) -> bool:
        """Whether ``group`` for async task ``dest`` must wait (then it is parked, after
        what is parked for the task already)."""
        parked = self._parked.get(dest)
        if parked is None:
            if self._can_take(dest, calls, group):
                return False
            parked = self._parked[dest] = deque()
        parked.append(group)
        return True

    def park_rest(self, group: list[Any]) -> None:
        """The rest of a group the task ran out of room in (nothing is parked for it yet)."""
        self._parked[group[0]] = deque([group])

    def pump(self, at: float) -> bool:
        """Drain every async task at topology time ``at`` and give back the parked groups
        of those that can take them; True when anything happened."""
        busy = False
        for task, calls in self.tasks:
            busy |= calls.async_drain(at) > 0
            parked = self._parked.get(task.task_id)
            if parked is None:
                continue
            if parked[0][3] is None:  # a barrier waits: the attempts left, at once
                self._retries.hurry(task.task_id)
            if self._can_take(task.task_id, calls, parked[0]):
                del self._parked[task.task_id]
                self._inbound.extendleft(reversed(parked))
                busy = True
        return busy

    def in_flight(self) -> bool:
        """Whether any async task has a call in flight."""
        return any(calls.async_in_flight() for _, calls in self.tasks)

    def buffered(self) -> int:
        """Tuples parked, and calls in flight."""
        parked = sum(len(g[3]) for p in self._parked.values() for g in p if g[3] is not None)
        return parked + sum(calls.async_in_flight() for _, calls in self.tasks)

    def drop(self) -> None:
        """A rollback: forget parked groups and cancel every call in flight."""
        self._parked.clear()
        for _, calls in self.tasks:
            calls.async_drop()

    def _can_take(self, task: int, calls: AsyncBolt, group: list[Any]) -> bool:
        """Tuples: while it has room; a barrier (no values): once no call is in flight and
        no input waits for another attempt."""
        if group[3] is not None:
            return calls.async_room() > 0
        return not calls.async_in_flight() and not self._retries.holds(task)
