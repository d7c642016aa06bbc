"""What a worker tells its cluster about errors: each one's text, at a bounded rate.

Tasks report errors (``report_error``, exceptions from user code) through their collector,
which counts every one; the worker's :class:`ErrorReporter` turns each into an ``error``
message for the cluster, at most :data:`ERRORS_PER_SECOND` per component, so one noisy
component never silences another.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import traceback

from acker.protocol import clip_text

from .cluster_client import ClusterClient

#: Error texts a worker sends per component and second; the rest are counted only.
ERRORS_PER_SECOND = 20
#: Longest error text sent to the cluster; longer ones keep their head and tail.
MAX_ERROR_CHARS = 4000


def error_text(error: BaseException | str) -> str:
    """An error as the cluster records it: a traceback or the text, clipped."""
    if isinstance(error, BaseException):
        text = "".join(traceback.format_exception(error)).rstrip()
    else:
        text = str(error)
    return clip_text(text, MAX_ERROR_CHARS)


class ErrorReporter:
    """Sends errors to the cluster, at most ``ERRORS_PER_SECOND`` per component (a noisy
    one never silences another); counts the rest (``suppressed``, ``suppressed_by``).
    Each task's collector counts all its errors, for ``status``."""

    def __init__(self, client: ClusterClient, topology: str, worker: int) -> None:
        self._client = client
        self._topology = topology
        self._worker = worker
        self.host = socket.gethostname()
        self._windows: dict[str, list[float]] = {}  # component -> [second's start, sent]
        self.suppressed = 0
        self.suppressed_by: dict[str, int] = {}

    def __call__(self, component: str, task: int, error: BaseException | str) -> None:
        """Send ``error`` (formatted only when it is within its component's rate)."""
        now = time.time()
        window = self._windows.get(component)
        if window is None or now - window[0] >= 1.0:
            window = self._windows[component] = [now, 0]
        if window[1] >= ERRORS_PER_SECOND:
            self.suppressed += 1
            self.suppressed_by[component] = self.suppressed_by.get(component, 0) + 1
            return
        window[1] += 1
        text = error_text(error)
        print(f"[{component}:{task}] error: {text}", file=sys.stderr, flush=True)
        self._client.send(
            {
                "type": "error",
                "topology": self._topology,
                "component": component,
                "task": task,
                "worker": self._worker,
                "host": self.host,
                "pid": os.getpid(),
                "time": now,
                "text": text,
            }
        )
