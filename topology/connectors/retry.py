"""Errors worth retrying, and retrying them with exponential backoff.

A connector raises :class:`TransientError` (or lists its client's own transient exception
classes, e.g. a lost connection, in ``transient_errors``) for a failure that may go away by
itself; :func:`retrying` calls again after a growing pause, forever unless the backoff's
``max_retry_secs`` passes, and lets every other error through at once::

    rows = retrying(lambda: self.client.fetch(n), self.backoff, "fetch", log=self.log,
                    transient=(ConnectionError,))

:class:`Backoff` carries the clock and the sleep it uses, so a test passes fakes and never
sleeps for real.  :func:`missing_extra` is the error a connector raises when its client
library is not installed; :func:`setting_error` and the ``check_*`` helpers are how every
connector refuses a bad setting: ``ValueError("PostgresSink: batch_size must be an integer
>= 1, got 0")``, naming the component class and the setting.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: Exception classes a call may raise that are worth another try.
Transient = tuple[type[BaseException], ...]


class TransientError(Exception):
    """A failure that may go away by itself (connection lost, timeout, server busy).

    Raise it from a connector's calls: :func:`retrying` and the sink and source bases try
    again after a pause instead of failing.

    Example:
        >>> attempts = []
        >>> def flaky():
        ...     attempts.append(1)
        ...     if len(attempts) < 3:
        ...         raise TransientError("server busy")
        ...     return "done"
        >>> retrying(flaky, Backoff(sleep=lambda secs: None), "fetch")
        'done'
        >>> len(attempts)
        3
    """


@dataclass(frozen=True)
class Backoff:
    """Exponential pauses between attempts: ``initial_secs``, times ``factor`` after each
    failed attempt, at most ``max_secs``; attempts stop once ``max_retry_secs`` have passed
    since the first (None: never).  ``clock`` and ``sleep`` are injectable for tests.

    Args:
        initial_secs: the first pause.
        max_secs: the longest pause (at least ``initial_secs``).
        factor: what each pause is multiplied by (at least 1).
        max_retry_secs: give up this long after the first attempt (None: never).
        clock: the time source, in seconds.
        sleep: how a pause is waited.

    Raises:
        ValueError: a value is not a number, or below its minimum.

    Example:
        >>> backoff = Backoff(initial_secs=0.5, max_secs=3.0)
        >>> [backoff.delay(attempt) for attempt in (1, 2, 3, 4)]
        [0.5, 1.0, 2.0, 3.0]
        >>> Backoff(factor=0.5)
        Traceback (most recent call last):
        ...
        ValueError: Backoff: factor must be a number >= 1, got 0.5
    """

    initial_secs: float = 0.1
    max_secs: float = 10.0
    factor: float = 2.0
    max_retry_secs: float | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        check_number(self, "initial_secs", self.initial_secs)
        check_number(self, "max_secs", self.max_secs, minimum=self.initial_secs)
        check_number(self, "factor", self.factor, minimum=1)
        check_number(self, "max_retry_secs", self.max_retry_secs, optional=True)

    def delay(self, attempt: int) -> float:
        """The pause after a failed attempt.

        Args:
            attempt: the failed attempt's number (1 for the first).

        Returns:
            The pause in seconds.
        """
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
    through ``log`` (a component's ``log``), naming ``what`` was tried.

    Args:
        call: the call to make (no arguments).
        backoff: the pauses between attempts, and when to give up.
        what: what is tried, for the log lines.
        transient: more exception classes worth another try (a client's own).
        log: where each failed attempt is logged (None: nowhere).

    Returns:
        What ``call()`` returns, once it succeeds.

    Raises:
        TransientError: (or one of ``transient``) the last one, once
            ``backoff.max_retry_secs`` have passed.
        Exception: any other error of ``call()``, at once.

    Example:
        >>> now = [0.0]
        >>> backoff = Backoff(max_retry_secs=1.0, clock=lambda: now[0], sleep=lambda s: None)
        >>> def down():
        ...     now[0] += 0.4
        ...     raise ConnectionError("refused")
        >>> retrying(down, backoff, "connect", transient=(ConnectionError,))
        Traceback (most recent call last):
        ...
        ConnectionError: refused
    """
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
    """The error for a connector whose client library is not installed.

    Args:
        library: the missing package.
        extra: the sparkstorm pip extra that installs it.

    Returns:
        An ImportError naming the extra, to raise (``raise missing_extra("redis",
        "redis") from exc``).

    Example:
        >>> missing_extra("redis", "redis")
        ImportError("this connector needs the 'redis' package: pip install 'sparkstorm[redis]'")
    """
    return ImportError(
        f"this connector needs the {library!r} package: pip install 'sparkstorm[{extra}]'"
    )


def setting_error(owner: object, name: str, rule: str, value: Any) -> ValueError:
    """The error for a bad setting: ``"<owner's class>: <name> must be <rule>, got <value>"``
    (``owner``: the component, or its class name as text)."""
    who = owner if isinstance(owner, str) else type(owner).__name__
    return ValueError(f"{who}: {name} must be {rule}, got {value!r}")


def check_number(
    owner: object,
    name: str,
    value: Any,
    *,
    minimum: float = 0,
    strict: bool = False,
    integer: bool = False,
    optional: bool = False,
) -> None:
    """Refuse (:func:`setting_error`) a ``value`` that is not a finite number (an ``int``
    when ``integer``; never a bool) at least ``minimum`` (above it when ``strict``); None
    passes when ``optional``."""
    if value is None and optional:
        return
    kinds = (int,) if integer else (int, float)
    fine = isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value)
    if fine and (value > minimum if strict else value >= minimum):
        return
    kind = "an integer" if integer else "a number"
    rule = f"{kind} {'>' if strict else '>='} {minimum:g}" + (" or None" if optional else "")
    raise setting_error(owner, name, rule, value)


def check_text(owner: object, name: str, value: Any, *, optional: bool = False) -> None:
    """Refuse a ``value`` that is not a non-empty string (None passes when ``optional``)."""
    if (value is None and optional) or (isinstance(value, str) and value):
        return
    rule = "a non-empty string" + (" or None" if optional else "")
    raise setting_error(owner, name, rule, value)


def check_names(owner: object, name: str, value: Any) -> list[str]:
    """``value`` as a list, refusing anything but a non-empty sequence of distinct non-empty
    strings (a lone string too: ``columns="id"`` is a mistake for ``["id"]``)."""
    listed = list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []
    if (
        not listed
        or not all(isinstance(n, str) and n for n in listed)
        or len(set(listed)) != len(listed)
    ):
        raise setting_error(owner, name, "a non-empty list of distinct names", value)
    return listed


def check_choice(owner: object, name: str, value: Any, choices: Sequence[Any]) -> None:
    """Refuse a ``value`` that is not one of ``choices``."""
    if not any(value == c and type(value) is type(c) for c in choices):
        raise setting_error(owner, name, f"one of {tuple(choices)}", value)
