"""What one task reports: its cumulative counters and its entry in a worker's status."""

from __future__ import annotations

from typing import Any

from topology.components import BasicBolt
from topology.runtime.tasks import BoltTask, SpoutTask

from .rolling import StatsRecorder


def task_counters(task: SpoutTask | BoltTask) -> dict[str, Any]:
    """Cumulative counters in the shape :class:`~topology.stats.StatsRecorder` records."""
    stats = task.stats
    counters: dict[str, Any] = {
        "emitted": {r.stream: r.emitted for r in task.collector._routes.values()},
        "transferred": dict(stats.transferred),
        "executed": stats.executed,
        "failed_by": dict(stats.failed_by),
    }
    if isinstance(task, BoltTask):
        collector = task.collector
        basic = isinstance(task.instance, BasicBolt)  # acked right after process()
        counters.update(
            acked=collector.acked,
            failed=collector.failed,
            execute_secs=task.execute_secs,
            process_secs=task.execute_secs if basic else collector.process_secs,
            process_count=stats.executed if basic else collector.process_count,
        )
    else:
        pending = task.collector.pending
        counters.update(
            acked=stats.acked,
            failed=stats.failed,
            complete_secs=pending.latency_sum if pending is not None else 0.0,
            complete_count=pending.completed if pending is not None else 0,
        )
    return counters


def task_entry(task: SpoutTask | BoltTask, recorder: StatsRecorder, now: float) -> dict[str, Any]:
    """The task's entry in a worker status: totals, live gauges, and every stats window."""
    counters = task_counters(task)
    recorder.record(counters, now)
    entry: dict[str, Any] = {
        "component": task.component,
        "kind": task.kind,
        "emitted": counters["emitted"],
        "transferred": counters["transferred"],
        "executed": counters["executed"],
        "acked": counters["acked"],
        "failed": counters["failed"],
        "failed_by": counters["failed_by"],
        "errors": task.stats.errors,
        "windows": recorder.all_windows(now),
    }
    if isinstance(task, SpoutTask):
        pending = task.collector.pending
        entry["pending"] = len(pending) if pending is not None else 0
        entry["pending_cap"] = pending.cap if pending is not None else None
        entry["complete_latency_ms"] = (
            pending.mean_complete_latency * 1000.0 if pending is not None else 0.0
        )
    return entry
