"""Checking frames that arrive from the network before they enter a worker (pure).

Every byte from a socket is hostile until checked.  A frame that does not decode, has
the wrong shape, names a task this worker does not host, a source task or stream the
topology does not have, or a worker outside the assignment is refused as a whole with a
:class:`BadFrame` naming why; the executor counts it and goes on.  The checks are per frame
and per group (a group carries up to ``topology.transfer.batch.size`` tuples), never per
tuple, so they cost nothing measurable; what a tuple's values hold is the receiving
component's business, and a malformed tracking envelope fails only its own group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import serialization

#: Most groups one frame may hold (a legitimate one has one per lane toward this worker).
MAX_GROUPS = 100_000


class BadFrame(ValueError):
    """A frame that must not enter this worker; the message says why."""


class DropCounter:
    """Counts refused frames and groups; says so through ``report`` at most once per
    ``every`` seconds (a flood of garbage must not become a flood of error reports)."""

    def __init__(self, report: Any, every: float = 10.0) -> None:
        self._report = report
        self._every = every
        self._last_report = -every
        self._since_report = 0
        self.dropped = 0
        self.last_reason: str | None = None

    def drop(self, reason: str, now: float) -> None:
        self.dropped += 1
        self._since_report += 1
        self.last_reason = reason
        if now - self._last_report >= self._every:
            self._report(
                f"dropped {self._since_report} malformed frame(s) from the network "
                f"(last: {reason}); the worker goes on"
            )
            self._last_report = now
            self._since_report = 0


@dataclass(frozen=True)
class FrameCheck:
    """What this worker accepts from its peers.

    Attributes:
        worker: this worker's index; ``workers``: how many the assignment has.
        tasks: the task ids this worker hosts (bolts, spouts, ackers).
        streams: source task id -> the streams it may send on (system sources included).
        max_frame_bytes: the largest frame accepted.
        checkpointed: data frames carry an epoch and may hold barrier groups.
    """

    worker: int
    workers: int
    tasks: frozenset[int]
    streams: Mapping[int, frozenset[str]]
    max_frame_bytes: int
    checkpointed: bool = False

    def decode(self, frame: bytes) -> list[Any]:
        """The frame as ``[kind, ...]``, checked; :class:`BadFrame` otherwise."""
        if len(frame) > self.max_frame_bytes:
            raise BadFrame(f"frame of {len(frame):,} bytes over the limit")
        try:
            message = serialization.decode(frame, self.max_frame_bytes)
        except Exception as exc:  # any decoding error: garbage, truncated, over limits
            raise BadFrame(f"undecodable frame ({type(exc).__name__})") from None
        if type(message) is not list or not message:
            raise BadFrame("not a frame")
        kind = message[0]
        if kind == serialization.DATA and len(message) == (3 if self.checkpointed else 2):
            if self.checkpointed and type(message[2]) is not int:
                raise BadFrame("a data frame without an epoch")
            self.check_groups(message[1])
        elif kind == serialization.BACKPRESSURE and len(message) == 3:
            self.check_backpressure(message[1], message[2])
        else:
            raise BadFrame("unknown frame kind")
        return message

    def check_groups(self, groups: Any) -> None:
        if type(groups) is not list or len(groups) > MAX_GROUPS:
            raise BadFrame("groups are not a list")
        tasks, streams = self.tasks, self.streams
        for group in groups:
            if type(group) is not list or len(group) != 5:
                raise BadFrame("a group of the wrong shape")
            dest, src, stream, vals, metas = group
            if dest not in tasks or type(dest) is not int:
                raise BadFrame(f"a group for task {dest!r}, not hosted here")
            allowed = streams.get(src) if type(src) is int else None
            if allowed is None or stream not in allowed:
                raise BadFrame(f"a group from unknown source {src!r} or stream {stream!r}")
            if type(vals) is not list:
                if vals is None and self.checkpointed and type(metas) is int:
                    continue  # a barrier
                raise BadFrame("a group whose values are not a list")
            if metas is not None and (type(metas) is not list or len(metas) != len(vals)):
                raise BadFrame("a group whose envelopes do not match its values")

    def check_backpressure(self, worker: Any, on: Any) -> None:
        if type(worker) is not int or not 0 <= worker < self.workers or worker == self.worker:
            raise BadFrame(f"backpressure from {worker!r}, not a peer of this assignment")
        if type(on) is not bool:
            raise BadFrame("backpressure that is neither on nor off")


def source_streams(
    declared: Mapping[int, Iterable[str]],
    acker_tasks: Iterable[int],
    workers: int,
    ack_streams: Iterable[str],
    coordinator: tuple[int, frozenset[str], frozenset[str]] | None = None,
) -> dict[int, frozenset[str]]:
    """Source task id -> streams it may send: each component task its declared streams;
    acker tasks and every worker's system source (``-1 - worker``) the ack streams; with a
    checkpoint ``coordinator`` (task, its streams, the streams workers send it) those too."""
    acks = frozenset(ack_streams)
    out = {task: frozenset(names) for task, names in declared.items()}
    for task in acker_tasks:
        out[task] = acks
    system = acks
    if coordinator is not None:
        task, sends, receives = coordinator
        out[task] = sends
        system = acks | receives
    for worker in range(workers):
        out[-1 - worker] = system
    return out
