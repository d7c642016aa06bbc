"""The Prometheus endpoint: status reports of running topologies as exposition text.

Each scrape asks ``source()`` for a :class:`TopologySnapshot` per topology (the all-time
status report plus the raw worker replies it was built from) and turns them into metric
families — the same numbers ``sparkstorm status --json`` shows, so the two agree within
one stats publication.  Names follow Storm's metrics with Prometheus conventions, in
families per component, per task (the latency histograms), per worker, per topology and
per user metric (``sparkstorm_user_<name>``); docs/METRICS.md lists every one with its
labels.

Nothing here reads a socket: a scrape only formats data the cluster already holds.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import generate_latest, start_http_server
from prometheus_client.registry import CollectorRegistry

from topology.status import TopologyStatus


class TopologySnapshot(NamedTuple):
    """One topology's all-time status report and the worker replies behind it."""

    report: dict[str, Any]
    replies: list[dict[str, Any]]


Source = Callable[[], list[TopologySnapshot]]

_COMPONENT = ["topology", "component"]
_TASK = ["topology", "component", "task"]
_WORKER = ["topology", "worker"]


def _counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, labels=labels)


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def _buckets(bounds: list[float], counts: list[int]) -> list[tuple[str, float]]:
    """Per-bucket counts (the last above every bound) -> cumulative Prometheus buckets."""
    out, total = [], 0
    for bound, count in zip([*bounds, math.inf], counts):
        total += count
        out.append(("+Inf" if bound == math.inf else repr(float(bound)), float(total)))
    return out


class StatusCollector:
    """A prometheus_client collector over ``source`` (called once per scrape)."""

    def __init__(self, source: Source) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        snapshots = self._source()
        yield from self._components(snapshots)
        yield from self._latencies(snapshots)
        yield from self._shares(snapshots)
        yield from self._workers(snapshots)
        yield from self._topologies(snapshots)
        yield from self._user_metrics(snapshots)

    @staticmethod
    def _components(snapshots: list[TopologySnapshot]) -> Iterator[Metric]:
        counts = {
            key: _counter(f"sparkstorm_{key}_total", doc, _COMPONENT)
            for key, doc in (
                ("emitted", "Tuples emitted (all streams)."),
                ("transferred", "Tuples sent to other tasks (all streams)."),
                ("acked", "Spout: trees completed. Bolt: tuples acked."),
                ("failed", "Spout: trees failed or timed out. Bolt: tuples failed."),
                ("executed", "Tuples executed by a bolt."),
                (
                    "dead_lettered",
                    "Inputs (a spout's: records) given up on and sent to the dead-letter stream.",
                ),
                ("retried", "Further attempts at inputs whose code raised (failure policy)."),
            )
        }
        failures = _counter(
            "sparkstorm_failures_total", "Failures by reason.", [*_COMPONENT, "reason"]
        )
        pending = _gauge("sparkstorm_pending", "Spout trees pending now.", _COMPONENT)
        capacity = _gauge(
            "sparkstorm_capacity",
            "Share of wall time the busiest task of a bolt spent executing (>0.8: bottleneck).",
            _COMPONENT,
        )
        state_keys = _gauge(
            "sparkstorm_state_keys",
            "Keys in a stateful bolt's live state (its tasks').",
            _COMPONENT,
        )
        state_bytes = _gauge(
            "sparkstorm_state_bytes",
            "Bytes of a stateful bolt's live state: on disk, or estimated in memory.",
            _COMPONENT,
        )
        cache_hits = _counter(
            "sparkstorm_state_cache_hits_total",
            "Reads of a disk-backed state its cache answered (its tasks', since they opened it).",
            _COMPONENT,
        )
        cache_misses = _counter(
            "sparkstorm_state_cache_misses_total",
            "Reads of a disk-backed state that went to the store (its tasks').",
            _COMPONENT,
        )
        for report, _ in snapshots:
            name = report["topology"]["name"]
            for row in [*report["spouts"], *report["bolts"]]:
                labels = [name, row["id"]]
                for key, family in counts.items():
                    if key in row:
                        family.add_metric(labels, row[key])
                for reason, n in sorted(row["failed_by"].items()):
                    failures.add_metric([*labels, reason], n)
                if "pending" in row:
                    pending.add_metric(labels, row["pending"])
                if "capacity" in row:
                    capacity.add_metric(labels, row["capacity"])
                if "state_keys" in row:
                    state_keys.add_metric(labels, row["state_keys"])
                    state_bytes.add_metric(labels, row["state_bytes"])
                if "state_cache_hits" in row:
                    cache_hits.add_metric(labels, row["state_cache_hits"])
                    cache_misses.add_metric(labels, row["state_cache_misses"])
        yield from (*counts.values(), failures, pending, capacity, state_keys, state_bytes)
        yield from (cache_hits, cache_misses)

    @staticmethod
    def _latencies(snapshots: list[TopologySnapshot]) -> Iterator[Metric]:
        complete = HistogramMetricFamily(
            "sparkstorm_complete_latency_seconds",
            "Spout tree latency from emit to fully acked (this worker incarnation).",
            labels=_TASK,
        )
        execute = HistogramMetricFamily(
            "sparkstorm_execute_latency_seconds",
            "Bolt execute time per tuple, measured per chunk (this worker incarnation).",
            labels=_TASK,
        )
        for report, replies in snapshots:
            name = report["topology"]["name"]
            for reply in replies:
                for task_id, task in reply["tasks"].items():
                    histogram = task.get("latency_histogram")
                    if not histogram:
                        continue
                    family = complete if task["kind"] == "spout" else execute
                    family.add_metric(
                        [name, task["component"], str(task_id)],
                        _buckets(histogram["bounds"], histogram["counts"]),
                        histogram["sum"],
                    )
        yield from (complete, execute)

    @staticmethod
    def _shares(snapshots: list[TopologySnapshot]) -> Iterator[Metric]:
        """Per task (this worker incarnation): seconds in its code (a bolt's executing, a
        spout's in ``next_tuple``), seconds under backpressure (a spout's: its worker held
        the spouts back; a bolt's: its worker held frames for a full peer), and tuples
        queued for it now (bolts) — what the UI's busy and backpressured shares and queue
        depth are read from."""
        busy = _counter(
            "sparkstorm_busy_seconds",
            "Seconds a task spent in its code: executing (bolts), in next_tuple (spouts).",
            _TASK,
        )
        backpressured = _counter(
            "sparkstorm_backpressured_seconds",
            "Seconds a task's worker held its spouts back (spouts) or held frames for a "
            "full peer (bolts).",
            _TASK,
        )
        queued = _gauge("sparkstorm_queued", "Tuples queued for a bolt task now.", _TASK)
        for report, replies in snapshots:
            name = report["topology"]["name"]
            for reply in replies:
                if reply.get("stand_in"):
                    continue  # a worker down: none of this incarnation's figures
                for task_id, task in reply["tasks"].items():
                    labels = [name, task["component"], str(task_id)]
                    spout = task.get("kind") == "spout"
                    held = reply.get("spouts_held_secs" if spout else "congested_secs")
                    if isinstance(held, int | float):
                        backpressured.add_metric(labels, held)
                    spent = task.get("next_tuple_secs" if spout else "execute_secs")
                    if isinstance(spent, int | float):
                        busy.add_metric(labels, spent)
                    if not spout and isinstance(task.get("queued"), int):
                        queued.add_metric(labels, task["queued"])
        yield from (busy, backpressured, queued)

    @staticmethod
    def _workers(snapshots: list[TopologySnapshot]) -> Iterator[Metric]:
        restarts = _counter(
            "sparkstorm_worker_restarts_total", "Times the worker was relaunched.", _WORKER
        )
        dropped = _counter(
            "sparkstorm_worker_dropped_frames_total",
            "Frames from the network refused as malformed or forged.",
            _WORKER,
        )
        dropped_by = _counter(
            "sparkstorm_worker_dropped_frames_by_reason_total",
            "Frames from the network refused, per reason (docs/SECURITY.md).",
            [*_WORKER, "reason"],
        )
        gauges = {
            key: _gauge(f"sparkstorm_worker_{metric}", doc, _WORKER)
            for key, metric, doc in (
                ("inbound", "receive_queue", "Tuples queued for the worker's executor."),
                ("buffered", "buffered", "Tuples and frames waiting anywhere in the worker."),
                ("congested", "congested", "1 while frames wait for a full peer."),
                ("throttled", "throttled", "1 while a peer asks this worker's spouts to wait."),
                ("uptime_secs", "uptime_seconds", "Seconds since this incarnation started."),
                ("stalled_secs", "stalled_seconds", "Seconds the executor is stuck in user code."),
            )
        }
        for report, replies in snapshots:
            name = report["topology"]["name"]
            live = {r["worker"]: r for r in replies if not r.get("stand_in")}
            for row in report["workers"]:
                labels = [name, str(row["worker"])]
                restarts.add_metric(labels, row["restarts"])
                reply = live.get(row["worker"], {})
                if reply:  # this incarnation's, none while the worker is down
                    dropped.add_metric(labels, row["dropped_frames"])
                for reason, count in sorted((row.get("dropped_by") or {}).items()):
                    dropped_by.add_metric([*labels, reason], count)
                values = {
                    "inbound": reply.get("inbound"),
                    "buffered": reply.get("buffered"),
                    "congested": None if not reply else int(bool(reply.get("congested"))),
                    "throttled": None if not reply else int(bool(reply.get("throttled_by"))),
                    "uptime_secs": row.get("uptime_secs"),
                    "stalled_secs": row.get("stalled_secs") or 0.0,
                }
                for key, value in values.items():
                    if value is not None:
                        gauges[key].add_metric(labels, value)
        yield from (restarts, dropped, dropped_by, *gauges.values())

    @staticmethod
    def _topologies(snapshots: list[TopologySnapshot]) -> Iterator[Metric]:
        workers = _gauge("sparkstorm_topology_workers", "Workers assigned.", ["topology"])
        alive = _gauge("sparkstorm_topology_workers_alive", "Workers running.", ["topology"])
        active = _gauge("sparkstorm_topology_active", "1 while spouts are active.", ["topology"])
        for report, _ in snapshots:
            summary = report["topology"]
            labels = [summary["name"]]
            workers.add_metric(labels, summary.get("workers") or 0)
            alive.add_metric(labels, summary.get("workers_alive") or 0)
            active.add_metric(labels, int(summary.get("status") == TopologyStatus.ACTIVE))
        yield from (workers, alive, active)

    @staticmethod
    def _user_metrics(snapshots: list[TopologySnapshot]) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for report, replies in snapshots:
            name = report["topology"]["name"]
            for reply in replies:
                for task_id, task in reply["tasks"].items():
                    for metric, data in (task.get("metrics") or {}).items():
                        family = _user_family(families, metric, data)
                        if family is None:
                            continue  # another task registered the name as another kind
                        labels = [name, task["component"], str(task_id)]
                        if isinstance(family, HistogramMetricFamily):
                            family.add_metric(
                                labels, _buckets(data["bounds"], data["counts"]), data["sum"]
                            )
                        else:
                            family.add_metric(labels, data["value"])  # type: ignore[attr-defined]
        yield from families.values()


_USER_KINDS: dict[str, type[Metric]] = {
    "counter": CounterMetricFamily,
    "gauge": GaugeMetricFamily,
    "histogram": HistogramMetricFamily,
}


def _user_family(families: dict[str, Metric], metric: str, data: dict[str, Any]) -> Metric | None:
    """The family of user metric ``metric`` (made from the first task that has it)."""
    kind = _USER_KINDS.get(data.get("kind", ""))
    if kind is None:
        return None
    family = families.get(metric)
    if family is None:
        name = f"sparkstorm_user_{metric}" + ("_total" if kind is CounterMetricFamily else "")
        doc = str(data.get("help") or f"User metric {metric}.")
        family = families[metric] = kind(name, doc, labels=_TASK)  # type: ignore[call-arg]
    return family if isinstance(family, kind) else None


def exposition(source: Source) -> bytes:
    """The exposition text of one scrape of ``source`` (what the endpoint serves)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector(source))
    return generate_latest(registry)


class MetricsServer:
    """An HTTP endpoint serving ``/metrics`` for ``source`` on ``host:port`` (0 = any free
    port; :attr:`port` is the one bound).  :meth:`close` stops it."""

    def __init__(self, source: Source, port: int, host: str = "127.0.0.1") -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(StatusCollector(source))
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        self.host = host
        self.port: int = self._server.server_address[1]
        self._closed = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._server.shutdown()
            self._server.server_close()
