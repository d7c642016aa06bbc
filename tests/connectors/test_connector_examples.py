"""The connector examples stay working end to end, on a LocalCluster against real servers:
examples/redis_to_postgres.py (a Redis stream, windows per key, exactly-once rows in
PostgreSQL; fed twice while running, through a SIGKILLed worker) and
examples/events_to_parquet.py (generated events, and files of JSON lines, as Parquet
partitioned by date)."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.connectors.postgres_server import PostgresServer
from tests.connectors.redis_server import RedisServer
from tests.integration.helpers import wait_for
from topology import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import events_to_parquet  # noqa: E402 - the examples, imported as their users run them
import redis_to_postgres  # noqa: E402

pytestmark = [pytest.mark.connectors, pytest.mark.timeout(60)]


def conf(tmp_path: Path) -> dict[str, Any]:
    return {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path / "state"),
        "topology.state.checkpoint.interval.ms": 200,
    }


def test_redis_to_postgres_writes_every_window_once(
    redis_server: RedisServer, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    pytest.importorskip("redis")
    pytest.importorskip("psycopg")
    name = f"t{uuid.uuid4().hex[:8]}"
    where: dict[str, Any] = {"redis_url": redis_server.url, "stream": name}
    windows: dict[str, Any] = {"window_secs": 1.0, "lag_secs": 0.5}
    table: dict[str, Any] = {"dsn": postgres_server.dsn, "table": name}
    fed = redis_to_postgres.feed(700, **where, **windows, seed=1)
    topology = redis_to_postgres.build(**where, **windows, **table)

    def wrong() -> list[str]:
        expected = redis_to_postgres.expected_windows(**where, **windows)
        return redis_to_postgres.differences(expected, redis_to_postgres.stored_windows(**table))

    with LocalCluster() as cluster:
        cluster.submit_topology("redis-pg", conf(tmp_path), topology)
        wait_for(wrong, lambda w: w == [], 30, 0.2)
        fed += redis_to_postgres.feed(500, **where, **windows, seed=2)  # while it runs ...
        worker = cluster.worker_pids("redis-pg")[1]
        os.kill(worker, signal.SIGKILL)  # ... and loses a worker: windows come back whole
        wait_for(lambda: cluster.restarts("redis-pg").get(1, 0), bool, 30)
        wait_for(wrong, lambda w: w == [], 30, 0.2)
        errors = cluster.errors("redis-pg")
    assert wrong() == []
    stored = redis_to_postgres.stored_windows(**table)
    # every reading fed is counted once, in a window of one second of its sensor
    assert sum(n for n, *_ in stored.values()) == fed == 1200
    assert len({sensor for sensor, _ in stored}) == len(redis_to_postgres.SENSORS)
    assert all(low <= total / n <= high for n, total, low, high in stored.values())
    said = [e["text"] for c in ("readings", "windows", "store") for e in errors.get(c, [])]
    assert not said, said


def test_generated_events_to_parquet_partitioned_by_date(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    topology = events_to_parquet.build(out_dir=str(out), events=3000, events_dir="")
    with LocalCluster() as cluster:
        cluster.submit_topology("events", conf(tmp_path), topology)
        wait_for(lambda: len(events_to_parquet.written_ids(str(out))), lambda n: n >= 3000, 30)
        errors = cluster.errors("events")
    assert sorted(events_to_parquet.written_ids(str(out))) == list(range(3000))
    days = sorted(p.name for p in out.iterdir())
    assert days == ["date=2026-01-01", "date=2026-01-02", "date=2026-01-03"]
    assert not errors


def test_json_lines_files_to_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    source, out = tmp_path / "in", tmp_path / "out"
    events_to_parquet.write_json(str(source), 2000)
    topology = events_to_parquet.build(out_dir=str(out), events_dir=str(source))
    with LocalCluster() as cluster:
        cluster.submit_topology("json-events", conf(tmp_path), topology)
        wait_for(lambda: len(events_to_parquet.written_ids(str(out))), lambda n: n >= 2000, 30)
        errors = cluster.errors("json-events")
    ids = events_to_parquet.written_ids(str(out))
    assert Counter(ids) == Counter(events_to_parquet.expected_ids({}, str(source)))
    assert sorted(ids) == list(range(2000))
    assert not errors
