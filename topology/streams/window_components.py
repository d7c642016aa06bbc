"""Stream aggregations and joins over windows, on the :class:`WindowedBolt` machinery
(watermarks, firing, late elements, checkpointed window contents)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from topology.constants import PROGRESS_STREAM
from topology.errors import WindowError
from topology.state.checkpoint import hashable
from topology.windows.bolt import StatefulWindowedBolt, WindowedBolt

from .components import Operators, StreamComponent
from .steps import Push, compile_after, compile_steps
from .window_aggregates import (
    _NONE,
    AggregatingWindows,
    CombiningWindows,
    Fired,
    aggregator,
    forward_sources,
)

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.tuple import Tuple
    from topology.windows.engine import KeyFloors, Window


class WindowOperatorBolt(StreamComponent, WindowedBolt):
    """One aggregation (``count``, ``reduce``, ``aggregate``, ``group``) or join
    (``inner``, ``left``, ``right``, ``full``, ``cogroup``) per window firing; per key
    for a pair stream."""

    def __init__(self, operators: Operators) -> None:
        self.operators = operators
        head = operators.head_step
        head.options["windowing"].apply(self, pair=bool(operators.inputs[0].decode == "pair"))

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        steps, head = self.operators.steps, self.operators.head_step
        late = [i for i in head.after if steps[i].kind == "late"]
        results = dict(steps)
        results[head.id] = replace(head, after=[i for i in head.after if i not in late])
        self._out = compile_after(
            results,
            head.id,
            lambda values, _none, stream: self.emit(values, None, stream),
            context.component_id,
        )
        self._late_push: Push | None = (
            compile_steps(
                steps,
                late[0],
                lambda values, _none, stream: self.emit(values, None, stream),
                context.component_id,
            )
            if late
            else None
        )
        self._inputs_by = self._decoders()
        options = head.options
        self._op, self._pair = options["op"], head.pair
        self._input_pair = self.operators.inputs[0].decode == "pair"
        self._timestamp_of = options["windowing"].timestamp
        self._bounds = bool(options.get("bounds"))
        self._agg = aggregator(self._op, options, head.fn)

    def topology_problems(self, spec: Any, components: Mapping[str, Any]) -> list[str]:
        """The window settings only: elements and their times are read by the operator
        (no input field is looked up by name)."""
        return self.window_spec.problems(spec.id)

    # -- per window ----------------------------------------------------------------------

    def execute(self, window: Window) -> None:  # type: ignore[override]
        sides: tuple[list[Any], list[Any]] = ([], [])
        for tup in window.tuples:
            decode, side = self._inputs_by[(tup.source_component, tup.stream)]
            sides[side].append(decode(tup.values))
        out = self._out
        if self._bounds:
            start, end = window.count_range or (window.start, window.end)
            out = _bounded(out, start, end, keyed=self._pair)
        if self.operators.head_step.kind == "join":
            _join(self._op, by_key(sides[0]), by_key(sides[1]), out)
        elif self._pair:
            for key, values in by_key(sides[0]).items():
                out((key, self._aggregate(values)))
        else:
            out(self._aggregate(sides[0]))

    def _aggregate(self, values: list[Any]) -> Any:
        if self._agg is None:  # group
            return values
        return self._agg.fold(values)

    # -- event time and late elements ----------------------------------------------------

    def timestamp_of(self, tup: Tuple) -> float:
        decode, _ = self._inputs_by[(tup.source_component, tup.stream)]
        element = decode(tup.values)
        value = self._timestamp_of(element[1] if self._input_pair else element)
        if type(value) not in (int, float) or not math.isfinite(value):
            raise WindowError(
                f"stream window {self._component!r}: the timestamp function gave {value!r} "
                f"for {element!r}; it must return seconds (int or float)"
            )
        return float(value)

    def field_of(self, tup: Tuple, name: str) -> Any:
        """A session window's key (field ``key``), hashable (msgpack gives tuples back as
        lists)."""
        return hashable(super().field_of(tup, name))

    def late_tuple(self, tup: Tuple) -> None:
        if self._late_push is not None:
            decode, _ = self._inputs_by[(tup.source_component, tup.stream)]
            self._anchors = [tup]
            try:
                self._late_push(decode(tup.values))
            finally:
                self._anchors = None
        self.ack(tup)

    def _fire_failed(self, fired: Fired, exc: Exception) -> None:
        """A result that raised (the user's ``result`` or an operator after it): its
        tracked inputs go to the failure policy, as a windowed bolt's failed firing."""
        collector = self._collector
        if not fired.anchors:
            collector.report_error(exc)
        for tup in fired.anchors:
            collector.input_failed(tup, exc, 1, retry=False, ack=False)


class StatefulWindowOperatorBolt(WindowOperatorBolt, StatefulWindowedBolt):
    """:class:`WindowOperatorBolt` whose window contents are checkpointed (a stream
    topology with ``update_state_by_key`` is checkpointed throughout)."""


def _bounded(out: Push, start: float, end: float, keyed: bool) -> Push:
    """``out`` of results that carry their window: ``(start, end, result)``, or
    ``(k, (start, end, result))`` for a keyed result ``(k, result)``."""
    if keyed:
        return lambda kv: out((kv[0], (start, end, kv[1])))
    return lambda result: out((start, end, result))


def by_key(pairs: list[Any]) -> dict[Any, list[Any]]:
    """``{key: [values]}`` in arrival order."""
    out: dict[Any, list[Any]] = {}
    for key, value in pairs:
        out.setdefault(key, []).append(value)
    return out


def _join(how: str, left: dict[Any, list[Any]], right: dict[Any, list[Any]], out: Push) -> None:
    if how == "cogroup":
        for key in {**left, **right}:
            out((key, (left.get(key, []), right.get(key, []))))
        return
    for key, values in left.items():
        others = right.get(key)
        if others is None:
            if how in ("left", "full"):
                for value in values:
                    out((key, (value, None)))
            continue
        for value in values:
            for other in others:
                out((key, (value, other)))
    if how in ("right", "full"):
        for key, others in right.items():
            if key not in left:
                for other in others:
                    out((key, (None, other)))


class AggregateWindowBolt(WindowOperatorBolt):
    """An aggregation over time windows (tumbling or sliding) kept incrementally: one
    accumulator per key and window (:class:`~.window_aggregates.AggregatingWindows`), the
    elements themselves never kept.  A tracked input tuple is held until its last window
    fires, and the result is anchored to the window's tracked inputs;
    untracked inputs are acked on arrival.

    With option ``phase="partial"`` it is the first phase of a window over a plain stream:
    each task (one per task of the stream it reads, by :class:`ForwardGrouping`) sends the
    window's partial accumulator, ``[start, end, accumulator]``, and its watermark as it
    moves, ``[watermark]``, to :class:`CombineWindowBolt`."""

    def __init__(self, operators: Operators) -> None:
        super().__init__(operators)
        if self.operators.inputs[0].decode == "pair":
            self.with_key("key")  # keyed windows: stored by key group, moved on a rescale

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self._decode = self._single_decoder()
        self._value_input = self.operators.inputs[0].decode == "value"

    def start_windows(self, context: TopologyContext, clock: Callable[[], float]) -> None:
        """(The runtime calls it before ``prepare``.)"""
        super().start_windows(context, clock)
        head = self.operators.head_step
        agg = aggregator(head.options["op"], head.options, head.fn)
        assert agg is not None
        self._aggregator = agg
        self._partial = head.options.get("phase") == "partial"
        if self._partial:
            (source,) = {i.component for i in self.operators.inputs}
            self._inputs = forward_sources(
                context.task_id, context.component_tasks(source), context.component_tasks()
            )
        self._sent = float("-inf")  # the watermark forwarded last (first phase)
        self._windows = AggregatingWindows(
            self.window_spec, self._inputs, clock(), self._aggregator, deltas=self._partial
        )

    def process_tuple(self, tup: Tuple) -> None:
        windows = self._windows
        source = tup.source
        if source.tick:
            now = self._clock()
            self._emit_fired(windows.tick(now))
            if self._partial:
                self._forward_mark()
                if windows.quiet():  # its source has nothing for it: hold nothing back
                    self._emit_fired(windows.hand_over())
                    self._out([])  # a progress mark for the second phase
            self._send_progress(now)
            return
        if source.stream == PROGRESS_STREAM:
            if windows.watermark is not None:
                windows.watermark.mark(tup.source_task, bool(tup.values[0]))
            self.ack(tup)
            self._emit_fired(windows.tick(self._clock()))
            if self._partial:
                self._forward_mark()
            return
        if self.marks is not None:
            self.marks.active = True
        element = tup.values[0] if self._value_input else self._decode(tup.values)
        if self._input_pair:
            key, value = (element[0],), element[1]
        else:
            key, value = None, element
        ts = None
        if self._timestamp_of is not None:
            ts = self._timestamp_of(value)
            if type(ts) not in (int, float) or not math.isfinite(ts):
                self._bad_timestamp(ts, element)
        if not windows.add(key, value, tup, tup.source_task, ts, self._clock()):
            self.late_tuple(tup)
        elif tup.anchors is None:
            self.ack(tup)  # nothing to complete later: not kept

    def _bad_timestamp(self, value: Any, element: Any) -> None:
        raise WindowError(
            f"stream window {self._component!r}: the timestamp function gave {value!r} "
            f"for {element!r}; it must return seconds (int or float)"
        )

    def _emit_fired(self, fired: list[Fired]) -> None:
        agg, out = self._aggregator, self._out
        for f in fired:
            if f.acc is not _NONE:
                if self._partial:
                    element: Any = [f.start, f.end, agg.encode(f.acc)]
                else:
                    result = agg.result(f.acc)
                    if f.key is not None:
                        result = (f.key[0], (f.start, f.end, result) if self._bounds else result)
                    elif self._bounds:
                        result = (f.start, f.end, result)
                    element = result
                self._anchors = f.anchors or None
                try:
                    out(element)
                except Exception as exc:
                    self._fire_failed(f, exc)
                finally:
                    self._anchors = None
            for tup in f.acks:
                self.ack(tup)

    def _forward_mark(self) -> None:
        mark = self._windows.current if self._inputs else math.inf  # no source: never holds
        if mark > self._sent:
            self._sent = mark
            self._out([mark])

    def take_window_changes(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
        return self._windows.take_window_changes(encode)

    def restore_windows(
        self,
        clocks: dict[str, Any] | None,
        slots: Iterable[tuple[Any, Any]],
        decode: Callable[[Any], Any],
        floors: KeyFloors | None = None,
    ) -> None:
        self._windows = AggregatingWindows(
            self.window_spec, self._inputs, self._clock(), self._aggregator, self._partial
        )
        self._windows.restore_windows(clocks, slots, self._clock(), floors)
        self._sent = float("-inf")


class StatefulAggregateWindowBolt(AggregateWindowBolt, StatefulWindowedBolt):
    """:class:`AggregateWindowBolt` whose accumulators are checkpointed."""


class CombineWindowBolt(WindowOperatorBolt):
    """The second phase of a window over a plain stream, in one task: merges the first
    phase's parts per window (:class:`~.window_aggregates.CombiningWindows`) and emits the
    result once every first-phase task's forwarded watermark passed the window's end (or
    the task went quiet: its progress marks came with nothing between)."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        head = self.operators.head_step
        self._out = compile_after(
            self.operators.steps,
            head.id,
            lambda values, _none, stream: self.emit(values, None, stream),
            context.component_id,
        )
        self._bounds = bool(head.options.get("bounds"))

    def start_windows(self, context: TopologyContext, clock: Callable[[], float]) -> None:
        """(The runtime calls it before ``prepare``.)"""
        super().start_windows(context, clock)
        head = self.operators.head_step
        agg = aggregator(head.options["op"], head.options, head.fn)
        assert agg is not None and agg.merge is not None
        self._aggregator = agg
        self._windows = CombiningWindows(self.window_spec, self._inputs, clock(), self._aggregator)

    def process_tuple(self, tup: Tuple) -> None:
        windows, now = self._windows, self._clock()
        if tup.is_tick():
            fired = windows.tick(now)
            self._send_progress(now)
        elif tup.stream == PROGRESS_STREAM:  # (none come: its first phase marks in band)
            self.ack(tup)
            return
        else:
            if self.marks is not None:
                self.marks.active = True
            message = tup.values[0]
            if len(message) == 3:
                start, end, acc = message
                fired = windows.partial(tup.source_task, start, end, acc, tup, now)
                if tup.anchors is None:
                    self.ack(tup)
            else:
                if message:
                    fired = windows.mark(tup.source_task, float(message[0]), now)
                else:
                    fired = windows.quiet(tup.source_task, now)
                self.ack(tup)
        agg, out = self._aggregator, self._out
        for f in fired:
            if f.acc is not _NONE:
                result = agg.result(f.acc)
                self._anchors = f.anchors or None
                try:
                    out((f.start, f.end, result) if self._bounds else result)
                except Exception as exc:
                    self._fire_failed(f, exc)
                finally:
                    self._anchors = None
            for done in f.acks:
                self.ack(done)

    def take_window_changes(
        self, encode: Callable[[Any], Any]
    ) -> tuple[dict[str, Any], list[tuple[Any, Any]]]:
        return self._windows.take_window_changes(encode)

    def restore_windows(
        self,
        clocks: dict[str, Any] | None,
        slots: Iterable[tuple[Any, Any]],
        decode: Callable[[Any], Any],
        floors: KeyFloors | None = None,
    ) -> None:
        self._windows = CombiningWindows(
            self.window_spec, self._inputs, self._clock(), self._aggregator
        )
        self._windows.restore_windows(clocks, slots, self._clock())


class StatefulCombineWindowBolt(CombineWindowBolt, StatefulWindowedBolt):
    """:class:`CombineWindowBolt` whose partial accumulators are checkpointed."""
