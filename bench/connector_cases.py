"""The connector cases of ``bench/run.py`` (issue 26): records/s through a sink, against
the same topology with the external systems replaced by memory.

* ``redis-pg`` — a Redis stream per spout task, prefilled, read exactly-once by
  ``RedisStreamSpout`` → a count per key (``StatefulBolt``, fields grouping) →
  ``PostgresTransactionalSink`` upserting ``key_counts``; ``redis-pg-memory`` — the same
  with a list-backed source and a dict for the table (bench/connector_workload.py);
* ``parquet-sink`` — generated rows → ``FileSink(format="parquet")`` into a temporary
  directory; ``parquet-memory`` — the same into an in-memory transactional sink.

Each topology is exactly-once with a checkpoint every second, on a LocalCluster, one task
of each component per worker.  The figure is input records whose effect is *committed* in
the target, per second: ``redis-pg`` ``sum(n)`` of ``key_counts`` (read by a connection of
its own; each count is the records of its key so far), ``redis-pg-memory`` the same sum
over the committed dicts, ``parquet-sink`` the rows of the published part files (their
Parquet footers), ``parquet-memory`` the rows its commits moved — sampled at the window
boundaries of bench/cases.py's ``_measure``: the median of three consecutive windows after
a warm-up; ``mean_per_sec`` is their mean (over the whole measured time).  Rows the sink
only staged (``executed``, also reported) do not count until a checkpoint commits them.
The cases start their own redis-server and PostgreSQL (the classes of the connector test
fixtures, tests/connectors/) on free loopback ports in temporary directories and stop
them by pid at the end, failed or not; a missing binary is reported as the case's
``error``, naming the Debian package.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from cases import _measure, _overrides, executed  # noqa: E402
from connector_workload import (  # noqa: E402
    ListSource,
    MemoryRowsSink,
    MemoryUpsertSink,
    Progress,
    key_count,
    rows_to_sink,
    stream_names,
)

#: Seconds of warm-up before the measured windows (the servers are up by then).
WARMUP_SECS = 3.0
#: Entries prefilled per stream: more than a spout task reads in warm-up + 10 s windows.
STREAM_ENTRIES = 1_500_000
#: Server-side fill (no round trip per entry): ``XADD`` of entries ARGV[1]..ARGV[2].
FILL_SCRIPT = """
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  redis.call('XADD', KEYS[1], '*', 'key', 'k' .. (i % 1000))
end
return 0
"""


class Missing(Exception):
    """A server's binary is not installed (the message names the package)."""


def _conf(workers: int, folder: str) -> dict[str, Any]:
    """Exactly-once with a checkpoint a second, state in ``folder``; then ``-c``."""
    return {
        "topology.workers": workers,
        "topology.state.dir": folder,
        "topology.state.checkpoint.interval.ms": 1000,
        **_overrides(),
    }


@contextlib.contextmanager
def redis_server(entries: int, streams: list[str]) -> Iterator[str]:
    """A redis-server with ``streams`` prefilled (``entries`` each); its URL."""
    from tests.connectors.redis_server import BINARY, MISSING, RedisServer

    if shutil.which(BINARY) is None:
        raise Missing(MISSING)
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as folder:
        server = RedisServer(Path(folder))
        try:
            server.start()
            _fill(server.url, entries, streams)
            yield server.url
        finally:
            server.stop()


def _fill(url: str, entries: int, streams: list[str]) -> None:
    import redis

    client: Any = redis.Redis.from_url(url)
    try:
        fill = client.register_script(FILL_SCRIPT)
        for stream in streams:
            for first in range(0, entries, 100_000):
                fill(keys=[stream], args=[first, min(entries, first + 100_000) - 1])
    finally:
        client.close()


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL with the table ``key_counts (key PRIMARY KEY, n)``; its DSN."""
    from tests.connectors.postgres_server import Unavailable, running_postgres

    try:
        with running_postgres("bench-pg-") as server:
            import psycopg

            with psycopg.connect(server.dsn, autocommit=True) as conn:
                conn.execute("CREATE TABLE key_counts (key text PRIMARY KEY, n bigint NOT NULL)")
            yield server.dsn
    except Unavailable as exc:
        raise Missing(str(exc)) from exc


#: The name every case's topology is submitted under.
NAME = "connector"
#: Seconds between two reads of a committed total while waiting for a commit ...
POLL_SECS = 0.02
#: ... and the longest wait: a sink that commits nothing that long counts 0 meanwhile.
COMMIT_WAIT_SECS = 10.0


def at_commits(count: Callable[[], float]) -> Callable[[], float]:
    """``count`` read only just after it moved (a commit): a call waits for the committed
    total to change (polling every :data:`POLL_SECS`, at most :data:`COMMIT_WAIT_SECS`)
    and to hold still for a poll (the other sink tasks' commits of that checkpoint), so
    the windows ``_measure`` times between two calls span whole commit cycles — the
    committed total moves in steps, once a checkpoint, and a window cut mid-step would
    count one step more or less (±60 % in a 1.7 s window)."""

    def read() -> float:
        first = last = count()
        deadline = time.monotonic() + COMMIT_WAIT_SECS
        while time.monotonic() < deadline:
            time.sleep(POLL_SECS)
            now = count()
            if now == last != first:
                return now
            last = now
        return last

    return read


def _run(
    conf: dict[str, Any], topology: Any, secs: float, count: Callable[[], float]
) -> dict[str, Any]:
    """Committed records/s on a LocalCluster (``count`` gives the running total, sampled
    :func:`at_commits`), and the totals the sink executed (staged) and committed by the
    end of the windows."""
    from topology import LocalCluster

    with LocalCluster() as cluster:
        cluster.submit_topology(NAME, conf, topology)
        measured = _measure(cluster, NAME, secs, WARMUP_SECS, count=at_commits(count))
        done = executed(cluster.worker_status(NAME), "store")
        total = count()
        cluster.kill_topology(NAME, wait_secs=0)
    return {
        "records_per_sec": measured["words_per_sec"],
        "windows": measured["windows"],
        # commits come once a checkpoint, and a slow one stalls the topology: the mean of
        # the windows is the committed records/s over the whole measured time
        "mean_per_sec": statistics.mean(measured["windows"]),
        "executed": done,
        "committed": round(total),
    }


def _errors_reported(case: Any) -> Any:
    """``case`` returning ``{"error": ...}`` when a server's binary is missing."""

    def run(**params: Any) -> dict[str, Any]:
        try:
            return case(**params)
        except Missing as exc:
            return {"error": str(exc)}

    run.__doc__ = case.__doc__
    return run


@_errors_reported
def case_redis_pg(secs: float, workers: int, memory: bool = False, **_: Any) -> dict[str, Any]:
    """Redis stream → count per key → PostgreSQL upserts, exactly-once (``memory``: a list
    and a dict instead)."""
    streams = stream_names(workers)
    with tempfile.TemporaryDirectory() as folder:
        conf = _conf(workers, folder)
        if memory:
            progress = Progress(_folder(folder, "progress"))
            topology = key_count(workers, ListSource(streams), MemoryUpsertSink(progress))
            return _run(conf, topology, secs, progress.total)
        from topology.connectors import PostgresTransactionalSink, RedisStreamSpout

        with redis_server(STREAM_ENTRIES, streams) as url, postgres_server() as dsn:
            spout = RedisStreamSpout(
                url, streams=streams, outputs=["key"], guarantee="exactly_once"
            )
            sink = PostgresTransactionalSink(dsn, "key_counts", ["key", "n"], key=["key"])
            with _TableSum(dsn) as table_sum:
                result = _run(conf, key_count(workers, spout, sink), secs, table_sum)
                result["rows"] = table_sum.rows()
    filled = STREAM_ENTRIES * len(streams)
    return {**result, "entries": filled, "ran_dry": result["executed"] >= 0.98 * filled}


def _folder(parent: str, name: str) -> str:
    """``parent/name``, created."""
    path = os.path.join(parent, name)
    os.makedirs(path)
    return path


class _TableSum:
    """``sum(n)`` of ``key_counts`` — the input records whose count PostgreSQL committed —
    read by a connection of its own (autocommit: each call sees the last commit)."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def __enter__(self) -> _TableSum:
        import psycopg

        self.conn = psycopg.connect(self.dsn, autocommit=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()

    def __call__(self) -> float:
        found = self.conn.execute("SELECT coalesce(sum(n), 0) FROM key_counts").fetchone()
        return float(found[0]) if found else 0.0

    def rows(self) -> int:
        """Rows of ``key_counts`` (one per key once anything was committed)."""
        found = self.conn.execute("SELECT count(*) FROM key_counts").fetchone()
        return int(found[0]) if found else 0


class _PublishedRows:
    """Rows in the published (``part-...``) Parquet files under ``folder``: each file's
    footer is read once (a published file never changes)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.seen: dict[str, int] = {}

    def __call__(self) -> float:
        import pyarrow.parquet as pq

        for name in os.listdir(self.folder):
            if name.startswith("part-") and name not in self.seen:
                path = os.path.join(self.folder, name)
                self.seen[name] = pq.read_metadata(path).num_rows
        return float(sum(self.seen.values()))


@_errors_reported
def case_parquet(secs: float, workers: int, memory: bool = False, **_: Any) -> dict[str, Any]:
    """Generated rows → FileSink(format="parquet"), exactly-once (``memory``: into an
    in-memory transactional sink)."""
    with tempfile.TemporaryDirectory() as folder:
        conf = _conf(workers, os.path.join(folder, "state"))
        if memory:
            progress = Progress(_folder(folder, "progress"))
            return _run(conf, rows_to_sink(workers, MemoryRowsSink(progress)), secs, progress.total)
        from topology.connectors import FileSink

        out = _folder(folder, "out")
        sink = FileSink(out, format="parquet")
        published = _PublishedRows(out)
        result = _run(conf, rows_to_sink(workers, sink), secs, published)
        result["files"] = len(published.seen)
    return result


CONNECTOR_CASES = {
    "redis-pg": case_redis_pg,
    "parquet": case_parquet,
}
