"""Reading the frames peers sent into the executor's inbound queue.

:class:`FrameReader` is the executor's first step of each turn: it takes at most
:data:`FRAMES_PER_TURN` frames off the socket while the inbound queue has room, lets each
through the door (its token first, then its frame:
:meth:`~topology.runtime.net.frames.FrameCheck.admit`; refusals are counted in ``drops``)
and hands it on by kind: data groups go to the inbound queue (only checkpoint control while
the checkpoint agent refuses the frame's epoch), backpressure signals to the peer signals
(:mod:`~topology.runtime.net.backpressure`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from topology.state.checkpoint import STREAMS as CHECKPOINT_STREAMS

from ..checkpoint.hooks import NO_CHECKPOINTS, CheckpointHooks
from . import codec
from .backpressure import PeerSignals
from .frames import BadFrame, DropCounter, FrameCheck

#: Most frames read from the socket per turn.
FRAMES_PER_TURN = 16


class Receiver(Protocol):
    def recv_nowait(self) -> bytes | None:
        """The next message (a data token, then a frame), or None when nothing waits."""
        ...


class FrameReader:
    """Reads one worker's frames from its peers (on the executor's thread)."""

    def __init__(
        self,
        *,
        receiver: Receiver,
        check: FrameCheck,
        drops: DropCounter,
        signals: PeerSignals,
        inbound: deque[list[Any]],
        worker_of: dict[int, int],
        limit: int,
        clock: Callable[[], float],
        checkpoints: CheckpointHooks = NO_CHECKPOINTS,
    ) -> None:
        self._receiver = receiver
        self._check = check
        self._drops = drops
        self._signals = signals
        self._inbound = inbound
        self._worker_of = worker_of
        self._limit = limit
        self._clock = clock
        #: Asked once per data frame whether its epoch is current (always, without
        #: checkpoints).
        self._accepts = checkpoints.accepts
        #: Peer worker -> tuples received from it (the other end of ``Transfer.sent_to``).
        self.received_from: dict[int, int] = {}
        #: Whether reading stopped at the limit (until :meth:`full` finds the queue below
        #: half of it).
        self.paused = False

    def read(self, count: int) -> tuple[bool, int]:
        """Read frames while ``count`` (tuples queued inbound) is under the limit: (whether
        any frame came, ``count`` with the tuples of the data frames read added)."""
        got = False
        for _ in range(FRAMES_PER_TURN):
            if count >= self._limit:
                self.paused = True
                break
            received = self._receiver.recv_nowait()
            if received is None:
                break
            got = True
            try:
                message = self._check.admit(received)
            except BadFrame as bad:
                self._drops.drop(bad.reason, str(bad), self._clock())
                continue
            if message[0] == codec.DATA:
                groups = message[1]
                self._count_received(groups)
                if not self._accepts(message[2] if len(message) > 2 else None):
                    # from before (or after) a rollback: only checkpoint control goes in
                    groups = [g for g in groups if g[2] in CHECKPOINT_STREAMS]
                for group in groups:
                    self._inbound.append(group)
                    vals = group[3]
                    if vals is not None:
                        count += len(vals)
            else:  # codec.BACKPRESSURE
                self._signals.receive(message[1], message[2], self._clock())
        return got, count

    def full(self, count: int) -> bool:
        """Whether the inbound queue (``count`` tuples) is full: from when reading paused at
        the limit until it is below half the limit again."""
        if self.paused and count < self._limit // 2:
            self.paused = False
        return self.paused

    def _count_received(self, groups: list[list[Any]]) -> None:
        """Add a (checked) data frame's tuples to ``received_from``, by the worker of their
        source task (system source ``-1 - w`` is worker ``w``'s)."""
        received, worker_of = self.received_from, self._worker_of
        for group in groups:
            vals = group[3]
            if vals is not None:
                src = group[1]
                peer = worker_of.get(src, -1 - src)
                received[peer] = received.get(peer, 0) + len(vals)
