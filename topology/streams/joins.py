"""Stream–stream joins on keyed state, unwindowed: the regular join (Flink's, with an
optional TTL) and the interval join (Flink's, on event time).

Both read the two pair streams fields-grouped on ``key`` into one component (two inputs:
side 0 is the stream ``join`` was called on, side 1 the other).  Each key's stored values
are one list per side in one dict entry, so an arriving element costs one dict lookup, a
loop over the other side's values of its key and an append: nothing is allocated but the
output pairs ``(key, (a, b))`` (``a`` always from side 0).

* :class:`RegularJoin`: every value is kept (``ttl`` None) or kept ``ttl`` seconds of
  processing time: an expired value is never joined again (checked as the other side
  arrives) and is dropped on the component's timer (tick tuples), key by key, from
  buckets of the keys due for a look.
* :class:`IntervalJoin`: ``a`` and ``b`` are joined when ``time(a) + lower <=
  other_time(b) <= time(a) + upper``.  The watermark is the low watermark over both
  sides' input tasks (:class:`~topology.windows.watermark.LowWatermark`, trailing by
  ``lag``), moved on the timer; an element older than it is late: dropped and counted
  (the task's ``late_elements`` metric), and stored values no future element can match
  are dropped.  The input components send it progress marks (:mod:`.progress`), so an
  input task with nothing for a join task does not hold its watermark back.

Acking: an input is acked once it has been joined and stored (it is in state, not in
flight); outputs are anchored to the arriving input.  In a checkpointed topology the
stored values are the task's key-value state (one entry per key: both sides' lists), put
at each checkpoint for the keys that changed and read back after a restore.  Processing
time is :data:`wall_clock` (seconds since the epoch, so stored arrival times hold across
restarts); the interval join's watermark starts afresh after a restore.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
import time
from bisect import bisect_right
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from topology.components import BasicBolt
from topology.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from topology.constants import PROGRESS_STREAM
from topology.errors import DataError
from topology.state.checkpoint import hashable
from topology.stateful import StatefulBolt
from topology.windows.watermark import LowWatermark, MarkTimer

from .components import Operators, StreamComponent
from .progress import PROGRESS_SECS
from .steps import Push, compile_after

if TYPE_CHECKING:
    from topology.builder import BoltDeclarer
    from topology.context import TopologyContext
    from topology.state.kv import KeyValueState
    from topology.tuple import Tuple, TupleSource

#: Processing time, in seconds since the epoch (a test may put a simulated clock here).
wall_clock: Callable[[], float] = time.time

#: The node kinds of this module's operators (``join`` is the windowed join's).
JOIN_KINDS = frozenset({"keyed_join", "interval_join"})
#: How each kind is shown (``visualize``, status).
_LABELS = {"keyed_join": "join", "interval_join": "interval_join"}
#: Seconds between two moves of the interval join's watermark (as a window's default).
WATERMARK_INTERVAL = 1.0
_NUMBERS = (int, float)


class JoinTimeError(DataError):
    """An interval join's time function gave something other than seconds (the message
    names the component and the element)."""


# -- settings, checked where the operator is written ------------------------------------------


def check_ttl(ttl: Any) -> float | None:
    """``ttl`` as seconds (None: keep forever).

    Raises:
        ValueError: not None nor a number > 0.

    Example:
        >>> check_ttl(None), check_ttl(30)
        (None, 30.0)
        >>> check_ttl(0)
        Traceback (most recent call last):
        ...
        ValueError: join(ttl=...) must be None (keep forever) or seconds > 0, got 0
    """
    if ttl is None:
        return None
    if type(ttl) not in _NUMBERS or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"join(ttl=...) must be None (keep forever) or seconds > 0, got {ttl!r}")
    return float(ttl)


def check_interval(lower: Any, upper: Any, time: Any, other_time: Any, lag: Any) -> None:
    """Refuse an interval join's bad settings, naming the operator and the fix.

    Raises:
        TypeError: ``time`` or ``other_time`` is not a function.
        ValueError: a bound or ``lag`` is not a finite number, ``lower > upper`` or
            ``lag < 0``.

    Example:
        >>> check_interval(5, -5, abs, None, 0)
        Traceback (most recent call last):
        ...
        ValueError: interval_join(lower=5, upper=-5): lower must be <= upper
    """
    for what, fn in (("time", time), ("other_time", other_time)):
        if fn is not None and not callable(fn):
            raise TypeError(f"interval_join({what}=...) must be a function, got {fn!r}")
    if time is None:
        raise TypeError("interval_join(time=...) is required: the time of a value, in seconds")
    for what, value in (("lower", lower), ("upper", upper), ("lag", lag)):
        if type(value) not in _NUMBERS or not math.isfinite(value):
            raise ValueError(f"interval_join({what}=...) must be a number, got {value!r}")
    if lower > upper:
        raise ValueError(f"interval_join(lower={lower!r}, upper={upper!r}): lower must be <= upper")
    if lag < 0:
        raise ValueError(f"interval_join(lag=...) must be >= 0, got {lag!r}")


# -- the keys due for a look --------------------------------------------------------------------


class Due:
    """Keys to look at once a time has passed, in buckets of ``width`` seconds.

    A key is added when its first value is stored, and again (by its join) at the time its
    oldest remaining value expires; :meth:`take` gives the keys of every bucket wholly
    before ``now``.  Keys are looked at no earlier than their time.

    Example:
        >>> due = Due(10.0)
        >>> due.add("a", 5.0); due.add("b", 12.0); due.add("a", 7.0)
        >>> due.take(9.0), due.take(10.0), due.take(25.0)
        ([], ['a'], ['b'])
    """

    def __init__(self, width: float) -> None:
        self.width = width
        self._buckets: dict[float, dict[Any, None]] = {}
        self._order: list[float] = []  # the buckets, a heap

    def add(self, key: Any, at: float) -> None:
        bucket = at // self.width
        keys = self._buckets.get(bucket)
        if keys is None:
            self._buckets[bucket] = {key: None}
            heapq.heappush(self._order, bucket)
        else:
            keys[key] = None

    def take(self, now: float) -> list[Any]:
        """The keys of every bucket ending at or before ``now`` (each once), forgotten here."""
        order, width = self._order, self.width
        if not order or (order[0] + 1) * width > now:
            return []
        keys: dict[Any, None] = {}
        while order and (order[0] + 1) * width <= now:
            keys.update(self._buckets.pop(heapq.heappop(order)))
        return list(keys)

    def clear(self) -> None:
        self._buckets.clear()
        self._order.clear()


# -- the joins, pure ----------------------------------------------------------------------------


class RegularJoin:
    """Flink's regular inner join: each arriving value is joined with every stored value
    of its key from the other side, then stored (``ttl`` seconds, or for ever).

    ``entries``: key -> ``[a values, b values]``, plus ``[a times, b times]`` (arrival,
    processing time, ascending) with a TTL.  ``left`` / ``right`` take one arriving value
    of side 0 / 1.  ``changed`` (a checkpointed task's) collects the keys whose entry
    changed or went.

    Example:
        >>> out = []
        >>> join = RegularJoin(out.append, ttl=10.0, clock=lambda: now)
        >>> now = 0.0
        >>> join.left("k", "a1"); join.right("k", "b1"); join.left("k", "a2")
        >>> now = 15.0
        >>> join.right("k", "b2")  # a1 and a2 expired
        >>> join.expire(); out, join.entries
        ([('k', ('a1', 'b1')), ('k', ('a2', 'b1'))], {'k': [[], ['b2'], [], [15.0]]})
    """

    def __init__(
        self, out: Push, ttl: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.out = out
        self.ttl = ttl
        self.clock = clock
        self.entries: dict[Any, list[list[Any]]] = {}
        self.changed: dict[Any, None] | None = None
        self.now = -math.inf  # the latest time read (the clock never goes back here)
        self._ttl = math.inf if ttl is None else ttl
        self.due = Due(timer_secs(ttl))
        if ttl is not None:
            self.left, self.right = self._left_ttl, self._right_ttl  # type: ignore[method-assign]

    def left(self, key: Any, value: Any) -> None:
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = [[value], []]
        else:
            out = self.out
            for other in entry[1]:
                out((key, (value, other)))
            entry[0].append(value)  # (after the outputs: a retried input is stored once)
        if self.changed is not None:
            self.changed[key] = None

    def right(self, key: Any, value: Any) -> None:
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = [[], [value]]
        else:
            out = self.out
            for other in entry[0]:
                out((key, (other, value)))
            entry[1].append(value)
        if self.changed is not None:
            self.changed[key] = None

    def _clock(self) -> float:
        now = self.clock()
        if now < self.now:
            return self.now
        self.now = now
        return now

    def _left_ttl(self, key: Any, value: Any) -> None:
        now = self._clock()
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = [[value], [], [now], []]
            self.due.add(key, now + self._ttl)
        else:
            times = entry[3]
            if times and times[0] <= now - self._ttl:
                self._trim(entry, now - self._ttl)
            out = self.out
            for other in entry[1]:
                out((key, (value, other)))
            entry[0].append(value)
            entry[2].append(now)
        if self.changed is not None:
            self.changed[key] = None

    def _right_ttl(self, key: Any, value: Any) -> None:
        now = self._clock()
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = [[], [value], [], [now]]
            self.due.add(key, now + self._ttl)
        else:
            times = entry[2]
            if times and times[0] <= now - self._ttl:
                self._trim(entry, now - self._ttl)
            out = self.out
            for other in entry[0]:
                out((key, (other, value)))
            entry[1].append(value)
            entry[3].append(now)
        if self.changed is not None:
            self.changed[key] = None

    @staticmethod
    def _trim(entry: list[list[Any]], cutoff: float) -> None:
        """Drop the values that arrived at or before ``cutoff``."""
        for values, times in ((entry[0], entry[2]), (entry[1], entry[3])):
            if times and times[0] <= cutoff:
                n = bisect_right(times, cutoff)
                del values[:n]
                del times[:n]

    def expire(self) -> None:
        """The timer: drop the expired values of the keys due for a look."""
        if self.ttl is None:
            return
        now = self._clock()
        cutoff = now - self._ttl
        entries, changed = self.entries, self.changed
        for key in self.due.take(now):
            entry = entries.get(key)
            if entry is None:
                continue
            self._trim(entry, cutoff)
            if changed is not None:
                changed[key] = None
            firsts = [times[0] for times in (entry[2], entry[3]) if times]
            if firsts:
                self.due.add(key, min(firsts) + self._ttl)
            else:
                del entries[key]

    def stored(self, entry: list[list[Any]]) -> list[list[Any]]:
        """An entry as it goes into a checkpoint (copies: the entry goes on changing)."""
        return [list(part) for part in entry]

    def load(self, items: Any) -> None:
        """Replace every entry by checkpointed ones (``(key, stored entry)`` pairs)."""
        self.entries = {}
        self.due.clear()
        for key, stored in items:
            entry = [list(part) for part in stored]
            if len(entry) != (2 if self.ttl is None else 4):
                raise ValueError(f"a stored join entry of {len(entry)} parts, for key {key!r}")
            self.entries[key] = entry
            if self.ttl is not None:
                firsts = [times[0] for times in entry[2:] if times]
                lasts = [times[-1] for times in entry[2:] if times]
                if firsts:
                    self.due.add(key, min(firsts) + self._ttl)
                    self.now = max(self.now, *lasts)


def timer_secs(ttl: float | None) -> float:
    """Seconds between two looks at the expired values of a join with ``ttl``."""
    return WATERMARK_INTERVAL if ttl is None else min(max(ttl / 4, 0.05), 60.0)


class IntervalJoin:
    """Flink's interval join: ``(key, (a, b))`` for ``time(a) + lower <= other_time(b) <=
    time(a) + upper``, as each arrives; both sides buffered per key until the watermark
    passes what they can still match.

    ``entries``: key -> ``[a values, a times, b values, b times, when to look next]``
    (the last is not checkpointed).  ``left`` / ``right`` take ``(source task, key,
    value)``; :meth:`advance` moves the watermark (the timer).

    Example:
        >>> from topology.windows.watermark import LowWatermark, MarkTimer
        >>> out = []
        >>> marks = LowWatermark(frozenset({1}), lag=0.0, idle_timeout=None, now=0.0)
        >>> join = IntervalJoin(out.append, -1, 2, lambda v: v[1], lambda v: v[1], marks)
        >>> join.left(1, "k", ("a", 10)); join.right(1, "k", ("b", 12))
        >>> join.right(1, "k", ("c", 8)); join.left(1, "k", ("d", 13))
        >>> [(a[0], b[0]) for _, (a, b) in out]
        [('a', 'b'), ('d', 'b')]
        >>> join.advance(now=1.0)  # watermark 13: "a" (10 + 2 < 13) and "c" go
        >>> join.watermark, join.entries["k"][:2], join.late
        (13.0, [[('d', 13)], [13]], 0)
    """

    def __init__(
        self,
        out: Push,
        lower: float,
        upper: float,
        time_of: Callable[[Any], float],
        other_time_of: Callable[[Any], float],
        watermark: LowWatermark,
        clock: Callable[[], float] = time.time,
        where: str = "interval_join",
    ) -> None:
        self.out = out
        self.lower, self.upper = lower, upper
        self.time_of, self.other_time_of = time_of, other_time_of
        self.marks = watermark
        self.clock = clock
        self.where = where
        self.watermark = -math.inf  # as of the last advance
        self.late = 0  # elements dropped for being older than the watermark
        self.entries: dict[Any, list[Any]] = {}
        self.changed: dict[Any, None] | None = None
        self.due = Due(max(upper - lower, watermark.lag) or 1.0)

    def _time(self, fn: Callable[[Any], float], value: Any) -> float:
        ts = fn(value)
        if type(ts) not in _NUMBERS or not math.isfinite(ts):
            raise JoinTimeError(
                f"stream interval join {self.where!r}: the time function gave {ts!r:.80} for "
                f"{value!r:.80}; it must return seconds (int or float)"
            )
        return ts

    def left(self, source: int, key: Any, value: Any) -> None:
        ta = self._time(self.time_of, value)
        self.marks.observe(source, ta, self.clock())
        if ta < self.watermark:
            self.late += 1
            return
        lower, upper = self.lower, self.upper
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = [[value], [ta], [], [], ta + upper]
            self.due.add(key, ta + upper)
        else:
            out = self.out
            for other, tb in zip(entry[2], entry[3], strict=True):
                if ta + lower <= tb <= ta + upper:
                    out((key, (value, other)))
            entry[0].append(value)
            entry[1].append(ta)
            if ta + upper < entry[4]:
                entry[4] = ta + upper
                self.due.add(key, ta + upper)
        if self.changed is not None:
            self.changed[key] = None

    def right(self, source: int, key: Any, value: Any) -> None:
        tb = self._time(self.other_time_of, value)
        self.marks.observe(source, tb, self.clock())
        if tb < self.watermark:
            self.late += 1
            return
        lower, upper = self.lower, self.upper
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = [[], [], [value], [tb], tb - lower]
            self.due.add(key, tb - lower)
        else:
            out = self.out
            for other, ta in zip(entry[0], entry[1], strict=True):
                if ta + lower <= tb <= ta + upper:
                    out((key, (other, value)))
            entry[2].append(value)
            entry[3].append(tb)
            if tb - lower < entry[4]:
                entry[4] = tb - lower
                self.due.add(key, tb - lower)
        if self.changed is not None:
            self.changed[key] = None

    def advance(self, now: float | None = None) -> None:
        """The timer: move the watermark; drop what no element from now on can match."""
        mark = self.marks.advance(self.clock() if now is None else now)
        if mark <= self.watermark:
            return
        self.watermark = mark
        entries, changed = self.entries, self.changed
        for key in self.due.take(mark):
            entry = entries.get(key)
            if entry is None:
                continue
            if self._trim(entry, mark):
                self.due.add(key, entry[4])
            else:
                del entries[key]
            if changed is not None:
                changed[key] = None

    def _trim(self, entry: list[Any], mark: float) -> bool:
        """Drop ``a`` once ``time(a) + upper`` is behind ``mark`` (a later ``b`` is not
        late: its time is at least ``mark``), ``b`` once ``other_time(b)`` is behind ``mark
        + lower``; set when to look next.  Whether anything is left."""
        lower, upper = self.lower, self.upper
        a_values, a_times, b_values, b_times = entry[0], entry[1], entry[2], entry[3]
        if any(ta + upper < mark for ta in a_times):
            keep = [i for i, ta in enumerate(a_times) if ta + upper >= mark]
            a_values[:] = [a_values[i] for i in keep]
            a_times[:] = [a_times[i] for i in keep]
        if any(tb < mark + lower for tb in b_times):
            keep = [i for i, tb in enumerate(b_times) if tb >= mark + lower]
            b_values[:] = [b_values[i] for i in keep]
            b_times[:] = [b_times[i] for i in keep]
        nexts = [min(a_times) + upper] if a_times else []
        if b_times:
            nexts.append(min(b_times) - lower)
        entry[4] = min(nexts) if nexts else math.inf
        return bool(nexts)

    def stored(self, entry: list[Any]) -> list[list[Any]]:
        """An entry as it goes into a checkpoint (copies of the four lists)."""
        return [list(entry[0]), list(entry[1]), list(entry[2]), list(entry[3])]

    def load(self, items: Any) -> None:
        """Replace every entry by checkpointed ones (``(key, stored entry)`` pairs); the
        watermark starts again (the inputs replay from the checkpoint: none is late)."""
        marks = self.marks
        self.marks = LowWatermark(marks.inputs, marks.lag, marks.idle_timeout, self.clock())
        self.watermark = -math.inf
        self.entries = {}
        self.due.clear()
        for key, stored in items:
            parts = [list(part) for part in stored]
            if len(parts) != 4:
                raise ValueError(f"a stored join entry of {len(parts)} parts, for key {key!r}")
            entry: list[Any] = [*parts, math.inf]
            self._trim(entry, -math.inf)  # (sets when to look next)
            self.entries[key] = entry
            if entry[4] != math.inf:
                self.due.add(key, entry[4])


# -- the components ---------------------------------------------------------------------------


class _JoinComponent(StreamComponent):
    """What both joins' components share: reading the two sides, the timer, the label."""

    operators: Operators
    join: Any

    def __init__(self, operators: Operators) -> None:
        self.operators = operators

    @property
    def stream_operators(self) -> list[str]:
        """As :class:`StreamComponent`'s, the join shown as the author wrote it."""
        out = StreamComponent.stream_operators.fget(self)  # type: ignore[attr-defined]
        head = self.operators.head_step
        label = _LABELS[head.kind]
        generic = re.sub(r"-\d+$", "", head.name) in (label, head.kind)
        out[0] = label if generic else f"{label}({head.name})"
        return out

    #: When this component sends its progress marks (an event-time window or interval
    #: join reads it: :mod:`.progress`); None: it sends none.
    marks: MarkTimer | None = None

    def tick_secs(self) -> float | None:
        """Seconds between the ticks its timer needs: expiry (a TTL), the watermark (an
        interval join), progress marks; None: no timer."""
        head = self.operators.head_step
        secs = []
        if head.kind == "interval_join" or head.options.get("ttl") is not None:
            secs.append(timer_secs(head.options.get("ttl")))
        if self.marks is not None:
            secs.append(self.marks.every)
        return min(secs) if secs else None

    def _start(self, out: Push, context: TopologyContext) -> None:
        head = self.operators.head_step
        options = head.options
        if head.kind == "keyed_join":
            self.join = RegularJoin(out, options.get("ttl"), wall_clock)
        else:
            inputs = frozenset(
                task for i in self.operators.inputs for task in context.component_tasks(i.component)
            )
            time_of = options["time"]
            self.join = IntervalJoin(
                out,
                options["lower"],
                options["upper"],
                time_of,
                options.get("other_time") or time_of,
                LowWatermark(inputs, float(options.get("lag", 0.0)), None, wall_clock()),
                wall_clock,
                context.component_id,
            )
            context.register_gauge(
                "late_elements", lambda: self.join.late, "elements dropped as late"
            )
        self._interval = head.kind == "interval_join"
        self._timer = self.join.expire if head.kind == "keyed_join" else self.join.advance
        sides = {(i.component, i.stream): i.side for i in self.operators.inputs}
        self._sides = sides
        self._by_source: dict[TupleSource, Any] = {}

    def _side(self, source: TupleSource) -> Any:
        """The join's ``left`` or ``right`` for tuples from ``source`` (None: a tick or a
        progress mark)."""
        if source.tick or source.stream == PROGRESS_STREAM:
            return None
        side = self._sides[(source.component, source.stream)]
        handler = self.join.left if side == 0 else self.join.right
        if self._interval:  # (the source task moves the watermark)
            handler = functools.partial(handler, source.task)
        self._by_source[source] = handler
        return handler

    def _handle(self, tup: Tuple) -> None:
        source = tup.source
        handler = self._by_source.get(source)
        if handler is None:
            handler = self._side(source)
            if handler is None:
                self._system(source, tup.values)
                return
        values = tup.values
        key = values[0]
        if type(key) is list:  # a tuple key, as msgpack gives it back
            key = hashable(key)
        if self.marks is not None:
            self.marks.active = True
        handler(key, values[1])

    def _system(self, source: TupleSource, values: Any) -> None:
        """A tick (the timer; progress marks to send) or an input's progress mark."""
        if source.tick:
            self._timer()
            mark = None if self.marks is None else self.marks.due(wall_clock())
            if mark is not None:
                self.emit(mark, None, PROGRESS_STREAM)  # type: ignore[attr-defined]
        elif self._interval:
            self.join.marks.mark(source.task, bool(values[0]))


def set_timer(declarer: BoltDeclarer, component: Any, marks: bool) -> None:
    """The ticks of a join's component (set by the plan, over a topology-wide setting):
    its timer's, and progress marks once a second when an event-time operator reads it."""
    component.marks = MarkTimer(PROGRESS_SECS) if marks else None
    declarer.add_configuration(TOPOLOGY_TICK_TUPLE_FREQ_SECS, component.tick_secs())


class JoinBolt(_JoinComponent, BasicBolt):
    """A regular or interval join, its stored values in the task's memory (outputs are
    anchored to the arriving input, which is acked once stored)."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._start(
            compile_after(
                self.operators.steps, self.operators.head, self.emit, context.component_id
            ),
            context,
        )

    process = _JoinComponent._handle  # (one call less per element)


class StatefulJoinBolt(_JoinComponent, StatefulBolt):
    """A join whose stored values are checkpointed key-value state: the keys that changed
    are put at each checkpoint, and a restore reads them back."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._start(self._anchored_after(context), context)
        self.join.changed = {}

    def init_state(self, state: KeyValueState) -> None:
        self.state = state
        self.join.load(state.items())
        self.join.changed = {}

    def pre_checkpoint(self, checkpoint: int) -> None:
        state, join, entries = self.state, self.join, self.join.entries
        for key in join.changed:
            entry = entries.get(key)
            if entry is None:
                state.delete(key)
            else:
                state.put(key, join.stored(entry))
        join.changed = {}

    def execute(self, tup: Tuple) -> None:
        self._current = tup
        try:
            self._handle(tup)
        finally:
            self._current = None
        if not tup.is_tick():
            self.ack(tup)


def join_component(checkpointed: bool) -> type:
    """The component class of a join node (:data:`JOIN_KINDS`): its stored values
    checkpointed in a checkpointed topology, else in the task's memory."""
    return StatefulJoinBolt if checkpointed else JoinBolt
