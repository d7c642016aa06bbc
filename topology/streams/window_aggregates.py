"""Incremental window aggregation: one accumulator per window and key, not the elements
(Flink's incremental window functions).

* :class:`Aggregator` is what a windowed aggregation does to an accumulator: ``add`` an
  element, ``merge`` two (when it can), ``result`` of one, and its wire form (accumulators
  travel between the two phases and into checkpoints as msgpack values).
* :class:`AggregatingWindows` is the windows of one task for time windows (tumbling and
  sliding, event or processing time): per key and window, the accumulator, whether its
  on-time pane is out, and — only for tuples that belong to an acked tuple tree — the
  tuples to anchor its result to and to ack when it fires.  Untracked tuples are not kept.
* :class:`CombiningWindows` is the second phase of a window over a plain stream: it
  merges the partial accumulators of the first phase's tasks per window and fires when
  every first-phase task has promised (its forwarded watermark) that the window is done.
* :class:`ForwardGrouping` sends source task *i*'s tuples to target task *i* (Flink's
  forward partitioning), so a first-phase task's watermark is its one source task's.

Pure: time is passed in; the components in :mod:`.window_components` carry out what these
decide (emits, acks).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from grouping import CustomGrouping, GroupingContext
from topology.state.checkpoint import hashable
from topology.windows.engine import KeyFloors
from topology.windows.spec import WindowSpec
from topology.windows.watermark import LowWatermark

_NONE: Any = object()


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Aggregator:
    """What a windowed aggregation does with its accumulator.

    Attributes:
        add: ``add(acc or _NONE, element) -> acc`` (``_NONE``: the window's first element).
        result: what is emitted for an accumulator.
        merge: ``merge(a, b) -> acc`` of two windows' parts, or None (cannot be split).
        encode: the accumulator as a msgpack value (wire and checkpoints).
        decode: back from :attr:`encode`'s form.
    """

    add: Callable[[Any, Any], Any]
    result: Callable[[Any], Any] = _same
    merge: Callable[[Any, Any], Any] | None = None
    encode: Callable[[Any], Any] = _same
    decode: Callable[[Any], Any] = _same

    def fold(self, values: Iterable[Any]) -> Any:
        """The result over ``values`` at once (windows that keep their elements)."""
        acc = _NONE
        for value in values:
            acc = self.add(acc, value)
        return self.result(acc)


def aggregator(op: str, options: dict[str, Any], fn: Any = None) -> Aggregator | None:
    """The :class:`Aggregator` of a window operation (``count``, ``reduce``, ``aggregate``,
    ``top_n``, ``distinct``), or None for one that needs the elements (``group``, joins).

    Example:
        >>> aggregator("count", {}).fold(["a", "b"]), aggregator("top_n", {"n": 2}).fold([3, 9, 5])
        (2, [9, 5])
    """
    if op == "count":
        return Aggregator(lambda acc, v: 1 if acc is _NONE else acc + 1, merge=_plus)
    if op == "reduce":
        return Aggregator(lambda acc, v: v if acc is _NONE else fn(acc, v), merge=fn)
    if op == "aggregate":
        init, apply = options["init"], options["apply"]
        return Aggregator(
            lambda acc, v: apply(init() if acc is _NONE else acc, v),
            options.get("result") or _same,
            options.get("merge"),
        )
    if op == "top_n":
        return _top_n(int(options["n"]), options.get("by"))
    if op == "distinct":
        return Aggregator(_distinct_add, len, _distinct_merge, list, _distinct_decode)
    return None


#: Aggregations whose accumulators merge (``aggregate``: when given ``merge``).
MERGEABLE = frozenset({"count", "reduce", "top_n", "distinct"})


def window_mode(windowing: Any, op: str, options: dict[str, Any], pair: bool, tasks: int) -> str:
    """How a windowed aggregation runs: ``"incremental"`` (an accumulator per key and
    window: time windows, every aggregation but ``group``), ``"two_phase"`` (also a plain
    stream of several tasks whose aggregation merges: partial accumulators in the stream's
    tasks, combined in one) or ``"elements"`` (the window keeps its elements: count and
    session windows, ``group``).

    Example:
        >>> from topology.streams.windowing import session, tumbling
        >>> window_mode(tumbling(seconds=10), "reduce", {}, False, 4)
        'two_phase'
        >>> window_mode(tumbling(seconds=10), "aggregate", {}, False, 4)
        'incremental'
        >>> window_mode(session(30), "count", {}, True, 4)
        'elements'
        >>> window_mode(tumbling(count=5), "count", {}, True, 1)
        'elements'
    """
    if windowing.kind == "session" or windowing.by_count or op == "group":
        return "elements"
    mergeable = op in MERGEABLE or (op == "aggregate" and options.get("merge") is not None)
    if not pair and tasks > 1 and mergeable:
        return "two_phase"
    return "incremental"


def _plus(a: Any, b: Any) -> Any:
    return a + b


def _distinct_add(acc: Any, value: Any) -> set[Any]:
    if acc is _NONE:
        acc = set()
    acc.add(hashable(value))
    return acc


def _distinct_merge(a: set[Any], b: set[Any]) -> set[Any]:
    return a | b


def _distinct_decode(values: list[Any]) -> set[Any]:
    return {hashable(v) for v in values}


def _top_n(n: int, by: Callable[[Any], Any] | None) -> Aggregator:
    """The ``n`` best elements, best first (largest ``by(e)``; among equals the earlier)."""
    score = by or _same

    def add(acc: Any, value: Any) -> list[Any]:
        if acc is _NONE:
            return [value]
        s = score(value)
        if len(acc) >= n and not s > score(acc[-1]):
            return acc
        i = len(acc)
        while i and s > score(acc[i - 1]):
            i -= 1
        acc.insert(i, value)
        if len(acc) > n:
            acc.pop()
        return acc

    def merge(a: list[Any], b: list[Any]) -> list[Any]:
        out = list(a)
        for value in b:
            out = add(out, value)
        return out

    return Aggregator(add, merge=merge)


class Fired(NamedTuple):
    """One pane of one window to emit: its key (None: a plain stream's windows), bounds,
    accumulator, the tuples to anchor the result to and those to ack after it."""

    key: Any
    start: float
    end: float
    acc: Any
    anchors: list[Any]
    acks: list[Any]


@dataclass(slots=True)
class _Pane:
    """One window of one key."""

    start: float
    end: float
    acc: Any = _NONE
    on_time: bool = False  # its on-time pane is out (or it was born late)
    anchors: list[Any] = field(default_factory=list)  # tracked tuples since its last pane
    owned: list[Any] = field(default_factory=list)  # sliding: those whose last window it is


class AggregatingWindows:
    """The time windows (tumbling or sliding) of one task, one accumulator per key and
    window.  :meth:`add` each element, :meth:`tick` on the timer (it returns what fires).

    A window fires its on-time pane once the watermark reaches its end, and a late pane at
    the next tick after elements arrived within the allowed lateness (accumulating: the
    whole window's result again); it is dropped once the watermark passes its end plus the
    allowed lateness.  A tracked tuple (one of an acked tuple tree) is held until its last
    window fires (an untracked one is not kept); an element too late for every window is
    refused (``add`` returns False).

    Example (tumbling 10 s, processing time, two keys):
        >>> from topology.windows.spec import WindowSpec
        >>> w = AggregatingWindows(WindowSpec("tumbling", length=10.0), frozenset(), 0.0,
        ...                        aggregator("count", {}))
        >>> w.add(("a",), "x", None, 0, None, 1.0), w.add(("b",), "y", None, 0, None, 2.0)
        (True, True)
        >>> [(f.key, f.start, f.end, f.acc) for f in w.tick(10.0)]
        [(('a',), 0.0, 10.0, 1), (('b',), 0.0, 10.0, 1)]
    """

    def __init__(
        self,
        spec: WindowSpec,
        inputs: frozenset[int],
        now: float,
        agg: Aggregator,
        deltas: bool = False,
    ) -> None:
        self.spec = spec
        self.agg = agg
        #: Each pane fired holds what came since the previous one (a first phase's parts),
        #: not the whole window's accumulator.
        self.deltas = deltas
        self.watermark = (
            LowWatermark(inputs, spec.lag, spec.idle_timeout, now) if spec.event_time else None
        )
        self.current = float("-inf")
        self.keys: dict[Any, dict[float, _Pane]] = {}
        self.late = 0
        self._length = float(spec.length or 0.0)
        self._step = spec.step
        self._sliding = self._step != self._length
        self._due: list[tuple[float, int, Any, float]] = []  # (end, n, key, start)
        self._n = 0
        self._late_panes: dict[tuple[Any, float], None] = {}  # panes with late elements
        self._dirty: set[Any] = set()
        self._floors: KeyFloors | None = None

    # -- input --------------------------------------------------------------------------

    def add(self, key: Any, value: Any, tup: Any, src: int, ts: float | None, now: float) -> bool:
        """Add ``value`` (of ``tup``, stamped ``ts``; None: processing time) to its windows;
        False when it is too late for every one (nothing kept)."""
        if ts is None:
            ts = now
        elif self.watermark is not None:
            self.watermark.observe(src, ts, now)
        floors = self._floors
        if not self._sliding and floors is None:  # the common case: an open tumbling window
            start = math.floor(ts / self._step) * self._step
            slot = self.keys.get(key)
            pane = None if slot is None else slot.get(start)
            if pane is not None and not pane.on_time and start <= ts:
                pane.acc = self.agg.add(pane.acc, value)
                if tup is not None and tup.anchors is not None:
                    pane.anchors.append(tup)
                self._dirty.add(key)
                return True
        mark = self.current if floors is None else max(self.current, floors.of(key))
        horizon = mark - self.spec.allowed_lateness
        step, length = self._step, self._length
        last = math.floor(ts / step) * step
        slot = self.keys.get(key)
        tracked = tup is not None and tup.anchors is not None
        added = False
        for i in range(math.ceil(length / step) if self._sliding else 1):
            start = last - i * step
            end = start + length
            if not start <= ts < end or end <= horizon:
                continue
            if slot is None:
                slot = self.keys[key] = {}
            pane = slot.get(start)
            if pane is None:
                pane = slot[start] = _Pane(start, end)
                self._n += 1
                pane.on_time = end <= mark  # born late: only late panes until it is dropped
                heapq.heappush(self._due, (end, self._n, key, start))
            pane.acc = self.agg.add(pane.acc, value)
            if pane.on_time:
                self._late_panes[(key, start)] = None
            if tracked:
                pane.anchors.append(tup)
                if self._sliding and i == 0:
                    pane.owned.append(tup)
            added = True
        if not added:
            self.late += 1
            return False
        self._dirty.add(key)
        return True

    # -- time ---------------------------------------------------------------------------

    def advance(self, now: float) -> float:
        """Move the watermark (event time: the low watermark; else the clock less the lag)."""
        if self.watermark is not None:
            self.current = self.watermark.advance(now)
        else:
            self.current = max(self.current, now - self.spec.lag)
        if self._floors is not None and self.current >= self._floors.top:
            self._floors = None
        return self.current

    def tick(self, now: float) -> list[Fired]:
        """The timer: move the watermark; return the panes to emit now (by end, start)."""
        mark = self.advance(now)
        lateness = self.spec.allowed_lateness
        fired: list[Fired] = []
        for key, start in list(self._late_panes):
            pane = self.keys.get(key, {}).get(start)
            if pane is not None and pane.acc is not _NONE:
                fired.append(self._fire(key, pane))
        self._late_panes.clear()
        due = self._due
        while due and due[0][0] <= mark:
            _, _, key, start = due[0]
            slot = self.keys.get(key)
            pane = None if slot is None else slot.get(start)
            if slot is None or pane is None:
                heapq.heappop(due)
                continue
            if not pane.on_time:
                pane.on_time = True
                if pane.acc is not _NONE:  # (deltas: none since it was handed over)
                    fired.append(self._fire(key, pane))
            if pane.end + lateness <= mark:
                heapq.heappop(due)
                del slot[start]
                self._dirty.add(key)
                rest = pane.owned if self._sliding else pane.anchors
                if rest:  # (it fired already: only a safety net)
                    fired.append(Fired(key, pane.start, pane.end, _NONE, [], rest))
                if not slot:
                    del self.keys[key]
            else:  # kept for late elements: look again once it is past its lateness
                self._n += 1
                heapq.heapreplace(due, (pane.end + lateness, self._n, key, start))
        fired.sort(key=lambda f: (f.end, f.start))
        return fired

    def _fire(self, key: Any, pane: _Pane) -> Fired:
        anchors = pane.anchors
        acks = pane.owned if self._sliding else anchors
        pane.anchors, pane.owned = [], []
        acc = pane.acc
        if self.deltas:
            pane.acc = _NONE
        self._dirty.add(key)
        return Fired(key, pane.start, pane.end, acc, anchors, acks)

    def quiet(self) -> bool:
        """Whether every input is quiet (its progress marks came with nothing between)."""
        watermark = self.watermark
        return watermark is not None and watermark.quiet >= watermark.inputs

    def hand_over(self) -> list[Fired]:
        """Fire what every open window holds now (:attr:`deltas`: what came since its last
        pane), as when its inputs went quiet: a first phase then holds nothing back."""
        fired = [
            self._fire(key, pane)
            for key, slot in self.keys.items()
            for pane in slot.values()
            if pane.acc is not _NONE
        ]
        self._late_panes.clear()
        return fired

    def held(self) -> int:
        """The panes open (every key's windows)."""
        return sum(len(slot) for slot in self.keys.values())

    # -- checkpoints ----------------------------------------------------------------------

    def take_window_changes(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
        """The clocks and ``(key, slot or None)`` for each key changed since the last call,
        as :meth:`topology.windows.engine.WindowEngine.take_window_changes` (accumulators,
        not tuples: held tuples belong to ack trees, which a restore does not bring back)."""
        clocks = {
            "seq": 0,
            "current": self.current,
            "watermark": self.watermark.snapshot() if self.watermark is not None else None,
            "inputs": sorted(self.watermark.inputs) if self.watermark is not None else [],
        }
        wire = self.agg.encode
        changes = []
        for key in self._dirty:
            slot = self.keys.get(key)
            changes.append(
                (
                    key,
                    None
                    if slot is None
                    else [
                        [p.start, p.end, [] if p.acc is _NONE else [wire(p.acc)], p.on_time]
                        for p in slot.values()
                    ],
                )
            )
        self._dirty = set()
        return clocks, changes

    def restore_windows(
        self,
        clocks: dict[str, Any] | None,
        slots: Iterable[tuple[Any, Any]],
        now: float,
        floors: KeyFloors | None = None,
    ) -> None:
        """Back to a checkpoint's clocks and slots (see
        :meth:`topology.windows.engine.WindowEngine.restore_windows`)."""
        clocks = clocks or {"current": float("-inf"), "watermark": None}
        self.keys, self._due, self._late_panes, self._dirty = {}, [], {}, set()
        self._floors = floors
        unwire = self.agg.decode
        for key, data in slots:
            key = hashable(key)
            slot = self.keys[key] = {}
            for start, end, acc, on_time in data:
                acc = unwire(acc[0]) if acc else _NONE  # ([]: none since its last part)
                slot[start] = _Pane(start, end, acc, bool(on_time))
                self._n += 1
                heapq.heappush(self._due, (end, self._n, key, start))
        self.current = float(clocks["current"])
        if self.watermark is not None:
            self.watermark = LowWatermark(
                self.watermark.inputs, self.spec.lag, self.spec.idle_timeout, now
            )
            marks = clocks.get("watermark")
            if marks is not None and clocks.get("inputs") == sorted(self.watermark.inputs):
                self.watermark.restore(marks, now)
            else:
                self.watermark.value = self.current


@dataclass
class _Combined:
    acc: Any = _NONE  # the merged parts
    tuples: list[Any] = field(default_factory=list)  # tracked parts not acked yet
    fired: bool = False


class CombiningWindows:
    """The second phase of a window over a plain stream: per window, the merge of the
    parts the first-phase tasks sent (each part what a task's window got since its previous
    part), emitted when the watermark — the lowest one the first-phase tasks forwarded —
    passes the window's end, and again for each later part while the window is kept
    (its allowed lateness).  A first-phase task that sends progress marks with nothing
    between (:meth:`quiet`) holds the watermark back no longer, as any quiet input.

    Example (two first-phase tasks, 1 and 2, counting):
        >>> from topology.windows.spec import WindowSpec
        >>> c = CombiningWindows(WindowSpec("tumbling", length=10.0), frozenset({1, 2}), 0.0,
        ...                      aggregator("count", {}))
        >>> c.partial(1, 0.0, 10.0, 3, None, 0.0), c.partial(2, 0.0, 10.0, 4, None, 0.0)
        ([], [])
        >>> c.mark(1, 10.0, 0.0), [(f.start, f.acc) for f in c.mark(2, 12.0, 0.0)]
        ([], [(0.0, 7)])
    """

    def __init__(
        self, spec: WindowSpec, inputs: frozenset[int], now: float, agg: Aggregator
    ) -> None:
        self.spec = spec
        self.agg = agg
        self.inputs = inputs
        self.watermark = LowWatermark(inputs, 0.0, spec.idle_timeout, now)
        self.current = float("-inf")
        self.windows: dict[tuple[float, float], _Combined] = {}
        self.late = 0
        self._dirty: set[tuple[float, float]] = set()

    def partial(
        self, src: int, start: float, end: float, acc: Any, tup: Any, now: float
    ) -> list[Fired]:
        """A part of window [start, end) from first-phase task ``src``; a part for a window
        already dropped is refused (``late``; returns its tuple to ack)."""
        bounds = (start, end)
        window = self.windows.get(bounds)
        tracked = tup is not None and tup.anchors is not None
        if window is None:
            if end + self.spec.allowed_lateness <= self.current:
                self.late += 1
                return [Fired(None, start, end, _NONE, [], [tup] if tracked else [])]
            window = self.windows[bounds] = _Combined()
        part = self.agg.decode(acc)
        merge = self.agg.merge
        assert merge is not None
        window.acc = part if window.acc is _NONE else merge(window.acc, part)
        if tracked:
            window.tuples.append(tup)
        self._dirty.add(bounds)
        if end <= self.current:  # a late pane (or a part of a window born late)
            return [self._fire(bounds, window)]
        return []

    def mark(self, src: int, mark: float, now: float) -> list[Fired]:
        """First-phase task ``src`` forwarded its watermark: fire and drop what is due."""
        self.watermark.observe(src, mark, now)
        return self.tick(now)

    def quiet(self, src: int, now: float) -> list[Fired]:
        """First-phase task ``src`` sent a progress mark (see :meth:`LowWatermark.mark`)."""
        self.watermark.mark(src)
        return self.tick(now)

    def tick(self, now: float) -> list[Fired]:
        """Move the watermark (quiet or idle inputs stop holding it); fire and drop what is
        due."""
        before = self.current
        self.current = self.watermark.advance(now)
        if self.current == before:
            return []
        lateness = self.spec.allowed_lateness
        fired = []
        for bounds in sorted(self.windows, key=lambda b: (b[1], b[0])):
            start, end = bounds
            if end > self.current:
                break
            window = self.windows[bounds]
            if not window.fired:
                fired.append(self._fire(bounds, window))
            if end + lateness <= self.current:
                del self.windows[bounds]
                self._dirty.add(bounds)
        return fired

    def _fire(self, bounds: tuple[float, float], window: _Combined) -> Fired:
        window.fired = True
        tuples, window.tuples = window.tuples, []
        self._dirty.add(bounds)
        return Fired(None, bounds[0], bounds[1], window.acc, tuples, tuples)

    def held(self) -> int:
        return len(self.windows)

    def take_window_changes(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
        """Clocks and the windows changed since the last call (one slot per window)."""
        clocks = {
            "seq": 0,
            "current": self.current,
            "watermark": self.watermark.snapshot(),
            "inputs": sorted(self.inputs),
        }
        wire = self.agg.encode
        changes = []
        for bounds in self._dirty:
            window = self.windows.get(bounds)
            changes.append(
                (list(bounds), None if window is None else [window.fired, wire(window.acc)])
            )
        self._dirty = set()
        return clocks, changes

    def restore_windows(
        self, clocks: dict[str, Any] | None, slots: Iterable[tuple[Any, Any]], now: float
    ) -> None:
        """Back to a checkpoint's clocks and windows."""
        self.windows, self._dirty = {}, set()
        for bounds, (fired, acc) in slots:
            self.windows[(float(bounds[0]), float(bounds[1]))] = _Combined(
                self.agg.decode(acc), [], bool(fired)
            )
        self.watermark = LowWatermark(self.inputs, 0.0, self.spec.idle_timeout, now)
        if clocks is None:
            self.current = float("-inf")
            return
        self.current = float(clocks["current"])
        if clocks.get("watermark") is not None and clocks.get("inputs") == sorted(self.inputs):
            self.watermark.restore(clocks["watermark"], now)
        else:
            self.watermark.value = self.current


class ForwardGrouping(CustomGrouping):
    """Source task *i* (of *n*) to target task *i* (of *n*): Flink's forward partitioning
    (the source's and the target's task counts are equal).  :func:`forward_sources` is
    its inverse, for the target's watermark.

    Example:
        >>> g = ForwardGrouping()
        >>> g.prepare(GroupingContext("src", 5, "default", ("value",), "dst", (7, 8)))
        >>> g.choose_tasks([1])
        [8]
    """

    def prepare(self, context: GroupingContext) -> None:
        super().prepare(context)
        self._target = [forward_target(context.source_task, self.target_tasks)]

    def choose_tasks(self, values: Any) -> list[int]:
        return self._target


def forward_target(source_task: int, targets: tuple[int, ...] | list[int]) -> int:
    """The target task :class:`ForwardGrouping` sends ``source_task``'s tuples to."""
    ordered = sorted(targets)
    return ordered[source_task % len(ordered)]


def forward_sources(task: int, sources: Iterable[int], targets: Iterable[int]) -> frozenset[int]:
    """The source tasks whose tuples :class:`ForwardGrouping` sends to ``task``."""
    ordered = sorted(targets)
    return frozenset(s for s in sources if forward_target(s, ordered) == task)
