"""A component's failure policy: what becomes of an input its code raised on (pure).

Kafka Streams has its processing exception handlers and, since KIP-1034, a dead letter
queue; Kafka Connect has ``errors.retry.*`` and ``errors.deadletterqueue.*``.  Here every
component has one :class:`FailurePolicy`, read from the ``topology.errors.*`` keys of its
conf (topology-wide, or per component with ``add_configuration``):

* an input whose attempt raised is tried again ``retries`` times, the first after
  ``backoff_secs``, each further one after twice the pause before, at most
  ``backoff_max_secs`` (:meth:`FailurePolicy.next_attempt_in`);
* then ``action`` says what happens: ``dead_letter`` (its values and the error go to the
  component's dead-letter stream, :func:`dead_letter`, and it is acked) or ``fail`` (it is
  failed: a replay, or a checkpoint rollback).

Example::

    >>> policy = FailurePolicy(retries=3, backoff_secs=0.1, backoff_max_secs=0.3)
    >>> [policy.next_attempt_in(n) for n in (1, 2, 3, 4)]
    [0.1, 0.2, 0.3, None]
"""

from __future__ import annotations

import traceback as tb
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acker.protocol import clip_text

from . import config as cfg

#: ``topology.errors.action``: the input goes to the dead-letter stream, and is acked ...
DEAD_LETTER = "dead_letter"
#: ... or it is failed (the spout replays it; a checkpointed topology rolls back).
FAIL = "fail"
#: Longest one-line error text of a dead letter (its ``traceback`` holds the rest).
MAX_ERROR_CHARS = 500
#: Longest traceback of a dead letter (longer ones keep their head and tail).
MAX_TRACEBACK_CHARS = 4000


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    """Retries with a doubling pause, then ``action`` (see the module docstring)."""

    #: Attempts after the first (0: none).
    retries: int = 3
    #: The pause before the first retry (seconds).
    backoff_secs: float = 0.1
    #: The longest pause (seconds).
    backoff_max_secs: float = 2.0
    #: :data:`DEAD_LETTER` or :data:`FAIL`.
    action: str = DEAD_LETTER

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> FailurePolicy:
        """The policy a component's (validated) conf asks for; a key it lacks takes its
        default.  A pause is at most half of ``topology.message.timeout.secs`` (when
        timeouts are on): a parked input's tree restarts its timeout, which must not
        expire before the next attempt."""
        defaults = cfg.defaults()

        def read(key: str) -> Any:
            return conf[key] if key in conf else defaults[key]

        longest = float(read(cfg.ERRORS_BACKOFF_MAX_MS)) / 1000.0
        if read(cfg.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS):
            longest = min(longest, float(read(cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS)) / 2.0)
        return cls(
            retries=int(read(cfg.ERRORS_RETRIES)),
            backoff_secs=float(read(cfg.ERRORS_BACKOFF_MS)) / 1000.0,
            backoff_max_secs=longest,
            action=str(read(cfg.ERRORS_ACTION)),
        )

    def next_attempt_in(self, attempts: int) -> float | None:
        """Seconds from now to the next attempt once ``attempts`` attempts (1 or more)
        failed; None when they were the last: the input's fate is :attr:`action`."""
        if attempts > self.retries:
            return None
        exponent = min(max(0, attempts - 1), 64)  # past the cap long before; no overflow
        return min(self.backoff_max_secs, self.backoff_secs * 2.0**exponent)

    @property
    def dead_letters(self) -> bool:
        """Whether an input whose attempts are spent goes to the dead-letter stream."""
        return self.action == DEAD_LETTER


#: The policy of a component whose conf says nothing (the defaults of conf/defaults.yaml).
DEFAULT_POLICY = FailurePolicy()


def one_line(error: BaseException | str) -> str:
    """``"ValueError: bad value"``: an error's type and message on one line, clipped."""
    if isinstance(error, BaseException):
        message = str(error)
        text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    else:
        text = str(error)
    return clip_text(_utf8(" ".join(text.split())), MAX_ERROR_CHARS)


def _utf8(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (a lone surrogate, as ``surrogateescape``
    decoding leaves) escaped: every text of a dead letter must reach the wire."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def dead_letter(
    *,
    component: str,
    task: int,
    source: str,
    stream: str,
    values: list[Any],
    error: BaseException | str,
    attempts: int,
    time: float,
    traceback: bool = True,
) -> list[Any]:
    """The values of one dead letter, in the order of
    :data:`~topology.constants.DEAD_LETTER_FIELDS`; ``traceback=False`` leaves the
    traceback out (a letter nobody reads is not worth formatting one).

    >>> dead_letter(component="split", task=3, source="words", stream="default",
    ...             values=["x"], error=ValueError("bad"), attempts=4, time=1.5,
    ...             traceback=False)
    ['split', 3, 'words', 'default', ['x'], 'ValueError: bad', '', 4, 1.5]
    """
    trace = ""
    if traceback:
        text = "".join(tb.format_exception(error)) if isinstance(error, BaseException) else error
        trace = clip_text(_utf8(str(text).rstrip()), MAX_TRACEBACK_CHARS)
    return [component, task, source, stream, list(values), one_line(error), trace, attempts, time]
