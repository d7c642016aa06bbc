"""The components a stream topology is made of, one class per kind of head operator.

Every one carries :class:`Operators`: its steps (:mod:`topology.streams.steps`), its head
step, how to read each input, and its output streams.  Emits are anchored to the input
(or, in windows, to the window's tuples), so a spout with msg ids gets at-least-once
through a stream topology as through a hand-written one.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topology.components import BasicBolt, OutputFieldsDeclarer
from topology.state.checkpoint import hashable
from topology.stateful import StatefulBolt

from .steps import Push, Step, compile_after, compile_steps, decoder

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.tuple import Tuple


@dataclass
class Input:
    """One subscription of a component: how its tuples decode, and which side of a join
    (0 or 1) they are."""

    component: str
    stream: str
    decode: str  # "value", "pair" or "record"
    fields: list[str] | None = None
    side: int = 0


@dataclass
class Operators:
    """What a stream component runs: ``steps`` by id, the ``head`` step's id, its
    ``inputs`` and its output streams (``{stream: fields}``)."""

    steps: dict[int, Step]
    head: int
    inputs: list[Input]
    outputs: dict[str, list[str]]

    @property
    def head_step(self) -> Step:
        return self.steps[self.head]


class StreamComponent:
    """The part every stream component shares: declared outputs, decoded inputs."""

    operators: Operators

    @property
    def stream_operators(self) -> list[str]:
        """``["flat_map(split)", "filter", ...]``: the operators this component runs, in
        order (more than one: they are fused)."""
        out = []
        for step in self.operators.steps.values():
            if step.kind == "late":
                continue
            label = operator_label(step)
            plain = re.sub(r"-\d+$", "", step.name)  # the name before it was made unique
            generic = plain in (step.kind, label, label.rsplit(".", 1)[-1])
            out.append(label if generic else f"{label}({step.name})")
        return out

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, fields in self.operators.outputs.items():
            declarer.declare(fields, stream)

    def _anchored_after(self, context: TopologyContext) -> Push:
        """What follows the head, emitting anchored to ``self._current`` (the input being
        handled: set it around each call of the result)."""
        self._current: Tuple | None = None
        return compile_after(
            self.operators.steps,
            self.operators.head,
            lambda values, _none, stream: self.emit(values, self._current, stream),  # type: ignore[attr-defined]
            context.component_id,
        )

    def _decoders(self) -> dict[tuple[str, str], tuple[Any, int]]:
        return {
            (i.component, i.stream): (decoder(i.decode, i.fields), i.side)
            for i in self.operators.inputs
        }

    def _single_decoder(self) -> Any:
        (only,) = {(i.decode, tuple(i.fields or ())) for i in self.operators.inputs}
        return decoder(only[0], list(only[1]))


class FusedBolt(StreamComponent, BasicBolt):
    """Stateless operators (one, or a fused run of them) on each input element."""

    def __init__(self, operators: Operators) -> None:
        self.operators = operators

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        emit = self.emit  # bound by the runtime: anchored to the input
        self._push: Push = compile_steps(
            self.operators.steps,
            self.operators.head,
            emit,
            context.component_id,
        )
        decoders = {d for d in ((i.decode, tuple(i.fields or ())) for i in self.operators.inputs)}
        self._decode = decoder(*next(iter(decoders))) if len(decoders) == 1 else None  # type: ignore[arg-type]
        self._by_input = self._decoders()

    def process(self, tup: Tuple) -> None:
        decode = self._decode
        if decode is None:
            decode = self._by_input[(tup.source_component, tup.stream)][0]
        self._push(decode(tup.values))


class FusedValueBolt(FusedBolt):
    """:class:`FusedBolt` reading one ``value`` field (the common case: one call less)."""

    def process(self, tup: Tuple) -> None:
        self._push(tup.values[0])


class RunningAggregateBolt(StreamComponent, BasicBolt):
    """A running aggregate per key, in the task's memory: ``(key, result)`` per pair."""

    def __init__(self, operators: Operators) -> None:
        self.operators = operators

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        emit = self.emit
        self._out = compile_after(
            self.operators.steps,
            self.operators.head,
            emit,
            context.component_id,
        )
        self.aggregates: dict[Any, Any] = {}
        self._update = updater(self.operators.head_step)
        self._result = self.operators.head_step.options.get("result") or _same

    def process(self, tup: Tuple) -> None:
        values = tup.values
        key = values[0]
        if type(key) is list:  # a tuple key, as msgpack gives it back
            key = hashable(key)
        aggregates = self.aggregates
        aggregate = self._update(aggregates.get(key, _NONE), values[1])
        self._out((key, self._result(aggregate)))
        aggregates[key] = aggregate  # (after the operators that follow: a retry counts once)

    def collect_results(self) -> dict[Any, Any]:
        """Every key's aggregate (``sparkstorm local``'s verify)."""
        return {k: self._result(v) for k, v in self.aggregates.items()}


class KeyedStateBolt(StreamComponent, StatefulBolt):
    """A per-key aggregate or ``update_state_by_key`` state in checkpointed key-value
    state: exactly once through failures.  An aggregate whose running results no component
    reads (the end of its stream) and whose values combine (a count, a reduction, an
    aggregate given ``merge``) updates by ``state.merge``, without a read
    (:func:`merging`)."""

    def __init__(self, operators: Operators) -> None:
        self.operators = operators
        found = merging(operators.head_step)
        if found is not None:
            self.state_merge, self._merge_delta = found

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._out = self._anchored_after(context)
        head = self.operators.head_step
        self._update = updater(head) if head.kind == "aggregate" else _state_update(head)
        self._result = head.options.get("result") or _same
        unread = head.stream is None or not context.subscribers(head.stream)
        self._delta_of = getattr(self, "_merge_delta", None) if unread else None

    def execute(self, tup: Tuple) -> None:
        key, value = tup.values[0], tup.values[1]
        state = self.state
        delta_of = self._delta_of
        if delta_of is not None:
            state.merge(key, delta_of(value))
            self.ack(tup)
            return
        new = self._update(state.get(key, _NONE), value)
        self._current = tup
        try:
            self._out((key, None if new is None else self._result(new)))
        finally:
            self._current = None
        if new is None:  # (stored after the operators that follow: a retry counts once)
            state.delete(key)
        else:
            state.put(key, new)
        self.ack(tup)

    def collect_results(self) -> dict[Any, Any]:
        return {k: self._result(v) for k, v in self.state.items()}


_NONE: Any = object()

#: What the user wrote, for a head kind whose operator is an option.
_JOINS = {
    "inner": "join",
    "left": "left_outer_join",
    "right": "right_outer_join",
    "full": "full_outer_join",
    "cogroup": "co_group_by_key",
}


def operator_label(step: Step) -> str:
    """The operator as the author wrote it: ``count_by_key``, ``window(tumbling 60s).join``."""
    op = step.options.get("op")
    if step.kind == "aggregate":
        return f"{op}_by_key"
    if step.kind == "state":
        return "update_state_by_key"
    if step.kind == "async":
        return "map_async"
    if step.kind in ("window", "window_combine", "join"):
        if step.kind == "join":
            name = _JOINS[str(op)]
        else:
            name = f"{op}_by_key" if step.pair else str(op)
            name = name.replace("distinct_by_key", "count_distinct_by_key")
            if step.options.get("phase") == "partial":
                name += " (partial)"
        bounds = ".with_bounds()" if step.options.get("bounds") else ""
        return f"window({step.options['windowing'].describe()}){bounds}.{name}"
    if step.kind == "group":
        return "group_by_key"
    return step.kind


def _same(aggregate: Any) -> Any:
    return aggregate


def updater(step: Step) -> Any:
    """``update(previous or _NONE, value) -> aggregate`` for a running aggregation step."""
    op = step.options["op"]
    if op == "count":
        return lambda previous, value: 1 if previous is _NONE else previous + 1
    if op == "reduce":
        fn = step.fn
        return lambda previous, value: value if previous is _NONE else fn(previous, value)
    init, apply = step.options["init"], step.options["apply"]
    return lambda previous, value: apply(init() if previous is _NONE else previous, value)


def merging(step: Step) -> tuple[Any, Any] | None:
    """``(combine, delta_of)`` when the running aggregation ``step`` can update its state
    by ``merge(key, delta_of(value))`` if no component subscribes to its output stream
    (checked at ``prepare``): no operator follows it in its component, and its op
    combines — a count (``+`` of 1s), a reduction (its function, associative as Spark's
    ``reduceByKey`` asks), an aggregate given ``merge`` (that, on ``apply(init(),
    value)``).  None otherwise."""
    if step.kind != "aggregate" or step.after:
        return None
    op = step.options["op"]
    if op == "count":
        return operator.add, _one
    if op == "reduce":
        return step.fn, _same
    merge = step.options.get("merge")
    if merge is None:
        return None
    init, apply = step.options["init"], step.options["apply"]
    return merge, lambda value: apply(init(), value)


def _one(value: Any) -> int:
    return 1


def _state_update(step: Step) -> Any:
    fn = step.fn
    return lambda previous, value: fn(None if previous is _NONE else previous, value)
