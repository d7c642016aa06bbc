"""The PostgreSQL connectors against a real server (tests/connectors/postgres_server.py):
upserts and commits driven directly, then topologies on a LocalCluster through a worker
SIGKILLed (at-least-once: every row, duplicates counted), two SIGKILLs (exactly-once: every
row once) and the server stopped for 10 s (nothing lost)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.connectors.postgres_components import JsonPolling, PacedPolling
from tests.connectors.postgres_server import PostgresServer
from tests.integration.helpers import wait_for
from tests.recording_collector import Recorder as SinkRecorder
from topology import LocalCluster, TopologyBuilder
from topology.assignment import Assignment
from topology.connectors import Backoff
from topology.connectors.postgres import MARKER_TABLE, PostgresSink, PostgresTransactionalSink
from topology.connectors.postgres_source import PostgresPollingSource
from topology.context import TopologyContext
from topology.tuple import Tuple, TupleSource

psycopg = pytest.importorskip("psycopg")

pytestmark = [pytest.mark.connectors, pytest.mark.timeout(120)]

#: Rows of the topology tests, and the rate the source reads them at.
ROWS = 3000
RATE = 1000.0


def sql(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Run ``query`` on a new connection (the server may have restarted); its rows."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def counts(dsn: str, table: str) -> tuple[int, int]:
    """(rows, distinct ids) of ``table``."""
    [(rows, ids)] = sql(dsn, f"SELECT count(*), count(DISTINCT id) FROM {table}")
    return rows, ids


def source_and_target(dsn: str, name: str, target_key: bool = False) -> tuple[str, str]:
    """``<name>_src`` with ROWS rows (id 1..ROWS) and an empty ``<name>_dst`` (without a
    primary key unless ``target_key``: duplicates stay visible)."""
    key = " PRIMARY KEY" if target_key else ""
    sql(dsn, f"CREATE TABLE {name}_src (id bigint PRIMARY KEY, payload text NOT NULL)")
    sql(
        dsn,
        f"INSERT INTO {name}_src SELECT i, 'row ' || i FROM generate_series(1, %s) i",
        (ROWS,),
    )
    sql(dsn, f"CREATE TABLE {name}_dst (id bigint{key}, payload text NOT NULL)")
    return f"{name}_src", f"{name}_dst"


# -- driven directly ---------------------------------------------------------------------------


class Recorder:
    """Stands in for the runtime collector."""

    #: The component and task it stands for (what dead letters name).
    component, task = "src", 1

    def __init__(self) -> None:
        self.emitted: list[tuple[str, list[Any], Any]] = []

    def emit(self, values: Any, msg_id_or_anchors: Any = None, stream: str = "default") -> list:
        self.emitted.append((stream, list(values), msg_id_or_anchors))
        return [1]  # (one task takes every stream)

    def report_error(self, error: Any) -> None:
        raise AssertionError(f"unexpected error: {error!r}")

    def log(self, message: str) -> None:
        pass

    def on(self, stream: str = "default") -> list[list[Any]]:
        return [values for s, values, _ in self.emitted if s == stream]


def opened(source: PostgresPollingSource) -> Recorder:
    recorder = Recorder()
    source._collector = recorder
    assignment = Assignment({"rows": [1]}, {1: "rows"}, [[1]])
    context = TopologyContext("direct", "rows", 1, 0, 0, (1,), None, assignment)  # type: ignore[arg-type]
    source.open({}, context)
    return recorder


def test_upserts_make_a_replayed_batch_overwrite_and_append_copies(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.dsn
    sql(dsn, 'CREATE SCHEMA up; CREATE TABLE up."Kv" ("Key" text PRIMARY KEY, "select" bigint)')
    sink = PostgresSink(dsn, "up.Kv", ["Key", "select"], key=["Key"])
    sink.connect({}, None)  # type: ignore[arg-type]
    batch = [["a", 1], ["b", 2], ["a", 3]]  # a key twice in a batch: the last one wins
    sink.write_batch(batch)
    sink.write_batch(batch)  # the replay overwrites
    sink.write_batch([["b", 5]])
    assert sql(dsn, 'SELECT * FROM up."Kv" ORDER BY 1') == [("a", 3), ("b", 5)]
    sql(dsn, "CREATE TABLE up_json (k text PRIMARY KEY, doc jsonb)")
    docs = PostgresSink(dsn, "up_json", ["k", "doc"], key=["k"])
    docs.connect({}, None)  # type: ignore[arg-type]
    docs.write_batch([["a", {"x": [1, 2]}]])  # a dict value: JSON
    assert sql(dsn, "SELECT doc FROM up_json") == [({"x": [1, 2]},)]
    docs.disconnect()
    sql(dsn, "CREATE TABLE up_log (k text, v bigint)")
    log = PostgresSink(dsn, "up_log", ["k", "v"])
    log.connect({}, None)  # type: ignore[arg-type]
    log.write_batch(batch)
    log.write_batch(batch)  # no key: appended again (COPY)
    assert sql(dsn, "SELECT count(*) FROM up_log") == [(6,)]
    with pytest.raises(psycopg.DataError):  # a whole batch or nothing
        log.write_batch([["c", 1], ["d", "not a number"]])
    assert sql(dsn, "SELECT count(*) FROM up_log") == [(6,)]
    sink.disconnect()
    log.disconnect()


def test_a_write_blocked_by_a_row_lock_times_out_and_is_retried_until_the_lock_goes(
    postgres_server: PostgresServer,
) -> None:
    """Another connection holds the row's lock: the upsert waits, is cancelled by the
    sink's statement timeout (QueryCanceled), and is retried after a backoff pause; once
    the lock is released the retry writes the row and the tuple is acked.  Without a
    statement timeout the write would wait for the lock forever."""
    dsn = postgres_server.dsn
    sql(dsn, "CREATE TABLE locked (id bigint PRIMARY KEY, v text)")
    sql(dsn, "INSERT INTO locked VALUES (1, 'old')")
    retried, released = threading.Event(), threading.Event()

    def pause(secs: float) -> None:  # the sink's backoff: a write failed and is retried
        retried.set()
        assert released.wait(30)

    backoff = Backoff(initial_secs=0.01, max_secs=0.01, sleep=pause)
    sink = PostgresSink(
        dsn, "locked", ["id", "v"], key=["id"], batch_size=1, statement_timeout_secs=0.3,
        backoff=backoff,
    )  # fmt: skip
    recorder = SinkRecorder()
    sink._collector = recorder  # type: ignore[assignment]
    sink.prepare({}, None)  # type: ignore[arg-type]
    tup = Tuple([1, "new"], TupleSource("src", 1, "default", ("id", "v")))
    with psycopg.connect(dsn) as locker:  # a transaction holding the row's lock
        locker.execute("SELECT * FROM locked WHERE id = 1 FOR UPDATE")
        writer = threading.Thread(target=sink.execute, args=(tup,), daemon=True)
        writer.start()
        try:
            assert retried.wait(20), "the blocked write was never cancelled and retried"
        finally:
            locker.rollback()  # the lock goes
            released.set()
    writer.join(20)
    assert not writer.is_alive()
    assert recorder.acked == [tup] and not recorder.failed
    assert sql(dsn, "SELECT v FROM locked") == [("new",)]
    assert any("QueryCanceled" in line for line in recorder.logged)
    sink.cleanup()


def test_a_transactional_commit_writes_rows_and_marker_once(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.dsn
    sql(dsn, "CREATE TABLE tx_rows (id bigint, v text)")
    sink = PostgresTransactionalSink(dsn, "tx_rows", ["id", "v"])
    sink.connect({}, None)  # type: ignore[arg-type]
    sink.marker_id = "direct#0"
    txn = sink.begin(1)
    sink.write(txn, [[1, "a"], [2, "b"]])
    handle = sink.pre_commit(txn, 3)
    for again in (3, 3, 2):  # committed again after a crash; an older one: skipped
        sink.commit(handle, again)
    assert sql(dsn, "SELECT count(*) FROM tx_rows") == [(2,)]
    sink.commit(["direct#0", [[3, "c"]]], 4)
    with pytest.raises(psycopg.DataError):  # rows and marker: one transaction
        sink.commit(["direct#0", [[4, "d"], ["x", "e"]]], 5)
    assert sql(dsn, "SELECT id FROM tx_rows ORDER BY id") == [(1,), (2,), (3,)]
    marker = f"SELECT checkpoint FROM {MARKER_TABLE} WHERE sink = 'direct#0'"
    assert sql(dsn, marker) == [(4,)]
    sink.commit(["direct#0@new-deployment", [[7, "g"]]], 1)  # checkpoint ids from 1 again
    assert sql(dsn, "SELECT id FROM tx_rows ORDER BY id") == [(1,), (2,), (3,), (7,)]
    sink.disconnect()


def test_a_bad_row_goes_to_the_errors_stream_and_positions_are_committed(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.dsn
    sql(dsn, "CREATE TABLE poll_rows (id bigint PRIMARY KEY, payload text)")
    payloads = ['{"n": 10}', '{"n": 20}', "{oops", '{"n": 40}']
    for i, payload in enumerate(payloads, 1):
        sql(dsn, "INSERT INTO poll_rows VALUES (%s, %s)", (i, payload))
    source = JsonPolling(dsn, "poll_rows", ["id", "payload"], "id", source_id="poll")
    out = opened(source)
    source.next_tuple()
    assert out.on() == [[1, 10], [2, 20], [4, 40]]
    [error] = out.on("errors")
    assert error[:2] == ["poll_rows", 3] and error[2].startswith("JSONDecodeError")
    assert "{oops" in error[3]
    assert [m for s, _, m in out.emitted if s == "default"] == [("poll_rows", p) for p in (1, 2, 4)]
    for position in (1, 2, 4):
        source.ack(("poll_rows", position))
    source.close()
    again = JsonPolling(dsn, "poll_rows", ["id", "payload"], "id", source_id="poll")
    out = opened(again)  # resumes after the committed position
    sql(dsn, "INSERT INTO poll_rows VALUES (5, '{\"n\": 50}')")
    again.next_tuple()
    assert out.on() == [[5, 50]]
    again.close()


def test_a_timestamp_column_is_polled_with_text_positions(postgres_server: PostgresServer) -> None:
    dsn = postgres_server.dsn
    sql(dsn, "CREATE TABLE poll_ts (at timestamptz PRIMARY KEY, amount numeric(8, 2))")
    sql(dsn, "INSERT INTO poll_ts VALUES ('2026-01-01 10:00+00', 1.5), ('2026-01-01 11:00+00', 2)")
    source = PostgresPollingSource(dsn, "poll_ts", ["at", "amount"], "at", max_batch=1)
    source.source_id = "ts"
    out = opened(source)
    source.next_tuple()
    source.next_tuple()
    source.next_tuple()
    assert out.on() == [
        ["2026-01-01T10:00:00+00:00", "1.50"],
        ["2026-01-01T11:00:00+00:00", "2.00"],
    ]
    assert out.emitted[-1][2] == ("poll_ts", "2026-01-01T11:00:00+00:00")
    source.close()


# -- topologies on a LocalCluster --------------------------------------------------------------


def spout_worker(cluster: LocalCluster, name: str) -> int:
    [task] = cluster.assignment(name).component_tasks["rows"]
    return int(cluster.assignment(name).worker_of()[task])


def kill_worker(cluster: LocalCluster, name: str, worker: int) -> None:
    os.kill(cluster.worker_pids(name)[worker], signal.SIGKILL)
    wait_for(lambda: cluster.restarts(name).get(worker, 0), bool, 30)


def connector_errors(cluster: LocalCluster, name: str) -> dict[str, Any]:
    """Errors the source or the sink reported."""
    return {c: e for c, e in cluster.errors(name).items() if c in ("rows", "write")}


def settled(dsn: str, table: str, timeout: float) -> tuple[int, int]:
    """(rows, distinct ids) of ``table`` once every id is there and nothing changed for 1 s."""
    wait_for(lambda: counts(dsn, table), lambda c: c[1] >= ROWS, timeout, 0.2)
    last = None
    while (now := counts(dsn, table)) != last:
        last = now
        time.sleep(1.0)
    return now


def test_at_least_once_gets_every_row_through_a_killed_worker(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.dsn
    src, dst = source_and_target(dsn, "alo")
    builder = TopologyBuilder()
    spout = PacedPolling(dsn, src, ["id", "payload"], "id", rate=RATE, commit_interval_secs=0.2)
    builder.set_spout("rows", spout, 1)
    sink = PostgresSink(dsn, dst, ["id", "payload"], batch_size=100, flush_interval_secs=0.2)
    builder.set_bolt("write", sink, 2).shuffle_grouping("rows")
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 5}
    with LocalCluster() as cluster:
        cluster.submit_topology("pg-alo", conf, builder.create_topology())
        wait_for(lambda: counts(dsn, dst)[0], lambda n: n > 500, 30, 0.1)
        landed = counts(dsn, dst)[1]  # (measured before: the relaunch takes a while)
        kill_worker(cluster, "pg-alo", spout_worker(cluster, "pg-alo"))
        assert landed < ROWS  # the kill landed mid-run
        rows, ids = settled(dsn, dst, 60)
        assert not connector_errors(cluster, "pg-alo")
    assert ids == ROWS  # every row; some twice: read again after the last commit
    print(f"at-least-once through a SIGKILL: {rows - ids} duplicates of {ROWS} rows")


def test_exactly_once_writes_every_row_once_through_two_killed_workers(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    dsn = postgres_server.dsn
    src, dst = source_and_target(dsn, "exo")
    builder = TopologyBuilder()
    spout = PacedPolling(dsn, src, ["id", "payload"], "id", rate=RATE, guarantee="exactly_once")
    builder.set_spout("rows", spout, 1)
    sink = PostgresTransactionalSink(dsn, dst, ["id", "payload"], batch_size=100)
    builder.set_bolt("write", sink, 2).shuffle_grouping("rows")
    conf = {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path),
        "topology.state.checkpoint.interval.ms": 300,
    }
    with LocalCluster() as cluster:
        cluster.submit_topology("pg-exo", conf, builder.create_topology())
        wait_for(lambda: counts(dsn, dst)[0], lambda n: n > 500, 30, 0.1)
        kill_worker(cluster, "pg-exo", 0)
        wait_for(lambda: counts(dsn, dst)[0], lambda n: n > 1500, 30, 0.1)
        landed = counts(dsn, dst)[1]  # (measured before: the relaunch takes a while)
        kill_worker(cluster, "pg-exo", 1)
        assert landed < ROWS  # the kills landed mid-run
        assert settled(dsn, dst, 60) == (ROWS, ROWS)  # every row, once
        assert not connector_errors(cluster, "pg-exo")


def test_the_server_stopped_for_ten_seconds_loses_nothing(postgres_server: PostgresServer) -> None:
    dsn = postgres_server.dsn
    src, dst = source_and_target(dsn, "down", target_key=True)
    quick = Backoff(initial_secs=0.1, max_secs=1.0)
    builder = TopologyBuilder()
    spout = PacedPolling(dsn, src, ["id", "payload"], "id", rate=RATE, backoff=quick)
    builder.set_spout("rows", spout, 1)
    sink = PostgresSink(dsn, dst, ["id", "payload"], key=["id"], batch_size=100, backoff=quick)
    builder.set_bolt("write", sink, 2).shuffle_grouping("rows")
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 60}
    with LocalCluster() as cluster:
        cluster.submit_topology("pg-down", conf, builder.create_topology())
        wait_for(lambda: counts(dsn, dst)[0], lambda n: n > 500, 30, 0.1)
        postgres_server.stop("fast")
        try:
            time.sleep(10)
        finally:
            postgres_server.start()
        assert counts(dsn, dst)[0] < ROWS  # the outage landed mid-run
        assert settled(dsn, dst, 60) == (ROWS, ROWS)
        assert not connector_errors(cluster, "pg-down")


def test_a_keyed_transactional_sink_keeps_only_the_last_row_of_each_key() -> None:
    """What upserting them all would leave, and all the checkpoint needs to hold."""
    sink = PostgresTransactionalSink("dbname=unused", "t", ["id", "v"], key=["id"])
    sink.marker_id = "t#0@run"
    txn = sink.begin(1)
    sink.write(txn, [[1, "a"], [2, "b"], [1, "c"]])
    sink.write(txn, [[[3, 4], "d"], [[3, 4], "e"]])  # list keys (as msgpack gives them)
    assert sink.pre_commit(txn, 1) == ["t#0@run", [[2, "b"], [1, "c"], [[3, 4], "e"]]]
    plain = PostgresTransactionalSink("dbname=unused", "t", ["id", "v"])
    txn = plain.begin(1)
    plain.write(txn, [[1, "a"], [1, "a"]])
    plain.marker_id = "t#0@run"
    assert plain.pre_commit(txn, 1)[1] == [[1, "a"], [1, "a"]]  # appends keep every row
