"""One poller, one shared snapshot per publish interval, however many clients watch.

:class:`Poller` (blocking, on a worker thread) asks the :class:`ClusterView` for every
topology's cheap snapshot, folds the worker replies into live rates and builds a
:class:`Snapshot`: the cluster summary and each topology's report with its graph, each
encoded to JSON once.  :class:`Hub` (on the server's event loop) runs the poller every
``ui.publish.interval.secs`` as a single background task and hands the latest snapshot to
every REST call and every server-sent-event client; a client waits for a newer one, it
never makes the poller run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread

from topology.errors import SparkstormError
from topology.stats.rolling import window_seconds

from .graph import build_graph
from .rates import Key, RateTracker, topology_rates
from .series import SeriesStore
from .source import ClusterView, PollRound

if TYPE_CHECKING:
    from topology.stats.prometheus import TopologySnapshot

log = logging.getLogger("sparkstorm.ui")

#: Threads polling topologies at once (a topology still polled when the next poll starts
#: keeps its thread, and is not asked again meanwhile).
POLL_THREADS = 16
#: The key of the round's own call (names and nimbuses) among the calls under way.
ROUND = "\0round"
#: A topology's (summary row, report with graph and rates, live counter rates).
Polled = tuple[dict[str, Any], dict[str, Any] | None, dict[Key, float]]


def poll_deadline(interval: float) -> float:
    """Seconds one poll waits for the cluster before publishing what it has: two publish
    intervals, and at least 3 s (a fresh ask of the workers may take 1.5-2 s)."""
    return max(2 * interval, 3.0)


#: The summary fields of a topology taken from its report's ``topology`` section.
SUMMARY_FIELDS = ("id", "name", "status", "uptime_secs", "workers", "workers_alive", "tasks")
#: Every field of a summary row (a topology that cannot be read has them all null but its
#: ``name`` and ``error``).
ROW_FIELDS = (
    *SUMMARY_FIELDS,
    *("emitted_per_sec", "acked_per_sec", "failed_per_sec", "emitted", "acked", "failed"),
    *("window", "max_capacity", "error"),
)


def encode(data: Any) -> str:
    """Compact JSON, as every response and event is sent (unknown types as strings)."""
    return json.dumps(data, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Snapshot:
    """One publication: ``summary`` is ``/api/v1/cluster/summary``; ``topologies`` maps a
    name to its 10-minute report with ``graph`` and ``rates``; ``parts`` the same, each
    encoded once; ``rates`` every topology's live counter rates (:mod:`.rates`)."""

    seq: int
    generated_at: float
    summary: dict[str, Any]
    topologies: dict[str, dict[str, Any]]
    summary_json: str = field(repr=False)
    parts: dict[str, str] = field(repr=False)
    rates: dict[str, dict[Key, float]] = field(repr=False)

    def event_data(self, only: str | None = None) -> str:
        """The JSON of an ``snapshot`` event: ``{"seq", "generated_at", "summary",
        "topologies": {name: report}}``, with one topology's report only if ``only``."""
        names = [only] if only is not None else sorted(self.parts)
        reports = ",".join(f"{encode(n)}:{self.parts[n]}" for n in names if n in self.parts)
        return (
            f'{{"seq":{self.seq},"generated_at":{self.generated_at!r},'
            f'"summary":{self.summary_json},"topologies":{{{reports}}}}}'
        )


class Poller:
    """Builds snapshots from a :class:`ClusterView` (:meth:`collect`: one caller at a time).

    Every call into the cluster runs on the poller's own threads (never a pool that request
    handlers share) and is awaited at most ``deadline`` seconds per poll (default
    :func:`poll_deadline`): the topologies are polled at once, and what is ready by the
    deadline is published.  A call still running then is not started again while it
    runs; when it ends, its result is what the topology shows until a newer one.
    """

    def __init__(self, view: ClusterView, interval: float, deadline: float | None = None) -> None:
        self.view = view
        self.interval = interval
        self.deadline = poll_deadline(interval) if deadline is None else deadline
        self._pool = ThreadPoolExecutor(POLL_THREADS, thread_name_prefix="sparkstorm-ui-poll")
        self._running: dict[str, Future[Any]] = {}
        self._lock = threading.Lock()
        self._trackers: dict[str, RateTracker] = {}
        #: Topology id -> its components (they do not change while it runs).
        self._components: dict[str, dict[str, Any]] = {}
        #: Topology -> what its last successful poll gave (row, detail, rates).
        self._last: dict[str, Polled] = {}
        #: Every topology's time-series, fed by each poll (:mod:`.series`).
        self.series = SeriesStore()

    def _start(self, key: str, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """``fn(*args)`` on the poller's threads, or the call for ``key`` still running."""
        running = self._running.get(key)
        if running is None or running.done():
            running = self._running[key] = self._pool.submit(fn, *args)
        return running

    def collect(self, seq: int) -> Snapshot:
        """Poll every topology once, within :attr:`deadline` seconds.  A topology that
        cannot be read now (its workers are starting, busy or late) keeps what its last poll
        gave, with this poll's ``error``; one never read is listed with nulls and its
        ``error``; a cluster that cannot be read gives a summary with ``error`` (and the
        topologies last seen, each with that error)."""
        deadline = time.monotonic() + self.deadline
        error: str | None = None
        with self._lock:
            names: list[str] = sorted(self._last)
        nimbus: dict[str, Any] | None = None
        round_: PollRound | None = None
        try:
            round_ = self._start(ROUND, self.view.poll_round).result(self.deadline)
            names, nimbus = list(round_.names), round_.nimbus
        except FutureTimeout:
            error = f"the cluster did not answer within {self.deadline:g} s"
        except Exception as exc:  # the cluster is unreachable: say so, poll again later
            names, error = [], f"{type(exc).__name__}: {exc}"
        polls = {}
        if round_ is not None:
            polls = {n: self._start(n, self._topology, n, round_.poll) for n in names}
            wait(list(polls.values()), max(0.0, deadline - time.monotonic()))
        rows: list[dict[str, Any]] = []
        topologies: dict[str, dict[str, Any]] = {}
        rates: dict[str, dict[Key, float]] = {}
        for name in names:
            row, detail, rate = self._outcome(name, polls.get(name), error)
            rows.append(row)
            if detail is not None:
                topologies[name], rates[name] = detail, rate
        with self._lock:
            for gone in set(self._trackers) - set(names):
                del self._trackers[gone]
            for gone in set(self._last) - set(names):
                del self._last[gone]
            for gone in set(self._running) - {*names, ROUND}:
                if self._running[gone].done():
                    del self._running[gone]
        if round_ is not None:
            self.series.keep(names)
        summary = self._summary(rows, nimbus, error, seq)
        return Snapshot(
            seq,
            summary["generated_at"],
            summary,
            topologies,
            encode(summary),
            {name: encode(detail) for name, detail in topologies.items()},
            rates,
        )

    def _outcome(self, name: str, poll: Future[Any] | None, error: str | None) -> Polled:
        """What ``name``'s row and report are this poll: this poll's, else the last one's
        with the reason (``error``, the poll's failure, or its lateness)."""
        why = error
        if poll is not None and poll.done() and poll.exception() is None:
            return cast(Polled, poll.result())
        if poll is not None and poll.done():
            exc = poll.exception()
            why = str(exc) if isinstance(exc, SparkstormError) else repr(exc)
        elif poll is not None:
            why = f"no answer within {self.deadline:g} s (still asking its workers)"
        with self._lock:
            last = self._last.get(name)
        if last is None:
            return {**dict.fromkeys(ROW_FIELDS), "name": name, "error": why}, None, {}
        return {**last[0], "error": why}, last[1], last[2]

    def _topology(self, name: str, poll: Callable[[str], TopologySnapshot]) -> Polled:
        """Poll one topology (on a poller thread); remembered as its last good poll."""
        report, replies = poll(name)
        topology_id = str((report.get("topology") or {}).get("id") or name)
        components = self._components.get(topology_id)
        if components is None:
            components = self._components[topology_id] = self.view.describe(name)["components"]
        with self._lock:
            tracker = self._trackers.setdefault(name, RateTracker())
        rates = tracker.update(replies)
        self.series.record(name, time.time(), replies)
        spouts = {s["id"] for s in report.get("spouts", [])}
        totals = topology_rates(rates, spouts)
        row = {k: report.get("topology", {}).get(k) for k in SUMMARY_FIELDS}
        row.update(totals, error=None)
        for what in ("emitted", "acked", "failed"):
            row[what] = sum(int(s.get(what) or 0) for s in report.get("spouts", []))
        row["window"] = window_seconds(report.get("window"))  # seconds, as a number
        capacities = [b.get("capacity") for b in report.get("bolts", [])]
        known = [c for c in capacities if c is not None]
        row["max_capacity"] = max(known, default=None)  # unknown until a bolt has one
        detail = {**report, "graph": build_graph(components, report, rates), "rates": totals}
        polled: Polled = (row, detail, rates)
        with self._lock:
            self._last[name] = polled
        return polled

    def close(self) -> None:
        """Stop the poller's threads (calls under way end on their own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _summary(
        self,
        rows: list[dict[str, Any]],
        nimbus: dict[str, Any] | None,
        error: str | None,
        seq: int,
    ) -> dict[str, Any]:
        return {
            "seq": seq,
            "generated_at": time.time(),
            "publish_interval_secs": self.interval,
            "nimbus": nimbus,
            "error": error,
            "topologies": rows,
            "totals": {
                "topologies": len(rows),
                "workers": sum(int(r.get("workers") or 0) for r in rows),
                "workers_alive": sum(int(r.get("workers_alive") or 0) for r in rows),
                "tasks": sum(int(r.get("tasks") or 0) for r in rows),
                **{
                    k: round(sum(float(r.get(k) or 0.0) for r in rows), 1)
                    for k in ("emitted_per_sec", "acked_per_sec", "failed_per_sec")
                },
            },
        }


class Hub:
    """The single background poll of a server and the clients waiting on it (every method
    runs on the server's event loop; :meth:`close` may be called from any thread through
    ``loop.call_soon_threadsafe``)."""

    def __init__(self, poller: Poller) -> None:
        self.poller = poller
        self.interval = poller.interval
        self.latest: Snapshot | None = None
        #: Polls done, and event-stream clients connected now (for ``/api/v1/ui``).
        self.polls = 0
        self.clients = 0
        self.closing = False
        self._published = asyncio.Event()

    async def run(self) -> None:
        """Poll every interval until cancelled (a failed poll is logged and retried).  The
        poll runs on a thread of its own limiter, so request handlers filling anyio's
        default pool cannot hold it back."""
        limiter = anyio.CapacityLimiter(1)
        while not self.closing:
            started = time.monotonic()
            try:
                snapshot = await anyio.to_thread.run_sync(
                    self.poller.collect, self.polls + 1, abandon_on_cancel=True, limiter=limiter
                )
            except Exception:
                log.exception("UI poll failed")
            else:
                self._publish(snapshot)
            await asyncio.sleep(max(0.0, self.interval - (time.monotonic() - started)))

    def _publish(self, snapshot: Snapshot) -> None:
        self.polls = snapshot.seq
        self.latest = snapshot
        published, self._published = self._published, asyncio.Event()
        published.set()

    def close(self) -> None:
        """Wake every waiting client so that event streams end (server shutdown)."""
        self.closing = True
        self._published.set()

    async def newer(self, seq: int, timeout: float) -> Snapshot | None:
        """The latest snapshot once its ``seq`` is above ``seq`` (None after ``timeout``
        seconds, or when the hub closes)."""
        deadline = time.monotonic() + timeout
        while not self.closing:
            latest = self.latest
            if latest is not None and latest.seq > seq:
                return latest
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                await asyncio.wait_for(self._published.wait(), remaining)
            except TimeoutError:
                return None
        return None

    async def current(self, timeout: float) -> Snapshot | None:
        """The latest snapshot, waiting up to ``timeout`` seconds for the first."""
        return self.latest or await self.newer(0, timeout)
