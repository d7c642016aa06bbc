"""A windowed bolt's configuration, built by its ``with_*`` methods and checked as a whole."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

Kind = Literal["tumbling", "sliding", "session"]
ACCUMULATING = "accumulating"
DISCARDING = "discarding"


@dataclass(frozen=True)
class WindowSpec:
    """How tuples are grouped into windows and when windows fire.

    Time windows (``length`` / ``interval`` / ``gap`` in seconds) follow event time when
    ``timestamp_field`` is set, processing time otherwise; count windows (``count_length``
    / ``count_interval``) follow arrival order.
    """

    kind: Kind | None = None
    length: float | None = None
    interval: float | None = None
    count_length: int | None = None
    count_interval: int | None = None
    gap: float | None = None
    timestamp_field: str | None = None
    key_fields: tuple[str, ...] = ()
    lag: float = 0.0
    watermark_interval: float = 1.0
    idle_timeout: float | None = None
    late_stream: str | None = None
    allowed_lateness: float = 0.0
    early_every_secs: float | None = None
    early_every_count: int | None = None
    accumulation: str = ACCUMULATING
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def by_count(self) -> bool:
        return self.count_length is not None

    @property
    def event_time(self) -> bool:
        return self.timestamp_field is not None

    @property
    def step(self) -> float:
        """Seconds between window starts (time windows)."""
        return float(self.interval if self.interval is not None else self.length or 0.0)

    def timer_secs(self) -> float:
        """How often the bolt needs a timer (watermark, early firings, idle inputs)."""
        secs = [self.watermark_interval]
        if self.early_every_secs:
            secs.append(self.early_every_secs)
        return min(secs)

    def with_changes(self, **changes: Any) -> WindowSpec:
        return replace(self, **changes)

    def problems(self, component: str) -> list[str]:
        """What is wrong with this configuration, each line naming ``component``."""
        out: list[str] = []
        where = f"windowed bolt {component!r}"
        if self.kind is None:
            return [
                f"{where}: no window (call with_tumbling_window, with_sliding_window or "
                "with_session_window)"
            ]
        if self.by_count and (self.allowed_lateness or self.early_every_secs or self.late_stream):
            out.append(
                f"{where}: count windows fire on counts in arrival order: no late stream, "
                "allowed lateness or early firings by time"
            )
        if self.late_stream is not None and not self.event_time:
            out.append(f"{where}: with_late_tuple_stream needs with_timestamp_field (event time)")
        if self.kind == "sliding" and not self.by_count:
            assert self.length is not None and self.interval is not None
            if self.interval > self.length:
                out.append(
                    f"{where}: sliding interval {self.interval:g} s is longer than the window "
                    f"({self.length:g} s): tuples would fall between windows"
                )
        if self.kind == "sliding" and self.by_count:
            assert self.count_length is not None and self.count_interval is not None
            if self.count_interval > self.count_length:
                out.append(
                    f"{where}: sliding interval of {self.count_interval} tuples is longer "
                    f"than the window ({self.count_length} tuples)"
                )
        return out
