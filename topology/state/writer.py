"""Running state I/O off the executor thread, results back on it.

A worker hands every backend call (a snapshot's rows, a completion, a restore read) to a
writer as a job with a callback.  :class:`ThreadWriter` runs jobs in order on one
background thread, so the executor keeps processing tuples while a snapshot is written
(the "asynchronous" of asynchronous barrier snapshots); :class:`InlineWriter` runs them at
once, for the deterministic in-process runner.  Either way callbacks run only inside
:meth:`poll`, which the executor calls each turn: user-facing state never changes on
another thread.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

#: ``done(result, error)``: ``error`` is None when the job returned ``result``.
Done = Callable[[Any, BaseException | None], None]


class StateWriter(Protocol):
    def submit(self, job: Callable[[], Any], done: Done) -> None:
        """Run ``job`` (in submission order); ``done`` is called from :meth:`poll`."""
        ...

    def poll(self) -> int:
        """Call the callbacks of finished jobs; return how many ran."""
        ...

    def busy(self) -> bool:
        """True while a job or a callback is outstanding."""
        ...

    def close(self) -> None: ...


class InlineWriter:
    """Runs each job at submission (tests, the in-process runner)."""

    def __init__(self) -> None:
        self._finished: deque[tuple[Done, Any, BaseException | None]] = deque()

    def submit(self, job: Callable[[], Any], done: Done) -> None:
        try:
            self._finished.append((done, job(), None))
        except Exception as exc:
            self._finished.append((done, None, exc))

    def poll(self) -> int:
        ran = 0
        while self._finished:
            done, result, error = self._finished.popleft()
            done(result, error)
            ran += 1
        return ran

    def busy(self) -> bool:
        return bool(self._finished)

    def close(self) -> None:
        pass


class ThreadWriter:
    """Runs jobs in order on one daemon thread."""

    def __init__(self, name: str = "state-writer") -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], Done] | None] = queue.Queue()
        self._finished: queue.Queue[tuple[Done, Any, BaseException | None]] = queue.Queue()
        self._outstanding = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            job, done = item
            try:
                self._finished.put((done, job(), None))
            except Exception as exc:  # reported through the callback, never lost
                self._finished.put((done, None, exc))

    def submit(self, job: Callable[[], Any], done: Done) -> None:
        self._outstanding += 1
        self._jobs.put((job, done))

    def poll(self) -> int:
        ran = 0
        while True:
            try:
                done, result, error = self._finished.get_nowait()
            except queue.Empty:
                return ran
            self._outstanding -= 1
            done(result, error)
            ran += 1

    def busy(self) -> bool:
        return self._outstanding > 0

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=10.0)
