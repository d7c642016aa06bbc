"""The executor loop: one thread multiplexing every task of a worker.

Each turn: read frames from peers (while the inbound queue has room) -> execute queued
tuples -> call ``next_tuple`` on spouts that may emit -> flush lanes (local at once, remote
when full or due) -> periodic work (ticks, overflow retry, backpressure signals, control)
-> wait on the sockets when there was nothing to do.

Spouts are held back while the inbound queue is over ``topology.executor.receive.buffer.size``,
while this worker has frames waiting for a full peer, or while any peer has asked for
backpressure.  Bolts are never held back, so tuples already in flight always drain.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from . import serialization
from .tasks import BoltTask, SpoutTask
from .transfer import Transfer

#: Most tuples executed per turn before spouts, flushes and control get their turn.
TUPLES_PER_TURN = 2000
#: Most ``next_tuple`` calls per spout task per turn.
SPOUT_CALLS_PER_TURN = 100
#: Most frames read from the socket per turn.
FRAMES_PER_TURN = 16


class Receiver(Protocol):
    def recv_nowait(self) -> bytes | None: ...


class Waiter(Protocol):
    def wait(self, timeout_ms: float) -> None: ...


class Executor:
    """Runs the tasks of one worker until :meth:`stop` (or ``should_stop`` says so)."""

    def __init__(
        self,
        worker_index: int,
        spouts: list[SpoutTask],
        bolts: dict[int, BoltTask],
        transfer: Transfer,
        inbound: deque[list[Any]],
        receiver: Receiver,
        waiter: Waiter,
        conf: dict[str, Any],
        tick_freqs: dict[int, float],
        on_turn: Callable[[float], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.worker_index = worker_index
        self.spouts = spouts
        self.bolts = bolts
        self.transfer = transfer
        self.inbound = inbound
        self._receiver = receiver
        self._waiter = waiter
        self._clock = clock
        self._on_turn = on_turn
        self._receive_limit = conf["topology.executor.receive.buffer.size"]
        self._spout_wait = conf["topology.sleep.spout.wait.strategy.time.ms"] / 1000.0
        self._ticks = [[clock() + f, task, f] for task, f in tick_freqs.items()]
        self.inbound_count = 0
        self.peers_throttling: set[int] = set()
        self._signalled_congestion = False
        self.running = True
        self.unroutable = 0

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        while self.running:
            self.turn()

    def turn(self) -> None:
        """One pass of the loop (public so tests can drive it step by step)."""
        now = self._clock()
        busy = self._receive()
        busy |= self._execute_inbound()
        busy |= self._run_spouts(now)
        self.inbound_count += self.transfer.flush_local()
        next_due = self.transfer.flush_remote(now)
        self._periodic(now)
        self._on_turn(now)
        if not busy and not self.inbound and self.running:
            self._waiter.wait(self._wait_ms(now, next_due))

    def stop(self) -> None:
        self.running = False

    # -- steps ------------------------------------------------------------------------

    def _receive(self) -> bool:
        got = False
        for _ in range(FRAMES_PER_TURN):
            if self.inbound_count >= self._receive_limit:
                break
            frame = self._receiver.recv_nowait()
            if frame is None:
                break
            got = True
            message = serialization.decode(frame)
            if message[0] == serialization.DATA:
                for group in message[1]:
                    self.inbound.append(group)
                    self.inbound_count += len(group[3])
            elif message[0] == serialization.BACKPRESSURE:
                _, worker, on = message
                if on:
                    self.peers_throttling.add(worker)
                else:
                    self.peers_throttling.discard(worker)
        return got

    def _execute_inbound(self) -> bool:
        inbound = self.inbound
        if not inbound:
            return False
        bolts = self.bolts
        done = 0
        while inbound and done < TUPLES_PER_TURN:
            dest, src, stream, vals, metas = inbound.popleft()
            n = len(vals)
            done += n
            task = bolts.get(dest)
            if task is None:
                self.unroutable += n
                continue
            task.run_group(task.source(src, stream), vals, metas)
        self.inbound_count = max(0, self.inbound_count - done)
        return True

    def may_emit(self) -> bool:
        """Whether spouts may emit now (the backpressure rule in the module docstring)."""
        return (
            self.inbound_count < self._receive_limit
            and not self.transfer.congested
            and not self.peers_throttling
        )

    def _run_spouts(self, now: float) -> bool:
        if not self.spouts or not self.may_emit():
            return False
        busy = False
        for spout in self.spouts:
            if not spout.active or now < spout.idle_until:
                continue
            for _ in range(SPOUT_CALLS_PER_TURN):
                if not spout.next_tuple():
                    spout.idle_until = now + self._spout_wait
                    break
                busy = True
        return busy

    def _periodic(self, now: float) -> None:
        for tick in self._ticks:
            if now >= tick[0]:
                tick[0] = now + tick[2]
                self.bolts[tick[1]].tick(tick[2])
        transfer = self.transfer
        transfer.retry_overflow()
        congested = transfer.congested
        if congested != self._signalled_congestion:
            self._signalled_congestion = congested
            transfer.broadcast(serialization.encode_backpressure(self.worker_index, congested))

    def _wait_ms(self, now: float, next_due: float | None) -> float:
        deadlines = [now + 0.05]
        if next_due is not None:
            deadlines.append(next_due)
        if self._ticks:
            deadlines.append(min(t[0] for t in self._ticks))
        if self.spouts and self.may_emit():
            active = [s.idle_until for s in self.spouts if s.active]
            if active:
                deadlines.append(min(active))
        if self.transfer.congested:
            deadlines.append(now + 0.001)
        return max(0.0, (min(deadlines) - now) * 1000.0)

    # -- queries ----------------------------------------------------------------------

    def buffered(self) -> int:
        """Tuples waiting anywhere in this worker (inbound queue, lanes, held frames)."""
        return sum(len(g[3]) for g in self.inbound) + self.transfer.buffered()
