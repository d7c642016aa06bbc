"""Stateless operators chained into their spout's task (Flink's source chaining).

A spout's stream read by ``map``, ``filter``, ``flat_map``... of the same parallelism runs
those operators inside the spout's task: :class:`ChainedSpout` wraps the author's spout and
gives it, as its ``emit``, a function that runs the fused operators on the element
(:func:`~topology.streams.steps.compile_steps`) and emits what comes out through the
runtime's own emit (the compiled one where the task has it) — no serialisation hop, no
queue and no acker edge between the spout and its first operators.

Msg ids and replay are the spout's, as without chaining:

* one output: emitted with the spout's msg id (the common ``map`` case: one emit);
* several outputs (a ``flat_map``, a branch): all of them in one tree rooted at the msg id
  (:meth:`~topology.runtime.tasks.collector.SpoutCollector.emit_tree`): ``ack`` once when
  every one is done, ``fail`` once if any fails;
* none (a ``filter`` said no, an empty ``flat_map``, a ``for_each``): the msg id is
  complete at once, as a tuple nobody subscribes to (acked after ``next_tuple``; in a
  checkpointed topology with the checkpoint after it);
* an operator that raises: the component's failure policy (docs/ERRORS.md), as in a
  bolt — more attempts (made at once: the spout's task must not wait), then the dead
  letter (the spout's tuple and the error, on the spout's dead-letter stream, in the msg
  id's tree) or, with ``topology.errors.action: fail``, the msg id failed (``fail`` after
  ``next_tuple``, and the spout replays it; in a checkpointed topology the topology rolls
  back, as for a bolt's failure).  The error is reported as the component's (the spout's).
  An element's outputs are emitted once the whole chain ran on it: an attempt that
  raised emitted nothing.

Everything else the runtime asks of a spout — ``open``, ``ack``, ``fail``, positions and
``seek`` of a :class:`~topology.stateful.ReplayableSpout`, ``collect_results`` — goes to the
author's spout, and attributes the wrapper lacks are read from it, so
``runner.instance("spout")`` still shows the spout's own fields.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acker.protocol import clip_text
from topology.components import OutputFieldsDeclarer, Spout
from topology.constants import DEAD_LETTER_STREAM, DEFAULT_STREAM, PROGRESS_STREAM
from topology.errors import DataError, EmitError
from topology.failure_policy import MAX_ERROR_CHARS, FailurePolicy, dead_letter
from topology.stateful import ReplayableSpout
from topology.windows.watermark import MarkTimer

from .components import StreamComponent
from .steps import compile_steps, decoder

if TYPE_CHECKING:
    from acker import FailReason
    from topology.context import TopologyContext

    from .components import Operators


class ChainedSpout(StreamComponent, Spout):
    """A spout with the stateless operators after it running in its task.

    Args:
        spout: the author's spout.
        operators: the chained operators; their head step is the spout's node (its
            ``stream`` option: the spout's stream they read, decoded per ``inputs[0]``).
    """

    #: Its emits can fail msg ids before sending anything (``fail_at_emit``): the task
    #: looks for them after each ``next_tuple``.
    fails_at_emit = True

    #: When its task sends progress marks (an event-time window reads its operators:
    #: :mod:`topology.streams.progress`); None: it sends none.
    marks: MarkTimer | None = None

    def send_progress_marks(self, every: float) -> None:
        """Send a progress mark every ``every`` seconds of topology time.

        Args:
            every: seconds between two marks.
        """
        self.marks = MarkTimer(every)

    def __init__(self, spout: Spout, operators: Operators) -> None:
        self.spout = spout
        self.operators = operators

    def __getattr__(self, name: str) -> Any:
        # the author's spout's attributes (unpickling asks for some before ``spout`` is set)
        if name == "spout" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.spout, name)

    @property
    def stream_operators(self) -> list[str]:
        """``["spout(Items)", "map", ...]``: the spout, then the operators chained to it."""
        return [f"spout({type(self.spout).__name__})", *super().stream_operators[1:]]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.spout.declare_output_fields(declarer)
        for stream, fields in self.operators.outputs.items():
            if stream != self._source:
                declarer.declare(fields, stream)

    def get_component_configuration(self) -> Mapping[str, Any] | None:
        return self.spout.get_component_configuration()

    @property
    def _source(self) -> str:
        return str(self.operators.head_step.options.get("stream", DEFAULT_STREAM))

    # -- the runtime's calls ----------------------------------------------------------------

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        spout, collector = self.spout, self._collector
        spout._collector = collector
        spout.emit = self._chained_emit(conf, context)  # type: ignore[method-assign]
        spout.emit_direct = self.emit_direct  # type: ignore[method-assign]
        spout.open(conf, context)
        # the calls on every tuple go straight to the spout (no frame of this wrapper)
        self.next_tuple = spout.next_tuple  # type: ignore[method-assign]
        if self.marks is not None:
            self.next_tuple = self._marking(spout.next_tuple, self.marks)  # type: ignore[method-assign]
        self.ack = spout.ack  # type: ignore[method-assign]
        self.fail_with_reason = spout.fail_with_reason  # type: ignore[method-assign]

    def next_tuple(self) -> None:
        self.spout.next_tuple()

    def ack(self, msg_id: Any) -> None:
        self.spout.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.spout.fail(msg_id)

    def fail_with_reason(self, msg_id: Any, reason: FailReason) -> None:
        self.spout.fail_with_reason(msg_id, reason)

    def activate(self) -> None:
        self.spout.activate()

    def deactivate(self) -> None:
        self.spout.deactivate()

    def close(self) -> None:
        self.spout.close()

    def _marking(self, next_tuple: Any, marks: MarkTimer) -> Any:
        """``next_tuple``, then a progress mark to every window task reading the chained
        operators once per ``marks.every`` of topology time, saying whether the spout
        emitted since the last: behind what the task sent, it tells a window that the task
        had nothing more for it meanwhile, running or stopped.  (The runtime calls
        ``next_tuple`` while the spout may emit; when it has nothing, at the spout wait
        strategy's pace.)"""
        emit, collector = self.emit, self._collector
        clock = collector.clock
        counted = [collector.counted_emits]

        def marking() -> None:
            next_tuple()
            now = clock()
            if now - marks.last >= marks.every:
                marks.active = collector.counted_emits != counted[0]
                counted[0] = collector.counted_emits
                mark = marks.due(now)
                if mark is not None:
                    emit(mark, None, PROGRESS_STREAM)

        return marking

    # -- the chain --------------------------------------------------------------------------

    def _chained_emit(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        """The spout's ``emit``: the runtime's (compiled or Python, bound to this wrapper)
        for its other streams; the chain for the one its operators read."""
        outer = self.emit  # the runtime's emit, set on this instance
        collector = self._collector
        epochs = getattr(collector, "epochs", None)
        acked_at_emit = collector.acked_at_emit
        emit_tree = collector.emit_tree
        source = self._source
        steps, head = self.operators.steps, self.operators.head
        where = context.component_id
        (only,) = self.operators.inputs
        value_of = decoder(only.decode, only.fields)
        # the spout's own tuples still go where other components read them
        raw = bool(context._topology.subscribers(context.component_id, source))
        # untracked: each output goes out as it comes (at most once, as without chaining)
        run_untracked = compile_steps(steps, head, outer, where)
        outputs: list[tuple[list[Any], str]] = []
        keep = outputs.append
        run = compile_steps(steps, head, lambda out, _none, on: keep((out, on)), where)
        recover = _Recovery(self, conf, context, source, run, outputs, value_of, raw).recover

        def emit(values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> Any:
            if stream != source:
                return outer(values, msg_id, stream)
            collector.counted_emits += 1  # the spout emitted (what its operators do aside)
            if type(values) is not list:
                values = list(values)
            if msg_id is None:
                try:
                    if raw:
                        outer(values, None, stream)
                    run_untracked(value_of(values))
                except Exception as exc:
                    recover(values, None, exc)
                return []
            if epochs is not None and epochs.is_replayed(msg_id):
                acked_at_emit.append(msg_id)  # its effects are in the restored state
                return []
            try:
                if raw:
                    keep((values, stream))
                run(value_of(values))
                n = len(outputs)
                if n == 1:
                    out, on = outputs[0]
                    return outer(out, msg_id, on)
                if n == 0 and epochs is None:  # complete: emit_tree([]), inlined
                    acked_at_emit.append(msg_id)
                    return []
                return emit_tree(outputs, msg_id)
            except Exception as exc:
                outputs.clear()
                return recover(values, msg_id, exc)
            finally:
                outputs.clear()

        return emit


class _Recovery:
    """What a chained spout does with an element its operators raised on: the component's
    failure policy (docs/ERRORS.md), with the attempts made at once (the spout's task must
    not wait): then the dead letter (the spout's tuple, from the spout's stream), the
    element's msg id complete with it, or with ``topology.errors.action: fail`` the msg id
    failed (the spout replays it)."""

    def __init__(
        self,
        chained: ChainedSpout,
        conf: Mapping[str, Any],
        context: TopologyContext,
        source: str,
        run: Any,
        outputs: list[tuple[list[Any], str]],
        value_of: Any,
        raw: bool,
    ) -> None:
        self.collector = chained._collector
        self.policy = FailurePolicy.from_conf(conf)
        self.component, self.task = context.component_id, context.task_id
        self.source, self.run, self.outputs = source, run, outputs
        self.value_of, self.raw = value_of, raw

    def recover(self, values: list[Any], msg_id: Any, error: BaseException) -> list[int]:
        """Attempts after ``error`` until one passes (its outputs emitted in ``msg_id``'s
        tree) or the policy gives up; the tasks emitted to."""
        attempts, outputs = 1, self.outputs
        while attempts <= self.policy.retries and not isinstance(error, DataError | EmitError):
            attempts += 1
            outputs.clear()
            try:
                if self.raw:
                    outputs.append((values, self.source))
                self.run(self.value_of(values))
                return self.collector.emit_tree(outputs, msg_id)
            except Exception as exc:
                error = exc
            finally:
                outputs.clear()
        return self.give_up(values, msg_id, error, attempts)

    def give_up(
        self, values: list[Any], msg_id: Any, error: BaseException, attempts: int
    ) -> list[int]:
        collector = self.collector
        if not self.policy.dead_letters:
            collector.report_error(error)
            if msg_id is not None:
                collector.fail_at_emit(msg_id, error)
            return []
        route = collector.routes.get(DEAD_LETTER_STREAM)
        subscribed = route is not None and bool(route.targets)
        letter = dead_letter(
            component=self.component,
            task=self.task,
            source=self.component,
            stream=self.source,
            values=values,
            error=error,
            attempts=attempts,
            time=time.time(),
            traceback=subscribed,
        )
        if not subscribed:
            error.add_note(
                f"{self.component}: gave up on an element after {attempts} attempt(s) of "
                "the operators chained to the spout and dropped it: nothing subscribes to "
                f"{self.component!r}'s dead-letter stream ({DEAD_LETTER_STREAM!r}); "
                "subscribe a bolt or a sink to it (.dead_letters() takes every component's), "
                "or set topology.errors.action: fail to replay such elements instead"
            )
            collector.report_error(error)
        if route is None:  # (a component added past validation has none)
            return collector.emit_tree([], msg_id)
        try:
            return collector.emit_tree([(letter, DEAD_LETTER_STREAM)], msg_id)
        except EmitError:  # values no wire can carry: as text
            letter[4] = [clip_text(repr(v), MAX_ERROR_CHARS) for v in values]
            return collector.emit_tree([(letter, DEAD_LETTER_STREAM)], msg_id)


class ChainedReplayableSpout(ChainedSpout, ReplayableSpout):
    """:class:`ChainedSpout` of a :class:`~topology.stateful.ReplayableSpout`: positions,
    ``seek`` and checkpoint completions go to it."""

    spout: ReplayableSpout

    def position(self) -> Any:
        return self.spout.position()

    def seek(self, position: Any) -> None:
        self.spout.seek(position)

    def rescale_position(self, positions: list[Any], task_index: int, tasks: int) -> Any:
        return self.spout.rescale_position(positions, task_index, tasks)

    def checkpoint_complete(self, checkpoint: int) -> None:
        self.spout.checkpoint_complete(checkpoint)


def chained(spout: Spout, operators: Operators) -> ChainedSpout:
    """``spout`` with ``operators`` chained to it (replayable when it is)."""
    if isinstance(spout, ReplayableSpout):
        return ChainedReplayableSpout(spout, operators)
    return ChainedSpout(spout, operators)
