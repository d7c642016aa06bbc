"""The connector cases of ``bench/run.py`` (issue 26): records/s through a sink, against
the same topology with the external systems replaced by memory.

* ``redis-pg`` — a Redis stream per spout task, prefilled, read exactly-once by
  ``RedisStreamSpout`` → a count per key (``StatefulBolt``, fields grouping) →
  ``PostgresTransactionalSink`` upserting ``key_counts``; ``redis-pg-memory`` — the same
  with a list-backed source and a dict for the table (bench/connector_workload.py);
* ``parquet-sink`` — generated rows → ``FileSink(format="parquet")`` into a temporary
  directory; ``parquet-memory`` — the same into an in-memory transactional sink.

Each topology is exactly-once with a checkpoint every second, on a LocalCluster, one task
of each component per worker.  The figure is the records/s the sink (``store``) executed,
the median of three consecutive windows after a warm-up (as bench/cases.py measures);
``mean_per_sec`` is their mean (over the whole measured time).
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
from collections.abc import Iterator
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


def _run(name: str, conf: dict[str, Any], topology: Any, secs: float) -> dict[str, Any]:
    """Records/s through ``store`` on a LocalCluster, and how many it executed in all."""
    from topology import LocalCluster

    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, topology)
        measured = _measure(cluster, name, secs, WARMUP_SECS, component="store")
        done = executed(cluster.worker_status(name), "store")
        cluster.kill_topology(name, wait_secs=0)
    return {
        "records_per_sec": measured["words_per_sec"],
        "windows": measured["windows"],
        # a sink that commits in bursts stalls its topology for seconds at a time: the
        # mean of the windows is the records/s over the whole measured time
        "mean_per_sec": statistics.mean(measured["windows"]),
        "executed": done,
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
            topology = key_count(workers, ListSource(streams), MemoryUpsertSink())
            return _run("redis-pg", conf, topology, secs)
        from topology.connectors import PostgresTransactionalSink, RedisStreamSpout

        with redis_server(STREAM_ENTRIES, streams) as url, postgres_server() as dsn:
            spout = RedisStreamSpout(
                url, streams=streams, outputs=["key"], guarantee="exactly_once"
            )
            sink = PostgresTransactionalSink(dsn, "key_counts", ["key", "n"], key=["key"])
            result = _run("redis-pg", conf, key_count(workers, spout, sink), secs)
            result["rows"] = _rows(dsn)
    filled = STREAM_ENTRIES * len(streams)
    return {**result, "entries": filled, "ran_dry": result["executed"] >= 0.98 * filled}


def _rows(dsn: str) -> int:
    """Rows of ``key_counts`` (one per key once anything was committed)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute("SELECT count(*) FROM key_counts").fetchone()
    return int(found[0]) if found else 0


@_errors_reported
def case_parquet(secs: float, workers: int, memory: bool = False, **_: Any) -> dict[str, Any]:
    """Generated rows → FileSink(format="parquet"), exactly-once (``memory``: into an
    in-memory transactional sink)."""
    with tempfile.TemporaryDirectory() as folder:
        conf = _conf(workers, os.path.join(folder, "state"))
        if memory:
            return _run("parquet", conf, rows_to_sink(workers, MemoryRowsSink()), secs)
        from topology.connectors import FileSink

        out = os.path.join(folder, "out")
        sink = FileSink(out, format="parquet")
        result = _run("parquet", conf, rows_to_sink(workers, sink), secs)
        result["files"] = sum(1 for n in os.listdir(out) if n.endswith(".parquet"))
    return result


CONNECTOR_CASES = {
    "redis-pg": case_redis_pg,
    "parquet": case_parquet,
}
