"""Window assignment, firing and eviction for one windowed bolt task (pure: time passed in).

Time windows (the Dataflow model):

* a tuple stamped ``ts`` belongs to the tumbling window ``[n*L, (n+1)*L)`` that holds it,
  to every sliding window ``[n*I, n*I + L)`` that holds it, or to a session: the
  interval ``[ts, ts + gap)`` merged with every session of its key it overlaps;
* a window fires its **on-time** pane once the watermark reaches its end; before that an
  **early** pane every ``early_every_secs`` of processing time or ``early_every_count``
  new tuples; after it a **late** pane at the next timer for tuples that arrived late but
  within ``allowed_lateness``; a tuple too late for every window it belongs to is refused
  (the bolt sends it to its late stream);
* a firing's ``tuples`` are all the window holds (accumulating) or only what arrived since
  its last firing (discarding); ``new`` is what arrived since its last firing — at the
  first firing of a tumbling or sliding window, what is not in the window before it —
  and ``expired`` (first firings only) what the window before it held and it does not;
* a window is dropped once the watermark passes its end plus the allowed lateness, and a
  tuple leaves (``evicted``: the bolt acks it) once no window that is or will be fired
  can still hold it.

Count windows follow arrival order per key: every ``count_interval`` tuples (``count_length``
for tumbling ones) the last ``count_length`` tuples fire; ``expired`` holds those that left
since the previous firing.

Checkpoints are incremental: the engine remembers which keys' windows (*slots*) changed
since the last :meth:`WindowEngine.take_window_changes` (a tuple added, a pane fired or
dropped, tuples evicted, the slot removed) and hands out only those, each encoded on its
own, plus the task-wide clocks (seq, watermark).  :meth:`WindowEngine.restore_windows`
takes the clocks and any set of slots — after a rescale, the slots of the keys a task now
owns, from whichever task held them (see :class:`KeyFloors`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from topology.state.checkpoint import hashable

from .spec import DISCARDING, WindowSpec
from .watermark import LowWatermark

EARLY, ON_TIME, LATE = "early", "on_time", "late"


@dataclass(slots=True)
class Item:
    ts: float
    seq: int
    tup: Any


@dataclass
class Window:
    """One firing of one window, as ``execute`` receives it.

    Attributes:
        tuples: the window's tuples (all it holds, or — discarding — those since its last
            firing), in timestamp order.
        new: tuples added since the window last fired (see the module docstring).
        expired: tuples the previous window held that this one does not (first firings).
        start, end: the window's bounds (seconds; for count windows the first and last
            tuple's timestamps).
        pane: ``"early"``, ``"on_time"`` or ``"late"``.
        key: the values of the key fields (``with_key``), or None.
        count_range: count windows: the positions ``[first, last + 1)`` of its tuples among
            its key's tuples in arrival order (time windows: None).

    Args:
        tuples: as in Attributes (the runtime makes windows; tests may build one).
        new: as in Attributes.
        expired: as in Attributes.
        start: as in Attributes.
        end: as in Attributes.
        pane: as in Attributes.
        key: as in Attributes.
        count_range: as in Attributes.

    Example:
        >>> window = Window(tuples=["a", "b", "c"], new=["c"], expired=[], start=0.0, end=10.0)
        >>> len(window), window.pane, window.key
        (3, 'on_time', None)
    """

    tuples: list[Any]
    new: list[Any]
    expired: list[Any]
    start: float
    end: float
    pane: str = ON_TIME
    key: Any = None
    count_range: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self.tuples)


@dataclass
class _Pane:
    """The firing state of one window (time windows and sessions)."""

    start: float
    end: float
    created: float
    fired_seq: int = -1  # the highest seq in its last firing; -1: never fired
    on_time: bool = False  # the watermark passed its end (the on-time pane is out)
    new: int = 0  # tuples added since the last firing
    last_fire: float = 0.0

    def to_wire(self) -> list[Any]:
        return [self.start, self.end, self.fired_seq, self.on_time, self.new]


@dataclass
class _Key:
    items: list[Item] = field(default_factory=list)
    panes: dict[float, _Pane] = field(default_factory=dict)  # by start
    count_since: int = 0
    expired_since: list[Item] = field(default_factory=list)
    total: int = 0  # count windows: the key's tuples so far

    def to_wire(self, encode: Callable[[Any], Any]) -> list[Any]:
        return [
            [[i.ts, i.seq, encode(i.tup)] for i in self.items],
            [p.to_wire() for p in self.panes.values()],
            self.count_since,
            [[i.ts, i.seq, encode(i.tup)] for i in self.expired_since],
            self.total,
        ]

    @classmethod
    def from_wire(cls, data: list[Any], decode: Callable[[Any], Any], now: float) -> _Key:
        items, panes, count_since, expired = data[:4]
        slot = cls()
        slot.total = int(data[4]) if len(data) > 4 else 0
        slot.items = [Item(ts, seq, decode(t)) for ts, seq, t in items]
        for start, end, fired_seq, on_time, new in panes:
            slot.panes[start] = _Pane(start, end, now, fired_seq, on_time, new, now)
        slot.count_since = count_since
        slot.expired_since = [Item(ts, seq, decode(t)) for ts, seq, t in expired]
        return slot

    def top_seq(self) -> int:
        return max(
            [0, *(i.seq for i in self.items), *(i.seq for i in self.expired_since)]
            + [p.fired_seq for p in self.panes.values()]
        )


@dataclass(frozen=True)
class KeyFloors:
    """After a rescale, the watermark each key's previous task had reached (``of(key)``)
    and the highest of them (``top``).  A task restored with fresh clocks refuses a tuple,
    and marks a window born late, against the higher of its own watermark and its key's
    floor, so a window that task already fired and dropped is not made again by a replayed
    tuple; once its own watermark passes ``top`` the floors are forgotten."""

    of: Callable[[Any], float]
    top: float


class WindowEngine:
    """The windows of one task.  ``add`` each tuple, ``tick`` on the timer; both return
    the windows to fire now; :meth:`drain_evicted` gives the tuples that left."""

    def __init__(self, spec: WindowSpec, inputs: frozenset[int], now: float) -> None:
        self.spec = spec
        self.watermark = (
            LowWatermark(inputs, spec.lag, spec.idle_timeout, now) if spec.event_time else None
        )
        self.current = float("-inf")  # the watermark as of the last tick
        self.keys: dict[Any, _Key] = {}
        self.seq = 0
        self._evicted: list[Any] = []
        self.late = 0
        self._dirty: set[Any] = set()  # keys whose slot changed since the last snapshot
        self._floors: KeyFloors | None = None

    # -- input --------------------------------------------------------------------------

    def add(
        self, tup: Any, key: Any, src: int, ts: float | None, now: float
    ) -> list[Window] | None:
        """Take ``tup`` (stamped ``ts``; processing time: None); return the windows that
        fire because of it, or None when it is too late for every window it belongs to."""
        spec = self.spec
        if ts is None:
            ts = now
        elif self.watermark is not None:
            self.watermark.observe(src, ts, now)
        self.seq += 1
        item = Item(ts, self.seq, tup)
        slot = self.keys.get(key)
        if slot is None:
            slot = self.keys[key] = _Key()
        if spec.by_count:
            self._dirty.add(key)
            return self._add_counted(slot, key, item)
        mark = self._mark(key)
        panes = (
            self._session_of(slot, item, now, mark)
            if spec.kind == "session"
            else self._windows_of(slot, item, now, mark)
        )
        if panes is None:
            if not slot.items and not slot.panes:
                del self.keys[key]
            self.late += 1
            return None
        self._dirty.add(key)
        slot.items.append(item)
        fired = []
        for pane in panes:
            pane.new += 1
            if not pane.on_time and spec.early_every_count and pane.new >= spec.early_every_count:
                fired.append(self._fire(slot, key, pane, EARLY, now))
        return fired

    def _mark(self, key: Any) -> float:
        """The watermark ``key``'s lateness is judged by (its floor after a rescale)."""
        floors = self._floors
        if floors is None:
            return self.current
        return max(self.current, floors.of(key))

    def _windows_of(self, slot: _Key, item: Item, now: float, mark: float) -> list[_Pane] | None:
        length, step = float(self.spec.length or 0.0), self.spec.step
        last = math.floor(item.ts / step) * step
        starts = [last - i * step for i in range(math.ceil(length / step))]
        horizon = mark - self.spec.allowed_lateness
        panes = []
        for start in starts:
            end = start + length
            if not start <= item.ts < end or end <= horizon:
                continue  # not its window, or one already dropped
            pane = slot.panes.get(start)
            if pane is None:
                pane = slot.panes[start] = _Pane(start, end, now, last_fire=now)
                pane.on_time = end <= mark  # born late: its panes are late ones
            panes.append(pane)
        return panes or None

    def _session_of(self, slot: _Key, item: Item, now: float, mark: float) -> list[_Pane] | None:
        gap = float(self.spec.gap or 0.0)
        start, end = item.ts, item.ts + gap
        parts = [p for p in slot.panes.values() if p.start < end and start < p.end]
        start = min([start, *(p.start for p in parts)])
        end = max([end, *(p.end for p in parts)])
        if end + self.spec.allowed_lateness <= mark:
            return None
        for p in parts:
            del slot.panes[p.start]
        merged = _Pane(
            start,
            end,
            min([now, *(p.created for p in parts)]),
            fired_seq=min((p.fired_seq for p in parts), default=-1),
            new=sum(p.new for p in parts),
            last_fire=min([now, *(p.last_fire for p in parts)]),
        )
        merged.on_time = end <= mark
        slot.panes[start] = merged
        return [merged]

    def _add_counted(self, slot: _Key, key: Any, item: Item) -> list[Window]:
        spec = self.spec
        length = int(spec.count_length or 0)
        every = int(spec.count_interval or length)
        slot.items.append(item)
        slot.count_since += 1
        slot.total += 1
        if len(slot.items) > length:
            gone = slot.items.pop(0)
            slot.expired_since.append(gone)
            self._evicted.append(gone.tup)
        if slot.count_since < every:
            return []
        slot.count_since = 0
        members = list(slot.items)
        window = Window(
            [i.tup for i in members],
            [i.tup for i in members[-every:]],
            [i.tup for i in slot.expired_since],
            members[0].ts,
            members[-1].ts,
            ON_TIME,
            key,
            (slot.total - len(members), slot.total),
        )
        slot.expired_since = []
        if every == length:  # tumbling: the window's tuples leave with it
            slot.expired_since = members
            self._evicted.extend(i.tup for i in members)
            slot.items = []
        return [window]

    # -- time -------------------------------------------------------------------------------

    def tick(self, now: float) -> list[Window]:
        """The timer: move the watermark, fire what is due, drop what is done."""
        spec = self.spec
        if spec.by_count:
            return []
        if self.watermark is not None:
            self.current = self.watermark.advance(now)
        else:
            self.current = max(self.current, now - spec.lag)
        if self._floors is not None and self.current >= self._floors.top:
            self._floors = None
        mark, lateness = self.current, spec.allowed_lateness
        fired: list[Window] = []
        for key, slot in list(self.keys.items()):
            before = (len(fired), len(slot.panes), len(slot.items))
            for pane in sorted(slot.panes.values(), key=lambda p: (p.end, p.start)):
                if not pane.on_time and pane.end <= mark:
                    fired.append(self._fire(slot, key, pane, ON_TIME, now))
                    pane.on_time = True
                elif pane.on_time and pane.new:
                    fired.append(self._fire(slot, key, pane, LATE, now))
                elif (
                    not pane.on_time
                    and pane.new
                    and spec.early_every_secs
                    and now - pane.last_fire >= spec.early_every_secs
                ):
                    fired.append(self._fire(slot, key, pane, EARLY, now))
                if pane.end + lateness <= mark:
                    del slot.panes[pane.start]
                    if spec.kind == "session":
                        self._evict(slot, lambda i, p=pane: p.start <= i.ts < p.end)  # type: ignore[misc]
            if spec.kind != "session":
                horizon = mark - lateness - float(spec.length or 0.0) - spec.step
                self._evict(slot, lambda i, h=horizon: i.ts < h)  # type: ignore[misc]
            if (len(fired), len(slot.panes), len(slot.items)) != before:
                self._dirty.add(key)
            if not slot.items and not slot.panes:
                del self.keys[key]
        fired.sort(key=lambda w: (w.end, w.start))
        return fired

    def _fire(self, slot: _Key, key: Any, pane: _Pane, kind: str, now: float) -> Window:
        members = sorted(
            (i for i in slot.items if pane.start <= i.ts < pane.end), key=lambda i: (i.ts, i.seq)
        )
        first = pane.fired_seq < 0
        since = [i for i in members if i.seq > pane.fired_seq]
        new, expired = since, []
        if first and self.spec.kind != "session":
            step = self.spec.step
            new = [i for i in members if i.ts >= max(pane.start, pane.end - step)]
            expired = sorted(
                (i for i in slot.items if pane.start - step <= i.ts < pane.start),
                key=lambda i: (i.ts, i.seq),
            )
        tuples = since if self.spec.accumulation == DISCARDING else members
        pane.fired_seq = max([pane.fired_seq, *(i.seq for i in members)])
        pane.new = 0
        pane.last_fire = now
        return Window(
            [i.tup for i in tuples],
            [i.tup for i in new],
            [i.tup for i in expired],
            pane.start,
            pane.end,
            kind,
            key,
        )

    def _evict(self, slot: _Key, gone: Callable[[Item], bool]) -> None:
        keep = []
        for item in slot.items:
            if gone(item):
                self._evicted.append(item.tup)
            else:
                keep.append(item)
        slot.items = keep

    def drain_evicted(self) -> list[Any]:
        """The tuples that left every window since the last call (to ack)."""
        out, self._evicted = self._evicted, []
        return out

    def held(self) -> int:
        return sum(len(slot.items) for slot in self.keys.values())

    # -- checkpoints ----------------------------------------------------------------------

    def take_window_changes(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
        """What changed since the last call, msgpack-ready (``encode`` turns a tuple into
        data), and forget it: the task-wide clocks (always, they are small) and
        ``(slot key, encoded slot)`` for each key whose windows changed — ``None`` for a
        slot that is gone.  A slot that did not change is not in the list."""
        clocks = {
            "seq": self.seq,
            "current": self.current,
            "watermark": self.watermark.snapshot() if self.watermark is not None else None,
            "inputs": sorted(self.watermark.inputs) if self.watermark is not None else [],
        }
        changes = []
        for key in self._dirty:
            slot = self.keys.get(key)
            changes.append((key, None if slot is None else slot.to_wire(encode)))
        self._dirty = set()
        return clocks, changes

    def restore_windows(
        self,
        clocks: dict[str, Any] | None,
        slots: Iterable[tuple[Any, Any]],
        decode: Callable[[Any], Any],
        now: float,
        floors: KeyFloors | None = None,
    ) -> None:
        """Back to ``clocks`` (:meth:`take_window_changes`' first part; None: fresh ones)
        holding ``slots`` (slot key, encoded slot).  Timers start again from ``now``.

        Fresh clocks (after a rescale) start the watermark at ``clocks["current"]`` without
        the per-input marks of ``clocks["watermark"]`` (None; they are dropped too when the
        input task ids are not ``clocks["inputs"]`` any more): windows fire once the
        watermark passes their end again.  A pane already fired on time is marked so in its
        slot and is not fired on time twice; ``floors`` keeps tuples its key's old task
        would have refused out of windows that task already dropped."""
        clocks = clocks or {"seq": 0, "current": float("-inf"), "watermark": None}
        self.keys = {}
        self._evicted = []
        self._dirty = set()
        self._floors = floors
        for key, data in slots:
            self.keys[hashable(key)] = _Key.from_wire(data, decode, now)
        self.seq = max([int(clocks["seq"]), *(slot.top_seq() for slot in self.keys.values())])
        self.current = float(clocks["current"])
        if self.watermark is not None:
            self.watermark = LowWatermark(
                self.watermark.inputs, self.spec.lag, self.spec.idle_timeout, now
            )
            marks = clocks["watermark"]
            if marks is not None and clocks.get("inputs") == sorted(self.watermark.inputs):
                self.watermark.restore(marks, now)
            else:  # fresh, or its input tasks are others now (task ids move on a rescale)
                self.watermark.value = self.current
