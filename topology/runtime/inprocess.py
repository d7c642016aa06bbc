"""Every worker of a topology in this process, on memory links, driven turn by turn.

:class:`InProcessRunner` assembles each worker with :func:`assemble_worker` exactly as a
real worker does, but connects them with :class:`MemoryLink` queues instead of ZeroMQ
sockets and gives them a :class:`ManualClock`.  Frames between workers are still real
msgpack frames, stamped with the receiving worker's data token and let in by its door
(:mod:`~topology.runtime.net.data_token`), so serialization bugs show up; only time and
delivery are under the caller's control.  Tests use it to drive executors one
:meth:`~InProcessRunner.turn` at a time, to run a subset of the workers (links toward the
others then just fill up), or to close a link to provoke backpressure.

Example::

    runner = InProcessRunner(topology, {"topology.workers": 2})
    runner.activate()
    runner.turn(10)
    runner.clock.advance(30.0)          # timeouts, ticks and windows see 30 s pass
    runner.turn()
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from topology import config as cfg
from topology.assignment import Assignment, assign, task_counts
from topology.spec import Topology
from topology.stats.rolling import StatsRecorder

from .assembly import AssembledWorker, assemble_worker
from .error_reporter import error_text
from .net.data_token import new_token
from .settings import WorkerSetup
from .simulated_time import ManualClock
from .task_status import worker_status
from .tasks.task import BoltTask, SpoutTask

__all__ = [
    "DEFAULT_LINK_FRAMES",
    "InProcessRunner",
    "ManualClock",
    "MemoryInbox",
    "MemoryLink",
    "RecordingWaiter",
]

#: Frames a memory link holds before ``try_send`` reports it full (like a ZeroMQ HWM).
DEFAULT_LINK_FRAMES = 1000


class MemoryInbox:
    """A worker's receiving end: messages (a data token, then a frame) in arrival order
    (the ``Receiver`` protocol); ``token`` is the data token of the worker reading it."""

    def __init__(self) -> None:
        self.frames: deque[bytes] = deque()
        self.token = new_token()
        self.reads = 0

    def recv_nowait(self) -> bytes | None:
        self.reads += 1
        return self.frames.popleft() if self.frames else None

    def put(self, frame: bytes, token: bytes | None = None) -> None:
        """Deliver ``frame`` as a peer sends it, after this inbox's token (or after
        ``token``, as a forger would)."""
        self.frames.append((self.token if token is None else token) + bytes(frame))


class MemoryLink:
    """One worker's sender toward a peer's inbox, stamping frames with ``token`` (what
    the sender knows of the peer's token; None: nothing, and every send reports full);
    full at ``capacity`` frames, or when ``open`` is False (a peer that stopped reading)."""

    def __init__(self, inbox: MemoryInbox, capacity: int = DEFAULT_LINK_FRAMES) -> None:
        self.inbox = inbox
        self.capacity = capacity
        self.token: bytes | None = inbox.token
        self.open = True
        self.sent = 0

    def try_send(self, frame: bytes) -> bool:
        if self.token is None or not self.open or len(self.inbox.frames) >= self.capacity:
            return False
        self.inbox.frames.append(self.token + bytes(frame))
        self.sent += 1
        return True


class RecordingWaiter:
    """Records how long an idle executor asked to wait (``Waiter`` protocol); never sleeps."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def wait(self, timeout_ms: float) -> None:
        self.timeouts.append(timeout_ms)


class InProcessRunner:
    """Workers of ``topology`` assembled in this process (all of them, or ``workers``).

    Args:
        topology: the validated topology.
        conf: topology conf (defaults filled in); ``topology.workers`` sets the layout.
        workers: indexes of the workers to run here (default: all); links toward the
            others lead to inboxes nobody reads (see :meth:`inbox`).
        clock: the executor loops' time source, and every timer's unless ``timers`` is
            given (default: a :class:`ManualClock`).
        timers: topology time apart from the loop (ticks, message timeouts, checkpoint
            intervals, windows), as a LocalCluster with simulated time runs it.
        start: call ``prepare`` / ``open`` at once (default True).
        link_capacity: frames a link holds before it reports full.
        on_turn: called with ``(worker index, now)`` after each executor turn.
        state_id: whose checkpoints a checkpointed topology uses (default: fresh ones; pass
            another runner's :attr:`state_id` to restore what it stored).
    """

    def __init__(
        self,
        topology: Topology,
        conf: Mapping[str, Any] | None = None,
        workers: Iterable[int] | None = None,
        clock: Callable[[], float] | None = None,
        start: bool = True,
        link_capacity: int = DEFAULT_LINK_FRAMES,
        name: str = "inprocess",
        on_turn: Callable[[int, float], None] | None = None,
        state_id: str | None = None,
        timers: Callable[[], float] | None = None,
    ) -> None:
        self.timers = timers
        self.conf = cfg.resolve(conf, where=f"topology {name!r}")
        self.topology = topology
        self.clock: Callable[[], float] = clock if clock is not None else ManualClock()
        self.assignment: Assignment = assign(
            task_counts(topology, self.conf), self.conf[cfg.TOPOLOGY_WORKERS]
        )
        total = self.assignment.num_workers
        self.inboxes = [MemoryInbox() for _ in range(total)]
        self.errors: list[tuple[str, int, str]] = []
        self.waiters: dict[int, RecordingWaiter] = {}
        self.links: dict[tuple[int, int], MemoryLink] = {}
        self.workers: dict[int, AssembledWorker] = {}
        self._name = name
        #: Whose checkpoints the workers use (default: this runner's own).
        self.state_id = state_id or f"{name}-{uuid.uuid4().hex[:12]}"
        self._active = False
        self._hook = on_turn or (lambda worker, now: None)
        for index in sorted(set(range(total) if workers is None else workers)):
            for peer in range(total):
                if peer != index:
                    self.links[(index, peer)] = MemoryLink(self.inboxes[peer], link_capacity)
            self.workers[index] = self._assemble(index)
        now = self.clock()
        self._recorders = {
            task.task_id: StatsRecorder(now) for w in self.workers.values() for task in w.tasks()
        }
        if start:
            self.start()

    def _assemble(self, index: int) -> AssembledWorker:
        senders = {peer: link for (src, peer), link in self.links.items() if src == index}
        waiter = self.waiters[index] = RecordingWaiter()
        setup = WorkerSetup(
            self._name, self.topology, self.conf, self.assignment, index, state_id=self.state_id
        )
        return assemble_worker(
            setup,
            receiver=self.inboxes[index],
            token=self.inboxes[index].token,
            waiter=waiter,
            senders=senders,
            report=self._report,
            on_turn=lambda now, i=index: self._hook(i, now),  # type: ignore[misc]
            clock=self.clock,
            wall_clock=self.clock if self.timers is None else self.timers,
            timers=self.timers,
        )

    def restart_worker(
        self, index: int, start: bool = True, announce: bool = True
    ) -> AssembledWorker:
        """Replace worker ``index`` by a fresh one, as after ``kill -9`` and a relaunch:
        what it held (tasks' memory, queued tuples, frames in its inbox) is gone, it has a
        new data token, and links from it carry on.  ``announce``: the links toward it
        learn its token at once (else they hold what they have for it until
        :meth:`announce`).  Returns the new worker (``start``: prepared / opened already)."""
        inbox = self.inboxes[index]
        inbox.frames.clear()
        inbox.token = new_token()
        for (_, dest), link in self.links.items():
            if dest == index:
                link.token = None  # its peers were told it died
        if announce:
            self.announce(index)
        worker = self.workers[index] = self._assemble(index)
        now = self.clock()
        for task in worker.tasks():
            self._recorders[task.task_id] = StatsRecorder(now)
        if start:
            worker.start()
            for spout in worker.spouts:
                spout.set_active(self._active, worker.executor.clock())
        return worker

    def announce(self, index: int) -> None:
        """The links toward worker ``index`` learn its current data token (as a ``peers``
        command tells a real worker's peers): their workers send what they held for it
        at their next turn."""
        for (_, dest), link in self.links.items():
            if dest == index:
                link.token = self.inboxes[index].token

    def _report(self, component: str, task: int, error: BaseException | str) -> None:
        self.errors.append((component, task, error_text(error)))

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """``prepare`` every bolt and ``open`` every spout of every worker run here."""
        for worker in self.workers.values():
            worker.start()

    def activate(self, active: bool = True) -> None:
        """Let spouts emit (or stop them: ``active=False``)."""
        self._active = active
        for worker in self.workers.values():
            for spout in worker.spouts:
                spout.set_active(active, worker.executor.clock())

    def turn(self, turns: int = 1) -> None:
        """Run ``turns`` executor turns on every worker, in worker order."""
        for _ in range(turns):
            for worker in self.workers.values():
                worker.executor.turn()

    def run_until(
        self, done: Callable[[], bool], max_turns: int = 10_000, advance: float = 0.0
    ) -> int:
        """Turn until ``done()`` holds; return the turns taken (AssertionError past
        ``max_turns``).  ``advance``: seconds the :class:`ManualClock` moves before each
        turn (ticks, timeouts and windows then see time pass)."""
        clock = self.clock
        if advance and not isinstance(clock, ManualClock):
            raise TypeError("run_until(advance=...) needs the runner's ManualClock")
        for turns in range(max_turns):
            if done():
                return turns
            if advance:
                clock.advance(advance)  # type: ignore[attr-defined]
            self.turn()
        raise AssertionError(f"condition not met within {max_turns} turns")

    # -- access -------------------------------------------------------------------------

    def worker(self, index: int = 0) -> AssembledWorker:
        return self.workers[index]

    def inbox(self, index: int) -> MemoryInbox:
        return self.inboxes[index]

    def link(self, source: int, dest: int) -> MemoryLink:
        return self.links[(source, dest)]

    def task(self, component: str, index: int = 0) -> SpoutTask | BoltTask:
        """The ``index``-th task (by task id) of ``component`` among the workers run here."""
        tasks = sorted(
            (t for w in self.workers.values() for t in w.tasks() if t.component == component),
            key=lambda t: t.task_id,
        )
        if not tasks:
            raise KeyError(f"no task of component {component!r} runs in this runner")
        return tasks[index]

    def instance(self, component: str, index: int = 0) -> Any:
        """The user's component object of that task (its state, for assertions)."""
        return self.task(component, index).instance

    def status(self) -> list[dict[str, Any]]:
        """Every worker's status reply (as ``LocalCluster.worker_status`` returns them)."""
        now = self.clock()
        return [worker_status(w, self._recorders, now) for w in self.workers.values()]
