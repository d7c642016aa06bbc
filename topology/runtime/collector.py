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
from random import getrandbits
from time import perf_counter
from typing import Any

from acker import BoltAcking, SpoutAcking
from topology.errors import EmitError
from topology.speedups import COMPILED, ack_one, edge_meta
from topology.state.checkpoint import SpoutEpochs
from topology.tuple import Tuple

from .routing import StreamRoute
from .serialization import INT_MIN, SCALAR_TYPES, UINT_MAX, encodable, roundtrip

#: ``report(component, task, error)``: an exception or a text, formatted by the reporter
#: (which may drop it: errors are rate-limited).
ErrorReport = Callable[[str, int, BaseException | str], None]

#: Most tuples timed for process latency at once (a bolt that never acks cannot leak).
MAX_SAMPLED = 1000

#: A bolt's failed inputs by reason (``failed_by`` in status): its own code called
#: ``fail(tup)`` ...
FAILED_BY_BOLT = "failed"
#: ... or its ``execute`` / ``process`` / ``execute(window)`` raised and the runtime failed
#: the input(s).
FAILED_BY_ERROR = "error"


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
        self.emit_calls = 0

    # -- checks ---------------------------------------------------------------------------

    def _checked(self, stream: str, values: Any) -> tuple[StreamRoute, list[Any]]:
        route = self._routes.get(stream)
        if route is None:
            raise EmitError(
                f"component {self.component!r} (task {self.task}) emitted on undeclared stream "
                f"{stream!r}; declared streams: {sorted(self._routes) or 'none'}"
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
        self.emit_calls += 1
        route.emitted += 1
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
        self.emit_calls += 1
        route.emitted += 1
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
        self._report(self.component, self.task, error)

    def log(self, message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"{stamp} [{self.component}:{self.task}] {message}", file=sys.stderr, flush=True)


class SpoutCollector(_Collector):
    """Collector of a spout task.

    Without ackers (``acking is None``) a tuple emitted with a ``msg_id`` is complete at
    once: its msg_id goes to ``acked_at_emit`` and the task acks it right after
    ``next_tuple``.  With ackers it becomes the root of a tree tracked by ``acking``.
    """

    def __init__(
        self,
        *args: Any,
        acking: SpoutAcking | None = None,
        clock: Callable[[], float] = time.monotonic,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.acked_at_emit: list[Any] = []
        self.acking = acking
        self._clock = clock
        #: In a checkpointed topology: msg ids wait for the checkpoint holding their effects.
        self.epochs: SpoutEpochs | None = None

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        route, values = self._checked(stream, values)
        if msg_id is None:
            return self._route(route, values)
        if self.acking is None:
            return self._untracked(route, values, msg_id, None)
        return self._track(route, self._chosen(route, values), values, msg_id)

    def emit_direct(
        self, task: int, values: Sequence[Any], msg_id: Any = None, stream: str = "default"
    ) -> list[int]:
        route, values = self._checked(stream, values)
        if msg_id is None:
            return self._route_direct(route, task, values)
        if self.acking is None:
            return self._untracked(route, values, msg_id, task)
        return self._track(route, [self._direct_target(route, task)], values, msg_id)

    def _untracked(
        self, route: StreamRoute, values: list[Any], msg_id: Any, task: int | None
    ) -> list[int]:
        """A msg id without ackers: complete at once, or (checkpointed) once the checkpoint
        after it is complete; a replay of one the restored checkpoint holds is not emitted."""
        epochs = self.epochs
        if epochs is not None and epochs.is_replayed(msg_id):
            self.acked_at_emit.append(msg_id)
            return []
        tasks = (
            self._route(route, values) if task is None else self._route_direct(route, task, values)
        )
        if epochs is None:
            self.acked_at_emit.append(msg_id)
        else:
            epochs.emitted(msg_id)
        return tasks

    def _track(
        self, route: StreamRoute, tasks: list[int], values: list[Any], msg_id: Any
    ) -> list[int]:
        assert self.acking is not None
        if not self.acking.track(route.push, tasks, values, msg_id, self._clock()):
            self.acked_at_emit.append(msg_id)  # nobody subscribes: complete already
        return tasks


class BoltCollector(_Collector):
    """Collector of a bolt task; ``current`` is the input a BasicBolt is processing.

    With acking on, anchored emits and ack / fail / reset go through ``acking`` (see
    :mod:`acker.anchoring`); the counters here are for statistics.
    """

    def __init__(self, *args: Any, acking: BoltAcking | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current: Tuple | None = None
        self._acking = acking
        #: The worker's combined acks of this turn (root -> XOR), None without ackers.
        self._tree_acks = None if acking is None else acking.combined_acks
        #: Called on every fail (a checkpointed topology replays from its last checkpoint).
        self.on_fail: Callable[[], None] | None = None
        self.acked = 0
        self.failed = 0
        #: ``failed`` by reason: :data:`FAILED_BY_BOLT` or :data:`FAILED_BY_ERROR`.
        self.failed_by: dict[str, int] = {}
        #: Sampled process latency: tuple -> perf_counter() when its execution began.
        self._sampled: dict[int, float] = {}
        self.process_secs = 0.0
        self.process_count = 0

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
        route, values = self._checked(stream, values)
        acking = self._acking
        anchored = None if acking is None else acking.anchored_to(anchors)
        if anchored is None:
            return self._route(route, values)
        tasks = self._chosen(route, values)
        acking.push_anchored(route.push, tasks, values, anchored)  # type: ignore[union-attr]
        return tasks

    def emit_direct(
        self, task: int, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        route, values = self._checked(stream, values)
        acking = self._acking
        anchored = None if acking is None else acking.anchored_to(anchors)
        if anchored is None:
            return self._route_direct(route, task, values)
        tasks = [self._direct_target(route, task)]
        acking.push_anchored(route.push, tasks, values, anchored)  # type: ignore[union-attr]
        return tasks

    def emit_anchored(
        self, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        """BasicBolt's emit: always anchored to the input being processed (``anchors`` is
        accepted for signature compatibility and ignored)."""
        route, values = self._checked(stream, values)
        current = self.current
        if self._acking is None or current is None or current.anchors is None:
            return self._route(route, values)
        tasks = self._chosen(route, values)
        roots = current.anchors
        if type(roots) is int and len(tasks) == 1:
            # one tree, one task (the common case) without a Python call: a new edge of
            # the tree, anchored to the input (the envelope of ``acker.envelope``)
            push_val, push_meta = route.push[tasks[0]]
            if COMPILED:
                meta = edge_meta(current)  # (can raise: before the value is pushed)
                push_val(values)
                push_meta(meta)
            else:
                edge = getrandbits(64)
                push_val(values)
                push_meta([edge, roots])
                current.ack_val ^= edge
        else:
            self._acking.push_child(route.push, tasks, values, current)
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
        acks = self._tree_acks
        if acks is None:
            return
        if COMPILED:
            if not ack_one(acks, tup) and tup.anchors is not None:
                self._acking.ack(tup)  # type: ignore[union-attr]
            return
        roots = tup.anchors
        if type(roots) is int:  # one tree, without a call (``BoltAcking.ack``)
            acks[roots] = acks.get(roots, 0) ^ tup.id ^ tup.ack_val  # type: ignore[operator]
            tup.anchors = None
        elif roots is not None:
            self._acking.ack(tup)  # type: ignore[union-attr]

    def fail(self, tup: Tuple, error: str | BaseException | None = None) -> None:
        """Fail ``tup``'s trees now; the spout gets ``fail`` with this task and ``error``.

        The bolt's own ``fail`` (counted as :data:`FAILED_BY_BOLT`)."""
        self._fail(tup, error, FAILED_BY_BOLT)

    def fail_on_error(self, tup: Tuple, error: BaseException) -> None:
        """Fail ``tup`` because the bolt's code raised ``error`` (:data:`FAILED_BY_ERROR`)."""
        self._fail(tup, error, FAILED_BY_ERROR)

    def _fail(self, tup: Tuple, error: str | BaseException | None, reason: str) -> None:
        self.failed += 1
        self.failed_by[reason] = self.failed_by.get(reason, 0) + 1
        if self._sampled:
            self._sampled_done(tup)
        if self._acking is not None:
            self._acking.fail(tup, error)
        elif self.on_fail is not None:
            self.on_fail()

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of ``tup``'s trees."""
        if self._acking is not None:
            self._acking.reset_timeout(tup)
