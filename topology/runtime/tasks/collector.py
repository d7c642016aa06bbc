"""Output collectors: what ``emit``, ``ack`` and ``fail`` do inside a running task.

The executor binds a collector to every task; ``Spout.emit`` / ``Bolt.emit`` delegate here.
Every emit is checked (declared stream, arity, encodable values) so a mistake fails at the
call site with the component, stream, field and value type named, then routed through the
stream's groupings into per-task lanes (see ``transfer``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from time import perf_counter
from typing import Any, Protocol

from acker import (
    NO_BOLT_ACKING,
    NO_SPOUT_ACKING,
    BoltAcking,
    FailReason,
    NoBoltAcking,
    NoSpoutAcking,
    SpoutAcking,
)
from topology.constants import DEAD_LETTER_STREAM
from topology.errors import EmitError
from topology.state.checkpoint import SpoutEpochs
from topology.tuple import Tuple

from ..net.codec import INT_MIN, SCALAR_TYPES, UINT_MAX, encodable, roundtrip
from .routing import StreamRoute

#: ``report(component, task, error)``: an exception or a text, formatted by the reporter
#: (which may drop it: errors are rate-limited).
ErrorReport = Callable[[str, int, BaseException | str], None]


class InputFailures(Protocol):
    """What a bolt collector hands an input its code raised on (its task's
    :class:`~topology.runtime.tasks.failures.TaskFailures`: the failure policy decides)."""

    def failed(
        self,
        tup: Tuple,
        error: BaseException,
        attempts: int = 1,
        *,
        retry: bool = ...,
        ack: bool = ...,
    ) -> None: ...


#: Most tuples timed for process latency at once (a bolt that never acks cannot leak).
MAX_SAMPLED = 1000

#: A bolt's failed inputs by reason (``failed_by`` in status): its own code called
#: ``fail(tup)`` ...
FAILED_BY_BOLT = "failed"
#: ... or its ``execute`` / ``process`` / ``execute(window)`` raised and the runtime failed
#: the input(s).
FAILED_BY_ERROR = "error"


def _declared(routes: dict[str, StreamRoute]) -> list[str]:
    """The streams a component declared itself (not the dead-letter stream it is given)."""
    return sorted(s for s in routes if s != DEAD_LETTER_STREAM)


class _Collector:
    """Shared emit checking and routing for one task."""

    def __init__(
        self,
        component: str,
        task: int,
        routes: dict[str, StreamRoute],
        report: ErrorReport,
        serialize_local: bool = False,
        debug: bool = False,
    ) -> None:
        self.component = component
        self.task = task
        self._routes = routes
        self.routes = routes
        self._report = report
        self._serialize = serialize_local
        self._debug = debug
        #: Values are checked (and shown) even where they go nowhere.
        self.checks_all = serialize_local or debug
        #: Emits through the Python paths (``emit_calls`` adds the compiled ones).
        self.counted_emits = 0
        #: The FastRoutes of a compiled emit (a BasicBolt's, ``basic_path``, or a spout's,
        #: ``spout_path``), which count theirs.
        self.fast_routes: list[Any] = []
        #: Errors this task reported (``report_error`` and exceptions from user code), all
        #: of them: those over the rate the worker sends at are counted here too.
        self.errors_reported = 0

    @property
    def emit_calls(self) -> int:
        """Emits accepted so far, on every stream (stats)."""
        total = self.counted_emits
        for fast in self.fast_routes:  # (a loop: this runs twice per next_tuple)
            total += fast.emitted
        return total

    # -- checks ---------------------------------------------------------------------------

    def _checked(self, stream: str, values: Any) -> tuple[StreamRoute, list[Any]]:
        """The route of ``stream`` and ``values`` as a list, once the stream is declared and
        the values match its fields (raises :class:`EmitError` naming what is wrong).  The
        values are checked to be msgpack-encodable only where they are sent: on a stream
        nobody subscribes to they go nowhere (unless a test asks for serialization)."""
        route = self._routes.get(stream)
        if route is None:
            raise EmitError(
                f"component {self.component!r} (task {self.task}) emitted on undeclared stream "
                f"{stream!r}; declared streams: {_declared(self._routes) or 'none'}"
            )
        if type(values) is not list:
            if isinstance(values, (str, bytes, dict)) or not isinstance(values, Iterable):
                raise EmitError(
                    f"component {self.component!r} emitted on stream {stream!r} a "
                    f"{type(values).__name__} where a list of values was expected"
                )
            values = list(values)
        if len(values) != route.arity:
            raise EmitError(
                f"component {self.component!r} emitted {len(values)} value(s) on stream "
                f"{stream!r}, which declares {route.arity} field(s) {list(route.fields)}"
            )
        if not route.targets and not self.checks_all:
            return route, values  # nobody subscribes: the values go nowhere, so are not encoded
        for v in values:  # the common types without a call; anything else is encoded once
            t = type(v)
            if t is str:
                if v.isascii() or encodable(v):
                    continue
            elif t is float or t is int and INT_MIN <= v <= UINT_MAX or t in SCALAR_TYPES:
                continue
            elif t is not int and encodable(v):
                continue
            index = next(i for i, x in enumerate(values) if x is v)  # not ==: arrays
            self._unencodable(stream, route, index, v)
        if self._serialize:
            values = roundtrip(values)
        if self._debug:
            print(f"[{self.component}:{self.task}] emit {stream}: {values!r}", file=sys.stderr)
        return route, values

    def _unencodable(self, stream: str, route: StreamRoute, index: int, value: Any) -> None:
        raise EmitError(
            f"component {self.component!r} (task {self.task}) emitted on stream "
            f"{stream!r} a value of type {type(value).__name__} for field "
            f"{route.fields[index]!r} that msgpack cannot encode (use str, int within 64 "
            "bits, float, bool, None, bytes, or lists/dicts of them)"
        )

    # -- routing (counters move only once an emit is accepted) ------------------------------

    def _not_direct(self, route: StreamRoute) -> None:
        if route.direct:
            raise EmitError(
                f"component {self.component!r}: stream {route.stream!r} is a direct stream; "
                "use emit_direct(task, values)"
            )

    def _chosen(self, route: StreamRoute, values: list[Any]) -> list[int]:
        """The tasks every subscriber's grouping picks for ``values`` (fresh list)."""
        if route.direct:
            self._not_direct(route)
        self.counted_emits += 1
        route.counted += 1
        choose = route.choose_one
        if choose is not None:
            return choose(values)[:]
        return [t for target in route.targets for t in target.choose(values)]

    def _direct_target(self, route: StreamRoute, task: int) -> int:
        if not route.direct:
            raise EmitError(
                f"component {self.component!r}: emit_direct on stream {route.stream!r}, which "
                "is not declared direct (declare it with Stream(fields, direct=True))"
            )
        if task not in route.push:
            raise EmitError(
                f"component {self.component!r}: emit_direct to task {task!r}, which does not "
                f"subscribe to stream {route.stream!r} (subscribed tasks: {sorted(route.push)})"
            )
        self.counted_emits += 1
        route.counted += 1
        return task

    def _route(self, route: StreamRoute, values: list[Any]) -> list[int]:
        """Append ``values`` (untracked) to the lane of every chosen task; return the ids."""
        tasks = self._chosen(route, values)
        push = route.push
        for t in tasks:
            push_val, push_meta = push[t]
            push_val(values)
            push_meta(None)
        return tasks

    def _route_direct(self, route: StreamRoute, task: int, values: list[Any]) -> list[int]:
        push_val, push_meta = route.push[self._direct_target(route, task)]
        push_val(values)
        push_meta(None)
        return [task]

    # -- errors and logs ------------------------------------------------------------------

    def report_error(self, error: BaseException | str) -> None:
        """Count ``error`` and hand it to the worker's reporter (which may hold it back)."""
        self.errors_reported += 1
        self._report(self.component, self.task, error)

    def log(self, message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"{stamp} [{self.component}:{self.task}] {message}", file=sys.stderr, flush=True)


class SpoutCollector(_Collector):
    """Collector of a spout task.

    A tuple emitted with a ``msg_id`` goes to ``acking``'s ``track``: with ackers
    (:class:`~acker.SpoutAcking`) it becomes the root of a tree; without
    (:class:`~acker.NoSpoutAcking`, the default) it is complete at once: its msg_id goes to
    ``acked_at_emit`` and the task acks it right after ``next_tuple``.  In a checkpointed
    topology (``epochs``; no ackers) it waits for the checkpoint after it instead.
    """

    def __init__(
        self,
        *args: Any,
        acking: SpoutAcking | NoSpoutAcking = NO_SPOUT_ACKING,
        clock: Callable[[], float] = time.monotonic,
        epochs: SpoutEpochs | None = None,
        on_fail: Callable[[], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.acked_at_emit: list[Any] = []
        #: Msg ids failed at emit (:meth:`fail_at_emit`) with their reasons: the task of a
        #: spout that says it ``fails_at_emit`` fails them right after ``next_tuple``.
        self.failed_at_emit: list[tuple[Any, FailReason]] = []
        #: In a checkpointed topology: asks for a replay from the last checkpoint (the
        #: checkpoint agent's ``tuple_failed``, as a bolt collector's ``on_fail``).
        self.on_fail = on_fail
        self.acking = acking
        self._track_tree = acking.track
        #: Topology time, read once per tracked emit (a tree's start).
        self.clock = clock
        #: In a checkpointed topology: msg ids wait for the checkpoint holding their effects
        #: (the worker's checkpoint agent gives them; None: no checkpoints).
        self.epochs = epochs

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        route, values = self._checked(stream, values)
        if msg_id is None:
            return self._route(route, values)
        if self.epochs is not None:
            return self._checkpointed(route, values, msg_id, None)
        return self._track(route, self._chosen(route, values), values, msg_id)

    def emit_direct(
        self, task: int, values: Sequence[Any], msg_id: Any = None, stream: str = "default"
    ) -> list[int]:
        route, values = self._checked(stream, values)
        if msg_id is None:
            return self._route_direct(route, task, values)
        if self.epochs is not None:
            return self._checkpointed(route, values, msg_id, task)
        return self._track(route, [self._direct_target(route, task)], values, msg_id)

    def emit_tree(self, outputs: list[tuple[list[Any], str]], msg_id: Any) -> list[int]:
        """Emit ``outputs`` (``(values, stream)`` each) as the roots of one tree for
        ``msg_id``: the spout's ``ack`` comes once every one of them is done, its ``fail``
        once if any fails; with no outputs ``msg_id`` is complete at once, as a tuple
        nobody subscribes to (the outputs of the Streams operators chained to a spout, for
        one of its tuples: :mod:`topology.streams.chained_spout`).  In a checkpointed
        topology the caller has asked ``epochs.is_replayed(msg_id)`` already.

        Every output is checked before any is sent (a refused one raises
        :class:`EmitError`, nothing sent)."""
        checked = [self._checked(stream, values) for values, stream in outputs]
        if msg_id is None:
            return [t for route, values in checked for t in self._route(route, values)]
        epochs = self.epochs
        if epochs is not None:
            tasks = [t for route, values in checked for t in self._route(route, values)]
            epochs.emitted(msg_id)
            return tasks
        sends = [(route.push, self._chosen(route, values), values) for route, values in checked]
        if not self.acking.track_tree(sends, msg_id, self.clock()):
            self.acked_at_emit.append(msg_id)  # no ackers, or nobody received them: complete
        return [t for _, tasks, _ in sends for t in tasks]

    def fail_at_emit(self, msg_id: Any, error: BaseException | str) -> None:
        """``msg_id`` failed before any of its tuples was sent (an operator chained to the
        spout raised ``error``): the task calls the spout's ``fail_with_reason`` after
        ``next_tuple``; in a checkpointed topology the topology goes back to its last
        checkpoint instead (as for a bolt's failure), which fails ``msg_id`` with the others
        emitted since."""
        if self.epochs is not None:
            self.epochs.emitted(msg_id)
            if self.on_fail is not None:
                self.on_fail()
            return
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.failed_at_emit.append((msg_id, FailReason("failed", self.component, self.task, text)))

    def _checkpointed(
        self, route: StreamRoute, values: list[Any], msg_id: Any, task: int | None
    ) -> list[int]:
        """A msg id in a checkpointed topology: complete once the checkpoint after it is
        complete; a replay of one the restored checkpoint holds is not emitted."""
        epochs = self.epochs
        assert epochs is not None
        if epochs.is_replayed(msg_id):
            self.acked_at_emit.append(msg_id)
            return []
        tasks = (
            self._route(route, values) if task is None else self._route_direct(route, task, values)
        )
        epochs.emitted(msg_id)
        return tasks

    def _track(
        self, route: StreamRoute, tasks: list[int], values: list[Any], msg_id: Any
    ) -> list[int]:
        if not self._track_tree(route.push, tasks, values, msg_id, self.clock()):
            self.acked_at_emit.append(msg_id)  # no ackers, or nobody subscribes: complete
        return tasks


class BoltCollector(_Collector):
    """Collector of a bolt task; ``current`` is the input a BasicBolt is processing.

    Emits, once routed, and ack / fail / reset go to ``acking``'s calls, bound here once
    (:mod:`acker.anchoring`: :class:`~acker.BoltAcking` with ackers,
    :class:`~acker.NoBoltAcking`, the default, without); the counters here are for
    statistics.
    """

    def __init__(
        self,
        *args: Any,
        acking: BoltAcking | NoBoltAcking = NO_BOLT_ACKING,
        on_fail: Callable[[], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        #: The input a BasicBolt is processing (``current``), when no compiled loop holds it.
        self._current: Tuple | None = None
        #: The compiled loop and emit of a BasicBolt task (``basic_path.compile_basic``), set
        #: by its task; None: pure Python.
        self.basic: Any = None
        self.acking = acking
        self._emit_tracked = acking.emit
        self._emit_child = acking.emit_child
        self._ack_trees = acking.ack
        self._fail_trees = acking.fail
        self._reset_trees = acking.reset_timeout
        #: Called on every fail without ackers (a checkpointed topology replays from its
        #: last checkpoint: the checkpoint agent's ``tuple_failed``); None: nobody.
        self.on_fail = on_fail
        #: The task's failed inputs (:class:`~.failures.TaskFailures`), set by its task.
        self.failures: InputFailures | None = None
        self.acked = 0
        self.failed = 0
        #: ``failed`` by reason: :data:`FAILED_BY_BOLT` or :data:`FAILED_BY_ERROR`.
        self.failed_by: dict[str, int] = {}
        #: Sampled process latency: tuple -> perf_counter() when its execution began.
        self._sampled: dict[int, float] = {}
        self.process_secs = 0.0
        self.process_count = 0

    @property
    def current(self) -> Tuple | None:
        """The input a BasicBolt is processing (None between inputs)."""
        basic = self.basic
        return self._current if basic is None else basic.current

    @current.setter
    def current(self, tup: Tuple | None) -> None:
        if self.basic is None:
            self._current = tup
        else:
            self.basic.current = tup

    def sample(self, tup: Tuple) -> None:
        """Time ``tup`` from now until it is acked or failed (process latency)."""
        if len(self._sampled) >= MAX_SAMPLED:  # bolts that never ack must not leak
            self._sampled.clear()
        self._sampled[id(tup)] = perf_counter()

    def _sampled_done(self, tup: Tuple) -> None:
        began = self._sampled.pop(id(tup), None)
        if began is not None:
            self.process_secs += perf_counter() - began
            self.process_count += 1

    def emit(
        self, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        route = self._routes.get(stream)
        if route is not None and not route.targets and self._unheard(route, values):
            return []  # (tested first: a subscribed stream pays no call for this)
        route, values = self._checked(stream, values)
        tasks = self._chosen(route, values)
        if tasks:  # (none: nothing to anchor)
            self._emit_tracked(route.push, tasks, values, anchors)
        return tasks

    def _unheard(self, route: StreamRoute, values: Any) -> bool:
        """An emit on ``route``, which nobody subscribes to, with the right number of
        values in a list: counted, and True (it goes nowhere: the caller returns at once).
        ``emit_anchored`` does the same inline (the hottest emit)."""
        if (
            route.direct
            or type(values) is not list
            or len(values) != route.arity
            or self.checks_all
        ):
            return False
        self.counted_emits += 1
        route.counted += 1
        return True

    def emit_direct(
        self, task: int, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        route, values = self._checked(stream, values)
        tasks = [self._direct_target(route, task)]
        self._emit_tracked(route.push, tasks, values, anchors)
        return tasks

    def emit_anchored(
        self, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        """BasicBolt's emit: always anchored to the input being processed (``anchors`` is
        accepted for signature compatibility and ignored)."""
        route = self._routes.get(stream)
        if (  # nobody subscribes (README's count): what _checked and _chosen do, inlined
            route is not None
            and not route.targets
            and not route.direct
            and type(values) is list
            and len(values) == route.arity
            and not self.checks_all
        ):
            self.counted_emits += 1
            route.counted += 1
            return []
        route, values = self._checked(stream, values)
        tasks = self._chosen(route, values)
        if tasks:  # (none: nobody subscribes, or the grouping chose nobody: nothing to anchor)
            self._emit_child(route.push, tasks, values, self.current)
        return tasks

    def emit_direct_anchored(
        self, task: int, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        """BasicBolt's emit_direct: anchored to the current input (``anchors`` ignored)."""
        return self.emit_direct(task, values, self.current, stream)

    def ack(self, tup: Tuple) -> None:
        """Ack ``tup``: its trees learn that it and every edge anchored to it are done."""
        self.acked += 1
        if self._sampled:
            self._sampled_done(tup)
        self._ack_trees(tup)

    def fail(self, tup: Tuple, error: str | BaseException | None = None) -> None:
        """Fail ``tup``'s trees now; the spout gets ``fail`` with this task and ``error``.

        The bolt's own ``fail`` (counted as :data:`FAILED_BY_BOLT`)."""
        self._fail(tup, error, FAILED_BY_BOLT)

    def fail_on_error(self, tup: Tuple, error: BaseException | str) -> None:
        """Fail ``tup`` because the bolt's code raised ``error`` (:data:`FAILED_BY_ERROR`)."""
        self._fail(tup, error, FAILED_BY_ERROR)

    def input_failed(
        self, tup: Tuple, error: BaseException, attempts: int = 1, **how: bool
    ) -> None:
        """The bolt's code raised ``error`` on ``tup``: the task's failure policy decides
        (:meth:`~topology.runtime.tasks.failures.TaskFailures.failed`, whose keywords
        ``how`` takes)."""
        if self.failures is None:  # (a collector without its task: tests of the collector)
            self.report_error(error)
            self.fail_on_error(tup, error)
        else:
            self.failures.failed(tup, error, attempts, **how)

    def _fail(self, tup: Tuple, error: str | BaseException | None, reason: str) -> None:
        self.failed += 1
        self.failed_by[reason] = self.failed_by.get(reason, 0) + 1
        if self._sampled:
            self._sampled_done(tup)
        self._fail_trees(tup, error)
        if self.on_fail is not None:  # (only without ackers: a checkpointed topology)
            self.on_fail()

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of ``tup``'s trees."""
        self._reset_trees(tup)
