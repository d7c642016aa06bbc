"""The classes topology authors subclass: :class:`Spout`, :class:`Bolt`, :class:`BasicBolt`.

Lifecycle and threading contract (the same for every component):

* An instance is created by the author, pickled with the topology and copied once per task
  in the worker; ``__init__`` therefore runs in the submitting process only.  Open
  connections and files in ``open`` / ``prepare``, not in ``__init__``.
* Every callback of one task (``open``, ``next_tuple``, ``ack``, ``fail``, ``activate``,
  ``deactivate``, ``close`` for spouts; ``prepare``, ``execute`` or ``execute_batch``,
  ``cleanup`` for bolts) runs on the worker's single executor thread, one at a time: no
  locking is needed, and a callback that blocks stalls every task of that worker.
* ``close`` / ``cleanup`` are called on an orderly shutdown only; a killed worker never
  calls them.

Output streams are declared with the ``outputs`` class attribute: a list of field names for
the ``default`` stream, or a dict ``{stream: fields}`` where fields may be a
:class:`Stream` (e.g. ``Stream(["word"], direct=True)``).  Override
:meth:`Component.declare_output_fields` instead when the streams depend on constructor
arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .constants import DEFAULT_STREAM

if TYPE_CHECKING:
    from acker import FailReason

    from .context import TopologyContext
    from .tuple import Tuple


@dataclass(frozen=True)
class Stream:
    """A declared output stream: its field names, and whether it is a direct stream.

    Use it as a value of a component's ``outputs`` dict to declare a direct stream (one
    whose tuples are sent with ``emit_direct`` to a task the emitter picks).

    Args:
        fields: the stream's field names, in order.
        direct: True for a direct stream.

    Example:
        >>> Stream(["word", "count"])
        Stream(fields=('word', 'count'), direct=False)
        >>> class Router(Spout):
        ...     outputs = {"default": ["n"], "picked": Stream(["n"], direct=True)}
    """

    fields: tuple[str, ...]
    direct: bool = False

    def __init__(self, fields: Iterable[str], direct: bool = False) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "direct", bool(direct))


OutputsSpec = Sequence[str] | Mapping[str, Sequence[str] | Stream] | None


@dataclass
class OutputFieldsDeclarer:
    """Collects stream declarations; passed to :meth:`Component.declare_output_fields`.

    Args:
        streams: the streams declared so far, by stream name (empty to start with).

    Example:
        >>> declarer = OutputFieldsDeclarer()
        >>> declarer.declare(["word"])
        >>> declarer.declare(["error"], stream="errors", direct=True)
        >>> declarer.streams["errors"]
        Stream(fields=('error',), direct=True)
    """

    streams: dict[str, Stream] = field(default_factory=dict)

    def declare(
        self, fields: Iterable[str], stream: str = DEFAULT_STREAM, direct: bool = False
    ) -> None:
        """Declare an output stream (a second declaration of a stream replaces the first).

        Args:
            fields: the stream's field names, in order.
            stream: the stream's name.
            direct: True for a direct stream (tuples sent with ``emit_direct``).
        """
        self.streams[stream] = Stream(fields, direct)


class _NotRunning:
    """Stands in for the runtime collector until the worker binds the real one."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # introspection (hasattr, inspect, doctest): not a call
            raise AttributeError(name)
        raise RuntimeError(
            f"{name}() can only be called while the component runs in a worker "
            "(after open/prepare); it was called on an unbound component"
        )


_NOT_RUNNING = _NotRunning()


class Component:
    """Behaviour shared by spouts and bolts (subclass :class:`Spout` or :class:`Bolt`)."""

    #: Output streams; see the module docstring.
    outputs: ClassVar[OutputsSpec] = None

    _collector: Any = _NOT_RUNNING

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the component's output streams; called once, by ``set_spout`` / ``set_bolt``.

        The default declares what the ``outputs`` class attribute says.  Override it when
        the streams depend on constructor arguments.

        Args:
            declarer: call its :meth:`~OutputFieldsDeclarer.declare` once per stream.

        Raises:
            TypeError: ``outputs`` gives a stream's fields as something other than a list
                of names (``create_topology`` then reports it as a problem).
        """
        outputs = self.outputs
        if outputs is None:
            return
        if isinstance(outputs, Mapping):
            for stream, spec in outputs.items():
                if isinstance(spec, Stream):
                    declarer.declare(spec.fields, stream, spec.direct)
                else:
                    declarer.declare(_field_list(self, stream, spec), stream)
        else:
            declarer.declare(_field_list(self, DEFAULT_STREAM, outputs))

    def get_component_configuration(self) -> Mapping[str, Any] | None:
        """Config keys for this component only (Storm's ``getComponentConfiguration``).

        Called once, by ``set_spout`` / ``set_bolt`` in the submitting process.  The keys
        are checked when the topology is built and become the component's conf: over the
        topology conf, under what the declarer sets (``add_configuration`` wins).

        Returns:
            None (the default: nothing of its own) or a dict of config keys, e.g.
            ``{"topology.tick.tuple.freq.secs": 5}``.
        """
        return None

    def report_error(self, error: BaseException | str) -> None:
        """Record an error for this component (shown by status tools); the task keeps running.

        Args:
            error: the exception or a message.

        Raises:
            RuntimeError: called outside a running worker (before ``open`` / ``prepare``).
        """
        self._collector.report_error(error)

    def log(self, message: str) -> None:
        """Write a line to the worker's log, prefixed with the component and task.

        Args:
            message: the text to log.

        Raises:
            RuntimeError: called outside a running worker (before ``open`` / ``prepare``).
        """
        self._collector.log(message)


def _field_list(component: Component, stream: str, spec: Any) -> list[str]:
    if isinstance(spec, str) or not isinstance(spec, Iterable):
        raise TypeError(
            f"{type(component).__name__}.outputs: fields of stream {stream!r} must be a list "
            f"of field names, got {spec!r}"
        )
    return list(spec)


class Spout(Component):
    """A source of tuples.

    ``next_tuple``, ``ack`` and ``fail`` run on the same thread, so ``next_tuple`` must never
    block: emit what is ready and return (return without emitting when nothing is; the
    runtime then waits ``topology.sleep.spout.wait.strategy.time.ms`` before asking again).

    Example: a spout emitting three numbers, each tracked by its ``msg_id``, run on the
    in-process runner (every worker in this process, no cluster):

        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> class Numbers(Spout):
        ...     outputs = ["n"]
        ...     def open(self, conf, context):
        ...         self.left, self.acked = [1, 2, 3], []
        ...     def next_tuple(self):
        ...         if self.left:
        ...             n = self.left.pop(0)
        ...             self.emit([n], msg_id=n)
        ...     def ack(self, msg_id):
        ...         self.acked.append(msg_id)
        >>> class Sink(BasicBolt):
        ...     def process(self, tup):
        ...         pass
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("numbers", Numbers())
        >>> _ = builder.set_bolt("sink", Sink()).shuffle_grouping("numbers")
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> _ = runner.run_until(lambda: len(runner.instance("numbers").acked) == 3)
        >>> sorted(runner.instance("numbers").acked)
        [1, 2, 3]
    """

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Called once in the worker before any other callback: open connections here.

        Args:
            conf: the component's config (the topology's, with its own keys over it).
            context: where this task sits in the topology (its id, the components' tasks).
        """

    def next_tuple(self) -> None:
        """Emit zero or more tuples; must not block.

        Raises:
            NotImplementedError: the subclass does not implement it (every spout must).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement next_tuple()")

    def ack(self, msg_id: Any) -> None:
        """The tuple tree rooted at the tuple emitted with ``msg_id`` was fully processed.

        Args:
            msg_id: the ``msg_id`` the tuple was emitted with.
        """

    def fail(self, msg_id: Any) -> None:
        """The tree of ``msg_id`` failed or timed out; re-emit it to get at-least-once.

        Args:
            msg_id: the ``msg_id`` the tuple was emitted with.
        """

    def fail_with_reason(self, msg_id: Any, reason: FailReason) -> None:
        """Like :meth:`fail`, with the reason.

        The runtime always calls this method; the default calls ``fail(msg_id)``, so
        override it only when the reason matters.

        Args:
            msg_id: the ``msg_id`` the tuple was emitted with.
            reason: ``reason.kind`` is ``"timeout"`` or ``"failed"`` (then
                ``reason.component``, ``reason.task`` and ``reason.error`` say which task
                failed it and why).
        """
        self.fail(msg_id)

    def activate(self) -> None:
        """The topology was (re)activated; ``next_tuple`` will be called again."""

    def deactivate(self) -> None:
        """The topology was deactivated; ``next_tuple`` is not called until ``activate``."""

    def close(self) -> None:
        """Orderly shutdown; not called when the worker is killed."""

    def emit(
        self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM
    ) -> list[int]:
        """Emit a tuple.

        Args:
            values: the tuple's values, one per declared field of ``stream``.
            msg_id: any hashable id: the tuple is tracked, and ``ack(msg_id)`` or
                ``fail(msg_id)`` follows.  None (the default): not tracked.
            stream: the output stream.

        Returns:
            The ids of the tasks the tuple was sent to.

        Raises:
            EmitError: ``stream`` is not declared or is a direct stream, ``values`` does not
                match its fields, or a value cannot be sent (str, int of 64 bits, float,
                bool, None, bytes, and lists or dicts of them can).
            RuntimeError: called outside a running worker (before ``open``).
        """
        return self._collector.emit(values, msg_id, stream)

    def emit_direct(
        self, task: int, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM
    ) -> list[int]:
        """Emit a tuple to one task of a component subscribed with a direct grouping.

        Args:
            task: the receiving task's id (see ``context.component_tasks``).
            values: the tuple's values, one per declared field of ``stream``.
            msg_id: as for :meth:`emit`.
            stream: the output stream; it must be declared direct.

        Returns:
            The ids of the tasks the tuple was sent to (``[task]``).

        Raises:
            EmitError: ``stream`` is not a declared direct stream, or ``task`` does not
                subscribe to it.
            RuntimeError: called outside a running worker (before ``open``).
        """
        return self._collector.emit_direct(task, values, msg_id, stream)


class Bolt(Component):
    """Processes tuples one at a time (or a received group at a time: :meth:`execute_batch`).

    Call :meth:`ack` (or :meth:`fail`) for every input tuple, once, when it is done; pass
    the inputs a new tuple derives from as ``anchors`` so a downstream failure replays the
    spout tuple.  :class:`BasicBolt` does both for you.

    Example: a bolt emitting each word's running count, anchored to its input, then
    acking it (run on the in-process runner):

        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> class Words(Spout):
        ...     outputs = ["word"]
        ...     def open(self, conf, context):
        ...         self.left = ["a", "b", "a"]
        ...     def next_tuple(self):
        ...         if self.left:
        ...             self.emit([self.left.pop(0)])
        >>> class Count(Bolt):
        ...     outputs = ["word", "count"]
        ...     def prepare(self, conf, context):
        ...         self.counts, self.out = {}, []
        ...     def execute(self, tup):
        ...         word = tup["word"]
        ...         self.counts[word] = self.counts.get(word, 0) + 1
        ...         self.out.append((word, self.counts[word]))
        ...         self.emit([word, self.counts[word]], anchors=tup)
        ...         self.ack(tup)
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("words", Words())
        >>> _ = builder.set_bolt("count", Count()).fields_grouping("words", ["word"])
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> _ = runner.run_until(lambda: len(runner.instance("count").out) == 3)
        >>> runner.instance("count").out
        [('a', 1), ('b', 1), ('a', 2)]
    """

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Called once in the worker before the first ``execute``: open connections here.

        Args:
            conf: the component's config (the topology's, with its own keys over it).
            context: where this task sits in the topology (its id, the components' tasks).
        """

    def execute(self, tup: Tuple) -> None:
        """Process one input tuple (tick tuples included: see ``Tuple.is_tick``).

        Args:
            tup: the input; ack or fail it, once.

        Raises:
            NotImplementedError: the subclass does not implement it (every bolt must,
                unless it overrides :meth:`execute_batch`).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement execute()")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        """Process several input tuples at once (optional; override it to use it).

        When a subclass overrides it, the runtime calls it *instead of* ``execute``, with
        the tuples of one received group (one source task and stream; a long group may
        come in several parts), in arrival order; tick tuples come in a batch of their own
        (``tup.is_tick()``).  Ack or fail each tuple as ``execute`` would
        (``self.ack(t)`` / ``self.fail(t)``) and anchor emits to any of them.  If it
        raises, every tuple of the batch it has not acked or failed yet goes to the
        failure policy as an input ``execute`` raised on: each is tried again alone
        (``execute_batch([t])``) later, then dead-lettered or failed (docs/ERRORS.md).  So
        ack each tuple once its work is done, in a checkpointed topology too (where an ack
        tells no tree), or a retry does that work again.

        Not for :class:`BasicBolt`, windowed or async bolts: the topology is refused.
        This default, which the runtime never calls, runs ``execute`` for each tuple (so
        an override may hand some tuples to ``super().execute_batch``).

        Args:
            tuples: the inputs, in arrival order; ack or fail each, once.
        """
        for tup in tuples:
            self.execute(tup)

    def cleanup(self) -> None:
        """Orderly shutdown; not called when the worker is killed."""

    def emit(
        self,
        values: Sequence[Any],
        anchors: Tuple | Iterable[Tuple] | None = None,
        stream: str = DEFAULT_STREAM,
    ) -> list[int]:
        """Emit a tuple, anchored to the inputs it derives from.

        Args:
            values: the tuple's values, one per declared field of ``stream``.
            anchors: an input tuple or several: if the new tuple fails downstream, their
                spout tuples fail too (and are replayed).  None: not anchored, not tracked.
            stream: the output stream.

        Returns:
            The ids of the tasks the tuple was sent to.

        Raises:
            EmitError: ``stream`` is not declared or is a direct stream, ``values`` does not
                match its fields, or a value cannot be sent (str, int of 64 bits, float,
                bool, None, bytes, and lists or dicts of them can).
            RuntimeError: called outside a running worker (before ``prepare``).
        """
        return self._collector.emit(values, anchors, stream)

    def emit_direct(
        self,
        task: int,
        values: Sequence[Any],
        anchors: Tuple | Iterable[Tuple] | None = None,
        stream: str = DEFAULT_STREAM,
    ) -> list[int]:
        """Emit a tuple to one task of a component subscribed with a direct grouping.

        Args:
            task: the receiving task's id (see ``context.component_tasks``).
            values: the tuple's values, one per declared field of ``stream``.
            anchors: as for :meth:`emit`.
            stream: the output stream; it must be declared direct.

        Returns:
            The ids of the tasks the tuple was sent to (``[task]``).

        Raises:
            EmitError: ``stream`` is not a declared direct stream, or ``task`` does not
                subscribe to it.
            RuntimeError: called outside a running worker (before ``prepare``).
        """
        return self._collector.emit_direct(task, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        """Mark an input as fully processed by this bolt (once per input).

        Args:
            tup: the input tuple.
        """
        self._collector.ack(tup)

    def fail(self, tup: Tuple, error: str | BaseException | None = None) -> None:
        """Fail an input: the spout tuples it derives from fail at once (and are replayed).

        Args:
            tup: the input tuple.
            error: why, passed on to the spout's ``fail_with_reason``.
        """
        self._collector.fail(tup, error)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of the spout tuples an input derives from (for long work).

        Args:
            tup: the input tuple.
        """
        self._collector.reset_timeout(tup)

    def dead_letter(self, tup: Tuple, error: BaseException | str) -> None:
        """Give up on an input no attempt will ever handle (bad data): send it with
        ``error`` to this component's dead-letter stream (anchored to it) and ack it.

        An exception raised by ``execute`` gets there by itself, after the retries of the
        component's failure policy (``topology.errors.*``, docs/ERRORS.md).

        Args:
            tup: the input tuple.
            error: why it was given up on.
        """
        self._collector.failures.dead_letter(tup, error, ack=False)
        self.ack(tup)  # (the task's own ack: an execute_batch that raises later knows it)


class BasicBolt(Bolt):
    """A bolt that anchors every emit to the current input and acks it after ``process``.

    If ``process`` raises, the component's failure policy takes the input: ``process`` is
    called with it again later (3 more times by default), then it goes to the dead-letter
    stream and is acked (or, with ``topology.errors.action: fail``, it is failed so the
    spout replays it); the worker keeps running (docs/ERRORS.md).

    Example: split sentences into words (run on the in-process runner):

        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> class Sentences(Spout):
        ...     outputs = ["sentence"]
        ...     def open(self, conf, context):
        ...         self.left = ["to be or", "not to be"]
        ...     def next_tuple(self):
        ...         if self.left:
        ...             self.emit([self.left.pop(0)], msg_id=len(self.left))
        >>> class Split(BasicBolt):
        ...     outputs = ["word"]
        ...     def process(self, tup):
        ...         for word in tup["sentence"].split():
        ...             self.emit([word])
        >>> class Collect(BasicBolt):
        ...     def prepare(self, conf, context):
        ...         self.words = []
        ...     def process(self, tup):
        ...         self.words.append(tup["word"])
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("sentences", Sentences())
        >>> _ = builder.set_bolt("split", Split()).shuffle_grouping("sentences")
        >>> _ = builder.set_bolt("collect", Collect()).shuffle_grouping("split")
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> _ = runner.run_until(lambda: len(runner.instance("collect").words) == 6)
        >>> runner.instance("collect").words
        ['to', 'be', 'or', 'not', 'to', 'be']
    """

    def process(self, tup: Tuple) -> None:
        """Process one input; emits are anchored to it, and it is acked on return.

        Args:
            tup: the input tuple.

        Raises:
            NotImplementedError: the subclass does not implement it (every basic bolt
                must).  Any exception ``process`` raises goes to the failure policy.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement process()")

    def dead_letter(self, tup: Tuple, error: BaseException | str) -> None:
        """Give up on the input being processed: send it with ``error`` to the dead-letter
        stream (anchored to it); it is acked when ``process`` returns, as always.

        Args:
            tup: the input being processed.
            error: why it was given up on.
        """
        self._collector.failures.dead_letter(tup, error, ack=False)

    def execute(self, tup: Tuple) -> None:  # the runtime calls process() directly
        self.process(tup)

    def emit(
        self,
        values: Sequence[Any],
        anchors: Tuple | Iterable[Tuple] | None = None,
        stream: str = DEFAULT_STREAM,
    ) -> list[int]:
        """Emit a tuple, anchored to the input being processed.

        Args:
            values: the tuple's values, one per declared field of ``stream``.
            anchors: ignored: a BasicBolt always anchors to its current input.
            stream: the output stream.

        Returns:
            The ids of the tasks the tuple was sent to.

        Raises:
            EmitError: as for :meth:`Bolt.emit`.
        """
        return self._collector.emit_anchored(values, None, stream)

    def emit_direct(
        self,
        task: int,
        values: Sequence[Any],
        anchors: Tuple | Iterable[Tuple] | None = None,
        stream: str = DEFAULT_STREAM,
    ) -> list[int]:
        """Emit a tuple to one task on a direct stream, anchored to the current input.

        Args:
            task: the receiving task's id.
            values: the tuple's values, one per declared field of ``stream``.
            anchors: ignored: a BasicBolt always anchors to its current input.
            stream: the output stream; it must be declared direct.

        Returns:
            The ids of the tasks the tuple was sent to (``[task]``).

        Raises:
            EmitError: as for :meth:`Bolt.emit_direct`.
        """
        return self._collector.emit_direct_anchored(task, values, None, stream)
