"""A worker: hosts a set of tasks in one executor loop and talks to its cluster.

The same :class:`Worker` runs in a subprocess (LocalCluster), and later inside a Spark
task: everything it needs arrives in a :class:`WorkerSpec`, and everything it says to the
cluster goes through a :class:`ClusterClient`.
"""

from __future__ import annotations

import copy
import gc
import os
import socket
import sys
import time
import warnings
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from acker import ACKER_COMPONENT, AckerTask, AckOutbox, PendingTrees
from topology import config as cfg
from topology.assignment import Assignment
from topology.context import TopologyContext
from topology.spec import Topology
from topology.stats.rolling import StatsRecorder
from topology.stats.task_status import task_entry

from .collector import BoltCollector, SpoutCollector
from .executor import Executor
from .routing import build_routes
from .tasks import BoltTask, SpoutTask
from .transfer import Transfer
from .transport import DataReceiver, DataSender, Poller

CONTROL_INTERVAL = 0.01
ERRORS_PER_SECOND = 20


@dataclass
class WorkerSpec:
    """Everything a worker needs to start: what to run and where it sits."""

    topology_name: str
    topology: Topology
    conf: dict[str, Any]
    assignment: Assignment
    worker_index: int


class ClusterClient(Protocol):
    """The worker's line to whoever coordinates it (LocalCluster now, ZooKeeper later)."""

    socket: Any

    def register(self, worker_index: int, endpoint: str, info: dict[str, Any]) -> dict[int, str]:
        """Announce this worker's endpoint; return every worker's endpoint (blocks)."""
        ...

    def poll_commands(self) -> list[dict[str, Any]]:
        """Commands received since the last call (never blocks)."""
        ...

    def send(self, message: dict[str, Any]) -> None:
        """Report something (error, status reply, result) to the cluster."""
        ...


def tune_gc() -> None:
    """Fewer cyclic-GC passes in a worker process.

    The executor allocates many short-lived containers (tuples, value lists, envelopes) that
    reference counting frees at once; with default thresholds the cycle collector runs every
    700 allocations and costs 10-20% of acked throughput.  Objects alive at start-up are
    frozen out of collection.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


class ErrorReporter:
    """Sends errors to the cluster, at most ``ERRORS_PER_SECOND``; counts the rest."""

    def __init__(self, client: ClusterClient, topology: str, worker: int) -> None:
        self._client = client
        self._topology = topology
        self._worker = worker
        self.host = socket.gethostname()
        self._window = 0.0
        self._sent_in_window = 0
        self.suppressed = 0

    def __call__(self, component: str, task: int, text: str) -> None:
        now = time.time()
        if now - self._window >= 1.0:
            self._window, self._sent_in_window = now, 0
        if self._sent_in_window >= ERRORS_PER_SECOND:
            self.suppressed += 1
            return
        self._sent_in_window += 1
        print(f"[{component}:{task}] error: {text}", file=sys.stderr, flush=True)
        self._client.send(
            {
                "type": "error",
                "topology": self._topology,
                "component": component,
                "task": task,
                "worker": self._worker,
                "host": self.host,
                "pid": os.getpid(),
                "time": now,
                "text": text,
            }
        )


class Worker:
    """Builds the tasks of one worker and runs them until told to stop."""

    def __init__(self, spec: WorkerSpec, client: ClusterClient) -> None:
        self.spec = spec
        self.client = client
        self.conf = spec.conf
        self.index = spec.worker_index
        self.executor: Executor | None = None
        self.senders: dict[int, DataSender] = {}
        self._last_control = 0.0
        self._report = ErrorReporter(client, spec.topology_name, spec.worker_index)
        self._started = time.monotonic()
        self._stats_interval = float(spec.conf[cfg.TOPOLOGY_STATS_INTERVAL_SECS])
        self._next_stats = self._started + self._stats_interval
        self._recorders: dict[int, StatsRecorder] = {}

    def run(self) -> None:
        """Bind, register, build tasks, run the loop; clean up on the way out."""
        tune_gc()
        conf = self.conf
        receiver = DataReceiver(conf[cfg.LOCAL_HOSTNAME], conf[cfg.TOPOLOGY_TRANSFER_BUFFER_SIZE])
        senders: dict[int, DataSender] = {}
        try:
            info = {"pid": os.getpid(), "host": socket.gethostname()}
            endpoints = self.client.register(self.index, receiver.endpoint, info)
            hwm = conf[cfg.TOPOLOGY_TRANSFER_BUFFER_SIZE]
            senders = {w: DataSender(ep, hwm) for w, ep in endpoints.items() if w != self.index}
            self.senders = senders
            self.executor = self._build(receiver, senders)
            self._start_tasks()
            self.client.send({"type": "ready", "worker": self.index})
            self.executor.run()
            self._shutdown_tasks()
        finally:
            for s in senders.values():
                s.close()
            receiver.close()

    # -- assembly ---------------------------------------------------------------------

    def _build(self, receiver: DataReceiver, senders: dict[int, DataSender]) -> Executor:
        spec, conf = self.spec, self.conf
        topology, assignment = spec.topology, spec.assignment
        my_tasks = assignment.worker_tasks[self.index]
        worker_tasks = frozenset(my_tasks)
        inbound: deque[list[Any]] = deque()
        self._stats_by_task: dict[int, Any] = {}
        self._system_transferred: dict[str, int] = {}
        transfer = Transfer(
            self.index,
            assignment.worker_of(),
            senders,
            inbound,
            conf[cfg.TOPOLOGY_TRANSFER_BATCH_SIZE],
            conf[cfg.TOPOLOGY_FLUSH_INTERVAL_MILLIS] / 1000.0,
            self._count_transferred,
        )
        spouts: list[SpoutTask] = []
        bolts: dict[int, BoltTask] = {}
        ackers: dict[int, AckerTask] = {}
        ticks: dict[int, float] = {}
        self._task_confs: dict[int, dict[str, Any]] = {}
        acker_tasks = assignment.component_tasks.get(ACKER_COMPONENT, [])
        acks = AckOutbox(acker_tasks) if acker_tasks else None
        timeout = float(conf[cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS])
        timeouts_on = bool(conf[cfg.TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS])
        now = time.monotonic()
        for task_id in my_tasks:
            component_id = assignment.task_component[task_id]
            if component_id == ACKER_COMPONENT:
                ackers[task_id] = AckerTask(task_id, timeout, now, timeouts_on)
                continue
            component = topology.components[component_id]
            with warnings.catch_warnings():  # already warned once, at submit
                warnings.simplefilter("ignore")
                task_conf = cfg.component_conf(conf, component_id, component.conf)
            context = TopologyContext(
                topology_name=spec.topology_name,
                component_id=component_id,
                task_id=task_id,
                task_index=assignment.component_tasks[component_id].index(task_id),
                worker_index=self.index,
                worker_tasks=tuple(my_tasks),
                _topology=topology,
                _assignment=assignment,
            )
            routes = build_routes(
                topology, assignment, component_id, task_id, transfer, worker_tasks
            )
            args = (component_id, task_id, routes, self._report)
            serialize_local = bool(task_conf[cfg.TOPOLOGY_ALWAYS_TRY_SERIALIZE])
            debug = bool(task_conf[cfg.TOPOLOGY_DEBUG])
            instance = copy.deepcopy(component.instance)
            task: SpoutTask | BoltTask
            if component.kind == "spout":
                pending = None
                if acks is not None:
                    pending = PendingTrees(
                        timeout,
                        now,
                        timeouts_on,
                        task_conf[cfg.TOPOLOGY_MAX_SPOUT_PENDING],
                        bool(task_conf[cfg.TOPOLOGY_ADAPTIVE_PENDING]),
                    )
                collector = SpoutCollector(
                    *args, acks=acks, pending=pending, serialize_local=serialize_local, debug=debug
                )
                task = SpoutTask(instance, context, collector)  # type: ignore[arg-type]
                spouts.append(task)
            else:
                bolt_collector = BoltCollector(
                    *args, acks=acks, serialize_local=serialize_local, debug=debug
                )
                task = BoltTask(instance, context, bolt_collector, topology)  # type: ignore[arg-type]
                bolts[task_id] = task
                freq = task_conf.get(cfg.TOPOLOGY_TICK_TUPLE_FREQ_SECS)
                if freq:
                    ticks[task_id] = float(freq)
            self._stats_by_task[task_id] = task.stats
            self._recorders[task_id] = StatsRecorder(now)
            self._task_confs[task_id] = task_conf
        self.spouts, self.bolts = spouts, bolts
        return Executor(
            self.index,
            spouts,
            bolts,
            transfer,
            inbound,
            receiver,
            Poller(receiver.socket, self.client.socket),
            conf,
            ticks,
            self._on_turn,
            acks=acks,
            ackers=ackers,
            system_src=-1 - self.index,
        )

    def tasks(self) -> list[SpoutTask | BoltTask]:
        """Every spout and bolt task of this worker (not the acker tasks)."""
        return [*self.spouts, *self.bolts.values()]

    def _count_transferred(self, src: int, stream: str, n: int) -> None:
        stats = self._stats_by_task.get(src)
        t = stats.transferred if stats is not None else self._system_transferred
        t[stream] = t.get(stream, 0) + n

    def _start_tasks(self) -> None:
        for bolt in self.bolts.values():
            bolt.prepare(self._task_confs[bolt.task_id])
        for spout in self.spouts:
            spout.open(self._task_confs[spout.task_id])

    def _shutdown_tasks(self) -> None:
        for spout in self.spouts:
            spout.set_active(False)
            spout.close()
        for bolt in self.bolts.values():
            bolt.cleanup()
        assert self.executor is not None
        self.executor.transfer.flush_remote(time.monotonic(), force=True)

    # -- control ----------------------------------------------------------------------

    def _on_turn(self, now: float) -> None:
        if now - self._last_control < CONTROL_INTERVAL:
            return
        self._last_control = now
        for command in self.client.poll_commands():
            self.handle(command)
        if now >= self._next_stats:
            self._next_stats = now + self._stats_interval
            publish = getattr(self.client, "publish_stats", None)
            if publish is not None:
                publish(self.status())

    def handle(self, command: dict[str, Any]) -> None:
        """Carry out one command from the cluster."""
        executor = self.executor
        assert executor is not None
        cmd = command.get("cmd")
        if cmd == "activate" or cmd == "deactivate":
            for spout in self.spouts:
                spout.set_active(cmd == "activate")
        elif cmd == "stop":
            executor.stop()
        elif cmd == "peers":
            for w, endpoint in command["endpoints"].items():
                sender = self.senders.get(int(w))
                if sender is not None:
                    sender.reconnect(endpoint)
        elif cmd == "status":
            self.client.send({"type": "status", "req": command.get("req"), **self.status()})
        elif cmd == "collect":
            self.client.send({"type": "collect", "req": command.get("req"), **self.collect()})

    def status(self) -> dict[str, Any]:
        """Counters of this worker and its tasks (plain data)."""
        executor = self.executor
        assert executor is not None
        now = time.monotonic()
        tasks = {
            task.task_id: task_entry(task, self._recorders[task.task_id], now)
            for task in self.tasks()
        }
        return {
            "worker": self.index,
            "pid": os.getpid(),
            "host": self._report.host,
            "system": {
                "transferred": sum(self._system_transferred.values()),
                "executed": executor.system_executed,
                "ackers": {a.task_id: len(a.ledger) for a in executor.ackers.values()},
            },
            "buffered": executor.buffered(),
            "inbound": executor.inbound_count,
            "unroutable": executor.unroutable,
            "spout_emits": sum(s.collector.emit_calls for s in self.spouts),
            "congested": executor.transfer.congested,
            "throttled_by": sorted(executor.peers_throttling),
            "errors_suppressed": self._report.suppressed,
            "uptime_secs": round(now - self._started, 1),
            "time": time.time(),
            "tasks": tasks,
        }

    def collect(self) -> dict[str, Any]:
        """Results of tasks that expose ``collect_results()`` (testing helpers)."""
        results: dict[str, dict[int, Any]] = {}
        for task in self.tasks():
            fn = getattr(task.instance, "collect_results", None)
            if callable(fn):
                results.setdefault(task.component, {})[task.task_id] = fn()
        return {"worker": self.index, "results": results}
