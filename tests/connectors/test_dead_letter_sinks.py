"""Rows a real server refuses (tests/connectors/*_server.py) are dead-lettered, the rest of
their batch written, and nothing is replayed: a NUL byte in text and a broken CHECK in
PostgreSQL, a WRONGTYPE key in Redis, a record too large for Kafka — and the issue's
pipeline, a Redis consumer group into PostgreSQL, keeps acknowledging past the poison
entry (docs/ERRORS.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.connectors.kafka_mock import KafkaMock
from tests.connectors.postgres_server import PostgresServer
from tests.connectors.redis_server import RedisServer
from tests.integration.helpers import wait_for
from tests.recording_collector import bound
from topology import DEAD_LETTER_FIELDS, LocalCluster, TopologyBuilder
from topology.connectors import Backoff, RowErrors
from topology.connectors.kafka_sinks import KafkaSink
from topology.connectors.postgres import PostgresSink
from topology.connectors.redis_sinks import RedisStreamSink
from topology.connectors.redis_streams import RedisStreamSpout
from topology.errors import DataError
from topology.testing import CaptureBolt, FeederSpout
from topology.tuple import Tuple, TupleSource

psycopg = pytest.importorskip("psycopg")
redis = pytest.importorskip("redis")

pytestmark = [pytest.mark.connectors, pytest.mark.timeout(120)]

ROWS = 1000
#: The row whose text holds a NUL byte, and the one whose amount breaks the CHECK.
NUL, NEGATIVE = 333, 777
CONF: dict[str, Any] = {"topology.workers": 2}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster() as local:
        yield local


def sql(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def row(i: int) -> list[Any]:
    note = "bad\x00note" if i == NUL else f"note {i}"
    return [i, note, -1 if i == NEGATIVE else i]


def letters(captured: list[Any]) -> list[dict[str, Any]]:
    return [dict(zip(DEAD_LETTER_FIELDS, values)) for _, _, values in captured]


def test_postgres_sinks_dead_letter_the_rows_the_server_refuses_and_write_the_rest(
    cluster: LocalCluster, postgres_server: PostgresServer
) -> None:
    dsn = postgres_server.dsn
    for table in ("dl_upsert", "dl_copy"):
        key = " PRIMARY KEY" if table == "dl_upsert" else ""
        sql(
            dsn,
            f"CREATE TABLE {table} (id bigint{key}, note text, amount bigint CHECK (amount >= 0))",
        )
    columns = ["id", "note", "amount"]
    builder = TopologyBuilder()
    builder.set_spout("rows", FeederSpout(["id", "note", "amount"], [row(i) for i in range(ROWS)]))
    upsert = PostgresSink(dsn, "dl_upsert", columns, key=["id"], flush_interval_secs=0.1)
    builder.set_bolt("upsert", upsert, 2).shuffle_grouping("rows")
    copy = PostgresSink(dsn, "dl_copy", columns, flush_interval_secs=0.1)
    builder.set_bolt("copy", copy, 2).shuffle_grouping("rows")
    builder.set_bolt("dead", CaptureBolt()).dead_letters()
    cluster.submit_topology("pg", CONF, builder.create_topology())
    try:
        spout = wait_for(
            lambda: cluster.results("pg")["rows"],
            lambda r: sum(len(s["acked"]) + len(s["failed"]) for s in r.values()) == ROWS,
            90,
        )
        [dead] = cluster.results("pg")["dead"].values()
    finally:
        cluster.kill_topology("pg")
    assert sum(len(s["failed"]) for s in spout.values()) == 0  # nothing replayed
    good = [(i,) for i in range(ROWS) if i not in (NUL, NEGATIVE)]
    for table in ("dl_upsert", "dl_copy"):
        assert sql(dsn, f"SELECT id FROM {table} ORDER BY id") == good
    found = sorted(
        (d["component"], d["values"][0], d["error"].split(":")[0]) for d in letters(dead)
    )
    assert found == [
        ("copy", NUL, "DataError"),
        ("copy", NEGATIVE, "CheckViolation"),
        ("upsert", NUL, "DataError"),
        ("upsert", NEGATIVE, "CheckViolation"),
    ]
    assert {d["attempts"] for d in letters(dead)} == {1}  # data errors: no retries


def test_dead_letters_go_into_a_postgres_table_with_their_values_as_json(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.dsn
    sql(
        dsn,
        "CREATE TABLE dead_letters (component text, task int, source text, stream text, "
        '"values" jsonb, error text, traceback text, attempts int, time float8)',
    )
    sink = PostgresSink(dsn, "dead_letters", DEAD_LETTER_FIELDS, json_columns=["values"])
    sink.connect({}, None)  # type: ignore[arg-type]
    try:
        sink.write_batch([["parse", 3, "orders", "default", ["x", 1], "ValueError: x", "", 4, 1.5]])
    finally:
        sink.disconnect()
    assert sql(dsn, 'SELECT component, "values", attempts FROM dead_letters') == [
        ("parse", ["x", 1], 4)
    ]


def test_a_redis_group_keeps_acknowledging_past_an_entry_postgres_and_redis_refuse(
    cluster: LocalCluster, postgres_server: PostgresServer, redis_server: RedisServer
) -> None:
    """The issue's pipeline: a Redis stream read by a consumer group into PostgreSQL (one
    entry with a NUL byte) and into Redis hashes (one key already a string): both entries
    are dead-lettered, every other row is written, and the group has nothing pending."""
    dsn, url = postgres_server.dsn, redis_server.url
    client = redis.Redis.from_url(url)
    client.delete("in", "dead", *client.keys("h:*"))
    client.set(f"h:{NEGATIVE}", "a string: WRONGTYPE for HSET")
    sql(dsn, "CREATE TABLE grouped (id bigint PRIMARY KEY, note text)")
    pipe = client.pipeline(transaction=False)
    for i in range(ROWS):
        pipe.xadd("in", {"id": str(i), "note": row(i)[1]})
    pipe.execute()
    builder = TopologyBuilder()
    spout = RedisStreamSpout(url, streams=["in"], outputs=["id", "note"], group="g")
    builder.set_spout("in", spout)
    pg = PostgresSink(dsn, "grouped", ["id", "note"], key=["id"], flush_interval_secs=0.1)
    builder.set_bolt("pg", pg, 2).shuffle_grouping("in")
    hashes = RedisStreamSink(url, hash_key=["id"], hash_prefix="h:", flush_interval_secs=0.1)
    builder.set_bolt("hashes", hashes, 2).shuffle_grouping("in")
    dead = RedisStreamSink(url, stream="dead", flush_interval_secs=0.1)
    builder.set_bolt("dead", dead).dead_letters()
    cluster.submit_topology("grouped", CONF, builder.create_topology())
    try:
        wait_for(lambda: client.xlen("dead"), lambda n: n >= 2, 60)
        wait_for(lambda: int(client.xpending("in", "g")["pending"]), lambda n: n == 0, 60)
        assert not cluster.errors("grouped")
    finally:
        cluster.kill_topology("grouped")
    written = sql(dsn, "SELECT count(*) FROM grouped")
    assert written == [(ROWS - 1,)]
    assert len(client.keys("h:*")) == ROWS  # every hash, and the string left as it was
    dead_entries = [
        {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}
        for _, fields in client.xrange("dead")
    ]
    assert sorted((e["component"], e["values"], e["error"][:12]) for e in dead_entries) == [
        ("hashes", f'["{NEGATIVE}", "note {NEGATIVE}"]', "ResponseErro"),
        ("pg", f'["{NUL}", "bad\\u0000note"]', "DataError: P"),
    ]
    client.close()


def test_a_kafka_record_too_large_is_refused_alone(kafka_mock: KafkaMock) -> None:
    topic = "dead-letter-large"
    kafka_mock.create_topic(topic, 1)
    sink = KafkaSink(
        topic,
        bootstrap_servers=kafka_mock.bootstrap_servers,
        key_index=None,
        value_index=0,
        config={"message.max.bytes": 10_000},
    )
    sink.connect({}, None)  # type: ignore[arg-type]
    try:
        with pytest.raises(RowErrors) as refused:
            sink.write_batch([["small"], ["x" * 50_000], ["small too"]])
    finally:
        sink.disconnect()
    [(index, error)] = refused.value.errors.items()
    assert index == 1 and isinstance(error, DataError) and "MSG_SIZE_TOO_LARGE" in str(error)


def test_a_redis_server_out_of_memory_or_read_only_is_transient_not_the_rows(
    redis_server: RedisServer,
) -> None:
    """OOM (maxmemory reached) and READONLY (a replica after a failover) answer every
    command of the pipeline: the server's state, not the rows' — the batch is retried and
    then failed (replayed), never dead-lettered."""
    client = redis.Redis.from_url(redis_server.url)
    source = TupleSource("in", 1, "default", ("id",))
    try:
        for setting in ({"maxmemory": 1}, {"replica-read-only": "yes"}):
            if "maxmemory" in setting:
                client.config_set("maxmemory", 1)
            else:  # a replica of a server that is not there: read-only
                client.config_set("maxmemory", 0)
                client.replicaof("127.0.0.1", 1)
            fast = Backoff(initial_secs=0.01, max_secs=0.01)
            sink = RedisStreamSink(
                redis_server.url, stream="refused", batch_size=2, max_retry_secs=0.05, backoff=fast
            )
            out = bound(sink)
            rows = [Tuple([str(i)], source) for i in range(2)]
            for tup in rows:
                sink.execute(tup)
            assert out.failed == rows and out.input_failures == [], setting
            sink.cleanup()
    finally:
        client.replicaof("no", "one")
        client.config_set("maxmemory", 0)
        client.delete("refused")
        client.close()


def test_a_sink_that_is_itself_wrong_fails_its_batch_and_dead_letters_nothing(
    postgres_server: PostgresServer, redis_server: RedisServer
) -> None:
    """A missing table, or a Redis user the server's ACL forbids the command: no row's
    fault — the batch is failed (replayed once it is fixed) and the error reported, never
    split into dead letters (every row would go)."""
    source = TupleSource("in", 1, "default", ("id", "note"))
    rows = [Tuple([i, f"note {i}"], source) for i in range(4)]
    client = redis.Redis.from_url(redis_server.url)
    client.acl_setuser("nohset", enabled=True, passwords=["+pw"], commands=["+ping"], keys=["*"])
    host, port = client.connection_pool.connection_kwargs["host"], redis_server.port
    sinks = [
        PostgresSink(postgres_server.dsn, "no_such_table", ["id", "note"], batch_size=4),
        RedisStreamSink(
            f"redis://nohset:pw@{host}:{port}", hash_key=["id"], hash_prefix="h:", batch_size=4
        ),
    ]
    try:
        for sink in sinks:
            out = bound(sink)
            for tup in rows:
                sink.execute(tup)
            assert out.failed == rows and out.input_failures == [], type(sink).__name__
            assert out.errors and not out.acked, type(sink).__name__
            sink.cleanup()
    finally:
        client.acl_deluser("nohset")
        client.close()
