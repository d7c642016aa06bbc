"""Errors worth retrying, and retrying them with exponential backoff.

A connector raises :class:`TransientError` (or lists its client's own transient exception
classes, e.g. a lost connection, in ``transient_errors``) for a failure that may go away by
itself; :func:`retrying` calls again after a growing pause, forever unless the backoff's
``max_retry_secs`` passes, and lets every other error through at once::

    rows = retrying(lambda: self.client.fetch(n), self.backoff, "fetch", log=self.log,
                    transient=(ConnectionError,))

:class:`Backoff` carries the clock and the sleep it uses, so a test passes fakes and never
sleeps for real.  :func:`missing_extra` is the error a connector raises when its client
library is not installed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: Exception classes a call may raise that are worth another try.
Transient = tuple[type[BaseException], ...]


class TransientError(Exception):
    """A failure that may go away by itself (connection lost, timeout, server busy)."""


@dataclass(frozen=True)
class Backoff:
    """Exponential pauses between attempts: ``initial_secs``, times ``factor`` after each
    failed attempt, at most ``max_secs``; attempts stop once ``max_retry_secs`` have passed
    since the first (None: never).  ``clock`` and ``sleep`` are injectable for tests."""

    initial_secs: float = 0.1
    max_secs: float = 10.0
    factor: float = 2.0
    max_retry_secs: float | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.initial_secs < 0 or self.max_secs < self.initial_secs or self.factor < 1:
            raise ValueError(
                "Backoff needs 0 <= initial_secs <= max_secs and factor >= 1, got "
                f"initial_secs={self.initial_secs}, max_secs={self.max_secs}, "
                f"factor={self.factor}"
            )
        if self.max_retry_secs is not None and self.max_retry_secs < 0:
            raise ValueError(f"Backoff max_retry_secs must be >= 0, got {self.max_retry_secs}")

    def delay(self, attempt: int) -> float:
        """The pause after failed attempt number ``attempt`` (1 for the first)."""
        exponent = min(max(0, attempt - 1), 64)  # past the cap long before; no overflow
        return min(self.max_secs, self.initial_secs * self.factor**exponent)


def retrying(
    call: Callable[[], T],
    backoff: Backoff,
    what: str,
    *,
    transient: Transient = (),
    log: Callable[[str], Any] | None = None,
) -> T:
    """``call()``, called again after a backoff pause while it raises :class:`TransientError`
    or one of ``transient``; the transient error is raised once ``backoff.max_retry_secs``
    have passed.  Any other error propagates at once.  Each failed attempt is logged once
    through ``log`` (a component's ``log``), naming ``what`` was tried."""
    retry_on: Transient = (TransientError, *transient)
    started = backoff.clock()
    attempt = 0
    while True:
        try:
            return call()
        except retry_on as exc:
            attempt += 1
            pause = backoff.delay(attempt)
            waited = backoff.clock() - started
            limit = backoff.max_retry_secs
            if limit is not None and waited + pause > limit:
                if log is not None:
                    log(f"{what} failed after {attempt} attempts in {waited:.1f}s: {exc!r}")
                raise
            if log is not None:
                log(f"{what} failed (attempt {attempt}), retrying in {pause:.2f}s: {exc!r}")
            backoff.sleep(pause)


def missing_extra(library: str, extra: str) -> ImportError:
    """The error for a connector whose client ``library`` is not installed: it names the
    pip extra that installs it (``raise missing_extra("redis", "redis") from exc``)."""
    return ImportError(
        f"this connector needs the {library!r} package: pip install 'sparkstorm[{extra}]'"
    )
