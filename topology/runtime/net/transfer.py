"""Outbound buffering: per-destination lanes, batching, flushing, overflow and backpressure.

Every emitted tuple is appended to the *lane* of (source task, stream, destination task).
Lanes toward this worker's own tasks are moved to the local inbound queue without any
serialization; lanes toward another worker are packed into msgpack frames of at most
``topology.transfer.batch.size`` tuples and sent when full or when
``topology.batch.flush.interval.millis`` has passed since that peer's last flush.

A send that finds the peer's queue full (or the peer's data token not known yet: a peer
being relaunched, :mod:`topology.runtime.net.data_token`) keeps the frame in an ordered
overflow list and marks this worker *congested*; the executor then holds back its spouts and
asks its peers to do the same until the overflow has drained
(:mod:`topology.runtime.net.backpressure`).  Nothing is dropped and, because spouts stop
while bolts keep draining, memory stays bounded by what is already in flight.

A frame the receiving worker's door would refuse on its size or decode budget
(:func:`topology.runtime.net.codec.fits`) is split in halves — its groups, then a group's
tuples — until each part fits; only a single tuple too big on its own is left out, and
``on_oversized`` reports it (its tree, if tracked, fails at its timeout).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..checkpoint.hooks import UNSTAMPED, FrameStamp
from . import codec


class Sender(Protocol):
    def try_send(self, frame: bytes) -> bool: ...


#: A barrier travels as a group whose values are ``None`` and whose last field is the
#: checkpoint id: ``[dest, src, stream, None, checkpoint]``, in line with the tuples.
BARRIER = None


class Lane:
    """Tuples from one source task on one stream to one destination task, not yet flushed.

    ``barriers`` holds checkpoint barriers placed between tuples (the number of tuples
    before each, and its checkpoint id); :meth:`take` never lets a tuple pass a barrier.
    """

    __slots__ = ("dest", "src", "stream", "vals", "metas", "push_val", "push_meta", "barriers")

    def __init__(self, dest: int, src: int, stream: str) -> None:
        self.dest = dest
        self.src = src
        self.stream = stream
        self.vals: list[Any] = []
        self.metas: list[Any] = []
        self.push_val = self.vals.append
        self.push_meta = self.metas.append
        self.barriers: list[list[int]] = []

    def mark_barrier(self, checkpoint: int) -> None:
        """Put barrier ``checkpoint`` after every tuple appended so far."""
        self.barriers.append([len(self.vals), checkpoint])

    def pending(self) -> bool:
        return bool(self.vals) or bool(self.barriers)

    def take(self, limit: int | None = None) -> list[Any]:
        """Remove up to ``limit`` (default: all) pending tuples and return them as one group
        (or the barrier that comes first, as a barrier group)."""
        if self.barriers:
            return self._take_upto_barrier(limit)
        return self._take(limit)

    def _take_upto_barrier(self, limit: int | None) -> list[Any]:
        before, checkpoint = self.barriers[0]
        if before == 0:
            self.barriers.pop(0)
            return [self.dest, self.src, self.stream, BARRIER, checkpoint]
        limit = before if limit is None else min(limit, before)
        group = self._take(limit)
        taken = len(group[3])
        for mark in self.barriers:
            mark[0] -= taken
        return group

    def _take(self, limit: int | None = None) -> list[Any]:
        vals, metas = self.vals, self.metas
        if limit is None or limit >= len(vals):
            taken_vals, taken_metas = vals[:], metas[:]
            vals.clear()
            metas.clear()
        else:
            taken_vals, taken_metas = vals[:limit], metas[:limit]
            del vals[:limit]
            del metas[:limit]
        # Tracked when any envelope is set: the first one decides an acked lane at once, and
        # list.count scans an untracked one in C (cheaper than a generator per tuple).
        tracked = bool(taken_metas) and (
            taken_metas[0] is not None or taken_metas.count(None) < len(taken_metas)
        )
        return [self.dest, self.src, self.stream, taken_vals, taken_metas if tracked else None]


class Transfer:
    """Owns every lane of one worker and moves their tuples out.

    ``on_transferred(src_task, stream, n)`` is told how many tuples left each lane, for stats;
    ``stamp`` gives the recovery epoch every data frame carries (a checkpointed worker's
    :class:`~topology.runtime.checkpoint.hooks.RecoveryEpoch`; by default none).
    """

    def __init__(
        self,
        worker_index: int,
        worker_of: dict[int, int],
        senders: Mapping[int, Sender],
        local_inbound: deque[list[Any]],
        batch_size: int,
        flush_interval: float,
        on_transferred: Callable[[int, str, int], None],
        max_frame_bytes: int | None = None,
        on_oversized: Callable[[int, str, str], None] | None = None,
        *,
        stamp: FrameStamp = UNSTAMPED,
    ) -> None:
        self.worker_index = worker_index
        self._worker_of = worker_of
        self._senders = senders
        self._inbound = local_inbound
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._on_transferred = on_transferred
        #: The largest frame a peer takes (None: frames are not checked before sending),
        #: and who hears of a tuple too big to send on its own (src task, stream, why).
        self._max_frame_bytes = max_frame_bytes
        self._on_oversized = on_oversized
        self._lanes: dict[tuple[int, str, int], Lane] = {}
        self._local_lanes: list[Lane] = []
        self._remote_lanes: dict[int, list[Lane]] = {w: [] for w in senders}
        self._last_flush: dict[int, float] = {w: 0.0 for w in senders}
        self._overflow: dict[int, deque[bytes]] = {w: deque() for w in senders}
        self._stamp = stamp
        #: Peer worker -> tuples sent to it (handed to its socket or held for it): one end
        #: of the per-link accounting drain detection checks.
        self.sent_to: dict[int, int] = dict.fromkeys(senders, 0)

    @property
    def worker_of(self) -> dict[int, int]:
        """Task id -> the worker it runs in."""
        return self._worker_of

    def lane(self, src: int, stream: str, dest: int) -> Lane:
        """The lane for (src, stream, dest), created on first use."""
        key = (src, stream, dest)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = Lane(dest, src, stream)
            worker = self._worker_of[dest]
            if worker == self.worker_index:
                self._local_lanes.append(lane)
            else:
                self._remote_lanes[worker].append(lane)
        return lane

    # -- flushing ---------------------------------------------------------------------

    def flush_local(self) -> int:
        """Move local lanes to the inbound queue; return how many tuples moved."""
        moved = 0
        for lane in self._local_lanes:
            if lane.vals and not lane.barriers:
                n = len(lane.vals)
                moved += n
                self._on_transferred(lane.src, lane.stream, n)
                self._inbound.append(lane.take())
            elif lane.barriers:
                while lane.pending():
                    group = lane.take()
                    if group[3] is not BARRIER:
                        n = len(group[3])
                        moved += n
                        self._on_transferred(lane.src, lane.stream, n)
                    self._inbound.append(group)
        return moved

    def flush_remote(self, now: float, force: bool = False) -> float | None:
        """Send every remote lane that is full or due; return the next due time, if any."""
        next_due = None
        batch = self._batch_size
        for worker, lanes in self._remote_lanes.items():
            pending = sum(len(lane.vals) + len(lane.barriers) for lane in lanes)
            if not pending:
                continue
            due = self._last_flush[worker] + self._flush_interval
            if force or pending >= batch or now >= due:
                self._send_lanes(worker, lanes)
                self._last_flush[worker] = now
            elif next_due is None or due < next_due:
                next_due = due
        return next_due

    def _send_lanes(self, worker: int, lanes: list[Lane]) -> None:
        """Pack the lanes into frames of at most ``batch_size`` tuples and send them."""
        groups: list[list[Any]] = []
        room = self._batch_size
        sent = 0
        for lane in lanes:
            while lane.vals or lane.barriers:
                group = lane.take(room)
                n = 0 if group[3] is BARRIER else len(group[3])
                if n:
                    sent += n
                    self._on_transferred(lane.src, lane.stream, n)
                groups.append(group)
                room -= n
                if room <= 0:
                    sent -= self._send_groups(worker, groups)
                    groups, room = [], self._batch_size
        if groups:
            sent -= self._send_groups(worker, groups)
        self.sent_to[worker] += sent

    def _send_groups(self, worker: int, groups: list[list[Any]]) -> int:
        """Send ``groups`` to ``worker`` in one frame, or split until every part fits what
        the peer takes; return how many tuples were left out (each too big on its own)."""
        frame = codec.encode_data(codec.packed_groups(groups), self._stamp.epoch)
        limit = self._max_frame_bytes
        if limit is None or codec.fits(frame, limit):
            self._send(worker, frame)
            return 0
        if len(groups) > 1:
            half = len(groups) // 2
            return self._send_groups(worker, groups[:half]) + self._send_groups(
                worker, groups[half:]
            )
        dest, src, stream, vals, metas = groups[0]
        if vals is not BARRIER and len(vals) > 1:
            half = len(vals) // 2
            first = [dest, src, stream, vals[:half], None if metas is None else metas[:half]]
            rest = [dest, src, stream, vals[half:], None if metas is None else metas[half:]]
            return self._send_groups(worker, [first]) + self._send_groups(worker, [rest])
        self._on_transferred(src, stream, -1)  # it never left
        if self._on_oversized is not None:
            self._on_oversized(
                src,
                stream,
                f"a tuple for task {dest} on stream {stream!r} makes a frame of "
                f"{len(frame):,} bytes that its worker would refuse (over "
                f"topology.transfer.max.frame.bytes = {limit:,}, or decoding to more than "
                f"max(32 MiB, {codec.DECODE_RATIO} x its size) of objects): it was not sent; "
                "emit smaller or flatter values",
            )
        return 1

    def _send(self, worker: int, frame: bytes) -> None:
        overflow = self._overflow[worker]
        if overflow or not self._senders[worker].try_send(frame):
            overflow.append(frame)

    @property
    def peers(self) -> list[int]:
        """The workers this one has links to."""
        return list(self._senders)

    def send_control(self, worker: int, frame: bytes) -> None:
        """Send a control frame to ``worker`` (queued behind any overflow, never lost)."""
        self._send(worker, frame)

    def retry_overflow(self) -> None:
        """Push held-back frames, oldest first, until a peer's queue is full again."""
        for worker, overflow in self._overflow.items():
            sender = self._senders[worker]
            while overflow and sender.try_send(overflow[0]):
                overflow.popleft()

    def drop_data(self, keep_streams: frozenset[str]) -> None:
        """Drop every tuple and barrier in lanes and every frame held for a full peer,
        except lanes on ``keep_streams`` (a rollback keeps its own control messages)."""
        for lane in self._lanes.values():
            if lane.stream not in keep_streams:
                lane.vals.clear()
                lane.metas.clear()
                lane.barriers.clear()
        for overflow in self._overflow.values():
            overflow.clear()

    @property
    def congested(self) -> bool:
        """True while any frame waits for a full peer queue."""
        return any(self._overflow.values())

    def full_peers(self) -> list[int]:
        """The peer workers frames wait for now (their queue was full), in order."""
        return sorted(w for w, overflow in self._overflow.items() if overflow)

    def buffered(self) -> int:
        """Tuples in lanes not yet flushed plus frames held back (for drain detection)."""
        return sum(len(lane.vals) for lane in self._lanes.values()) + sum(
            len(o) for o in self._overflow.values()
        )
