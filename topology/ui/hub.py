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
import time
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from topology.errors import SparkstormError

from .graph import build_graph
from .rates import Key, RateTracker, topology_rates
from .source import ClusterView

log = logging.getLogger("sparkstorm.ui")

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
    """Builds snapshots from a :class:`ClusterView` (blocking; one thread at a time)."""

    def __init__(self, view: ClusterView, interval: float) -> None:
        self.view = view
        self.interval = interval
        self._trackers: dict[str, RateTracker] = {}
        #: Topology -> what its last successful poll gave (row, detail, rates).
        self._last: dict[str, tuple[dict[str, Any], dict[str, Any], dict[Key, float]]] = {}

    def collect(self, seq: int) -> Snapshot:
        """Poll every topology once.  A topology that cannot be read now (its workers are
        starting or busy) keeps what its last poll gave, with this poll's ``error``; one
        never read is listed with nulls and its ``error``; a cluster that cannot be read
        gives a summary with ``error``."""
        rows: list[dict[str, Any]] = []
        topologies: dict[str, dict[str, Any]] = {}
        rates: dict[str, dict[Key, float]] = {}
        error = None
        try:
            names = self.view.topology_names()
        except Exception as exc:  # the cluster is unreachable: say so, poll again later
            names, error = [], f"{type(exc).__name__}: {exc}"
        for name in names:
            try:
                self._last[name] = self._topology(name)
                row, detail, rates[name] = self._last[name]
            except Exception as exc:  # killed meanwhile, or its workers do not answer
                why = str(exc) if isinstance(exc, SparkstormError) else repr(exc)
                last = self._last.get(name)
                if last is None:
                    row, detail = {**dict.fromkeys(ROW_FIELDS), "name": name, "error": why}, None
                else:
                    row, detail, rates[name] = {**last[0], "error": why}, last[1], last[2]
            rows.append(row)
            if detail is not None:
                topologies[name] = detail
        for gone in set(self._trackers) - set(names):
            del self._trackers[gone]
        for gone in set(self._last) - set(names):
            del self._last[gone]
        summary = self._summary(rows, error, seq)
        return Snapshot(
            seq,
            summary["generated_at"],
            summary,
            topologies,
            encode(summary),
            {name: encode(detail) for name, detail in topologies.items()},
            rates,
        )

    def _topology(self, name: str) -> tuple[dict[str, Any], dict[str, Any], dict[Key, float]]:
        report, replies = self.view.poll(name)
        components = self.view.describe(name)["components"]
        rates = self._trackers.setdefault(name, RateTracker()).update(replies)
        spouts = {s["id"] for s in report.get("spouts", [])}
        totals = topology_rates(rates, spouts)
        row = {k: report.get("topology", {}).get(k) for k in SUMMARY_FIELDS}
        row.update(totals, error=None)
        for what in ("emitted", "acked", "failed"):
            row[what] = sum(int(s.get(what) or 0) for s in report.get("spouts", []))
        row["window"] = report.get("window")
        capacities = [b.get("capacity") or 0.0 for b in report.get("bolts", [])]
        row["max_capacity"] = max(capacities, default=None)
        detail = {**report, "graph": build_graph(components, report, rates), "rates": totals}
        return row, detail, rates

    def _summary(self, rows: list[dict[str, Any]], error: str | None, seq: int) -> dict[str, Any]:
        try:
            nimbus = self.view.nimbuses()
        except Exception as exc:
            nimbus, error = None, error or f"nimbuses: {exc}"
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
        """Poll every interval until cancelled (a failed poll is logged and retried)."""
        while not self.closing:
            started = time.monotonic()
            try:
                snapshot = await anyio.to_thread.run_sync(
                    self.poller.collect, self.polls + 1, abandon_on_cancel=True
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
