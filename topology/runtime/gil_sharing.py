"""Sharing the GIL between a worker's executor and its helper threads.

A worker's executor thread runs Python flat out, and between bursts of bytecode it makes
many short calls that release the GIL (every ZeroMQ send, receive and poll).  CPython
hands the GIL to a waiting thread only when the holder runs a whole *switch interval*
(5 ms by default) without letting go.  A holder that lets go and takes it straight back
every few microseconds restarts that clock each time, and on a busy machine the woken
thread is rarely scheduled before the holder takes the GIL back, so it can wait for
seconds.  The waiting threads here are the ones operators depend on: the ZooKeeper client
(every heartbeat, watch and status reply of a cluster worker needs several GIL hand-overs
per request) and the control thread that answers ``status`` and log reads.  Measured on a
2-core machine with one worker running an unpaced spout on a ZooKeeper cluster: a status
request took 7–15 s, many none within 30 s; with a 0.2 ms interval 60 ms; with only the
yield below, 165 ms.

Two measures, both cheap because they cost something only while another thread wants
the GIL:

* :func:`short_switch_interval` sets the interval to :data:`SWITCH_INTERVAL_SECS` for the
  worker's run and restores the previous one afterwards (a Spark Python worker process may
  go on to run other tasks);
* :class:`GilYield` sleeps :data:`YIELD_SECS` once every :data:`YIELD_EVERY_SECS` of the
  executor loop: a release long enough for a woken thread to take the GIL, whatever the
  release pattern of the executor's own calls (about 0.2 % of the loop's time).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: The worker process's switch interval (CPython's default is 0.005 s).
SWITCH_INTERVAL_SECS = 0.0002
#: How long the executor lets go of the GIL each time (a woken thread needs ~50 µs).
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
