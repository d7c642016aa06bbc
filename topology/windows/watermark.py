"""A task's low watermark (MillWheel): the event time before which no more input is
expected, the minimum over its input tasks.

Each input task's watermark is the largest timestamp seen from it minus the allowed lag;
the task's watermark is the minimum over its inputs, so a slow upstream task holds the
windows back instead of having its tuples counted late.  An input silent for longer than
the idle timeout stops holding it back (an input never heard from counts as silent since
the tracker started); when every input is silent, the watermark moves to the largest
timestamp seen minus the lag.  The watermark never goes back.

Progress marks make silence exact where a timeout guesses.  An input task sends a mark
(:class:`MarkTimer`) every interval, saying whether it handled input of its own since the
last.  One that comes with no tuple from that task since its previous mark says either
that the input is running but had nothing for this task (its share of the keys, or its
filtered branch, does not reach it) — it stops holding the watermark back
(:meth:`LowWatermark.mark`) until its next tuple — or that its own input stopped: then
it holds the watermark at its latest time however long it is silent (what it sends next
still counts), unless every input is quiet or stopped, the end of a bounded input.
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
        self.quiet: set[int] = set()  # running inputs with nothing for this task
        self.idle: set[int] = set()  # inputs whose own input stopped (still waited for)
        self._heard: set[int] = set()  # inputs heard from since their last mark

    def observe(self, src: int, ts: float, now: float) -> None:
        """A tuple stamped ``ts`` arrived from input task ``src``."""
        if ts > self.max_ts.get(src, float("-inf")):
            self.max_ts[src] = ts
        self.last_heard[src] = now
        self._heard.add(src)
        if self.quiet:
            self.quiet.discard(src)
        if self.idle:
            self.idle.discard(src)

    def mark(self, src: int, active: bool = True) -> None:
        """Input task ``src`` sent a progress mark (behind every tuple it sent before it),
        saying whether it handled input of its own since its previous one.  Nothing from
        it since that mark: running, it is quiet (not waited for); stopped, it is idle —
        waited for, unless every input is quiet or idle (the end of the input: the
        watermark moves to the latest time seen)."""
        if src in self._heard:
            self._heard.discard(src)
        elif src in self.inputs:
            (self.quiet if active else self.idle).add(src)

    def _silent(self, src: int, now: float) -> bool:
        if src in self.quiet:
            return True
        if self.idle_timeout is None:
            return False
        return now - self.last_heard.get(src, self.started) > self.idle_timeout

    def advance(self, now: float) -> float:
        """The watermark at ``now`` (and remember it)."""
        active = [src for src in self.inputs if not self._silent(src, now)]
        if active and self.idle.issuperset(active):
            active = []  # every input quiet or stopped: the end of the input
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


#: A progress mark's values: whether its sender handled input since its previous mark.
ACTIVE_MARK = [1]
IDLE_MARK = [0]


class MarkTimer:
    """When a task sends its next progress mark (every ``every`` seconds), and which:
    :data:`ACTIVE_MARK` if it handled input since the last (set :attr:`active`)."""

    __slots__ = ("active", "every", "last")

    def __init__(self, every: float) -> None:
        self.every = every
        self.last = float("-inf")
        self.active = False

    def due(self, now: float) -> list[int] | None:
        """The mark to send at ``now`` (None: none is due yet)."""
        if now - self.last < self.every:
            return None
        self.last = now
        mark = ACTIVE_MARK if self.active else IDLE_MARK
        self.active = False
        return mark
