"""What a worker reports: each task's cumulative counters and stats windows, and the
runtime's gauges (queues, backpressure, ack ledgers) — the body of a worker status reply.

It reads the runtime's tasks and feeds :mod:`topology.stats` (pure statistics, below the
runtime)."""

from __future__ import annotations

from typing import Any

from topology.components import BasicBolt
from topology.stats.carry import Lumps, with_carry
from topology.stats.rolling import StatsRecorder

from .assembly import AssembledWorker
from .tasks.task import BoltTask, SpoutTask


def task_counters(task: SpoutTask | BoltTask) -> dict[str, Any]:
    """Cumulative counters in the shape :class:`~topology.stats.rolling.StatsRecorder` records."""
    stats = task.stats
    counters: dict[str, Any] = {
        "emitted": {r.stream: r.emitted for r in task.collector._routes.values()},
        "transferred": dict(stats.transferred),
        "executed": stats.executed,
        "errors": task.collector.errors_reported,
    }
    if isinstance(task, BoltTask):
        collector = task.collector
        basic = isinstance(task.instance, BasicBolt)  # acked right after process()
        counters.update(
            acked=collector.acked,
            failed=collector.failed,
            failed_by=dict(collector.failed_by),
            retried=task.failures.retried,
            execute_secs=task.execute_secs,
            process_secs=task.execute_secs if basic else collector.process_secs,
            process_count=stats.executed if basic else collector.process_count,
        )
    else:
        pending = task.pending
        counters.update(
            acked=stats.acked,
            failed=stats.failed,
            failed_by=dict(stats.failed_by),
            complete_secs=pending.latency_sum if pending is not None else 0.0,
            complete_count=pending.completed if pending is not None else 0,
        )
    return counters


def state_size(instance: Any) -> dict[str, int] | None:
    """``{"keys", "bytes"}`` of a task's live state (a stateful bolt's ``self.state`` with
    ``size()``), with ``"cache_hits"`` / ``"cache_misses"`` when it has a cache (a disk
    backend's ``cache_stats()``), or None."""
    state = getattr(instance, "state", None)
    size = getattr(state, "size", None)
    if not callable(size):
        return None
    try:
        found = size()
        entry = {"keys": int(found.keys), "bytes": int(found.bytes)}
        cache_stats = getattr(state, "cache_stats", None)
        if callable(cache_stats):
            stats = cache_stats()
            entry.update(cache_hits=int(stats.hits), cache_misses=int(stats.misses))
        return entry
    except Exception:  # a user's own ``state`` attribute of another kind: not reported
        return None


def task_entry(
    task: SpoutTask | BoltTask,
    recorder: StatsRecorder,
    now: float,
    carried: Lumps | None = None,
    wall: float = 0.0,
    queued: int = 0,
) -> dict[str, Any]:
    """The task's entry in a worker status: this incarnation's totals, live gauges, and
    every stats window — including what earlier incarnations of the task did (``carried``,
    compared with the wall clock ``wall``; see :mod:`topology.stats.carry`).  ``queued``:
    the tuples waiting for it in its worker's inbound queue now."""
    counters = task_counters(task)
    recorder.record(counters, now)
    windows = recorder.all_windows(now)
    entry: dict[str, Any] = {
        "component": task.component,
        "index": task.context.task_index,  # what its carry is saved under, with component
        "kind": task.kind,
        "emitted": counters["emitted"],
        "transferred": counters["transferred"],
        "executed": counters["executed"],
        "acked": counters["acked"],
        "failed": counters["failed"],
        "failed_by": counters["failed_by"],
        "errors": counters["errors"],
        "windows": with_carry(windows, carried, wall) if carried else windows,
        # complete latency (spouts) or execute latency (bolts), seconds, this incarnation
        "latency_histogram": task.latencies.snapshot(),
        "queued": queued,
    }
    if isinstance(task, SpoutTask):  # seconds in its runs of next_tuple, this incarnation
        entry["next_tuple_secs"] = round(task.call_secs, 6)
    else:  # seconds in user code, this incarnation
        entry["execute_secs"] = counters["execute_secs"]
    if len(task.context.metrics):
        entry["metrics"] = task.context.metrics.snapshot()
    state = state_size(task.instance)
    if state is not None:
        entry["state"] = state
    if carried:
        entry.update(own_windows=windows, carried=carried)
    if isinstance(task, SpoutTask):
        pending = task.pending
        entry["pending"] = len(pending) if pending is not None else 0
        entry["pending_cap"] = pending.cap if pending is not None else None
        entry["complete_latency_ms"] = (
            pending.mean_complete_latency * 1000.0 if pending is not None else 0.0
        )
    return entry


def worker_status(
    worker: AssembledWorker,
    recorders: dict[int, StatsRecorder],
    now: float,
    carried: dict[int, Lumps] | None = None,
    wall: float = 0.0,
) -> dict[str, Any]:
    """The runtime part of a worker's status reply; the process adds pid, host and times.

    ``recorders`` holds one :class:`StatsRecorder` per task id (fed here, every call);
    ``carried`` what earlier incarnations of each task did (wall clock ``wall``).
    """
    carried = carried or {}
    executor = worker.executor
    acking = worker.acking
    queued = executor.queued_by_task()
    return {
        "worker": worker.setup.worker_index,
        "system": {
            "transferred": sum(worker.transferred.system.values()),
            "executed": executor.system_executed,
            "ackers": acking.ledger_sizes() if acking is not None else {},
        },
        "buffered": executor.buffered(),
        "inbound": executor.inbound_count,
        "unroutable": executor.unroutable,
        "dropped_frames": executor.drops.dropped,
        "dropped_last": executor.drops.last_reason,
        "dropped_by": dict(executor.drops.by_reason),
        "spout_emits": sum(s.collector.emit_calls for s in worker.spouts),
        "spouts_quiet_secs": executor.spouts_quiet_secs(),
        "links": {
            "sent": {str(w): n for w, n in executor.transfer.sent_to.items()},
            "received": {str(w): n for w, n in executor.received_from.items()},
        },
        "congested": executor.transfer.congested,
        "full_peers": executor.transfer.full_peers(),
        "throttled_by": sorted(executor.peers_throttling),
        # cumulative seconds, this incarnation: spouts held back, frames held for a peer
        "spouts_held_secs": round(executor.spouts_held_secs, 3),
        "congested_secs": round(executor.congested_secs, 3),
        "tasks": {
            task.task_id: task_entry(
                task,
                recorders[task.task_id],
                now,
                carried.get(task.task_id),
                wall,
                queued.get(task.task_id, 0),
            )
            for task in worker.tasks()
        },
        **({"checkpoints": worker.checkpoints.status()} if worker.checkpoints is not None else {}),
    }
