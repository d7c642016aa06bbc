"""Stream aggregations and joins over windows, on the :class:`WindowedBolt` machinery
(watermarks, firing, late elements, checkpointed window contents)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from topology.errors import WindowError
from topology.state.checkpoint import hashable
from topology.windows.bolt import StatefulWindowedBolt, WindowedBolt

from .components import Operators, StreamComponent
from .steps import Push, compile_after, compile_steps

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.tuple import Tuple
    from topology.windows.engine import Window


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
        if self.operators.head_step.kind == "join":
            _join(self._op, by_key(sides[0]), by_key(sides[1]), self._out)
        elif self._pair:
            for key, values in by_key(sides[0]).items():
                self._out((key, self._aggregate(values)))
        else:
            self._out(self._aggregate(sides[0]))

    def _aggregate(self, values: list[Any]) -> Any:
        head = self.operators.head_step
        op, options = self._op, head.options
        if op == "count":
            return len(values)
        if op == "group":
            return values
        if op == "reduce":
            return functools.reduce(head.fn, values)
        aggregate = functools.reduce(options["apply"], values, options["init"]())
        result = options.get("result")
        return aggregate if result is None else result(aggregate)

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


class StatefulWindowOperatorBolt(WindowOperatorBolt, StatefulWindowedBolt):
    """:class:`WindowOperatorBolt` whose window contents are checkpointed (a stream
    topology with ``update_state_by_key`` is checkpointed throughout)."""


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
