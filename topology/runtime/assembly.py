"""Assembling one worker's runtime from its :class:`WorkerSetup` (pure: no sockets, no I/O).

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from acker import ACKER_COMPONENT, WorkerAcking
from topology import config as cfg
from topology.assignment import Assignment
from topology.constants import SYSTEM_COMPONENT, SYSTEM_TASK_ID
from topology.context import TopologyContext
from topology.metrics import MetricsRegistry
from topology.spec import Topology
from topology.state import checkpoint as ck
from topology.state.backends import open_backend
from topology.state.writer import InlineWriter, ThreadWriter
from topology.windows.bolt import WindowedBolt

from .checkpointing import WorkerCheckpoints
from .collector import BoltCollector, ErrorReport, SpoutCollector
from .executor import Executor, Receiver, Waiter
from .frames import DropCounter, FrameCheck, inbound_routes
from .routing import build_routes
from .tasks import BoltTask, SpoutTask
from .transfer import Sender, Transfer


@dataclass
class WorkerSetup:
    """Everything a worker needs to start: what to run and where it sits."""

    topology_name: str
    topology: Topology
    conf: dict[str, Any]
    assignment: Assignment
    worker_index: int
    #: The cluster secret (turns on ZeroMQ CURVE between workers); never in ``conf``.
    secret: bytes | None = None
    #: Whose checkpoints this topology reads and writes (the topology id on a cluster, so
    #: restarts, rebalances and nimbus failovers find them); None: the topology name.
    state_id: str | None = None

    def system_task(self) -> int:
        """The (negative) source task id of this worker's own system traffic."""
        return -1 - self.worker_index


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
        """``prepare`` every bolt, then ``open`` every spout (user code runs here)."""
        for bolt in self.bolts.values():
            bolt.prepare(self.task_confs[bolt.task_id])
        for spout in self.spouts:
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


def assemble_worker(
    setup: WorkerSetup,
    receiver: Receiver,
    waiter: Waiter,
    senders: Mapping[int, Sender],
    report: ErrorReport,
    on_turn: Callable[[float], None],
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    timers: Callable[[], float] | None = None,
) -> AssembledWorker:
    """Build the tasks of worker ``setup.worker_index`` around the given I/O.

    ``senders`` maps every *other* worker index to the sender toward it; ``report(component,
    task, text)`` receives errors from user code; ``on_turn(now)`` runs after each executor
    turn (control and stats); ``clock`` paces the executor loop, ``timers`` (default:
    ``clock``) is topology time — ticks, message timeouts, checkpoint intervals — and
    ``wall_clock`` the processing time of windowed bolts (seconds since the epoch).  A test
    simulating time passes its simulated clock as ``timers`` and ``wall_clock``.
    """
    topology, assignment, conf = setup.topology, setup.assignment, setup.conf
    index = setup.worker_index
    my_tasks = assignment.worker_tasks[index]
    worker_tasks = frozenset(my_tasks)
    timers = clock if timers is None else timers
    now = timers()
    inbound: deque[list[Any]] = deque()
    transferred = TransferCounts()
    checkpointed = ck.COORDINATOR_COMPONENT in assignment.component_tasks
    worker_of = assignment.worker_of()
    if checkpointed:  # checkpoint control goes to workers' system tasks too
        worker_of.update({-1 - w: w for w in range(assignment.num_workers)})
    transfer = Transfer(
        index,
        worker_of,
        senders,
        inbound,
        conf[cfg.TOPOLOGY_TRANSFER_BATCH_SIZE],
        conf[cfg.TOPOLOGY_FLUSH_INTERVAL_MILLIS] / 1000.0,
        transferred,
        max_frame_bytes=int(conf[cfg.TOPOLOGY_MAX_FRAME_BYTES]),
        on_oversized=lambda src, stream, text: report(
            assignment.task_component.get(src, SYSTEM_COMPONENT), src, text
        ),
    )
    acking = _acking(setup, now)
    # Windowed bolts hold tuples until they leave their windows: a cap derived from the
    # completion rate would starve the spouts that fill those windows.
    holds_tuples = any(isinstance(c.instance, WindowedBolt) for c in topology.components.values())
    spouts: list[SpoutTask] = []
    bolts: dict[int, BoltTask] = {}
    ticks: dict[int, float] = {}
    task_confs: dict[int, dict[str, Any]] = {}
    for task_id in my_tasks:
        component_id = assignment.task_component[task_id]
        if component_id in (ACKER_COMPONENT, ck.COORDINATOR_COMPONENT):
            continue
        component = topology.components[component_id]
        with warnings.catch_warnings():  # already warned once, at submit
            warnings.simplefilter("ignore")
            task_conf = cfg.component_conf(conf, component_id, component.conf)
        context = TopologyContext(
            topology_name=setup.topology_name,
            component_id=component_id,
            task_id=task_id,
            task_index=assignment.component_tasks[component_id].index(task_id),
            worker_index=index,
            worker_tasks=tuple(my_tasks),
            _topology=topology,
            _assignment=assignment,
            metrics=MetricsRegistry(component_id),
        )
        routes = build_routes(topology, assignment, component_id, task_id, transfer, worker_tasks)
        options = {
            "serialize_local": bool(task_conf[cfg.TOPOLOGY_ALWAYS_TRY_SERIALIZE]),
            "debug": bool(task_conf[cfg.TOPOLOGY_DEBUG]),
        }
        instance = copy.deepcopy(component.instance)
        task: SpoutTask | BoltTask
        if component.kind == "spout":
            spout_acking = None
            if acking is not None:
                spout_acking = acking.for_spout(
                    task_id,
                    now,
                    task_conf[cfg.TOPOLOGY_MAX_SPOUT_PENDING],
                    bool(task_conf[cfg.TOPOLOGY_ADAPTIVE_PENDING]) and not holds_tuples,
                )
            collector = SpoutCollector(
                component_id, task_id, routes, report, acking=spout_acking, clock=timers, **options
            )
            task = SpoutTask(instance, context, collector)  # type: ignore[arg-type]
            spouts.append(task)
        else:
            bolt_acking = acking.for_bolt(component_id, task_id) if acking is not None else None
            bolt_collector = BoltCollector(
                component_id, task_id, routes, report, acking=bolt_acking, **options
            )
            task = BoltTask(instance, context, bolt_collector, topology)  # type: ignore[arg-type]
            bolts[task_id] = task
            freq = task_conf.get(cfg.TOPOLOGY_TICK_TUPLE_FREQ_SECS)
            if isinstance(instance, WindowedBolt):  # its timer: watermarks, firings
                instance.start_windows(context, wall_clock)
                freq = min(float(freq or math.inf), instance.timer_secs())
            if freq:
                ticks[task_id] = float(freq)
        transferred.by_task[task_id] = task.stats.transferred
        task_confs[task_id] = task_conf
    checkpoints = None
    if checkpointed:
        checkpoints = WorkerCheckpoints(
            index,
            topology,
            assignment,
            spouts,
            bolts,
            transfer,
            open_backend(conf, setup.state_id or setup.topology_name),
            InlineWriter() if conf[cfg.STATE_PROVIDER] == "memory" else ThreadWriter(),
            report,
            conf,
            now,
            timers,
        )
    executor = Executor(
        index,
        spouts,
        bolts,
        transfer,
        inbound,
        receiver,
        waiter,
        conf,
        ticks,
        on_turn,
        frame_check=_frame_check(setup),
        drops=DropCounter(lambda text: report(SYSTEM_COMPONENT, SYSTEM_TASK_ID, text)),
        clock=clock,
        acking=acking,
        checkpoints=checkpoints,
        timers=timers,
    )
    return AssembledWorker(
        setup, executor, spouts, bolts, acking, task_confs, transferred, checkpoints
    )


def collect_results(worker: AssembledWorker) -> dict[str, Any]:
    """``collect_results()`` of tasks that define it (testing helpers): ``{"worker",
    "results": {component: {task: result}}}``."""
    results: dict[str, dict[int, Any]] = {}
    for task in worker.tasks():
        fn = getattr(task.instance, "collect_results", None)
        if callable(fn):
            results.setdefault(task.component, {})[task.task_id] = fn()
    return {"worker": worker.setup.worker_index, "results": results}


def _frame_check(setup: WorkerSetup) -> FrameCheck:
    """What this worker accepts from the network (see :mod:`topology.runtime.frames`)."""
    assignment = setup.assignment
    return FrameCheck(
        worker=setup.worker_index,
        workers=assignment.num_workers,
        routes=inbound_routes(setup.topology, assignment, setup.worker_index),
        max_frame_bytes=int(setup.conf[cfg.TOPOLOGY_MAX_FRAME_BYTES]),
        checkpointed=ck.COORDINATOR_COMPONENT in assignment.component_tasks,
    )


def _acking(setup: WorkerSetup, now: float) -> WorkerAcking | None:
    """The worker's acking layer, or None when the topology runs without ackers."""
    assignment, conf = setup.assignment, setup.conf
    acker_tasks = assignment.component_tasks.get(ACKER_COMPONENT, [])
    if not acker_tasks:
        return None
    mine = set(assignment.worker_tasks[setup.worker_index])
    return WorkerAcking(
        acker_tasks,
        [t for t in acker_tasks if t in mine],
        setup.system_task(),
        float(conf[cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS]),
        now,
        bool(conf[cfg.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS]),
    )
