"""The executor loop: one thread multiplexing every task of a worker.

Each turn: read frames from peers (while the inbound queue has room) -> execute queued
tuples -> call ``next_tuple`` on spouts that may emit -> flush lanes (local at once, remote
when full or due) -> periodic work (ticks, overflow retry, backpressure signals, control)
-> wait on the sockets when there was nothing to do.

Spouts are held back while the inbound queue is over
``topology.executor.receive.buffer.size``, while as many inputs wait for another attempt
(:mod:`~topology.runtime.tasks.failures`; until below half), while this worker has frames
waiting for a full peer, while its stateful tasks hold more changes than checkpoints have
stored (:func:`~topology.runtime.checkpoint.worker.changes_backlog_limit`), or while any
peer has asked for backpressure.  A worker asks its peers for backpressure while it has such
frames, such a backlog, a full inbound queue or that many inputs waiting for another attempt
(until below half) (:mod:`~topology.runtime.net.backpressure`; a signal is a frame like any
other, let in only with this worker's data token).  Bolts are never held back, so tuples
already in flight always drain.

Two clocks: ``clock`` paces the loop (turn budgets, batch flushes, spout waits,
backpressure, the quiet time drains wait for) and ``timers`` is *topology time*: tick
tuples, message timeouts, checkpoint intervals and (through the windowed bolts' own clock)
windows.  They are the same clock unless a test simulates time: then ``timers`` moves only
when the test advances it, while the loop keeps running and flushing in real time.

Async bolt tasks (:mod:`~topology.runtime.tasks.async_inputs`): each turn begins with what
their calls finished, a task at capacity takes no input (its groups are parked, still
counted as inbound), and while a call is in flight an idle wait lasts at most
:data:`ASYNC_POLL_SECS`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from acker import WorkerAcking
from topology.state.checkpoint import STREAMS as CHECKPOINT_STREAMS

from ..checkpoint.hooks import NO_CHECKPOINTS, CheckpointHooks
from ..net.backpressure import PeerSignals
from ..net.frame_reader import FrameReader, Receiver
from ..net.frames import DropCounter, FrameCheck
from ..net.transfer import Transfer
from ..settings import WorkerSettings
from .async_inputs import AsyncInputs
from .failures import Parking
from .task import BoltTask, SpoutTask
from .ticks import Ticks

#: Most tuples executed per turn before spouts, flushes and control get their turn.
TUPLES_PER_TURN = 2000
#: Most seconds spent executing queued tuples per turn (keeps acks and control flowing).
EXECUTE_SECONDS_PER_TURN = 0.02
#: Tuples of a group executed before the task's time per tuple is known.
FIRST_CHUNK = 8
#: Most tuples of one group executed between two looks at the clock.
MAX_CHUNK = 1000
#: Most ``next_tuple`` calls per spout task per turn ...
SPOUT_CALLS_PER_TURN = 100
#: ... and most seconds spent in them per turn, over every spout task (a ``next_tuple``
#: that sleeps, as Storm spouts often do, must not hold up tuples, acks and control).
SPOUT_SECONDS_PER_TURN = 0.02
#: Longest idle wait while an async bolt task has calls in flight: how late a finished
#: call may be emitted (the asyncio thread cannot wake the sockets' poller).
ASYNC_POLL_SECS = 0.001


class Waiter(Protocol):
    def wait(self, timeout_ms: float) -> None: ...


class Executor:
    """Runs the tasks of one worker until :meth:`stop` (or ``should_stop`` says so).

    ``checkpoints`` are the hooks of the worker's checkpoint agent (the default: a topology
    without checkpoints); the executor is their
    :class:`~topology.runtime.checkpoint.hooks.InFlight` during a rollback.
    """

    def __init__(
        self,
        *,
        worker_index: int,
        spouts: list[SpoutTask],
        bolts: dict[int, BoltTask],
        transfer: Transfer,
        inbound: deque[list[Any]],
        receiver: Receiver,
        waiter: Waiter,
        settings: WorkerSettings,
        tick_freqs: dict[int, float],
        on_turn: Callable[[float], None],
        frame_check: FrameCheck,
        drops: DropCounter,
        clock: Callable[[], float] = time.monotonic,
        acking: WorkerAcking | None = None,
        checkpoints: CheckpointHooks = NO_CHECKPOINTS,
        timers: Callable[[], float] | None = None,
        parking: Parking | None = None,
    ) -> None:
        self.worker_index = worker_index
        self.spouts = spouts
        self.bolts = bolts
        self.transfer = transfer
        self.inbound = inbound
        self._waiter = waiter
        self._clock = clock
        #: The executor's clock (public: spout activation times are read on it).
        self.clock = clock
        #: Topology time (ticks, timeouts, checkpoints): ``clock`` unless time is simulated.
        self.timers = clock if timers is None else timers
        self._simulated = timers is not None and timers is not clock
        #: The topology time of the last turn's timers (how far this executor has got).
        self.timers_at = self.timers()
        self._on_turn = on_turn
        self._receive_limit = settings.receive_buffer_size
        self._spout_wait = settings.spout_wait()
        self._ticks = Ticks(tick_freqs, self.timers_at)
        self.inbound_count = 0
        #: Tuples of ``inbound_count`` held behind a barrier while a task aligns: they count
        #: against the spouts (``may_emit``) and the peers (backpressure), not the reader.
        self.held_count = 0
        self._first_spout = 0
        #: Backpressure with the peers: signals honoured and sent.
        self.signals = PeerSignals(worker_index, transfer.peers)
        self.running = True
        self.unroutable = 0
        self.acking = acking
        self.system_executed = 0
        #: Decodes and checks frames from peers; refusals are counted in ``drops``.
        self._check = frame_check
        self.drops = drops
        self.checkpoints = checkpoints
        self._reader = FrameReader(
            receiver=receiver,
            check=frame_check,
            drops=drops,
            signals=self.signals,
            inbound=inbound,
            worker_of=transfer.worker_of,
            limit=self._receive_limit,
            clock=clock,
            checkpoints=checkpoints,
        )
        #: Progress, read by the heartbeat thread: when the current turn began, whether a
        #: turn is running, and which task's user code it is in (None: none).
        self.turn_began = clock()
        self.in_turn = False
        self.busy_in: SpoutTask | BoltTask | None = None
        #: Peer worker -> tuples received from it (the other end of ``Transfer.sent_to``).
        self.received_from = self._reader.received_from
        self.parking = Parking() if parking is None else parking  # inputs to try again
        #: Async bolt tasks: their outcomes each turn, their input parked at capacity.
        self._async = AsyncInputs(bolts.values(), inbound, self.parking)
        #: Seconds (``clock``) its spouts were held back (any reason of :meth:`may_emit`)
        #: and it held frames for a full peer: each turn adds the time since the last one.
        self.spouts_held_secs = self.congested_secs = 0.0
        self._accounted_at, self._held, self._congested = self.turn_began, False, False

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        while self.running:
            self.turn()

    def turn(self) -> None:
        """One pass of the loop (public so tests can drive it step by step)."""
        now = self._clock()
        at = self.timers() if self._simulated else now
        self._account(now)
        self.turn_began = now
        self.in_turn = True
        # the reader counts what it may still execute: groups held behind a barrier must
        # not stop it reading the barriers they wait for
        busy, unheld = self._reader.read(self.inbound_count - self.held_count)
        self.inbound_count = unheld + self.held_count
        if self._async.tasks:
            busy |= self._async.pump(at)
        busy |= self._execute_inbound(now, at)
        if (
            self.parking.next_due <= at
        ):  # inputs due for another attempt (:mod:`~topology.runtime.tasks.failures`)
            busy |= self.parking.run_due(at, TUPLES_PER_TURN, self._in_task)
        busy |= self._run_spouts(now)
        self._periodic(now, at)
        self.timers_at = at
        self._flush_acking()
        self.inbound_count += self.transfer.flush_local()
        next_due = self.transfer.flush_remote(now)
        self._on_turn(now)
        self.in_turn = False
        if not busy and not self.inbound and self.running:
            self._waiter.wait(self._wait_ms(now, at, next_due))

    def stop(self) -> None:
        self.running = False

    # -- steps ------------------------------------------------------------------------

    def _account(self, now: float) -> None:
        """Add the time since the last turn to the backpressure it saw."""
        elapsed, self._accounted_at = max(0.0, now - self._accounted_at), now
        if self._held:
            self.spouts_held_secs += elapsed
        if self._congested:
            self.congested_secs += elapsed

    def _execute_inbound(self, now: float, at: float) -> bool:
        inbound = self.inbound
        if not inbound:
            return False
        bolts = self.bolts
        done = 0
        stop_at = now + EXECUTE_SECONDS_PER_TURN
        clock = self._clock
        while inbound and done < TUPLES_PER_TURN and (done == 0 or clock() < stop_at):
            group = inbound.popleft()
            dest, src, stream, vals, metas = group
            task = bolts.get(dest)
            if task is None or stream in CHECKPOINT_STREAMS:  # system (a bolt's: COMMIT)
                if vals is not None:
                    done += len(vals)
                    self._receive_system(dest, stream, vals, at)
                continue
            calls = task.calls
            if calls is not None and self._async.park(dest, calls, group):
                continue
            if task.aligner is not None and self._aligning(task, group):
                continue  # held groups stay counted inbound: they are still queued here
            source = task.source(src, stream)
            # Groups run in chunks sized from the task's measured time per tuple, so even a
            # slow bolt yields to acks, ticks and control within the turn's time budget;
            # what is left goes back to the front of the queue.
            start, n = 0, len(vals)
            while start < n:
                size = _chunk_size(task.secs_per_tuple)
                if calls is not None:  # an async bolt takes what it has room for; the rest waits
                    size = min(size, calls.async_room())
                    if size <= 0:
                        rest = None if metas is None else metas[start:]
                        self._async.park_rest([dest, src, stream, vals[start:], rest])
                        break
                end = min(n, start + size)
                whole = start == 0 and end == n
                self.busy_in = task
                began = clock()
                try:
                    task.run_group(
                        source,
                        vals if whole else vals[start:end],
                        metas if whole or metas is None else metas[start:end],
                    )
                except Exception as exc:  # user errors are caught per tuple: a bad envelope
                    self.drops.drop(
                        "refused-inside", f"a group its task refused ({exc!r:.80})", now
                    )
                    end = n  # the rest of this group goes too
                task.observe(clock() - began, end - start)
                self.busy_in = None
                done += end - start
                start = end
                if start < n and clock() >= stop_at:
                    inbound.appendleft(
                        [dest, src, stream, vals[start:], None if metas is None else metas[start:]]
                    )
                    break
        self.inbound_count = max(0, self.inbound_count - done)
        return True

    def _in_task(self, task: int | None) -> None:
        self.busy_in = None if task is None else self.bolts.get(task)

    def _aligning(self, task: BoltTask, group: list[Any]) -> bool:
        """Barrier alignment: True when ``group`` is a barrier or must wait behind one (the
        checkpoint agent has it); groups it lets go again run next, in their order."""
        dest, src, stream, vals, metas = group
        aligner = task.aligner
        assert aligner is not None
        if aligner.aligning is not None and aligner.held((src, stream)):
            self.held_count += 0 if vals is None else len(vals)
            released = self.checkpoints.hold(dest, group)  # barriers behind a barrier too
        elif vals is None:
            released = self.checkpoints.barrier(dest, src, stream, metas)
        else:
            return False
        for held in reversed(released):
            self.held_count -= 0 if held[3] is None else len(held[3])
            self.inbound.appendleft(held)
        return True

    def drop_in_flight(self) -> None:
        """A rollback: drop every queued tuple and barrier (inbound, lanes, frames held for
        full peers); checkpoint control groups stay."""
        control = [g for g in self.inbound if g[2] in CHECKPOINT_STREAMS]
        self.inbound.clear()
        self.inbound.extend(control)
        self.inbound_count = self.held_count = 0
        self._async.drop()
        self.parking.drop()
        self.transfer.drop_data(CHECKPOINT_STREAMS)

    def _receive_system(self, dest: int, stream: str, vals: list[Any], now: float) -> None:
        """Ack traffic: to an acker task, or acker outcomes to a spout task; checkpoint
        control to the checkpoint agent (``now``: topology time)."""
        if stream in CHECKPOINT_STREAMS:
            try:
                taken = self.checkpoints.deliver(dest, stream, vals, now, self)
            except Exception as exc:  # control of the wrong shape (only a forger sends it)
                self.drops.drop("refused-inside", f"checkpoint control refused ({exc!r:.80})", now)
                return
            if taken:  # no checkpoints: on to the acking layer, which routes it nowhere
                self.system_executed += len(vals)  # counted like ack traffic (drain balances)
                return
        try:
            delivered = self.acking is not None and self.acking.deliver(dest, stream, vals, now)
        except Exception as exc:  # ack traffic of the wrong shape (only a forger sends it)
            self.drops.drop("refused-inside", f"ack traffic refused ({exc!r:.80})", now)
            return
        if delivered:
            self.system_executed += len(vals)
        else:
            self.unroutable += len(vals)

    def _flush_acking(self) -> None:
        """Move this turn's combined ack traffic (to ackers, and from ackers) into lanes."""
        if self.acking is None:
            return
        lane = self.transfer.lane
        worker_of = self.transfer.worker_of
        for src, dest, stream, values in self.acking.drain():
            if dest not in worker_of:  # a spout task only a forged init names: no lane to it
                self.drops.drop(
                    "refused-inside", f"ack outcomes for unknown task {dest!r:.40}", self._clock()
                )
                continue
            out = lane(src, stream, dest)
            out.push_val(values)
            out.push_meta(None)

    def may_emit(self) -> bool:
        """Whether spouts may emit now (the backpressure rule in the module docstring; and
        never while a checkpointed worker is paused for a rollback)."""
        return (
            self.inbound_count < self._receive_limit
            and not self.checkpoints.paused
            and not self.transfer.congested
            and not self.signals.throttling
            and not self.checkpoints.saturated()
            and not self.parking.full(self._receive_limit)
        )

    def _run_spouts(self, now: float) -> bool:
        if not self.spouts:
            return False
        self._held = not self.may_emit()
        if self._held:
            return False
        busy = False
        clock = self._clock
        stop_at = now + SPOUT_SECONDS_PER_TURN
        spouts = self.spouts
        first = self._first_spout = (self._first_spout + 1) % len(spouts)  # fair when cut
        for spout in spouts[first:] + spouts[:first] if first else spouts:
            if not spout.active or now < spout.idle_until:
                continue
            self.busy_in = spout
            spout.begin_calls()
            began = clock()
            for _ in range(SPOUT_CALLS_PER_TURN):
                if not spout.may_call():
                    break
                if not spout.next_tuple():
                    spout.empty_calls += 1
                    spout.idle_until = now + self._spout_wait(spout.empty_calls)
                    break
                spout.empty_calls = 0
                spout.last_emit_at = now
                busy = True
                if clock() >= stop_at:
                    break
            ended = clock()
            spout.call_secs += ended - began
            if busy and ended >= stop_at:
                break  # out of time: the next turn starts with another spout task
        self.busy_in = None
        return busy

    def _periodic(self, now: float, at: float) -> None:
        """Timers on topology time ``at``; transfer and backpressure on the loop's ``now``."""
        if self.acking is not None:
            self.acking.expire(at)
        checkpoints = self.checkpoints
        checkpoints.poll(at)
        paused = checkpoints.paused
        for tick in () if paused else self._ticks.due(at):
            self.busy_in = self.bolts[tick.task]
            self.bolts[tick.task].tick(tick.every)
            self.busy_in = None
        transfer = self.transfer
        transfer.retry_overflow()
        self._congested = transfer.congested
        congested = (
            self._congested
            or self._reader.full(self.inbound_count - self.held_count)
            or self.held_count >= self._receive_limit  # aligning: hold the peers' spouts back
            or self.checkpoints.saturated()  # state changes outrun the checkpoints
            or self.parking.full(self._receive_limit)  # a flood of failures: attempts first
        )
        signals = self.signals
        for peer, frame in signals.signals_due(now, congested):
            transfer.send_control(peer, frame)
        signals.expire(now)

    def _wait_ms(self, now: float, at: float, next_due: float | None) -> float:
        deadlines = [now + 0.05]
        if next_due is not None:
            deadlines.append(next_due)
        if self._simulated and self.timers() != at:
            deadlines.append(now)  # simulated time moved during the turn: its timers now
        if self._ticks:  # topology time until the next tick, as if it flowed in real time
            deadlines.append(now + self._ticks.next_due - at)
        if self.spouts and self.may_emit():
            active = [s.idle_until for s in self.spouts if s.active and s.can_emit()]
            if active:
                deadlines.append(min(active))
        if self.transfer.congested:
            deadlines.append(now + 0.001)
        if self._async.in_flight():
            deadlines.append(now + ASYNC_POLL_SECS)
        if self.parking:  # topology time until the next attempt is due
            deadlines.append(now + self.parking.next_due - at)
        return max(0.0, (min(deadlines) - now) * 1000.0)

    # -- queries ----------------------------------------------------------------------

    @property
    def peers_throttling(self) -> dict[int, float]:
        """Peer worker -> when its (honoured) backpressure lapses unless repeated."""
        return self.signals.throttling

    def progress(self) -> tuple[float, str | None]:
        """(seconds the current turn has lasted, ``component:task`` it is stuck in) — 0.0
        and None between turns.  Safe to call from another thread."""
        if not self.in_turn:
            return 0.0, None
        stalled = max(0.0, self._clock() - self.turn_began)
        task = self.busy_in
        return stalled, (f"{task.component}:{task.task_id}" if task is not None else None)

    def spouts_quiet_secs(self) -> float | None:
        """Seconds since an active spout task of this worker last emitted (or was
        activated); None when no spout task is active."""
        active = [s.last_emit_at for s in self.spouts if s.active]
        if not active:
            return None
        return max(0.0, self._clock() - max(active))

    def queued_by_task(self) -> dict[int, int]:
        """Task id -> tuples queued for it in the inbound queue now (a look at every queued
        group: for status replies, not for each turn)."""
        out: dict[int, int] = {}
        for group in self.inbound:
            if group[3] is not None:
                out[group[0]] = out.get(group[0], 0) + len(group[3])
        return out

    def buffered(self) -> int:
        """Tuples waiting anywhere in this worker (inbound queue, parked groups, async
        calls in flight, inputs waiting for another attempt, lanes, held frames)."""
        queued = sum(len(g[3]) for g in self.inbound if g[3] is not None)
        return queued + self._async.buffered() + len(self.parking) + self.transfer.buffered()


def _chunk_size(per_tuple: float) -> int:
    """Tuples of a group to execute before looking at the clock again, from the task's
    measured seconds per tuple (0: not known yet)."""
    if per_tuple <= 0:
        return FIRST_CHUNK
    return max(1, min(MAX_CHUNK, int(EXECUTE_SECONDS_PER_TURN / 2 / per_tuple)))
