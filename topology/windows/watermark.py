"""A task's low watermark (MillWheel): the event time before which no more input is
expected, the minimum over its input tasks.

Each input task's watermark is the largest timestamp seen from it minus the allowed lag;
the task's watermark is the minimum over its inputs, so a slow upstream task holds the
windows back instead of having its tuples counted late.  An input silent for longer than
the idle timeout stops holding it back (an input never heard from counts as silent since
the tracker started); when every input is silent, the watermark moves to the largest
timestamp seen minus the lag.  The watermark never goes back.

Progress marks make silence exact where a timeout guesses: an input task that sends a mark
(:meth:`LowWatermark.mark`) with no tuple since its previous mark had nothing for this
task in between, and stops holding the watermark back until its next tuple (an input
whose share of the keys, or whose filtered branch, never reaches this task would
otherwise hold it at minus infinity for ever).
"""

from __future__ import annotations


class LowWatermark:
    """The low watermark over ``inputs`` (source task ids)."""

    def __init__(
        self, inputs: frozenset[int], lag: float, idle_timeout: float | None, now: float
    ) -> None:
        self.inputs = inputs
        self.lag = lag
        self.idle_timeout = idle_timeout
        self.started = now
        self.max_ts: dict[int, float] = {}
        self.last_heard: dict[int, float] = {}
        self.value = float("-inf")
        self.quiet: set[int] = set()  # inputs whose last mark came with nothing before it
        self._heard: set[int] = set()  # inputs heard from since their last mark

    def observe(self, src: int, ts: float, now: float) -> None:
        """A tuple stamped ``ts`` arrived from input task ``src``."""
        if ts > self.max_ts.get(src, float("-inf")):
            self.max_ts[src] = ts
        self.last_heard[src] = now
        self._heard.add(src)
        if self.quiet:
            self.quiet.discard(src)

    def mark(self, src: int) -> None:
        """Input task ``src`` sent a progress mark (after every tuple it sent before it):
        quiet when nothing came from it since its previous mark."""
        if src in self._heard:
            self._heard.discard(src)
        elif src in self.inputs:
            self.quiet.add(src)

    def _silent(self, src: int, now: float) -> bool:
        if src in self.quiet:
            return True
        if self.idle_timeout is None:
            return False
        return now - self.last_heard.get(src, self.started) > self.idle_timeout

    def advance(self, now: float) -> float:
        """The watermark at ``now`` (and remember it)."""
        active = [src for src in self.inputs if not self._silent(src, now)]
        if active:
            if any(src not in self.max_ts for src in active):
                return self.value  # an input not heard from yet holds it back
            candidate = min(self.max_ts[src] for src in active) - self.lag
        elif self.max_ts:
            candidate = max(self.max_ts.values()) - self.lag
        else:
            return self.value
        if candidate > self.value:
            self.value = candidate
        return self.value

    def snapshot(self) -> dict[str, object]:
        return {"value": self.value, "max_ts": list(self.max_ts.items())}

    def restore(self, data: dict[str, object], now: float) -> None:
        self.value = float(data["value"])  # type: ignore[arg-type]
        self.max_ts = {int(k): float(v) for k, v in data["max_ts"]}  # type: ignore[attr-defined]
        self.last_heard = dict.fromkeys(self.max_ts, now)
        self.started = now
