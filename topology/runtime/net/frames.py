"""Checking frames that arrive from the network before they enter a worker (pure).

Every byte from a socket is hostile until checked, and a frame is checked once, here, at
the door, before anything in it is looked up, hashed or stored:

* first its token (:meth:`FrameCheck.admit`): the frame must come with the token this worker
  process published with its endpoint (:mod:`topology.runtime.net.data_token`), which only
  whoever can read the owner's registration knows — compared in constant time, once per
  frame, before anything else in the frame is looked at;
* its size, and what decoding it may allocate
  (:func:`topology.runtime.net.codec.decode_frame` bounds the objects a frame becomes, not
  only its bytes);
* its shape: ``[DATA, groups]`` (``[DATA, groups, epoch]`` when checkpointed) or
  ``[BACKPRESSURE, worker, on]`` (:mod:`topology.runtime.net.codec`; what a signal does is
  :mod:`topology.runtime.net.backpressure`'s business);
* every group's types first (destination and source task ints, stream a str), then its
  :class:`Route`: the destination is a task of this worker that takes that stream from that
  source task — a bolt only its subscriptions, an acker task ack traffic from the workers'
  system sources, a spout task outcomes from the ackers, the checkpoint coordinator and the
  workers' system tasks their control streams (and a stateful bolt ``COMMIT`` from the
  coordinator);
* every tuple of a data group (:func:`topology.runtime.net.codec.check_tuples`): a list of
  as many values as its stream declares fields, and a tracking envelope of 64-bit ids
  (packed envelopes: 16 bytes per tuple, expanded here by
  :func:`topology.runtime.net.codec.expand_metas`); every tuple of a system group against
  its stream's schema (:func:`acker.protocol.check_values`,
  :func:`topology.state.checkpoint.check_control`).

Whatever fails is refused as a whole with a :class:`BadFrame` whose ``reason`` is one of
:data:`REASONS`; the executor counts it per reason (:class:`DropCounter`, shown by
``status``) and goes on.  What a tuple's values hold is the receiving component's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from hmac import compare_digest
from typing import Any

from acker import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET, ACKER_COMPONENT
from acker.protocol import check_values as check_ack_values
from topology.assignment import Assignment
from topology.spec import Topology
from topology.state import checkpoint as ck
from topology.stateful import hears_completions

from . import codec
from .data_token import TOKEN_BYTES

#: A :class:`Route`'s field count for a system stream (checked by its schema instead).
SYSTEM = -1
#: Most groups one frame may hold (a legitimate one has one per lane toward this worker).
MAX_GROUPS = 100_000

#: Why a frame (or, after the door, a group) was dropped: the keys of the per-reason counts.
REASONS = {
    "bad-token": "without this worker's data token (or with another one)",
    "too-large": "over topology.transfer.max.frame.bytes",
    "undecodable": "not one msgpack object, or over the decoder's length limits",
    "too-costly": "would decode to more objects than its budget",
    "not-a-frame": "not a data or backpressure frame of the right shape",
    "bad-group": "a group whose fields have the wrong types or count",
    "unknown-task": "a group for a task this worker does not host",
    "unknown-source": "a source task or stream the destination does not take",
    "bad-tuple": "values or a tracking envelope of the wrong shape or range",
    "bad-system": "ack or checkpoint traffic of the wrong shape",
    "bad-backpressure": "backpressure from no peer of the assignment, or malformed",
    "refused-inside": "passed the door but refused where it was delivered",
}


class BadFrame(ValueError):
    """A frame that must not enter this worker: ``reason`` (a key of :data:`REASONS`)
    says what kind of fault, the message says what exactly."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class DropCounter:
    """Counts refused frames and groups, in all and per reason; says so through
    ``report`` at most once per ``every`` seconds (a flood of garbage must not become a
    flood of error reports)."""

    def __init__(self, report: Any, every: float = 10.0) -> None:
        self._report = report
        self._every = every
        self._last_report = -every
        self._since_report = 0
        self.dropped = 0
        #: Reason (a key of :data:`REASONS`) -> how many were dropped for it.
        self.by_reason: dict[str, int] = {}
        self.last_reason: str | None = None

    def drop(self, reason: str, detail: str, now: float) -> None:
        self.dropped += 1
        self.by_reason[reason] = self.by_reason.get(reason, 0) + 1
        self._since_report += 1
        self.last_reason = f"{reason}: {detail}"
        if now - self._last_report >= self._every:
            self._report(
                f"dropped {self._since_report} malformed frame(s) from the network "
                f"(last: {self.last_reason}); the worker goes on"
            )
            self._last_report = now
            self._since_report = 0


@dataclass(frozen=True)
class Route:
    """What one task of this worker takes on one stream.

    Attributes:
        sources: source task id -> the number of fields its stream declares (each tuple's
            values are checked against it), or :data:`SYSTEM` for a system stream, whose
            values ``check`` returns a fault for.
        check: a system stream's schema: ``check(vals)`` is None or the fault.
        barriers: checkpoint barriers may arrive on it (a checkpointed bolt's inputs).
    """

    sources: Mapping[int, int]
    check: Callable[[list[Any]], str | None] | None = None
    barriers: bool = False


@dataclass(frozen=True)
class FrameCheck:
    """What this worker accepts from its peers.

    Attributes:
        worker: this worker's index; ``workers``: how many the assignment has.  routes:
        destination task id (of this worker) -> stream -> :class:`Route`.  max_frame_bytes:
        the largest frame accepted.  checkpointed: data frames carry an epoch and may hold
        barrier groups.  token: this worker process's data token
        (:mod:`~topology.runtime.net.data_token`), which every frame
            must come with (keyword only, required; never shown).
    """

    worker: int
    workers: int
    routes: Mapping[int, Mapping[str, Route]]
    max_frame_bytes: int
    checkpointed: bool = False
    token: bytes = field(kw_only=True, repr=False)

    def __post_init__(self) -> None:
        if type(self.token) is not bytes or len(self.token) != TOKEN_BYTES:
            raise ValueError(f"a data token is {TOKEN_BYTES} bytes (see data_token.new_token)")

    def admit(self, message: bytes) -> list[Any]:
        """The door: a message from the network — this worker's data token, then a frame —
        as ``[kind, ...]``, the frame checked (see :meth:`decode`); :class:`BadFrame`
        otherwise: ``bad-token`` unless the message begins with this worker's token, found
        before anything else in it is looked at.

        >>> check = FrameCheck(0, 1, {}, 1024, token=bytes(16))
        >>> check.admit(bytes(16) + codec.encode_data([]))
        [0, []]
        >>> check.admit(b"a guessed token!" + codec.encode_data([]))
        Traceback (most recent call last):
        ...
        topology.runtime.net.frames.BadFrame: a frame without this worker's data token
        """
        # constant time: how much of a guess was right is not to be learnt from the clock
        if not compare_digest(message[:TOKEN_BYTES], self.token):
            raise BadFrame("bad-token", "a frame without this worker's data token")
        return self.decode(memoryview(message)[TOKEN_BYTES:])

    def decode(self, frame: bytes | memoryview) -> list[Any]:
        """The frame as ``[kind, ...]``, checked; :class:`BadFrame` otherwise (every check
        but the token's, which :meth:`admit` makes first)."""
        if len(frame) > self.max_frame_bytes:
            raise BadFrame("too-large", f"frame of {len(frame):,} bytes over the limit")
        try:
            message = codec.decode_frame(frame)
        except codec.FrameTooCostly:
            raise BadFrame("too-costly", f"frame of {len(frame):,} bytes over its budget") from None
        except Exception as exc:  # any decoding error: garbage, truncated, over limits
            raise BadFrame("undecodable", f"undecodable frame ({type(exc).__name__})") from None
        if type(message) is not list or not message:
            raise BadFrame("not-a-frame", "not a frame")
        kind = message[0]
        if kind == codec.DATA and len(message) == (3 if self.checkpointed else 2):
            if self.checkpointed and type(message[2]) is not int:
                raise BadFrame("not-a-frame", "a data frame without an epoch")
            self.check_groups(message[1])
        elif kind == codec.BACKPRESSURE and len(message) == 3:
            self.check_backpressure(message[1], message[2])
        else:
            raise BadFrame("not-a-frame", "unknown frame kind")
        return message

    def check_groups(self, groups: Any) -> None:
        if type(groups) is not list or len(groups) > MAX_GROUPS:
            raise BadFrame("not-a-frame", "groups are not a list")
        routes = self.routes
        for group in groups:
            if type(group) is not list or len(group) != 5:
                raise BadFrame("bad-group", "a group of the wrong shape")
            dest, src, stream, vals, metas = group
            if type(dest) is not int or type(src) is not int or type(stream) is not str:
                raise BadFrame(
                    "bad-group", f"a group addressed {dest!r:.40} <- {src!r:.40} {stream!r:.40}"
                )
            takes = routes.get(dest)
            if takes is None:
                raise BadFrame("unknown-task", f"a group for task {dest}, not hosted here")
            route = takes.get(stream)
            arity = None if route is None else route.sources.get(src)
            if route is None or arity is None:
                raise BadFrame(
                    "unknown-source",
                    f"a group for task {dest} from unknown source {src} or stream {stream!r:.60}",
                )
            if vals is None:  # a checkpoint barrier: its checkpoint id in place of metas
                if route.barriers and type(metas) is int and metas >= 0:
                    continue
                raise BadFrame("bad-group", "a group whose values are not a list")
            if type(vals) is not list:
                raise BadFrame("bad-group", "a group whose values are not a list")
            if arity != SYSTEM:
                packed = type(metas) is bytes  # packed envelopes: any 16 bytes are one
                if packed and len(metas) != codec.PACKED_META_BYTES * len(vals):
                    raise BadFrame(
                        "bad-tuple",
                        f"packed envelopes that do not match the values (task {dest}, "
                        f"stream {stream!r})",
                    )
                fault = codec.check_tuples(vals, None if packed else metas, arity)
                if fault is not None:
                    raise BadFrame("bad-tuple", f"{fault} (task {dest}, stream {stream!r})")
                if packed:
                    group[4] = codec.expand_metas(metas)
                continue
            fault = "a tracked system tuple" if metas is not None else None
            if fault is None and route.check is not None:
                fault = route.check(vals)
            if fault is not None:
                raise BadFrame("bad-system", f"{fault} (task {dest}, stream {stream!r})")

    def check_backpressure(self, worker: Any, on: Any) -> None:
        if type(worker) is not int or not 0 <= worker < self.workers or worker == self.worker:
            raise BadFrame(
                "bad-backpressure",
                f"backpressure from {worker!r:.40}, not a peer of this assignment",
            )
        if type(on) is not bool:
            raise BadFrame("bad-backpressure", "backpressure that is neither on nor off")


def inbound_routes(
    topology: Topology, assignment: Assignment, worker: int
) -> dict[int, dict[str, Route]]:
    """Destination task -> stream -> :class:`Route` for every task of ``worker``: the
    bolts' subscriptions (with their source tasks and field counts), ack traffic to the
    ackers (from every worker's system source) and from them to the spouts, and
    checkpoint control between the coordinator, the spouts and the workers' system tasks
    (and ``COMMIT`` to the bolts that hear of completed checkpoints,
    :func:`~topology.stateful.hears_completions`).
    """
    component_tasks, task_component = assignment.component_tasks, assignment.task_component
    system_sources = dict.fromkeys((-1 - w for w in range(assignment.num_workers)), SYSTEM)
    ackers = dict.fromkeys(component_tasks.get(ACKER_COMPONENT, ()), SYSTEM)
    coordinator = component_tasks.get(ck.COORDINATOR_COMPONENT)
    checkpointed = bool(coordinator)
    from_coordinator = dict.fromkeys(coordinator or (), SYSTEM)
    routes: dict[int, dict[str, Route]] = {}
    for task in assignment.worker_tasks[worker]:
        component = task_component[task]
        spec = topology.components.get(component)
        if component == ACKER_COMPONENT:
            routes[task] = {
                stream: Route(system_sources, check=_ack_check(stream, to_acker=True))
                for stream in (ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET)
            }
        elif component == ck.COORDINATOR_COMPONENT:
            routes[task] = {
                stream: Route(system_sources, check=_control_check(stream))
                for stream in ck.TO_COORDINATOR
            }
        elif spec is not None and spec.kind == "spout":
            takes = {
                stream: Route(ackers, check=_ack_check(stream, to_acker=False))
                for stream in (ACK_ACK, ACK_FAIL, ACK_RESET)
            }
            if checkpointed:
                takes.update(
                    (stream, Route(from_coordinator, check=_control_check(stream)))
                    for stream in (ck.BEGIN, ck.COMMIT)
                )
            routes[task] = takes
        elif spec is not None:
            takes = {}
            for sub in spec.inputs:
                source = topology.components.get(sub.component)
                declared = source.streams.get(sub.stream) if source is not None else None
                if declared is None:
                    continue
                sources = dict.fromkeys(
                    component_tasks.get(sub.component, ()), len(declared.fields)
                )
                previous = takes.get(sub.stream)
                if previous is not None:  # the same stream name of two components
                    sources.update(previous.sources)
                takes[sub.stream] = Route(sources, barriers=checkpointed)
            if checkpointed and hears_completions(spec.instance):
                takes[ck.COMMIT] = Route(from_coordinator, check=_control_check(ck.COMMIT))
            routes[task] = takes
    if checkpointed:
        routes[-1 - worker] = {
            stream: Route(from_coordinator, check=_control_check(stream))
            for stream in (ck.ROLLBACK, ck.RESUME)
        }
    return routes


def _ack_check(stream: str, to_acker: bool) -> Callable[[list[Any]], str | None]:
    return lambda vals: check_ack_values(stream, vals, to_acker)


def _control_check(stream: str) -> Callable[[list[Any]], str | None]:
    return lambda vals: ck.check_control(stream, vals)
