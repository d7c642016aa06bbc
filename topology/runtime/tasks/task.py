"""Runtime wrappers around the author's component instances: one per task."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from acker import NO_BOLT_ACKING, FailReason, PendingTrees
from topology.async_bolt import AsyncBolt
from topology.component_checks import overrides
from topology.components import BasicBolt, Bolt, Spout
from topology.constants import SYSTEM_COMPONENT, SYSTEM_TASK_ID, TICK_STREAM
from topology.context import TopologyContext
from topology.failure_policy import DEFAULT_POLICY, FailurePolicy
from topology.metrics import LATENCY_BUCKETS, Histogram
from topology.spec import Topology
from topology.state.checkpoint import BarrierAligner
from topology.tuple import Tuple, TupleSource
from topology.windows.bolt import WindowedBolt

from ..basic_path import compile_basic
from ..spout_path import compile_spout
from .collector import BoltCollector, SpoutCollector
from .failures import Parking, TaskFailures

TICK_SOURCE = TupleSource(SYSTEM_COMPONENT, SYSTEM_TASK_ID, TICK_STREAM, ("freq",))


class TaskStats:
    """Cumulative counters of one task (``topology.stats`` turns them into windows).

    ``failed`` / ``failed_by`` count a spout task's failed trees (by ``FailReason.kind``);
    a bolt task's failed inputs are counted by its collector (``BoltCollector.failed_by``).
    """

    __slots__ = ("executed", "ticks", "failed", "acked", "transferred", "failed_by")

    def __init__(self) -> None:
        self.executed = 0
        self.ticks = 0
        self.failed = 0
        self.acked = 0
        self.failed_by: dict[str, int] = {}
        self.transferred: dict[str, int] = {}


class _Task:
    """What every runtime task holds: the user's instance, its context and its stats."""

    def __init__(self, instance: Spout | Bolt, context: TopologyContext) -> None:
        self.instance = instance
        self.context = context
        self.task_id = context.task_id
        self.component = context.component_id
        self.stats = TaskStats()


class SpoutTask(_Task):
    """A spout instance with its collector, activity flag and stats."""

    kind = "spout"
    instance: Spout

    def __init__(
        self, instance: Spout, context: TopologyContext, collector: SpoutCollector
    ) -> None:
        super().__init__(instance, context)
        self.collector = collector
        self.active = False
        self.idle_until = 0.0
        #: When ``next_tuple`` last emitted, or the task was activated (executor clock).
        self.last_emit_at = 0.0
        #: ``next_tuple`` calls in a row that emitted nothing (the spout wait strategy).
        self.empty_calls = 0
        #: Seconds spent in runs of ``next_tuple`` calls, this incarnation (executor clock;
        #: its busy share in the UI's charts).
        self.call_secs = 0.0
        #: Complete latencies of this task's trees (seconds; exported as a histogram).
        self.latencies = Histogram(LATENCY_BUCKETS)
        #: ``can_emit()``: False while the pending trees (or msg ids waiting for a
        #: checkpoint) are at their cap (max spout pending); bound once, as it is asked
        #: before every ``next_tuple`` (a checkpointed topology has no ackers).
        self.can_emit: Callable[[], bool] = (
            collector.acking.can_emit if collector.epochs is None else collector.epochs.can_emit
        )
        #: What :meth:`may_call` counts down (None: ask :attr:`can_emit` before each call).
        self._room: int | None = None
        #: The compiled emit (:mod:`.spout_path`), or None: pure Python.
        self.compiled = compile_spout(collector)
        emit = collector.emit if self.compiled is None else self.compiled.emit
        instance.emit = emit  # type: ignore[method-assign]
        instance.emit_direct = collector.emit_direct  # type: ignore[method-assign]
        instance._collector = collector
        collector.acking.bind(self.acked, self.failed, self.latencies)
        if getattr(type(instance), "fails_at_emit", False):  # (decided once: a hot path)
            self.next_tuple = self._next_tuple_failing  # type: ignore[method-assign]

    def open(self, conf: dict[str, Any]) -> None:
        self.instance.open(conf, self.context)

    def begin_calls(self) -> None:
        """Before a run of ``next_tuple`` calls (an executor turn): read :meth:`room` once."""
        self._room = self.room()

    def may_call(self) -> bool:
        """May ``next_tuple`` be called now (max spout pending, checked before every call as
        Storm does)?  Every emit may start a tree, so the room read by :meth:`begin_calls`,
        counted down by the emits made, is a lower bound of what is left: while it lasts the
        answer is yes without asking; then :attr:`can_emit` decides (exactly, and it is what
        moves the auto cap) and the room is read again."""
        room = self._room
        if room is not None and room > 0:
            return True
        if not self.can_emit():
            return False
        self._room = self.room()
        return True

    def next_tuple(self) -> int:
        """Call ``next_tuple`` once; how many emits it made (0: nothing)."""
        collector = self.collector
        before = collector.emit_calls
        try:
            self.instance.next_tuple()
        except Exception as exc:
            collector.report_error(exc)
        if collector.acked_at_emit:
            self.ack_all(collector.acked_at_emit)
        emits = collector.emit_calls - before
        if self._room is not None:
            self._room -= emits
        return emits

    def _next_tuple_failing(self) -> int:
        """:meth:`next_tuple` of a spout whose emits can fail msg ids before they are sent
        (``fails_at_emit``: Streams operators chained to it); then those fail."""
        emits = SpoutTask.next_tuple(self)
        failed = self.collector.failed_at_emit
        if failed:
            self.fail_all_at_emit(failed)
        return emits

    def room(self) -> int | None:
        """How many more trees this task may start before its pending trees reach their
        cap, when it has such a cap (ackers); None: ask :attr:`can_emit` before every
        ``next_tuple`` (no cap, or a checkpointed topology's own)."""
        pending = self.collector.acking.pending
        return None if pending is None or self.collector.epochs is not None else pending.room()

    @property
    def pending(self) -> PendingTrees | None:
        """The task's pending tracked trees (None without ackers)."""
        return self.collector.acking.pending

    def fail_pending(self, reason: FailReason) -> int:
        """Fail every tracked tree this task has pending (a worker died); how many."""
        return self.collector.acking.fail_all(reason)

    def acked(self, msg_ids: list[Any]) -> None:
        """Trees of this task completed: the spout's ``ack`` for each, in order (called by
        the acking layer with every tree one acker message reported).  A user ``ack`` that
        raises is counted and reported; the others still run."""
        self.stats.acked += len(msg_ids)
        ack = self.instance.ack
        for msg_id in msg_ids:
            try:  # _callback, inlined: this runs once per tree
                ack(msg_id)
            except Exception as exc:
                self.collector.report_error(exc)

    def failed(self, msg_id: Any, reason: FailReason) -> None:
        """A tree of this task failed or timed out (called by the acking layer), or a
        checkpoint rollback replays ``msg_id``: counted by ``reason.kind``, then the spout's
        ``fail_with_reason`` (an error it raises is counted and reported)."""
        stats = self.stats
        stats.failed += 1
        stats.failed_by[reason.kind] = stats.failed_by.get(reason.kind, 0) + 1
        self._callback(self.instance.fail_with_reason, msg_id, reason)

    def ack_all(self, msg_ids: list[Any]) -> None:
        """:meth:`acked` for ``msg_ids``, which it empties first (``ack`` may add more):
        msg ids complete at emit (no ackers), or covered by a committed checkpoint."""
        done = list(msg_ids)
        msg_ids.clear()
        self.acked(done)

    def fail_all_at_emit(self, failures: list[tuple[Any, FailReason]]) -> None:
        """:meth:`failed` for each of ``failures``, which it empties first: msg ids whose
        tuples failed before they were sent (``SpoutCollector.fail_at_emit``)."""
        done = list(failures)
        failures.clear()
        for msg_id, reason in done:
            self.failed(msg_id, reason)

    def _callback(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self.collector.report_error(exc)

    def set_active(self, active: bool, now: float = 0.0) -> None:
        """Activate or deactivate; ``now`` (executor clock) starts the quiet time afresh."""
        if active != self.active:
            self.active = active
            self.last_emit_at = now
            self.empty_calls = 0
            self.idle_until = 0.0
            self._callback(self.instance.activate if active else self.instance.deactivate)

    def close(self) -> None:
        self._callback(self.instance.close)


class BoltTask(_Task):
    """A bolt instance with its collector, tuple sources and stats."""

    kind = "bolt"
    instance: Bolt

    def __init__(
        self,
        instance: Bolt,
        context: TopologyContext,
        collector: BoltCollector,
        topology: Topology,
        *,
        aligner: BarrierAligner | None = None,
        policy: FailurePolicy = DEFAULT_POLICY,
        parking: Parking | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(instance, context)
        self.collector = collector
        self._topology = topology
        self._sources: dict[tuple[int, str], TupleSource] = {}
        #: Moving average of execute seconds per tuple (sizes the executor's chunks).
        self.secs_per_tuple = 0.0
        #: Total seconds spent executing tuples (stats: execute latency, capacity).
        self.execute_secs = 0.0
        #: Execute latencies (seconds per tuple, measured per chunk; exported as a histogram).
        self.latencies = Histogram(LATENCY_BUCKETS)
        #: Barrier alignment over the task's inputs (checkpointed topologies only; read
        #: per group by the executor, which hands barriers to its checkpoint hooks).
        self.aligner = aligner
        #: An :class:`~topology.async_bolt.AsyncBolt`'s calls in flight, which the executor
        #: drains each turn and takes input for only while it has room (None: any other bolt).
        self.calls = instance if isinstance(instance, AsyncBolt) else None
        self._basic = isinstance(instance, BasicBolt)
        self._execute = (
            instance.process
            if isinstance(instance, BasicBolt)
            else instance.process_tuple
            if isinstance(instance, WindowedBolt)
            else instance.execute
        )
        self._batches = _takes_batches(instance)
        if self._batches:  # decided once: _run is the hot path
            self._execute_batch = instance.execute_batch
            self._run = self._run_batch  # type: ignore[method-assign]
        instance.emit_direct = (  # type: ignore[method-assign]
            collector.emit_direct_anchored if self._basic else collector.emit_direct
        )
        instance.emit = collector.emit_anchored if self._basic else collector.emit  # type: ignore[method-assign]
        if self._basic:  # the compiled loop and emit, where the install built them
            collector.basic = compile_basic(collector, self._on_error)
            if collector.basic is not None:
                instance.emit = collector.basic.emit  # type: ignore[method-assign]
                self._run = self._run_compiled  # type: ignore[method-assign]
        instance.ack = collector.ack  # type: ignore[method-assign]
        instance.fail = collector.fail  # type: ignore[method-assign]
        #: ids of the untracked tuples of the batch running that the bolt acked or failed
        #: (a batch that raises: they are not tried again; tracked ones say it themselves)
        self._handled: set[int] = set()
        if self._batches and collector.acking is NO_BOLT_ACKING:
            instance.ack = self._ack_in_batch  # type: ignore[method-assign]
            instance.fail = self._fail_in_batch  # type: ignore[method-assign]
        instance._collector = collector
        #: What becomes of the inputs its code raises on (:mod:`~topology.runtime.tasks.failures`).
        self.failures = collector.failures = TaskFailures(
            collector=collector,
            policy=policy,
            parking=Parking() if parking is None else parking,
            rerun=self._rerun,
            clock=clock,
            wall_clock=wall_clock,
            also=None if self.calls is None else self.calls.async_gave_up,
            data_errors=lambda: getattr(instance, "data_errors", ()),
        )

    def prepare(self, conf: dict[str, Any]) -> None:
        self.instance.prepare(conf, self.context)
        if self.calls is not None:
            self.calls.async_prepare(self.context)

    def observe(self, seconds: float, tuples: int) -> None:
        """Count one chunk's execute time and fold it into the average seconds per tuple."""
        self.execute_secs += seconds
        sample = seconds / tuples
        histogram = self.latencies  # Histogram.observe(sample, tuples), inlined
        histogram.counts[bisect_left(histogram.bounds, sample)] += tuples
        histogram.sum += seconds
        previous = self.secs_per_tuple
        self.secs_per_tuple = sample if previous <= 0 else 0.8 * previous + 0.2 * sample

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
        if not self._basic:
            # The first tuple of every chunk is timed from here to its ack (process latency).
            first = True
            if metas is None:
                for values in vals:
                    tup = Tuple(values, source)
                    if first:
                        collector.sample(tup)
                        first = False
                    try:
                        execute(tup)
                    except Exception as exc:
                        self._on_error(tup, exc)
            else:
                for values, meta in zip(vals, metas):
                    tup = Tuple(values, source, meta[0], meta[1]) if meta else Tuple(values, source)
                    if first:
                        collector.sample(tup)
                        first = False
                    try:
                        execute(tup)
                    except Exception as exc:
                        self._on_error(tup, exc)
            return
        # BasicBolt: anchor emits to the input, ack it after process, fail it on error.
        ack = collector.ack
        if metas is None:
            metas = [None] * len(vals)
        for values, meta in zip(vals, metas):
            tup = Tuple(values, source, meta[0], meta[1]) if meta else Tuple(values, source)
            collector._current = tup  # (no compiled loop here: the plain attribute)
            try:
                execute(tup)
            except Exception as exc:
                self._on_error(tup, exc)
            else:
                ack(tup)
        collector._current = None

    def _run_compiled(self, source: TupleSource, vals: list[Any], metas: list[Any] | None) -> None:
        """``_run`` of a BasicBolt, compiled (:mod:`.basic_path`): the same steps."""
        collector = self.collector
        basic = collector.basic
        try:
            basic.run(self._execute, source, vals, metas)
        finally:  # (an ack that raised ends the group: what was acked before still counts)
            collector.acked += basic.acked
            basic.acked = 0

    def _run_batch(self, source: TupleSource, vals: list[Any], metas: list[Any] | None) -> None:
        """``_run`` of a bolt that overrides ``execute_batch``: one call with every tuple."""
        if metas is None:
            batch = [Tuple(values, source) for values in vals]
        else:
            batch = [
                Tuple(values, source, meta[0], meta[1]) if meta else Tuple(values, source)
                for values, meta in zip(vals, metas)
            ]
        if not batch:
            return
        if self._handled:
            self._handled.clear()
        self.collector.sample(batch[0])  # timed from here to its ack (process latency)
        try:
            self._execute_batch(batch[:])  # the bolt's own list: failing reads this one
        except Exception as exc:
            self._on_batch_error(batch, exc)

    def _on_batch_error(self, batch: list[Tuple], exc: Exception) -> None:
        """``execute_batch`` raised: each tuple it had not acked or failed (a tracked
        tuple's ``anchors`` is None once it was; an untracked one's id is in ``_handled``
        when the topology tracks none) goes to the failure policy, and is tried again
        alone."""
        handled = self._handled
        for tup in batch:
            if tup.anchors is not None if tup.id is not None else id(tup) not in handled:
                self._on_error(tup, exc)

    def _ack_in_batch(self, tup: Tuple) -> None:
        self._handled.add(id(tup))
        self.collector.ack(tup)

    def _fail_in_batch(self, tup: Tuple, error: str | BaseException | None = None) -> None:
        self._handled.add(id(tup))
        self.collector.fail(tup, error)

    def _on_error(self, tup: Tuple, exc: Exception) -> None:
        """The bolt's code raised ``exc`` on ``tup`` (the compiled BasicBolt loop calls
        this too): the failure policy decides (:mod:`~topology.runtime.tasks.failures`)."""
        try:
            self.failures.failed(tup, exc)
        except Exception as fail_exc:  # failing must never take the worker down
            self.collector.report_error(fail_exc)

    def _rerun(self, tup: Tuple, attempt: int) -> bool:
        """Attempt number ``attempt`` at ``tup``, as the first one ran it (raises what the
        bolt's code raises); False when an async task has no room for it now."""
        calls = self.calls
        if calls is not None:
            if calls.async_room() <= 0:
                return False
            calls.async_retry(tup, attempt)
            return True
        retry_input = getattr(self.instance, "retry_input", None)
        if retry_input is not None:  # a sink's own: the row written alone
            retry_input(tup)
        elif self._basic:
            collector = self.collector
            collector.current = tup
            try:
                self._execute(tup)
            finally:
                collector.current = None
            collector.ack(tup)
        elif self._batches:
            self._execute_batch([tup])
        else:
            self._execute(tup)
        return True

    def settle_failures(self) -> int:
        """Run the attempts left of this task's parked inputs now (a barrier aligned)."""
        return self.failures.settle()

    def cleanup(self) -> None:
        try:
            self.instance.cleanup()
        except Exception as exc:
            self.collector.report_error(exc)
        if self.calls is not None:
            self.calls.async_close()


def _takes_batches(instance: Bolt) -> bool:
    """Does the runtime call ``instance.execute_batch``?  When its class overrides it and is
    a plain :class:`Bolt` (``create_topology`` refuses it on a basic, windowed or async
    bolt, whose tuples go elsewhere)."""
    return not isinstance(instance, BasicBolt | WindowedBolt | AsyncBolt) and overrides(
        type(instance), "execute_batch", Bolt
    )
