"""Assembling one worker's runtime from its :class:`~.settings.WorkerSetup` (pure: no
sockets, no I/O).

:func:`assemble_worker` builds every task of one worker — user component copies, their
collectors and routes, the acking layer, the lanes, the executor — around I/O objects
passed in (a frame receiver, a waiter, one sender per peer).  The real worker passes ZeroMQ
sockets; the in-process runner and the tests pass memory queues and a simulated clock.  It
calls no user code: ``open`` / ``prepare`` run in :meth:`AssembledWorker.start`.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from acker import (
    ACKER_COMPONENT,
    NO_BOLT_ACKING,
    NO_SPOUT_ACKING,
    NoSpoutAcking,
    SpoutAcking,
    WorkerAcking,
)
from topology import config as cfg
from topology.constants import SYSTEM_COMPONENT, SYSTEM_TASK_ID
from topology.context import TopologyContext
from topology.errors import ComponentStartError
from topology.metrics import MetricsRegistry
from topology.state import checkpoint as ck
from topology.windows.bolt import WindowedBolt

from .checkpoint.agent import checkpoint_agent
from .checkpoint.hooks import NO_CHECKPOINTS, UNSTAMPED, FrameStamp, RecoveryEpoch
from .checkpoint.worker import WorkerCheckpoints
from .net.frames import DropCounter, FrameCheck, inbound_routes
from .net.transfer import Sender, Transfer
from .settings import TaskSettings, WorkerSetup
from .tasks.collector import BoltCollector, ErrorReport, SpoutCollector
from .tasks.executor import Executor, Receiver, Waiter
from .tasks.failures import Parking
from .tasks.routing import StreamRoute, build_routes
from .tasks.task import BoltTask, SpoutTask


@dataclass
class TransferCounts:
    """Tuples that left each task's lanes, per stream (stats); ``system`` for ack traffic."""

    by_task: dict[int, dict[str, int]] = field(default_factory=dict)
    system: dict[str, int] = field(default_factory=dict)

    def __call__(self, src: int, stream: str, n: int) -> None:
        counts = self.by_task.get(src, self.system)
        counts[stream] = counts.get(stream, 0) + n


@dataclass
class AssembledWorker:
    """One worker's runtime, ready to :meth:`start` and then run its :attr:`executor`."""

    setup: WorkerSetup
    executor: Executor
    spouts: list[SpoutTask]
    bolts: dict[int, BoltTask]
    acking: WorkerAcking | None
    task_confs: dict[int, dict[str, Any]]
    transferred: TransferCounts
    checkpoints: WorkerCheckpoints | None = None

    def tasks(self) -> list[SpoutTask | BoltTask]:
        """Every spout and bolt task (not the acker tasks)."""
        return [*self.spouts, *self.bolts.values()]

    def start(self) -> None:
        """``prepare`` every bolt, then ``open`` every spout (user code runs here); one that
        raises stops the start with a :class:`ComponentStartError` naming it and its task."""
        for bolt in self.bolts.values():
            with _starting("bolt", bolt.component, bolt.task_id, "prepare"):
                bolt.prepare(self.task_confs[bolt.task_id])
        for spout in self.spouts:
            with _starting("spout", spout.component, spout.task_id, "open"):
                spout.open(self.task_confs[spout.task_id])

    def shut_down(self, now: float) -> None:
        """Deactivate and close spouts, clean up bolts, send what is still in lanes."""
        for spout in self.spouts:
            spout.set_active(False)
            spout.close()
        for bolt in self.bolts.values():
            bolt.cleanup()
        self.executor.transfer.flush_remote(now, force=True)
        if self.checkpoints is not None:
            self.checkpoints.close()


@contextmanager
def _starting(kind: str, component: str, task: int, call: str) -> Iterator[None]:
    """Raise what the author's ``call`` raised as a :class:`ComponentStartError` naming the
    component: a worker that fails to start then says which one."""
    try:
        yield
    except Exception as exc:
        raise ComponentStartError(
            f"{kind} {component!r} task {task}: {call} raised {type(exc).__name__}: {exc}"
        ) from exc


def assemble_worker(
    setup: WorkerSetup,
    *,
    receiver: Receiver,
    token: bytes,
    waiter: Waiter,
    senders: Mapping[int, Sender],
    report: ErrorReport,
    on_turn: Callable[[float], None],
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    timers: Callable[[], float] | None = None,
) -> AssembledWorker:
    """Build the tasks of worker ``setup.worker_index`` around the given I/O.

    ``token`` is this worker process's data token: the door lets in only ``receiver``'s
    frames that come with it (:mod:`~.net.data_token`).  ``senders`` maps every *other*
    worker index to the sender toward it (which stamps that worker's token); ``report(component,
    task, text)`` receives errors from user code; ``on_turn(now)`` runs after each executor
    turn (control and stats); ``clock`` paces the executor loop, ``timers`` (default:
    ``clock``) is topology time — ticks, message timeouts, checkpoint intervals — and
    ``wall_clock`` the processing time of windowed bolts (seconds since the epoch).  A test
    simulating time passes its simulated clock as ``timers`` and ``wall_clock``.
    """
    settings = setup.settings
    timers = clock if timers is None else timers
    now = timers()
    inbound: deque[list[Any]] = deque()
    transferred = TransferCounts()
    checkpointed = ck.COORDINATOR_COMPONENT in setup.assignment.component_tasks
    stamp = RecoveryEpoch() if checkpointed else UNSTAMPED
    transfer = _transfer(
        setup, senders=senders, inbound=inbound, transferred=transferred, report=report, stamp=stamp
    )
    checkpoints = None
    if isinstance(stamp, RecoveryEpoch):
        checkpoints = checkpoint_agent(setup, transfer, stamp, report, now, timers, wall_clock)
    parking = Parking()
    builder = _TaskBuilder(
        setup=setup,
        transfer=transfer,
        report=report,
        now=now,
        timers=timers,
        wall_clock=wall_clock,
        acking=_acking(setup, now),
        checkpoints=checkpoints,
        transferred=transferred,
        parking=parking,
    )
    builder.build_all()
    executor = Executor(
        worker_index=setup.worker_index,
        spouts=builder.spouts,
        bolts=builder.bolts,
        transfer=transfer,
        inbound=inbound,
        receiver=receiver,
        waiter=waiter,
        settings=settings,
        tick_freqs=builder.ticks,
        on_turn=on_turn,
        frame_check=_frame_check(setup, token),
        drops=DropCounter(lambda text: report(SYSTEM_COMPONENT, SYSTEM_TASK_ID, text)),
        clock=clock,
        acking=builder.acking,
        checkpoints=NO_CHECKPOINTS if checkpoints is None else checkpoints,
        timers=timers,
        parking=parking,
    )
    return AssembledWorker(
        setup=setup,
        executor=executor,
        spouts=builder.spouts,
        bolts=builder.bolts,
        acking=builder.acking,
        task_confs=builder.task_confs,
        transferred=transferred,
        checkpoints=checkpoints,
    )


def _transfer(
    setup: WorkerSetup,
    *,
    senders: Mapping[int, Sender],
    inbound: deque[list[Any]],
    transferred: TransferCounts,
    report: ErrorReport,
    stamp: FrameStamp,
) -> Transfer:
    """The worker's lanes toward every task (checkpoint control goes to workers' system
    tasks too)."""
    assignment, settings = setup.assignment, setup.settings
    worker_of = assignment.worker_of()
    if isinstance(stamp, RecoveryEpoch):
        worker_of.update({-1 - w: w for w in range(assignment.num_workers)})
    return Transfer(
        setup.worker_index,
        worker_of,
        senders,
        inbound,
        settings.transfer_batch_size,
        settings.flush_interval_secs,
        transferred,
        max_frame_bytes=settings.max_frame_bytes,
        on_oversized=lambda src, stream, text: report(
            assignment.task_component.get(src, SYSTEM_COMPONENT), src, text
        ),
        stamp=stamp,
    )


@dataclass(kw_only=True)
class _TaskBuilder:
    """Builds the spout and bolt tasks of one worker (not its acker or coordinator
    tasks) around the worker's transfer, acking layer and checkpoint agent."""

    setup: WorkerSetup
    transfer: Transfer
    report: ErrorReport
    now: float
    timers: Callable[[], float]
    wall_clock: Callable[[], float]
    acking: WorkerAcking | None
    checkpoints: WorkerCheckpoints | None
    transferred: TransferCounts
    #: The worker's inputs waiting for another attempt (:mod:`~topology.runtime.tasks.failures`).
    parking: Parking
    spouts: list[SpoutTask] = field(default_factory=list)
    bolts: dict[int, BoltTask] = field(default_factory=dict)
    #: Bolt task -> seconds between its tick tuples.
    ticks: dict[int, float] = field(default_factory=dict)
    task_confs: dict[int, dict[str, Any]] = field(default_factory=dict)

    def build_all(self) -> None:
        """Every spout and bolt task of the worker, in task order."""
        setup = self.setup
        topology, assignment = setup.topology, setup.assignment
        my_tasks = assignment.worker_tasks[setup.worker_index]
        worker_tasks = frozenset(my_tasks)
        for task_id in my_tasks:
            component_id = assignment.task_component[task_id]
            if component_id in (ACKER_COMPONENT, ck.COORDINATOR_COMPONENT):
                continue
            component = topology.components[component_id]
            with warnings.catch_warnings():  # already warned once, at submit
                warnings.simplefilter("ignore")
                task_conf = cfg.component_conf(setup.conf, component_id, component.conf)
            context = TopologyContext(
                topology_name=setup.topology_name,
                component_id=component_id,
                task_id=task_id,
                task_index=assignment.component_tasks[component_id].index(task_id),
                worker_index=setup.worker_index,
                worker_tasks=tuple(my_tasks),
                _topology=topology,
                _assignment=assignment,
                metrics=MetricsRegistry(component_id),
            )
            routes = build_routes(
                topology,
                assignment,
                component_id,
                task_id,
                self.transfer,
                worker_tasks,
                key_groups=int(setup.conf[cfg.STATE_MAX_PARALLELISM]),
            )
            instance = copy.deepcopy(component.instance)
            build = self._spout if component.kind == "spout" else self._bolt
            task = build(instance, context, routes, TaskSettings.from_conf(task_conf))
            self.transferred.by_task[task_id] = task.stats.transferred
            self.task_confs[task_id] = task_conf

    def _spout(
        self,
        instance: Any,
        context: TopologyContext,
        routes: dict[str, StreamRoute],
        settings: TaskSettings,
    ) -> SpoutTask:
        task_id, acking, checkpoints = context.task_id, self.acking, self.checkpoints
        spout_acking: SpoutAcking | NoSpoutAcking = NO_SPOUT_ACKING
        if acking is not None:
            spout_acking = acking.for_spout(
                task_id,
                self.now,
                settings.max_spout_pending,
                settings.adaptive_pending and not self._holds_tuples(),
                settings.auto_pending and not self._holds_tuples(),
            )
        collector = SpoutCollector(
            context.component_id,
            task_id,
            routes,
            self.report,
            acking=spout_acking,
            clock=self.timers,
            epochs=None if checkpoints is None else checkpoints.spout_epochs(),
            on_fail=None if checkpoints is None else checkpoints.tuple_failed,
            serialize_local=settings.serialize_local,
            debug=settings.debug,
        )
        task = SpoutTask(instance, context, collector)
        self.spouts.append(task)
        if checkpoints is not None:
            checkpoints.add_spout(task)
        return task

    def _bolt(
        self,
        instance: Any,
        context: TopologyContext,
        routes: dict[str, StreamRoute],
        settings: TaskSettings,
    ) -> BoltTask:
        component_id, task_id = context.component_id, context.task_id
        acking, checkpoints = self.acking, self.checkpoints
        collector = BoltCollector(
            component_id,
            task_id,
            routes,
            self.report,
            acking=NO_BOLT_ACKING if acking is None else acking.for_bolt(component_id, task_id),
            on_fail=None if checkpoints is None else checkpoints.tuple_failed,
            serialize_local=settings.serialize_local,
            debug=settings.debug,
        )
        aligner = None if checkpoints is None else checkpoints.aligner(component_id)
        task = BoltTask(
            instance,
            context,
            collector,
            self.setup.topology,
            aligner=aligner,
            policy=settings.failure_policy,
            parking=self.parking,
            clock=self.timers,
            wall_clock=self.wall_clock,
        )
        self.bolts[task_id] = task
        freq = settings.tick_freq_secs
        if isinstance(instance, WindowedBolt):  # its timer: watermarks, firings
            instance.start_windows(context, self.wall_clock)
            freq = min(float(freq or math.inf), instance.timer_secs())
        if freq:
            self.ticks[task_id] = float(freq)
        if checkpoints is not None:
            checkpoints.add_bolt(task)
        return task

    def _holds_tuples(self) -> bool:
        """Whether a windowed bolt holds tuples until they leave its windows: a pending cap
        derived from the completion rate would starve the spouts that fill them."""
        components = self.setup.topology.components.values()
        return any(isinstance(c.instance, WindowedBolt) for c in components)


def collect_results(worker: AssembledWorker) -> dict[str, Any]:
    """``collect_results()`` of tasks that define it (testing helpers): ``{"worker",
    "results": {component: {task: result}}}``."""
    results: dict[str, dict[int, Any]] = {}
    for task in worker.tasks():
        fn = getattr(task.instance, "collect_results", None)
        if callable(fn):
            results.setdefault(task.component, {})[task.task_id] = fn()
    return {"worker": worker.setup.worker_index, "results": results}


def _frame_check(setup: WorkerSetup, token: bytes) -> FrameCheck:
    """What this worker accepts from the network (see
    :mod:`topology.runtime.net.frames`)."""
    assignment = setup.assignment
    return FrameCheck(
        worker=setup.worker_index,
        workers=assignment.num_workers,
        routes=inbound_routes(setup.topology, assignment, setup.worker_index),
        max_frame_bytes=setup.settings.max_frame_bytes,
        checkpointed=ck.COORDINATOR_COMPONENT in assignment.component_tasks,
        token=token,
    )


def _acking(setup: WorkerSetup, now: float) -> WorkerAcking | None:
    """The worker's acking layer, or None when the topology runs without ackers."""
    assignment, settings = setup.assignment, setup.settings
    acker_tasks = assignment.component_tasks.get(ACKER_COMPONENT, [])
    if not acker_tasks:
        return None
    mine = set(assignment.worker_tasks[setup.worker_index])
    return WorkerAcking(
        acker_tasks,
        [t for t in acker_tasks if t in mine],
        setup.system_task(),
        settings.message_timeout_secs,
        now,
        settings.enable_message_timeouts,
    )
