"""Runtime wrappers around the author's component instances: one per task."""

from __future__ import annotations

from typing import Any

from .collector import BoltCollector, SpoutCollector
from .components import BasicBolt, Bolt, Spout
from .constants import SYSTEM_COMPONENT, SYSTEM_TASK_ID, TICK_STREAM
from .context import TopologyContext
from .spec import Topology
from .tuple import Tuple, TupleSource

TICK_SOURCE = TupleSource(SYSTEM_COMPONENT, SYSTEM_TASK_ID, TICK_STREAM, ("freq",))


class TaskStats:
    """Counters of one task (rolling windows arrive with the status issue)."""

    __slots__ = ("executed", "ticks", "failed", "acked", "errors", "transferred")

    def __init__(self) -> None:
        self.executed = 0
        self.ticks = 0
        self.failed = 0
        self.acked = 0
        self.errors = 0
        self.transferred: dict[str, int] = {}


class SpoutTask:
    """A spout instance with its collector, activity flag and stats."""

    kind = "spout"

    def __init__(
        self, instance: Spout, context: TopologyContext, collector: SpoutCollector
    ) -> None:
        self.instance = instance
        self.context = context
        self.collector = collector
        self.task_id = context.task_id
        self.component = context.component_id
        self.stats = TaskStats()
        self.active = False
        self.idle_until = 0.0
        instance.emit = collector.emit  # type: ignore[method-assign]
        instance.emit_direct = collector.emit_direct  # type: ignore[method-assign]
        instance._collector = collector

    def open(self, conf: dict[str, Any]) -> None:
        self.instance.open(conf, self.context)

    def next_tuple(self) -> bool:
        """Call ``next_tuple`` once; True when it emitted something."""
        collector = self.collector
        before = collector.emit_calls
        try:
            self.instance.next_tuple()
        except Exception as exc:
            self.stats.errors += 1
            collector.report_error(exc)
        if collector.acked_at_emit:
            self._ack_all(collector.acked_at_emit)
        return collector.emit_calls != before

    def _ack_all(self, msg_ids: list[Any]) -> None:
        done = list(msg_ids)
        msg_ids.clear()
        for msg_id in done:
            self.stats.acked += 1
            self._callback(self.instance.ack, msg_id)

    def _callback(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self.stats.errors += 1
            self.collector.report_error(exc)

    def set_active(self, active: bool) -> None:
        if active != self.active:
            self.active = active
            self._callback(self.instance.activate if active else self.instance.deactivate)

    def close(self) -> None:
        self._callback(self.instance.close)


class BoltTask:
    """A bolt instance with its collector, tuple sources and stats."""

    kind = "bolt"

    def __init__(
        self, instance: Bolt, context: TopologyContext, collector: BoltCollector, topology: Topology
    ) -> None:
        self.instance = instance
        self.context = context
        self.collector = collector
        self.task_id = context.task_id
        self.component = context.component_id
        self.stats = TaskStats()
        self._topology = topology
        self._sources: dict[tuple[int, str], TupleSource] = {}
        self._basic = isinstance(instance, BasicBolt)
        self._execute = instance.process if self._basic else instance.execute
        instance.emit_direct = (  # type: ignore[method-assign]
            collector.emit_direct_anchored if self._basic else collector.emit_direct
        )
        instance.emit = collector.emit_anchored if self._basic else collector.emit  # type: ignore[method-assign]
        instance.ack = collector.ack  # type: ignore[method-assign]
        instance.fail = collector.fail  # type: ignore[method-assign]
        instance._collector = collector

    def prepare(self, conf: dict[str, Any]) -> None:
        self.instance.prepare(conf, self.context)

    def source(self, src_task: int, stream: str) -> TupleSource:
        """The shared origin of tuples from ``src_task`` on ``stream`` (cached)."""
        key = (src_task, stream)
        src = self._sources.get(key)
        if src is None:
            component = self.context.component_of(src_task)
            fields = self._topology.components[component].streams[stream].fields
            src = self._sources[key] = TupleSource(component, src_task, stream, fields)
        return src

    def run_group(self, source: TupleSource, vals: list[Any], metas: list[Any] | None) -> None:
        """Execute every tuple of one received group, in order."""
        self._run(source, vals, metas)
        self.stats.executed += len(vals)

    def tick(self, freq: float) -> None:
        """Deliver one tick tuple (counted apart from executed tuples)."""
        self._run(TICK_SOURCE, [[freq]], None)
        self.stats.ticks += 1

    def _run(self, source: TupleSource, vals: list[Any], metas: list[Any] | None) -> None:
        execute = self._execute
        collector = self.collector
        basic = self._basic
        for values in vals:
            tup = Tuple(values, source)
            if basic:
                collector.current = tup
            try:
                execute(tup)
            except Exception as exc:
                self._on_error(tup, exc)

    def _on_error(self, tup: Tuple, exc: Exception) -> None:
        self.stats.errors += 1
        self.collector.report_error(exc)
        try:
            self.collector.fail(tup)
        except Exception as fail_exc:  # failing must never take the worker down
            self.collector.report_error(fail_exc)

    def cleanup(self) -> None:
        try:
            self.instance.cleanup()
        except Exception as exc:
            self.collector.report_error(exc)
