"""Python ``logging`` for sparkstorm's processes: set up once, at each process entry.

The CLI (every ``sparkstorm`` command, the nimbus among them), a LocalCluster worker
process, a topology driver process and a Spark-hosted worker call
:func:`configure_logging` first.  Without it nothing is configured and every warning of a
library lands bare on stderr: kazoo alone writes "Connection dropped" several times a
second while ZooKeeper is away.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable

#: Environment variable naming the level of every logger but kazoo's (default WARNING).
LEVEL_ENV = "SPARKSTORM_LOG_LEVEL"
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"
#: kazoo's reconnect chatter: lines starting with these pass at most once per interval.
RECONNECT_CHATTER = (
    "Connection dropped",
    "Connection time-out",
    "Transition to CONNECTING",
    "Cannot resolve",
)
CHATTER_INTERVAL_SECS = 60.0


class _Stderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is now (tests and click swap it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


class ChatterLimit(logging.Filter):
    """Passes each kind of :data:`RECONNECT_CHATTER` at most once per ``interval``
    seconds (by ``clock``), and says how many were held back since the last one."""

    def __init__(
        self,
        interval: float = CHATTER_INTERVAL_SECS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        kind = next((k for k in RECONNECT_CHATTER if str(record.msg).startswith(k)), None)
        if kind is None:
            return True
        now = self.clock()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        self._last[kind] = now
        held = self._held.pop(kind, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like it in the last {self.interval:g}s)"
        return True


_configured = False


def configure_logging(level: str | int | None = None) -> None:
    """Configure logging for this process; later calls do nothing.

    * The root logger gets one handler on stderr with :data:`FORMAT`, at ``level`` (else
      ``$SPARKSTORM_LOG_LEVEL``, else WARNING) — unless the application (or pytest)
      already gave it a handler, which is then left alone.
    * kazoo logs at WARNING at most (its INFO connection lines are dropped) and its
      reconnect chatter passes once a minute (:class:`ChatterLimit`), unless kazoo's
      logger was configured already.
    """
    global _configured
    if _configured:
        return
    _configured = True
    root = logging.getLogger()
    if not root.handlers:
        handler = _Stderr()
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
        chosen = level if level is not None else os.environ.get(LEVEL_ENV, "WARNING")
        root.setLevel(chosen.upper() if isinstance(chosen, str) else chosen)
    kazoo = logging.getLogger("kazoo.client")  # the logger kazoo's connection loop uses
    if kazoo.level == logging.NOTSET and not kazoo.filters:
        kazoo.setLevel(logging.WARNING)
        kazoo.addFilter(ChatterLimit())
