"""Sharing the GIL between a worker's executor and its helper threads.

Contract: while a worker runs, its helper threads (the ZooKeeper client, the control
thread answering ``status`` and log reads) get the GIL within milliseconds, however busy
the executor is.  CPython hands the GIL to a waiting thread only after the holder kept it
for a whole *switch interval*, and the executor's many short releases (each ZeroMQ call)
restart that wait, so without these measures a waiting thread could starve for seconds
(figures: docs/BENCHMARKS.md, "sharing the GIL").

* :func:`short_switch_interval` sets the interval to :data:`SWITCH_INTERVAL_SECS` for the
  worker's run and restores the previous one afterwards (a Spark Python worker process may
  go on to run other tasks);
* :class:`GilYield` sleeps :data:`YIELD_SECS` once every :data:`YIELD_EVERY_SECS` of the
  executor loop: a release long enough for a woken thread to take the GIL, whatever the
  release pattern of the executor's own calls.

Both cost something only while another thread wants the GIL.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: The worker process's switch interval (CPython's default is 0.005 s).
SWITCH_INTERVAL_SECS = 0.0002
#: How long the executor lets go of the GIL each time (long enough for a woken thread).
YIELD_SECS = 0.0001
#: How often the executor lets go of it on purpose (seconds of its loop).
YIELD_EVERY_SECS = 0.05


_lock = threading.Lock()
_active = 0  # bodies of short_switch_interval running now (workers in threads of a process)
_saved = 0.0  # the interval from before the first of them


@contextmanager
def short_switch_interval(interval: float = SWITCH_INTERVAL_SECS) -> Iterator[None]:
    """Run the body with ``sys.setswitchinterval(interval)``; the interval from before is
    restored when the last of overlapping bodies (workers in threads) ends."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = sys.getswitchinterval()
        _active += 1
        sys.setswitchinterval(interval)
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                sys.setswitchinterval(_saved)


class GilYield:
    """Call :meth:`maybe_yield` from a busy loop with the loop's clock reading: at most once
    every ``every`` seconds it sleeps ``pause`` seconds (``sleep`` is injectable for tests)."""

    def __init__(
        self,
        every: float = YIELD_EVERY_SECS,
        pause: float = YIELD_SECS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.every = every
        self.pause = pause
        self._sleep = sleep
        self._next = 0.0
        self.yields = 0

    def maybe_yield(self, now: float) -> None:
        if now < self._next:
            return
        self._next = now + self.every
        self.yields += 1
        self._sleep(self.pause)
