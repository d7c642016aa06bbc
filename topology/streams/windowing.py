"""How a stream is cut into windows: :func:`tumbling`, :func:`sliding`, :func:`session`.

Example (event time: each element's time from a function, 5 s of allowed disorder)::

    per_minute = tumbling(seconds=60).event_time(lambda e: e["ts"], lag=5)
    stream.key_by(lambda e: e["user"]).window(per_minute).count_by_key()

A :class:`Windowing` only describes; the stream's windowed component applies it to the
:class:`~topology.windows.bolt.WindowedBolt` machinery (watermarks, late elements, firing),
so every rule of docs/WINDOWS.md holds for stream windows too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from topology.windows.bolt import Count

if TYPE_CHECKING:
    from topology.windows.bolt import WindowedBolt


@dataclass(frozen=True)
class Windowing:
    """A window shape (``kind`` and sizes), and event time if :meth:`event_time` was set.

    Build one with :func:`tumbling`, :func:`sliding` or :func:`session`; sizes in seconds,
    or in elements for count windows.

    Args:
        kind: ``"tumbling"``, ``"sliding"`` or ``"session"``.
        seconds: the window's length in seconds (time windows).
        count: the window's length in elements (count windows).
        interval: seconds between two sliding windows' starts.
        interval_count: elements between two sliding windows' starts.
        gap: a session's gap in seconds.
        timestamp: event time: gives an element's time in seconds (None: processing time).
        lag: event time: the allowed disorder in seconds.
        allowed_lateness: event time: how long windows stay open past the watermark.

    Example:
        >>> per_minute = tumbling(seconds=60).event_time(lambda e: e["ts"], lag=5)
        >>> per_minute.describe(), per_minute.lag, per_minute.by_count
        ('tumbling 60s event time', 5, False)
    """

    kind: str
    seconds: float | None = None
    count: int | None = None
    interval: float | None = None
    interval_count: int | None = None
    gap: float | None = None
    timestamp: Callable[[Any], float] | None = None
    lag: float = 0.0
    allowed_lateness: float = 0.0

    def event_time(
        self, timestamp: Callable[[Any], float], lag: float = 0.0, allowed_lateness: float = 0.0
    ) -> Windowing:
        """Windows of event time: ``timestamp(element)`` is its time in seconds (for a pair
        stream, of the value); the watermark trails the latest time by ``lag``; windows
        stay open ``allowed_lateness`` past it.  Elements later than that are dropped, or
        go to the stream :meth:`WindowedStream.late` returns.

        Args:
            timestamp: ``timestamp(element)`` gives its time in seconds (of the value, for
                a pair stream).
            lag: how far the watermark trails the latest time, in seconds.
            allowed_lateness: how long windows stay open past the watermark, in seconds.

        Returns:
            A copy of this windowing on event time.

        Raises:
            TypeError: ``timestamp`` is not a function.
        """
        if not callable(timestamp):
            raise TypeError(f"event_time(timestamp=...) must be a function, got {timestamp!r}")
        return replace(self, timestamp=timestamp, lag=lag, allowed_lateness=allowed_lateness)

    @property
    def by_count(self) -> bool:
        """Whether windows are measured in elements (not seconds)."""
        return self.count is not None

    def describe(self) -> str:
        """A short label for status pages.

        Returns:
            E.g. ``tumbling 60s``, ``sliding 100/10``, ``session 30s``.
        """
        if self.kind == "session":
            return f"session {self.gap:g}s"
        size = f"{self.count}" if self.count is not None else f"{self.seconds:g}s"
        if self.kind == "sliding":
            every = self.interval_count if self.interval_count is not None else self.interval
            size += f"/{every}" if self.interval_count is not None else f"/{every:g}s"
        return f"{self.kind} {size}" + (" event time" if self.timestamp else "")

    def apply(self, bolt: WindowedBolt, pair: bool) -> None:
        """Configure a windowed bolt (the stream's windowed component) with this shape.

        A session window of a pair stream is per key (field ``key``).  Event time reads
        the element through the bolt's own timestamp hook (the field named here is never
        read).

        Args:
            bolt: the bolt to configure.
            pair: whether the stream is a pair stream.

        Raises:
            ValueError: a size is not > 0 (from the bolt's ``with_*`` settings).
        """
        if self.kind == "tumbling":
            if self.count is not None:
                bolt.with_tumbling_window(count=self.count)
            else:
                bolt.with_tumbling_window(seconds=self.seconds)
        elif self.kind == "sliding":
            if self.count is not None:
                bolt.with_sliding_window(Count(self.count), Count(self.interval_count or 0))
            else:
                bolt.with_sliding_window(self.seconds or 0.0, self.interval or 0.0)
        else:
            bolt.with_session_window(self.gap or 0.0)
            if pair:
                bolt.with_key("key")
        if self.timestamp is not None:
            bolt.with_timestamp_field("value").with_lag(self.lag)
            if self.allowed_lateness:
                bolt.with_allowed_lateness(self.allowed_lateness)


def tumbling(seconds: float | None = None, count: int | None = None) -> Windowing:
    """Back-to-back windows of ``seconds`` (time) or ``count`` elements; give one.

    Args:
        seconds: the window's length in seconds.
        count: the window's length in elements.

    Returns:
        The :class:`Windowing`, for ``window()``.

    Raises:
        TypeError: both or neither were given.

    Example:
        >>> tumbling(seconds=60).describe(), tumbling(count=100).describe()
        ('tumbling 60s', 'tumbling 100')
    """
    if (seconds is None) == (count is None):
        raise TypeError("tumbling() takes seconds=... or count=..., not both")
    return Windowing("tumbling", seconds=seconds, count=count)


def sliding(
    seconds: float | None = None,
    every: float | None = None,
    count: int | None = None,
    every_count: int | None = None,
) -> Windowing:
    """Overlapping windows: of ``seconds`` starting every ``every`` seconds, or of ``count``
    elements starting every ``every_count`` elements.

    Args:
        seconds: the window's length in seconds.
        every: seconds between two windows' starts.
        count: the window's length in elements.
        every_count: elements between two windows' starts.

    Returns:
        The :class:`Windowing`, for ``window()``.

    Raises:
        TypeError: neither a full time pair nor a full count pair, or both.

    Example:
        >>> sliding(seconds=60, every=10).describe(), sliding(count=100, every_count=10).describe()
        ('sliding 60s/10s', 'sliding 100/10')
        >>> sliding(seconds=60)
        Traceback (most recent call last):
        ...
        TypeError: sliding() takes seconds=... and every=... (or count= and every_count=)
    """
    if count is not None or every_count is not None:
        if count is None or every_count is None or seconds is not None or every is not None:
            raise TypeError("sliding() by count takes count=... and every_count=... only")
        return Windowing("sliding", count=count, interval_count=every_count)
    if seconds is None or every is None:
        raise TypeError("sliding() takes seconds=... and every=... (or count= and every_count=)")
    return Windowing("sliding", seconds=seconds, interval=every)


def session(gap_seconds: float) -> Windowing:
    """Session windows, per key: elements closer than ``gap_seconds`` apart share a window.

    Args:
        gap_seconds: the silence, in seconds, that ends a session.

    Returns:
        The :class:`Windowing`, for ``window()``.

    Example:
        >>> session(30).describe()
        'session 30s'
    """
    return Windowing("session", gap=gap_seconds)
