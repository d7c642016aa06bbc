"""Windowed bolts: ``execute(window)`` once per window firing.

Example (event-time tumbling windows of 10 s, 5 s of allowed disorder, late tuples kept)::

    class Totals(WindowedBolt):
        outputs = ["start", "end", "count"]
        def execute(self, window):
            self.emit([window.start, window.end, len(window.tuples)])

    builder.set_bolt(
        "totals",
        Totals().with_tumbling_window(seconds=10).with_timestamp_field("ts").with_lag(5)
        .with_late_tuple_stream("late"),
    ).shuffle_grouping("events")

Each ``with_*`` method returns the bolt, so settings chain; they are checked when the
topology is built (a clear error names the bolt and the setting).  Emits inside ``execute``
are anchored to the window's tuples unless ``anchors`` is given, and each tuple is acked
when it leaves its last window, so with ackers a window's inputs complete with its
outputs.  A late tuple goes to the late stream as ``[late_tuple]`` (a dict of its fields)
and is acked.  See docs/WINDOWS.md for the time model and what each setting costs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from topology.component_checks import overrides, register_class_check
from topology.components import Bolt, OutputFieldsDeclarer
from topology.constants import PROGRESS_STREAM
from topology.errors import WindowError
from topology.stateful import StatefulBolt

from .engine import KeyFloors, Window, WindowEngine
from .spec import ACCUMULATING, DISCARDING, WindowSpec
from .watermark import MarkTimer

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.spec import ComponentSpec
    from topology.tuple import Tuple


class Count(int):
    """A window length or interval in tuples: ``with_sliding_window(Count(100), Count(10))``.

    Example:
        >>> bolt = WindowedBolt().with_sliding_window(Count(100), Count(10))
        >>> bolt.window_spec.count_length, bolt.window_spec.count_interval
        (100, 10)
    """


class WindowedBolt(Bolt):
    """A bolt that receives windows of tuples (see the module docstring).

    Implement ``execute(window)``: it gets a :class:`~topology.windows.engine.Window` once
    per firing.  Configure the windows with the ``with_*`` methods.

    Example: sums of tumbling windows of two tuples, run on the in-process runner:

        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> from topology.testing import FeederSpout
        >>> class Sums(WindowedBolt):
        ...     outputs = ["sum"]
        ...     def prepare(self, conf, context):
        ...         self.sums = []
        ...     def execute(self, window):
        ...         self.sums.append(sum(t["n"] for t in window.tuples))
        ...         self.emit([self.sums[-1]])
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("numbers", FeederSpout(["n"], [[1], [2], [3], [4]]))
        >>> bolt = Sums().with_tumbling_window(count=2)
        >>> _ = builder.set_bolt("sums", bolt).shuffle_grouping("numbers")
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> _ = runner.run_until(lambda: len(runner.instance("sums").sums) == 2)
        >>> runner.instance("sums").sums
        [3, 7]

        Event-time windows of 10 s, keyed, with 5 s of allowed disorder:

        >>> bolt = Sums().with_tumbling_window(seconds=10).with_timestamp_field("ts")
        >>> bolt = bolt.with_key("user").with_lag(5).with_late_tuple_stream("late")
        >>> bolt.with_lag(-1)
        Traceback (most recent call last):
        ...
        ValueError: lag must be a number >= 0, got -1
    """

    window_spec: WindowSpec = WindowSpec()

    # -- configuration (chaining) -----------------------------------------------------------

    def _set(self, **changes: Any) -> Self:
        self.window_spec = self.window_spec.with_changes(**changes)
        return self

    def with_tumbling_window(self, seconds: float | None = None, count: int | None = None) -> Self:
        """Back-to-back windows of ``seconds`` (time) or ``count`` tuples; give one.

        Args:
            seconds: the window's length in seconds.
            count: the window's length in tuples.

        Returns:
            This bolt, so settings chain.

        Raises:
            TypeError: both or neither of ``seconds`` and ``count`` were given.
            ValueError: the length is not > 0 (``count``: not a whole number >= 1).
        """
        if (seconds is None) == (count is None):
            raise TypeError("with_tumbling_window takes seconds=... or count=..., not both")
        if count is not None:
            return self._set(kind="tumbling", count_length=_positive_int("count", count))
        return self._set(kind="tumbling", length=_positive("seconds", seconds))

    def with_sliding_window(self, length: float, interval: float) -> Self:
        """Overlapping windows of ``length``, one starting every ``interval``.

        Args:
            length: seconds, or a :class:`Count` of tuples.
            interval: seconds, or a :class:`Count` of tuples (as ``length``).

        Returns:
            This bolt, so settings chain.

        Raises:
            TypeError: one is a :class:`Count` and the other is not.
            ValueError: a value is not > 0.
        """
        if isinstance(length, Count) != isinstance(interval, Count):
            raise TypeError(
                "with_sliding_window: give length and interval both in seconds or both as Count(n)"
            )
        if isinstance(length, Count):
            return self._set(
                kind="sliding",
                count_length=_positive_int("length", length),
                count_interval=_positive_int("interval", interval),
            )
        return self._set(
            kind="sliding",
            length=_positive("length", length),
            interval=_positive("interval", interval),
        )

    def with_session_window(self, gap_seconds: float) -> Self:
        """Sessions: tuples of a key closer than ``gap_seconds`` apart share a window.

        Args:
            gap_seconds: the silence that ends a session.

        Returns:
            This bolt, so settings chain.

        Raises:
            ValueError: ``gap_seconds`` is not a number > 0.
        """
        return self._set(kind="session", gap=_positive("gap_seconds", gap_seconds))

    def with_timestamp_field(self, field: str) -> Self:
        """Event time: each tuple's time is one of its fields (else: processing time).

        Args:
            field: the field holding the time in seconds (int or float); every input stream
                must have it (checked when the topology is built).

        Returns:
            This bolt, so settings chain.
        """
        return self._set(timestamp_field=field)

    def with_key(self, *fields: str) -> Self:
        """Windows per key: one set of windows per value of ``fields``.

        Args:
            *fields: the key fields; ``window.key`` holds their values.

        Returns:
            This bolt, so settings chain.
        """
        return self._set(key_fields=tuple(fields))

    def with_lag(self, seconds: float) -> Self:
        """How far out of order tuples may come: the watermark trails by ``seconds``.

        Args:
            seconds: the allowed disorder.

        Returns:
            This bolt, so settings chain.

        Raises:
            ValueError: ``seconds`` is not a number >= 0.
        """
        return self._set(lag=_not_negative("lag", seconds))

    def with_watermark_interval(self, seconds: float) -> Self:
        """How often the watermark moves and due windows fire (default 1 s).

        Args:
            seconds: the interval.

        Returns:
            This bolt, so settings chain.

        Raises:
            ValueError: ``seconds`` is not a number > 0.
        """
        return self._set(watermark_interval=_positive("watermark interval", seconds))

    def with_idle_timeout(self, seconds: float) -> Self:
        """An input silent this long stops holding the watermark back.

        Args:
            seconds: the idle time.

        Returns:
            This bolt, so settings chain.

        Raises:
            ValueError: ``seconds`` is not a number > 0.
        """
        return self._set(idle_timeout=_positive("idle timeout", seconds))

    def with_late_tuple_stream(self, stream: str) -> Self:
        """Send tuples too late for every window to a stream, as ``[late_tuple]`` (a dict).

        Args:
            stream: the late stream's name (declared for you).

        Returns:
            This bolt, so settings chain.
        """
        return self._set(late_stream=stream)

    def with_allowed_lateness(self, seconds: float) -> Self:
        """Keep windows ``seconds`` past the watermark; late tuples then fire late panes.

        Args:
            seconds: how long a window is kept.

        Returns:
            This bolt, so settings chain.

        Raises:
            ValueError: ``seconds`` is not a number >= 0.
        """
        return self._set(allowed_lateness=_not_negative("allowed lateness", seconds))

    def with_early_firings(
        self, every_seconds: float | None = None, every_count: int | None = None
    ) -> Self:
        """Fire early panes before the watermark.

        Args:
            every_seconds: fire every this many seconds of processing time.
            every_count: fire every this many new tuples.

        Returns:
            This bolt, so settings chain.

        Raises:
            TypeError: neither was given.
            ValueError: a value is not > 0 (``every_count``: not a whole number).
        """
        if every_seconds is None and every_count is None:
            raise TypeError("with_early_firings takes every_seconds=... and/or every_count=...")
        return self._set(
            early_every_secs=None
            if every_seconds is None
            else _positive("every_seconds", every_seconds),
            early_every_count=None
            if every_count is None
            else _positive_int("every_count", every_count),
        )

    def accumulating(self) -> Self:
        """Each firing holds every tuple of the window (the default).

        Returns:
            This bolt, so settings chain.
        """
        return self._set(accumulation=ACCUMULATING)

    def discarding(self) -> Self:
        """Each firing holds only the tuples since the window's previous firing.

        Returns:
            This bolt, so settings chain.
        """
        return self._set(accumulation=DISCARDING)

    def topology_problems(
        self, spec: ComponentSpec, components: Mapping[str, ComponentSpec]
    ) -> list[str]:
        """Checked when the topology is built: the window settings, and that every input
        stream has the timestamp and key fields.

        Args:
            spec: this bolt's declaration.
            components: every component of the topology, by id.

        Returns:
            The problems found, one line each (none: empty).
        """
        window = self.window_spec
        out = window.problems(spec.id)
        wanted = [f for f in (window.timestamp_field, *window.key_fields) if f is not None]
        for inp in spec.inputs:
            source = components.get(inp.component)
            stream = source.streams.get(inp.stream) if source is not None else None
            if stream is None:
                continue  # reported by the input checks
            for name in wanted:
                if name not in stream.fields:
                    out.append(
                        f"windowed bolt {spec.id!r}: input {inp.component!r} stream "
                        f"{inp.stream!r} has no field {name!r} (fields: {list(stream.fields)})"
                    )
        return out

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the ``outputs`` streams, and the late stream when one is set.

        Args:
            declarer: where the streams are declared.
        """
        super().declare_output_fields(declarer)
        if self.window_spec.late_stream is not None:
            declarer.declare(["late_tuple"], self.window_spec.late_stream)

    # -- the author's part ----------------------------------------------------------------

    def execute(self, window: Window) -> None:  # type: ignore[override]
        """Process one firing of one window; emits are anchored to its tuples.

        Args:
            window: the window's tuples, bounds, pane and key.

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement execute(window)")

    # -- the runtime's part ---------------------------------------------------------------

    def start_windows(self, context: TopologyContext, clock: Callable[[], float]) -> None:
        """Called by the runtime after ``prepare``: build the window engine.

        Args:
            context: the task's context.
            clock: processing time (wall-clock seconds).
        """
        topology = context._topology
        self._inputs = frozenset(
            task
            for inp in topology.components[context.component_id].inputs
            for task in context.component_tasks(inp.component)
        )
        self._clock = clock
        self._engine = WindowEngine(self.window_spec, self._inputs, clock())
        self._anchors: Any = None
        self._component = context.component_id
        emit = self.emit

        def anchored_emit(
            values: Sequence[Any], anchors: Any = None, stream: str = "default"
        ) -> list[int]:
            return emit(values, self._anchors if anchors is None else anchors, stream)

        self.emit = anchored_emit  # type: ignore[method-assign]

    def timer_secs(self) -> float:
        """How often the runtime sends the bolt a tick (to move the watermark).

        Returns:
            The interval in seconds.
        """
        return self.window_spec.timer_secs()

    def process_tuple(self, tup: Tuple) -> None:
        """The runtime's ``execute``: feed the engine, fire what is due, ack what left.

        Args:
            tup: the input tuple (or a tick).
        """
        engine = self._engine
        now = self._clock()
        if tup.is_tick():
            fired = engine.tick(now)
            self._send_progress(now)
        elif tup.stream == PROGRESS_STREAM:
            if engine.watermark is not None:
                engine.watermark.mark(tup.source_task, bool(tup.values[0]))
            fired = engine.tick(now)
            self.ack(tup)
        else:
            if self.marks is not None:
                self.marks.active = True
            spec = self.window_spec
            key = tuple(self.field_of(tup, f) for f in spec.key_fields) if spec.key_fields else None
            ts = self.timestamp_of(tup) if spec.timestamp_field is not None else None
            result = engine.add(tup, key, tup.source_task, ts, now)
            if result is None:
                self.late_tuple(tup)
                fired = []
            else:
                fired = result
        for window in fired:
            self._fire(window)
        for gone in engine.drain_evicted():
            self.ack(gone)

    #: When it sends its progress marks on ``PROGRESS_STREAM`` (None: it sends none).
    marks: MarkTimer | None = None

    def send_progress_marks(self, every: float) -> None:
        """Send a progress mark every ``every`` seconds once input came (the Streams API
        asks it of a window an event-time window reads: :mod:`topology.streams.progress`).

        Args:
            every: seconds between two marks.
        """
        self.marks = MarkTimer(every)

    def _send_progress(self, now: float) -> None:
        mark = None if self.marks is None else self.marks.due(now)
        if mark is not None:
            self.emit(mark, None, PROGRESS_STREAM)

    def _fire(self, window: Window) -> None:
        """``execute(window)``; one that raises is made again at once, as many times as the
        failure policy's ``retries`` (a window cannot wait: its tuples leave it right
        after; none after a data error), then each of the window's new tuples goes to the
        policy's action (the dead-letter stream; it is acked when it leaves the windows) —
        docs/ERRORS.md."""
        collector = self._collector
        failures = getattr(collector, "failures", None)
        retries = 0 if failures is None else failures.policy.retries
        self._anchors = window.tuples
        try:
            for attempt in range(1, retries + 2):
                try:
                    self.execute(window)
                    return
                except Exception as exc:
                    if failures and attempt <= retries and not failures.final(exc):
                        continue
                    for failed in window.new:
                        collector.input_failed(failed, exc, attempt, retry=False, ack=False)
                    return
        finally:
            self._anchors = None

    def field_of(self, tup: Tuple, name: str) -> Any:
        """A key or timestamp field of a tuple (a hook: a subclass may read it otherwise).

        Args:
            tup: the input tuple.
            name: the field.

        Returns:
            The field's value.

        Raises:
            WindowError: the tuple has no such field (a data error: dead-lettered).
        """
        try:
            return tup[name]
        except (KeyError, IndexError):
            raise WindowError(
                f"windowed bolt {self._component!r}: tuple from {tup.source_component!r} on "
                f"stream {tup.stream!r} has no field {name!r} (fields: {list(tup.fields)})"
            ) from None

    def timestamp_of(self, tup: Tuple) -> float:
        """A tuple's event time (a hook: a subclass may compute it otherwise).

        Args:
            tup: the input tuple.

        Returns:
            Its timestamp field, in seconds.

        Raises:
            WindowError: the field is missing or not a finite number.
        """
        name = self.window_spec.timestamp_field
        assert name is not None
        value = self.field_of(tup, name)
        if type(value) not in (int, float) or not math.isfinite(value):
            raise WindowError(
                f"windowed bolt {self._component!r}: timestamp field {name!r} of a tuple from "
                f"{tup.source_component!r} is {value!r}; it must be seconds (int or float)"
            )
        return float(value)

    def late_tuple(self, tup: Tuple) -> None:
        """A tuple too late for every window: to the late stream if set, and acked (a hook:
        a subclass may send it elsewhere; it must ack it).

        Args:
            tup: the late tuple.
        """
        stream = self.window_spec.late_stream
        if stream is not None:
            self.emit([dict(zip(tup.fields, tup.values))], [tup], stream)
        self.ack(tup)

    def take_window_changes(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
        """The window changes since the last call (the runtime's, for a checkpoint).

        Args:
            encode: encodes a window slot.

        Returns:
            (clocks, [(slot key, encoded slot or None)]): see
            :meth:`~.engine.WindowEngine.take_window_changes`.
        """
        return self._engine.take_window_changes(encode)

    def restore_windows(
        self,
        clocks: dict[str, Any] | None,
        slots: Iterable[tuple[Any, Any]],
        decode: Callable[[Any], Any],
        floors: KeyFloors | None = None,
    ) -> None:
        """Restore the windows of a checkpoint (the runtime's) — see
        :meth:`~.engine.WindowEngine.restore_windows`.

        Args:
            clocks: the stored clocks (None: fresh).
            slots: the stored slots (none: empty windows).
            decode: decodes a window slot.
            floors: the stored per-key floors, if any.
        """
        self._engine = WindowEngine(self.window_spec, self._inputs, self._clock())
        self._engine.restore_windows(clocks, slots, decode, self._clock(), floors)


class StatefulWindowedBolt(WindowedBolt, StatefulBolt):
    """A windowed bolt whose window contents (and key-value ``self.state``) are part of
    every checkpoint: after a failure its windows hold exactly what they held at the last
    checkpoint, and the replay from there refills them.

    Example:
        >>> class Totals(StatefulWindowedBolt):
        ...     outputs = ["user", "total"]
        ...     def execute(self, window):
        ...         total = self.state.get(window.key, 0) + len(window.tuples)
        ...         self.state.put(window.key, total)
        ...         self.emit([window.key, total])
        >>> bolt = Totals().with_tumbling_window(seconds=60).with_key("user")
        >>> bolt.window_spec.kind, bolt.window_spec.key_fields
        ('tumbling', ('user',))
    """


def method_problems(where: str, cls: type) -> list[str]:
    """A :class:`WindowedBolt` subclass's problems, checked when the topology is built: its
    windows go to ``execute(window)`` (``process`` and ``execute_batch`` are never called)."""
    out = []
    if not overrides(cls, "execute", WindowedBolt):
        fix = (
            "rename process to execute(window)"
            if overrides(cls, "process", WindowedBolt)
            else "implement execute(window)"
        )
        out.append(f"{where}: a WindowedBolt receives windows in execute(window): {fix}")
    if overrides(cls, "execute_batch", Bolt):
        out.append(
            f"{where}: a WindowedBolt receives windows in execute(window), so "
            "execute_batch() is never called: remove it (a window already holds the tuples)"
        )
    return out


register_class_check(WindowedBolt, method_problems)


def _positive(name: str, value: Any) -> float:
    if type(value) not in (int, float, Count) or not value > 0:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


def _not_negative(name: str, value: Any) -> float:
    if type(value) not in (int, float) or value < 0:
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    return float(value)


def _positive_int(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a whole number of tuples >= 1, got {value!r}")
    return int(value)
