"""A spout task's pending tuple trees: timeouts, max-pending, complete latency (pure; the
completion loop runs compiled from ``acker/_ledger.c`` when the install built it).

Timeouts use rotating buckets on an injected clock.  The number of pending trees is
capped by ``topology.max.spout.pending`` (checked before every ``next_tuple``: only a call
that starts several trees passes it); without it, by default, by the
*auto* cap (``topology.max.spout.pending.auto``): :data:`AUTO_START_CAP` trees, doubled
whenever the task is at it and fewer trees than the cap completed in a
:data:`RATE_WINDOW` (trees outlive the window), or it found the cap full
:data:`STALL_REFUSALS` times with nothing completing, and halved back toward the start
once what is pending turns over within a window — so the trees' working set stays in
the CPU cache while they complete quickly, and trees that wait for something other than
throughput (a join's other side, a slow external call) get room instead of stalling.  When enabled
(opt-in) an *adaptive* cap derived from Little's law applies too: with trees completing
at rate λ, keeping at most ``λ · timeout · QUEUE_SHARE`` pending bounds the time a tree
spends queued behind a slow bolt to about a quarter of the timeout — so backpressure alone
never makes trees time out, with room for bursts and for the rate estimate lagging behind.
That cap starts small and grows with the completion rate, like TCP's slow start.  The
smallest cap set applies.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any, Protocol

from .compiled import load
from .rotating import TIMEOUT_BUCKETS, RotatingMap, RotationClock

#: ``acker._ledger`` (whose ``complete_all`` is :func:`_complete_all` compiled), or None.
_ledger: Any = load("acker._ledger")

#: The adaptive cap never drops below this many pending trees.
MIN_ADAPTIVE_CAP = 16
#: How often (seconds) the completion rate is sampled for the adaptive cap.
RATE_WINDOW = 0.1
#: Share of the message timeout a tree may spend queued (the adaptive cap's target).
QUEUE_SHARE = 0.25
#: Where the auto cap starts (per spout task): far above what a spout needs in flight at
#: 1 ms complete latency, far below the ~4,000 trees an uncapped spout runs ahead with
#: (docs/BENCHMARKS.md, "The default cap on pending trees").
AUTO_START_CAP = 1_000
#: Times in a row a spout may find the auto cap full with none of its trees completing in
#: between before the cap doubles (clock-free: a join on a manual or simulated clock, whose
#: time only moves when a test moves it, must not stall).
STALL_REFUSALS = 50


class LatencyHistogram(Protocol):
    """Counts per bucket (``counts[i]``: values <= ``bounds[i]``; the last: above all)."""

    bounds: tuple[float, ...]
    counts: list[int]
    sum: float


def _complete_all(
    buckets: Iterable[dict[int, list[Any]]],
    roots: Iterable[int],
    now: float,
    done: list[Any],
    histogram: LatencyHistogram | None,
) -> tuple[float, BaseException | None]:
    """:meth:`PendingTrees.complete_all`'s loop (the reference of its compiled twin in
    ``acker/_ledger.c``): pop each root's ``[msg_id, at]``, append the msg id to ``done``
    and count its latency; the latencies' sum, and the error that stopped the loop
    (returned, not raised: the caller counts what completed before it)."""
    latency_sum = 0.0
    try:
        for root in roots:
            for bucket in buckets:  # RotatingMap.pop, inlined: this runs once per tree
                entry = bucket.pop(root, None)
                if entry is not None:
                    break
            else:
                continue
            latency = now - entry[1]
            latency_sum += latency
            if histogram is not None:  # Histogram.observe, inlined
                histogram.counts[bisect_left(histogram.bounds, latency)] += 1
            done.append(entry[0])
    except BaseException as exc:  # (counted first, raised after, as the compiled loop does)
        return latency_sum, exc
    return latency_sum, None


def _plain(histogram: LatencyHistogram | None) -> bool:
    """Does the compiled loop take ``histogram`` (none, or a tuple of bounds and a list of
    counts, as ``topology.metrics.Histogram`` has them)?  It works in floats: clocks of
    other types (a simulated one's ints or Decimals) take the Python loop."""
    return histogram is None or (type(histogram.bounds) is tuple and type(histogram.counts) is list)


class PendingTrees:
    """msg_id bookkeeping for one spout task."""

    def __init__(
        self,
        timeout: float,
        now: float,
        timeouts_enabled: bool = True,
        max_pending: int | None = None,
        adaptive: bool = True,
        auto: bool = False,
    ) -> None:
        self._map: RotatingMap[int, list[Any]] = RotatingMap(TIMEOUT_BUCKETS)
        #: The map's generations (the same deque for its lifetime), read per tree.
        self._buckets = self._map.buckets
        self._rotation = RotationClock(timeout, TIMEOUT_BUCKETS, now) if timeouts_enabled else None
        self.timeout = timeout
        self.max_pending = max_pending
        self.adaptive = adaptive
        self.adaptive_cap = MIN_ADAPTIVE_CAP if adaptive else None
        #: The auto cap (None: off; only without ``max_pending`` and the adaptive cap).
        self.auto_cap = AUTO_START_CAP if auto and max_pending is None and not adaptive else None
        self._refusals = 0  # can_emit refusals since a tree last completed
        self._completed_seen = 0
        self._cap = self._smallest_cap()
        self._rate = 0.0
        self._window_start = now
        self._window_completed = 0
        self.completed = 0
        self.latency_sum = 0.0
        self._expired: list[Any] = []
        #: Counts every completed tree's complete latency (seconds), when set.
        self.latencies: LatencyHistogram | None = None

    def __len__(self) -> int:
        return len(self._map)

    @property
    def cap(self) -> int | None:
        """Most trees that may be pending now (None = unbounded)."""
        return self._cap

    def _smallest_cap(self) -> int | None:
        caps = [c for c in (self.max_pending, self.adaptive_cap, self.auto_cap) if c is not None]
        return min(caps) if caps else None

    def can_emit(self) -> bool:
        """Whether fewer trees than the cap are pending (called before every
        ``next_tuple``: the cap is kept, not recomputed)."""
        room = self.room()
        return room is None or room > 0 or self._refused()

    def room(self) -> int | None:
        """How many more trees may start before the cap is reached (None: no cap); the
        executor asks once per turn and counts emits down from it, calling
        :meth:`can_emit` (which also moves the auto cap) only once that runs out."""
        cap = self._cap
        return None if cap is None else cap - sum(map(len, self._buckets))

    def _refused(self) -> bool:
        """The spout finds the cap full: after :data:`STALL_REFUSALS` in a row with no tree
        completed in between, the auto cap doubles (True: there is room now)."""
        if self.completed != self._completed_seen:
            self._completed_seen, self._refusals = self.completed, 0
        self._refusals += 1
        auto = self.auto_cap
        if auto is None or self._refusals < STALL_REFUSALS:
            return False
        self._refusals = 0
        self.auto_cap = auto * 2  # nothing completes: the trees wait for something else
        self._cap = self._smallest_cap()
        return len(self._map) < (self._cap or 0)

    def add(self, root: int, msg_id: Any, now: float) -> None:
        """A new tree (``start_tree`` of this package's C API does this itself while no
        rotation is due: :meth:`insertion`; what is added here must be added there too)."""
        rotation = self._rotation  # (_catch_up, inlined: this runs once per tree)
        if rotation is not None and now >= rotation.next_rotation:
            self._catch_up(now)  # a rotation already due must not age this new tree
        self._buckets[0][root] = [msg_id, now]  # put_new: a fresh random root

    def insertion(self) -> tuple[Any, RotationClock | None, Any]:
        """What ``start_tree`` (``acker/_fastpath.c``) needs to :meth:`add` trees itself:
        the generations (``buckets[0]`` takes a new tree as ``[msg_id, now]``), the
        rotation clock (None: no timeouts) and :meth:`add`, which a tree must go through
        once ``now`` reaches the clock's ``next_rotation``."""
        return self._buckets, self._rotation, self.add

    def complete(self, root: int, now: float) -> Any:
        """The msg_id of a completed tree (``None`` if unknown, e.g. already timed out)."""
        done: list[Any] = []
        self.complete_all((root,), now, done)
        return done[0] if done else None

    def complete_all(self, roots: Iterable[int], now: float, done: list[Any]) -> None:
        """Append the msg_ids of the completed trees ``roots`` to ``done``, in order;
        unknown roots (timed out already, or never this task's) are skipped.  A root that
        is not hashable (hostile traffic) raises ``TypeError`` after the trees before it
        were completed and counted."""
        before = len(done)
        histogram = self.latencies
        if _ledger is not None and type(now) is float and _plain(histogram):
            latency_sum, error = _ledger.complete_all(
                self._buckets,
                roots,
                now,
                done,
                None if histogram is None else histogram.bounds,
                None if histogram is None else histogram.counts,
            )
        else:
            latency_sum, error = _complete_all(self._buckets, roots, now, done, histogram)
        n = len(done) - before
        self.completed += n
        self._window_completed += n
        self.latency_sum += latency_sum
        if histogram is not None:
            histogram.sum += latency_sum
        if error is not None:
            raise error

    def fail(self, root: int) -> Any:
        """The msg_id of a failed tree, or ``None`` if unknown."""
        entry = self._map.pop(root)
        return None if entry is None else entry[0]

    def fail_all(self) -> list[Any]:
        """Forget every pending tree (they are known lost); their msg_ids, oldest first."""
        return [entry[0] for entry in self._map.clear()]

    def reset(self, root: int, now: float | None = None) -> None:
        """Restart a tree's timeout (``now`` first applies rotations already due)."""
        if now is not None:
            self._catch_up(now)
        self._map.touch(root)

    def _catch_up(self, now: float) -> None:
        """Apply rotations that are due, keeping what they expired for :meth:`expire`."""
        if self._rotation is not None and now >= self._rotation.next_rotation:
            self._expired.extend(entry[0] for entry in self._map.rotate_due(self._rotation, now))

    def expire(self, now: float) -> list[Any]:
        """msg_ids of trees that timed out by ``now``."""
        self._catch_up(now)
        expired, self._expired = self._expired, []
        return expired

    def update_rate(self, now: float) -> None:
        """Sample the completion rate and move the auto cap: doubled when the task is at it
        and fewer trees than the cap completed in the window (trees live longer than the
        window: they wait for something other than throughput), halved back toward
        :data:`AUTO_START_CAP` when what is pending turned over within the window and fills
        less than half of it; recompute the adaptive cap."""
        elapsed = now - self._window_start
        if elapsed < RATE_WINDOW or not (self.adaptive or self.auto_cap is not None):
            return
        completed = self._window_completed
        self._window_start, self._window_completed = now, 0
        auto = self.auto_cap
        if auto is not None:
            pending = len(self._map)
            if pending >= auto and completed < auto:
                self.auto_cap = auto * 2
            elif auto > AUTO_START_CAP and completed >= pending and pending < auto // 2:
                self.auto_cap = max(AUTO_START_CAP, auto // 2)
            self._cap = self._smallest_cap()
        if not self.adaptive:
            return
        rate = completed / elapsed
        self._rate = rate if self._rate == 0.0 else 0.5 * self._rate + 0.5 * rate
        little = int(self._rate * self.timeout * QUEUE_SHARE)
        # Grow at most 2x per window (slow start); never below the floor, and never shrink
        # below the trees already in flight (they would stall the spout until they finish).
        current = self.adaptive_cap or MIN_ADAPTIVE_CAP
        target = min(little, current * 2)
        if target < current:
            target = max(target, min(current, len(self._map)))
        self.adaptive_cap = max(MIN_ADAPTIVE_CAP, target)
        self._cap = self._smallest_cap()

    @property
    def mean_complete_latency(self) -> float:
        """Mean seconds from emit to fully acked, over every completed tree."""
        return self.latency_sum / self.completed if self.completed else 0.0
