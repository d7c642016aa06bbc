"""Output collectors: what ``emit``, ``ack`` and ``fail`` do inside a running task.

The executor binds a collector to every task; ``Spout.emit`` / ``Bolt.emit`` delegate here.
Every emit is checked (declared stream, arity, encodable values) so a mistake fails at the
call site with the component, stream, field and value type named, then routed through the
stream's groupings into per-task lanes (see ``transfer``).
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .errors import EmitError
from .routing import StreamRoute
from .serialization import SCALAR_TYPES, encodable, roundtrip
from .tuple import Tuple

ErrorReport = Callable[[str, int, str], None]


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
        for i, v in enumerate(values):
            if type(v) not in SCALAR_TYPES and not encodable(v):
                raise EmitError(
                    f"component {self.component!r} (task {self.task}) emitted on stream "
                    f"{stream!r} a value of type {type(v).__name__} for field "
                    f"{route.fields[i]!r} that msgpack cannot encode (use str, int, float, "
                    "bool, None, bytes, or lists/dicts of them)"
                )
        if self._serialize:
            values = roundtrip(values)
        if self._debug:
            print(f"[{self.component}:{self.task}] emit {stream}: {values!r}", file=sys.stderr)
        return route, values

    # -- routing --------------------------------------------------------------------------

    def _route(self, route: StreamRoute, values: list[Any], meta: Any) -> list[int]:
        """Append ``values`` to the lane of every chosen task; return the task ids."""
        self.emit_calls += 1
        route.emitted += 1
        if route.direct:
            raise EmitError(
                f"component {self.component!r}: stream {route.stream!r} is a direct stream; "
                "use emit_direct(task, values)"
            )
        targets = route.targets
        if len(targets) == 1:
            chosen = targets[0].choose(values)
            push = route.push
            for t in chosen:
                push_val, push_meta = push[t]
                push_val(values)
                push_meta(meta)
            return list(chosen)
        out: list[int] = []
        for target in targets:
            for t in target.choose(values):
                push_val, push_meta = target.push[t]
                push_val(values)
                push_meta(meta)
                out.append(t)
        return out

    def _route_direct(
        self, route: StreamRoute, task: int, values: list[Any], meta: Any
    ) -> list[int]:
        self.emit_calls += 1
        route.emitted += 1
        if not route.direct:
            raise EmitError(
                f"component {self.component!r}: emit_direct on stream {route.stream!r}, which "
                "is not declared direct (declare it with Stream(fields, direct=True))"
            )
        pushers = route.push.get(task)
        if pushers is None:
            valid = sorted(route.push)
            raise EmitError(
                f"component {self.component!r}: emit_direct to task {task!r}, which does not "
                f"subscribe to stream {route.stream!r} (subscribed tasks: {valid})"
            )
        pushers[0](values)
        pushers[1](meta)
        return [task]

    # -- errors and logs ------------------------------------------------------------------

    def report_error(self, error: BaseException | str) -> None:
        if isinstance(error, BaseException):
            text = "".join(traceback.format_exception(error)).rstrip()
        else:
            text = str(error)
        self._report(self.component, self.task, text)

    def log(self, message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"{stamp} [{self.component}:{self.task}] {message}", file=sys.stderr, flush=True)


class SpoutCollector(_Collector):
    """Collector of a spout task.

    ``acked_at_emit`` collects msg_ids to ack right after ``next_tuple`` returns when the
    topology runs without ackers (tuples are then complete as soon as they are emitted).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.acked_at_emit: list[Any] = []

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        route, values = self._checked(stream, values)
        tasks = self._route(route, values, None)
        if msg_id is not None:
            self.acked_at_emit.append(msg_id)
        return tasks

    def emit_direct(
        self, task: int, values: Sequence[Any], msg_id: Any = None, stream: str = "default"
    ) -> list[int]:
        route, values = self._checked(stream, values)
        tasks = self._route_direct(route, task, values, None)
        if msg_id is not None:
            self.acked_at_emit.append(msg_id)
        return tasks


class BoltCollector(_Collector):
    """Collector of a bolt task; ``current`` is the input a BasicBolt is processing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current: Tuple | None = None

    def emit(
        self, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        route, values = self._checked(stream, values)
        return self._route(route, values, None)

    def emit_direct(
        self, task: int, values: Sequence[Any], anchors: Any = None, stream: str = "default"
    ) -> list[int]:
        route, values = self._checked(stream, values)
        return self._route_direct(route, task, values, None)

    def emit_anchored(self, values: Sequence[Any], stream: str = "default") -> list[int]:
        return self.emit(values, self.current, stream)

    def emit_direct_anchored(
        self, task: int, values: Sequence[Any], stream: str = "default"
    ) -> list[int]:
        return self.emit_direct(task, values, self.current, stream)

    def ack(self, tup: Tuple) -> None:
        """Untracked tuples need no ack; tracking arrives with the acker."""

    def fail(self, tup: Tuple) -> None:
        """Untracked tuples cannot fail anything upstream."""

    def reset_timeout(self, tup: Tuple) -> None:
        """Untracked tuples have no timeout."""
