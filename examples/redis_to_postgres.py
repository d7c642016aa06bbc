"""Per-window aggregates of a Redis stream, written exactly once into PostgreSQL.

    python3 examples/redis_to_postgres.py feed 10000     # sample readings into the stream
    sparkstorm local examples/redis_to_postgres.py:topology --duration 15
    psql "host=127.0.0.1 port=5432 user=postgres dbname=postgres" \\
        -c "SELECT * FROM sensor_windows ORDER BY window_start, sensor LIMIT 20"

readings (RedisStreamSpout, exactly-once: the stream ids are kept in the checkpoints)
--fields["sensor"]--> windows (WindowedBolt: tumbling 10 s windows of event time per
sensor: readings, total, low, high) --> store (PostgresTransactionalSink: a row per
(sensor, window_start), upserted in one transaction per checkpoint, once it is complete)

The windows' contents and watermarks, the stream ids and the rows not yet written are all
in each checkpoint (every second), so after any failure the topology goes back to the last
complete one and the rows in PostgreSQL are as if every reading was counted once.
``verify`` (run by ``sparkstorm local`` at the end) recomputes every closed window from
the stream and compares it with the table.

Servers (Debian packages ``redis-server`` and ``postgresql``): docs/CONNECTORS.md's
step by step starts both on this machine, as root or not, and stops them at the end.
(Or the distro's service, ``sudo service postgresql start``, with ``POSTGRES_DSN`` set to
a role that may create tables: ``"host=127.0.0.1 dbname=... user=... password=..."``.)

Settings, from the environment: ``REDIS_URL`` (``redis://127.0.0.1:6379/0``),
``REDIS_STREAM`` (``readings``), ``POSTGRES_DSN`` (``host=127.0.0.1 port=5432
user=postgres dbname=postgres``), ``POSTGRES_TABLE`` (``sensor_windows``, created when
missing), ``WINDOW_SECS`` (10), ``LAG_SECS`` (2: how far out of order readings may come).

``feed N`` appends N readings of 8 sensors, 0.01 s of event time apart (up to 0.5 s out
of order), continuing the stream's event time; then one *heartbeat* per sensor (an entry
without a value) 1 window + the lag later, which moves every watermark past the last
readings so their windows fire without waiting for more input.  Feed again while the
topology runs, or before running it again: a new run reads the stream from its start
(exactly-once reads keep no consumer group) and upserts the same rows again.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import random
import sys
import time
from collections.abc import Mapping
from typing import Any

from topology import Topology, TopologyBuilder, WindowedBolt
from topology.connectors import PostgresTransactionalSink, RedisStreamSpout

SENSORS = [f"sensor-{n}" for n in range(8)]
STEP = 0.01  # seconds of event time between two readings of a feed
JITTER = 0.5  # readings come up to this much out of order (less than the lag)
COLUMNS = ["sensor", "window_start", "window_end", "readings", "total", "low", "high"]


def setting(name: str) -> str:
    defaults = {
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "REDIS_STREAM": "readings",
        "POSTGRES_DSN": "host=127.0.0.1 port=5432 user=postgres dbname=postgres",
        "POSTGRES_TABLE": "sensor_windows",
        "WINDOW_SECS": "10",
        "LAG_SECS": "2",
    }
    return os.environ.get(name, defaults[name])


def decode(fields: Mapping[bytes, bytes]) -> list[Any]:
    """A stream entry -> ``[sensor, ts, value]`` (value None for a heartbeat); an entry
    that does not parse goes to the spout's ``errors`` stream."""
    value = fields.get(b"value")
    return [
        fields[b"sensor"].decode(),
        float(fields[b"ts"]),
        float(value) if value is not None else None,
    ]


def iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


class WindowTotals(WindowedBolt):
    outputs = COLUMNS

    def execute(self, window):
        values = [t["value"] for t in window.tuples if t["value"] is not None]
        if values:  # (a window of heartbeats only has nothing to say)
            total = math.fsum(values)
            sensor = window.key[0]
            row = [sensor, iso(window.start), iso(window.end), len(values), total]
            self.emit(row + [min(values), max(values)])


class WindowTable(PostgresTransactionalSink):
    """The sink, creating its table when missing."""

    def __init__(self, dsn: str, table: str, **settings: Any) -> None:
        super().__init__(dsn, table, COLUMNS, key=["sensor", "window_start"], **settings)
        self.table = table

    def connect(self, conf, context):
        super().connect(conf, context)
        self.table_ready = False

    def commit_rows(self, conn, sink, rows, checkpoint):  # on the commit's own connection
        if not self.table_ready:
            create_table(conn, self.table)
            self.table_ready = True
        return super().commit_rows(conn, sink, rows, checkpoint)


def create_table(conn: Any, table: str) -> None:
    import psycopg

    stmt = psycopg.sql.SQL(
        "CREATE TABLE IF NOT EXISTS {} (sensor text, window_start timestamptz, "
        "window_end timestamptz NOT NULL, readings integer NOT NULL, "
        "total double precision NOT NULL, low double precision NOT NULL, "
        "high double precision NOT NULL, PRIMARY KEY (sensor, window_start))"
    ).format(psycopg.sql.Identifier(table))
    # (another task may create it at the same moment)
    with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
        conn.execute(stmt)


def build(
    *,
    redis_url: str | None = None,
    stream: str | None = None,
    dsn: str | None = None,
    table: str | None = None,
    window_secs: float | None = None,
    lag_secs: float | None = None,
    parallelism: int = 2,
) -> Topology:
    """The topology; a setting not given comes from the environment (see the docstring)."""
    spout = RedisStreamSpout(
        redis_url or setting("REDIS_URL"),
        streams=[stream or setting("REDIS_STREAM")],
        outputs=["sensor", "ts", "value"],
        decode=decode,
        guarantee="exactly_once",
    )
    windows = (
        WindowTotals()
        .with_tumbling_window(seconds=window_secs or float(setting("WINDOW_SECS")))
        .with_timestamp_field("ts")
        .with_key("sensor")
        .with_lag(lag_secs if lag_secs is not None else float(setting("LAG_SECS")))
        .with_watermark_interval(0.2)
    )
    store = WindowTable(
        dsn or setting("POSTGRES_DSN"),
        table or setting("POSTGRES_TABLE"),
    )
    builder = TopologyBuilder()
    builder.set_spout("readings", spout)  # one stream: one task reads it
    builder.set_bolt("windows", windows, parallelism).fields_grouping("readings", ["sensor"])
    builder.set_bolt("store", store, parallelism).shuffle_grouping("windows")
    return builder.create_topology()


def topology() -> Topology:
    """``sparkstorm local examples/redis_to_postgres.py:topology``: settings from the
    environment."""
    return build()


# -- the feed, and the check ---------------------------------------------------------------


def feed(
    count: int,
    *,
    redis_url: str | None = None,
    stream: str | None = None,
    window_secs: float | None = None,
    lag_secs: float | None = None,
    seed: int | None = None,
) -> int:
    """Append ``count`` readings to the stream, then a heartbeat per sensor; returns the
    number of readings written."""
    import redis

    window = window_secs or float(setting("WINDOW_SECS"))
    lag = lag_secs if lag_secs is not None else float(setting("LAG_SECS"))
    key = stream or setting("REDIS_STREAM")
    client: Any = redis.Redis.from_url(redis_url or setting("REDIS_URL"))
    try:
        last = client.xrevrange(key, count=1)
        start = float(last[0][1][b"ts"]) + STEP if last else math.floor(time.time())
        rng = random.Random(seed)
        pipe = client.pipeline(transaction=False)
        newest = start
        for i in range(count):
            ts = round(start + i * STEP + rng.uniform(0, JITTER), 3)
            value = round(rng.gauss(20.0, 5.0), 2)
            pipe.xadd(key, {"sensor": rng.choice(SENSORS), "ts": ts, "value": value})
            newest = max(newest, ts)
            if i % 1000 == 999:
                pipe.execute()
        heartbeat = round(math.floor(newest / window) * window + window + lag + STEP, 3)
        for sensor in SENSORS:
            pipe.xadd(key, {"sensor": sensor, "ts": heartbeat})
        pipe.execute()
    finally:
        client.close()
    return count


def expected_windows(
    *,
    redis_url: str | None = None,
    stream: str | None = None,
    window_secs: float | None = None,
    lag_secs: float | None = None,
) -> dict[tuple[str, float], tuple[int, float, float, float]]:
    """Every window the last heartbeat closed, computed from the stream:
    ``{(sensor, window start): (readings, total, low, high)}``."""
    import redis

    window = window_secs or float(setting("WINDOW_SECS"))
    lag = lag_secs if lag_secs is not None else float(setting("LAG_SECS"))
    client: Any = redis.Redis.from_url(redis_url or setting("REDIS_URL"))
    try:
        entries = [decode(fields) for _, fields in client.xrange(stream or setting("REDIS_STREAM"))]
    finally:
        client.close()
    heartbeats = [ts for _, ts, value in entries if value is None]
    watermark = max(heartbeats, default=-math.inf) - lag
    values: dict[tuple[str, float], list[float]] = {}
    for sensor, ts, value in sorted(entries, key=lambda e: e[1]):
        start = math.floor(ts / window) * window
        if value is not None and start + window <= watermark:
            values.setdefault((sensor, round(start, 3)), []).append(value)
    return {k: (len(v), math.fsum(v), min(v), max(v)) for k, v in values.items()}


def stored_windows(
    *, dsn: str | None = None, table: str | None = None
) -> dict[tuple[str, float], tuple[int, float, float, float]]:
    """The table's rows, keyed as :func:`expected_windows` (empty when it is missing)."""
    import psycopg

    query = psycopg.sql.SQL(
        "SELECT sensor, extract(epoch FROM window_start)::float8, readings, total, low, high "
        "FROM {}"
    ).format(psycopg.sql.Identifier(table or setting("POSTGRES_TABLE")))
    with psycopg.connect(dsn or setting("POSTGRES_DSN"), autocommit=True) as conn:
        try:
            rows = conn.execute(query).fetchall()
        except psycopg.errors.UndefinedTable:
            return {}
    return {(s, round(t, 3)): (n, total, low, high) for s, t, n, total, low, high in rows}


def differences(expected: dict, stored: dict) -> list[str]:
    """What the table lacks or has wrong (sums compared to 1e-9 relative)."""
    out = []
    for key, (n, total, low, high) in sorted(expected.items()):
        got = stored.get(key)
        if got is None:
            out.append(f"{key}: missing")
        elif got[0] != n or got[2:] != (low, high) or not math.isclose(got[1], total):
            out.append(f"{key}: {got} != {(n, total, low, high)}")
    return out


def verify(results: dict, timeout: float = 15.0) -> str:
    """Every window closed in the stream is in the table with the same aggregates (rows
    are written when their checkpoint completes: wait up to ``timeout`` seconds)."""
    expected = expected_windows()
    deadline = time.monotonic() + timeout
    while (wrong := differences(expected, stored_windows())) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not wrong, f"{len(wrong)} of {len(expected)} windows wrong, e.g. {wrong[:3]}"
    return verified(expected)


#: Why the final table shows ``windows`` acking fewer tuples than it executed.
HELD = (
    "(windows acked fewer than it executed: a reading is acked when it leaves its last "
    "window, and the newest readings and the heartbeats stay in the windows, saved in "
    "each checkpoint, until later readings move the watermark past them)"
)


def verified(expected: Mapping[Any, Any]) -> str:
    """What ``verify`` says of the closed windows ``expected`` once the table holds them."""
    readings = sum(n for n, *_ in expected.values())
    return f"{len(expected):,} windows of {readings:,} readings, each counted exactly once {HELD}"


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "feed" or not sys.argv[2].isdigit():
        sys.exit(f"usage: {sys.argv[0]} feed N   (N readings into {setting('REDIS_STREAM')})")
    written = feed(int(sys.argv[2]))
    print(f"{written:,} readings and {len(SENSORS)} heartbeats added to {setting('REDIS_STREAM')}")
