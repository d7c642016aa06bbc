"""Simulated time: clocks that move only when a test says so (pure: no I/O, no threads).

:class:`ManualClock` is the time source itself.  :class:`WorkerTime` is a worker's side of
LocalCluster's simulated time: the cluster sends ``{"cmd": "time", "to": t}``, the worker
moves its clock there between two executor turns, and answers once its executor has run a
turn's timers (ticks, message timeouts, checkpoint intervals) at ``t`` or later.
:func:`time_steps` splits one advance into the steps the cluster takes, as Storm's
``advanceClusterTime`` does.
"""

from __future__ import annotations

import math
from typing import Any


class ManualClock:
    """A clock that moves only when told to (``time`` may also be assigned directly)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.time = start

    def __call__(self) -> float:
        return self.time

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds``; return the new time."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        self.time += seconds
        return self.time


class WorkerTime:
    """A worker's simulated clock and the advances it has yet to confirm.

    Only the executor thread calls it: the clock moves between turns, never inside one.
    """

    def __init__(self, start: float) -> None:
        self.clock = ManualClock(start)
        self._unconfirmed: list[tuple[Any, float]] = []

    def advance_to(self, target: float, request: Any) -> None:
        """Move the clock to ``target`` (never back: a repeated request changes nothing);
        ``request`` is confirmed by :meth:`confirmed` once the timers have run there."""
        self.clock.time = max(self.clock.time, float(target))
        self._unconfirmed.append((request, float(target)))

    def confirmed(self, timers_at: float) -> list[Any]:
        """Requests whose target the executor's timers have reached (``timers_at``: the
        topology time of its last turn); each is returned once."""
        if not self._unconfirmed:
            return []
        done = [req for req, target in self._unconfirmed if timers_at >= target]
        self._unconfirmed = [(r, t) for r, t in self._unconfirmed if timers_at < t]
        return done


def time_steps(start: float, seconds: float, step: float) -> list[float]:
    """The clock readings an advance by ``seconds`` from ``start`` goes through, ``step``
    apart (the last one exactly ``start + seconds``); empty for ``seconds == 0``."""
    if not seconds >= 0 or not math.isfinite(seconds):
        raise ValueError(f"simulated time moves forward only: cannot advance by {seconds!r} s")
    if not step > 0 or not math.isfinite(step):
        raise ValueError(f"the step of an advance must be a number > 0, got {step!r}")
    n = math.ceil(seconds / step - 1e-9)
    return [start + min(seconds, i * step) for i in range(1, n + 1)]
