"""The Redis Streams connectors against a real redis-server, in LocalCluster topologies:
several streams read through a consumer group (with a dead consumer's entries claimed),
at-least-once across a SIGKILLed spout worker, exactly-once into a transactional sink
across two SIGKILLs, a 10 s server outage, malformed entries to the ``errors`` stream."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.connectors.redis_components import PacedRedisSpout
from tests.connectors.redis_server import RedisServer
from tests.integration.helpers import wait_for
from topology import LocalCluster, TopologyBuilder
from topology.connectors import Backoff
from topology.connectors.redis_sinks import (
    MARKER_PREFIX,
    RedisStreamSink,
    RedisTransactionalSink,
    WrongTypeError,
)
from topology.connectors.redis_streams import RedisStreamSpout, import_redis
from topology.metrics import Counter as MetricCounter

redis = pytest.importorskip("redis")

pytestmark = [pytest.mark.connectors, pytest.mark.timeout(90)]

FAST = Backoff(initial_secs=0.05, max_secs=0.5)
#: At-least-once topologies: two workers, a short tuple timeout (a lost tuple comes back).
CONF: dict[str, Any] = {"topology.workers": 2, "topology.message.timeout.secs": 5}


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[Any]:
    c = redis.Redis.from_url(redis_server.url)
    c.flushall()
    yield c
    c.close()


def fill(client: Any, stream: str, numbers: range) -> None:
    pipe = client.pipeline(transaction=False)
    for n in numbers:
        pipe.xadd(stream, {"stream": stream, "n": str(n)})
    pipe.execute()


def entries(client: Any, stream: str) -> list[dict[str, str]]:
    return [
        {k.decode(): v.decode() for k, v in fields.items()} for _, fields in client.xrange(stream)
    ]


def pending(client: Any, streams: list[str], group: str) -> int:
    return sum(int(client.xpending(s, group)["pending"]) for s in streams)


def kill_worker(cluster: LocalCluster, name: str, worker: int) -> None:
    """SIGKILL worker ``worker`` (by its pid) and wait for its restart."""
    before = cluster.restarts(name).get(worker, 0)
    os.kill(cluster.worker_pids(name)[worker], signal.SIGKILL)
    wait_for(lambda: cluster.restarts(name).get(worker, 0), lambda n: n > before, 30)


def worker_of(cluster: LocalCluster, name: str, component: str) -> int:
    """The worker hosting ``component``'s first task."""
    task = cluster.assignment(name).component_tasks[component][0]
    return cluster.assignment(name).worker_of()[task]


def test_a_missing_client_names_the_pip_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ImportError, match=r"pip install 'sparkstorm\[redis\]'"):
        import_redis()


def test_several_streams_are_read_and_a_dead_consumers_entries_claimed(
    redis_server: RedisServer, client: Any
) -> None:
    """Three streams over two spout tasks, into an idempotent hash sink; a consumer that
    died holding entries has them claimed; entries added while running are read too; every
    entry ends up acked."""
    streams = ["s0", "s1", "s2"]
    for s in streams:
        fill(client, s, range(20))
        client.xgroup_create(s, "g", id="0")
    client.xreadgroup("g", "ghost", {"s1": ">"}, count=5)  # read, never acked
    builder = TopologyBuilder()
    spout = RedisStreamSpout(
        redis_server.url,
        streams=streams,
        outputs=["stream", "n"],
        group="g",
        claim_idle_ms=100,
        commit_interval_secs=0.1,
    )
    builder.set_spout("src", spout, 2)
    sink = RedisStreamSink(
        redis_server.url, hash_key=["stream", "n"], hash_prefix="seen:", flush_interval_secs=0.1
    )
    builder.set_bolt("sink", sink, 1).shuffle_grouping("src")
    with LocalCluster() as cluster:
        cluster.submit_topology("several", CONF, builder.create_topology())
        for s in streams:
            fill(client, s, range(20, 30))
        want = {f"seen:{s}:{n}".encode() for s in streams for n in range(30)}
        wait_for(lambda: set(client.keys("seen:*")), lambda k: k == want, 30, 0.1)
        assert client.hgetall("seen:s1:3") == {b"stream": b"s1", b"n": b"3"}
        wait_for(lambda: pending(client, streams, "g"), lambda n: n == 0, 10, 0.1)
        assert not cluster.errors("several")
    consumers = {c["name"] for c in client.xinfo_consumers("s1", "g")}
    assert {b"src#0", b"src#1"} & consumers and b"ghost" in consumers


def test_at_least_once_delivers_every_entry_across_a_killed_spout_worker(
    redis_server: RedisServer, client: Any
) -> None:
    """The spout's worker is SIGKILLed mid-run: the restarted task re-reads its own pending
    entries; every entry is delivered, some twice (counted)."""
    total = 300
    fill(client, "in", range(total))
    builder = TopologyBuilder()
    spout = PacedRedisSpout(
        redis_server.url,
        streams=["in"],
        outputs=["stream", "n"],
        group="g",
        rate=150.0,
        commit_interval_secs=0.2,
    )
    builder.set_spout("src", spout, 1)
    sink = RedisStreamSink(redis_server.url, stream="delivered", flush_interval_secs=0.1)
    builder.set_bolt("sink", sink, 2).shuffle_grouping("src")
    with LocalCluster() as cluster:
        cluster.submit_topology("alo", CONF, builder.create_topology())
        wait_for(lambda: client.xlen("delivered"), lambda n: n >= 60, 30, 0.05)
        landed = client.xlen("delivered")  # (measured before: the relaunch takes a while)
        kill_worker(cluster, "alo", worker_of(cluster, "alo", "src"))
        assert landed < total  # the kill landed mid-run

        def distinct() -> int:
            return len({e["n"] for e in entries(client, "delivered")})

        wait_for(distinct, lambda n: n == total, 40, 0.2)
        wait_for(lambda: pending(client, ["in"], "g"), lambda n: n == 0, 10, 0.1)
    counts = Counter(int(e["n"]) for e in entries(client, "delivered"))
    assert set(counts) == set(range(total))
    duplicates = sum(counts.values()) - total
    print(f"at-least-once across a SIGKILL: {duplicates} duplicates of {total}")
    assert duplicates >= 0


def test_exactly_once_into_a_transactional_sink_across_two_killed_workers(
    redis_server: RedisServer, client: Any, tmp_path: Path
) -> None:
    """Reading by stream id (positions in checkpoints) into a MULTI/EXEC sink with epoch
    markers; both workers SIGKILLed in turn: the target stream holds every entry once."""
    streams, per_stream = ["e0", "e1"], 150
    for s in streams:
        fill(client, s, range(per_stream))
    builder = TopologyBuilder()
    spout = PacedRedisSpout(
        redis_server.url,
        streams=streams,
        outputs=["stream", "n"],
        guarantee="exactly_once",
        rate=100.0,
    )
    builder.set_spout("src", spout, 2)
    sink = RedisTransactionalSink(redis_server.url, stream="out", batch_size=20)
    builder.set_bolt("sink", sink, 2).fields_grouping("src", ["n"])
    conf = {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path / "state"),
        "topology.state.checkpoint.interval.ms": 200,
    }
    total = len(streams) * per_stream
    with LocalCluster() as cluster:
        cluster.submit_topology("exact", conf, builder.create_topology())
        wait_for(lambda: client.xlen("out"), lambda n: n >= 50, 30, 0.05)
        kill_worker(cluster, "exact", 0)
        wait_for(lambda: client.xlen("out"), lambda n: n >= 120, 30, 0.05)
        kill_worker(cluster, "exact", 1)
        assert client.xlen("out") < total  # the kills landed mid-run
        wait_for(lambda: client.xlen("out"), lambda n: n >= total, 40, 0.1)
        time.sleep(0.6)  # a few more checkpoints: nothing comes twice late
        assert not cluster.errors("exact").get("sink")
        status = cluster.worker_status("exact")
        assert sum(s["checkpoints"]["rollbacks"] for s in status) > 0  # it did recover
    written = Counter((e["stream"], int(e["n"])) for e in entries(client, "out"))
    assert written == Counter({(s, n): 1 for s in streams for n in range(per_stream)})
    markers = client.keys(MARKER_PREFIX + "sink#*")  # one per process of each task
    assert {key.decode().split("@")[0] for key in markers} == {
        "sparkstorm:sink:sink#0",
        "sparkstorm:sink:sink#1",
    }


def test_a_transactional_commit_of_a_marked_checkpoint_writes_nothing(
    redis_server: RedisServer, client: Any
) -> None:
    """The commit repeated after a crash: the marker holds its checkpoint (or a later one),
    so nothing is written again; a later checkpoint is written and moves the marker."""
    sink = RedisTransactionalSink(redis_server.url, hash_key=["k"], hash_prefix="t:")
    marker = MARKER_PREFIX + "sink#0@run"
    sink.log = lambda message: None  # type: ignore[method-assign]  # not in a worker
    sink.connect({}, SimpleNamespace(register_counter=lambda name, text="": MetricCounter(text)))
    try:
        sink.commit([marker, ["k", "v"], [["a", 1], ["b", 2]]], 3)
        client.hset("t:a", "v", "changed since")
        sink.commit([marker, ["k", "v"], [["a", 1], ["b", 2]]], 3)
        sink.commit([marker, ["k", "v"], [["a", 0]]], 2)
        assert client.hget("t:a", "v") == b"changed since"
        assert sink.skipped.value == 2
        sink.commit([marker, ["k", "v"], [["a", 9]]], 4)
        assert client.hgetall("t:a") == {b"k": b"a", b"v": b"9"}
        assert client.get(marker) == b"4"
    finally:
        sink.disconnect()


def test_a_transactional_commit_meeting_a_key_of_another_type_writes_nothing(
    redis_server: RedisServer, client: Any
) -> None:
    """A target key holding another type (a string where hashes go, a hash where the stream
    goes) would make EXEC fail half way and apply the rest (Redis has no rollback): the
    commit refuses up front, naming the key and the sink, and writes nothing — no row, no
    marker; once the key is fixed the same commit writes it all."""
    marker = MARKER_PREFIX + "sink#0@run"
    context = SimpleNamespace(register_counter=lambda name, text="": MetricCounter(text))
    hashes = RedisTransactionalSink(redis_server.url, hash_key=["k"], hash_prefix="w:")
    stream = RedisTransactionalSink(redis_server.url, stream="w:out")
    for sink in (hashes, stream):
        sink.log = lambda message: None  # type: ignore[method-assign]  # not in a worker
        sink.connect({}, context)
    try:
        client.set("w:b", "a string")
        rows = [["a", 1], ["b", 2], ["c", 3]]
        with pytest.raises(WrongTypeError, match=r"RedisTransactionalSink sink#0: key 'w:b'"):
            hashes.commit([marker, ["k", "v"], rows], 1)
        assert client.keys("w:*") == [b"w:b"] and client.get(marker) is None
        client.delete("w:b")
        hashes.commit([marker, ["k", "v"], rows], 1)
        assert client.hgetall("w:c") == {b"k": b"c", b"v": b"3"} and client.get(marker) == b"1"
        client.hset("w:out", "not", "a stream")
        with pytest.raises(WrongTypeError, match="'w:out' holds a hash, not a stream"):
            stream.commit([marker + "2", ["k", "v"], rows], 1)
        assert client.get(marker + "2") is None
    finally:
        for sink in (hashes, stream):
            sink.disconnect()


def test_a_server_outage_of_ten_seconds_loses_nothing(tmp_path: Path) -> None:
    """A persistent server (its own, append-only file) is SIGKILLed mid-run and started
    again on the same port 10 s later: spout and sink wait and retry; every entry, old and
    new, arrives."""
    server = RedisServer(tmp_path, persistent=True)
    try:
        server.start()
        own = redis.Redis.from_url(server.url)
        fill(own, "in", range(60))
        builder = TopologyBuilder()
        spout = PacedRedisSpout(
            server.url,
            streams=["in"],
            outputs=["stream", "n"],
            group="g",
            rate=20.0,
            commit_interval_secs=0.2,
            backoff=FAST,
        )
        builder.set_spout("src", spout, 1)
        sink = RedisStreamSink(
            server.url, hash_key=["n"], hash_prefix="seen:", flush_interval_secs=0.1, backoff=FAST
        )
        builder.set_bolt("sink", sink, 1).shuffle_grouping("src")
        with LocalCluster() as cluster:
            cluster.submit_topology("outage", CONF, builder.create_topology())
            wait_for(lambda: len(own.keys("seen:*")), lambda n: n >= 10, 30, 0.05)
            server.stop(signal.SIGKILL)
            time.sleep(10)
            server.start()
            assert len(own.keys("seen:*")) < 60  # the outage landed mid-run
            fill(own, "in", range(60, 90))
            want = {f"seen:{n}".encode() for n in range(90)}
            wait_for(lambda: set(own.keys("seen:*")), lambda k: k == want, 30, 0.2)
            wait_for(lambda: pending(own, ["in"], "g"), lambda n: n == 0, 10, 0.1)
            assert not cluster.errors("outage")
        own.close()
    finally:
        server.stop()


def test_malformed_entries_go_to_the_errors_stream_and_reading_goes_on(
    redis_server: RedisServer, client: Any
) -> None:
    """An entry lacking a field and one that is not UTF-8 are emitted on ``errors`` with
    their stream and id, and acked; the entries around them are delivered."""
    fill(client, "in", range(5))
    missing = client.xadd("in", {"stream": "in"}).decode()
    garbled = client.xadd("in", {"stream": "in", "n": b"\xff\xfe"}).decode()
    fill(client, "in", range(5, 10))
    builder = TopologyBuilder()
    spout = RedisStreamSpout(
        redis_server.url, streams=["in"], outputs=["stream", "n"], commit_interval_secs=0.1
    )
    builder.set_spout("src", spout, 1)
    sink = RedisStreamSink(
        redis_server.url, hash_key=["n"], hash_prefix="seen:", flush_interval_secs=0.1
    )
    builder.set_bolt("sink", sink, 1).shuffle_grouping("src")
    dead = RedisStreamSink(redis_server.url, stream="dead", flush_interval_secs=0.1)
    builder.set_bolt("dead", dead, 1).shuffle_grouping("src", "errors")
    with LocalCluster() as cluster:
        cluster.submit_topology("bad", CONF, builder.create_topology())
        want = {f"seen:{n}".encode() for n in range(12)}
        fill(client, "in", range(10, 12))
        wait_for(lambda: set(client.keys("seen:*")), lambda k: k == want, 30, 0.1)
        wait_for(lambda: client.xlen("dead"), lambda n: n == 2, 10, 0.1)
        wait_for(lambda: pending(client, ["in"], "bad"), lambda n: n == 0, 10, 0.1)
        assert not cluster.errors("bad")
    errors = {e["position"]: e for e in entries(client, "dead")}
    assert set(errors) == {missing, garbled}
    assert errors[missing]["partition"] == "in"
    assert "no field 'n'" in errors[missing]["error"]
    assert errors[garbled]["error"].startswith("UnicodeDecodeError")


def test_a_rollback_reads_again_what_the_group_delivered_and_nobody_acked(
    redis_server: RedisServer, client: Any
) -> None:
    """A checkpointed topology's restore seeks the spout; a consumer group ignores
    positions, so the spout must read its own pending entries again (else they are lost:
    the next commit would XACK them)."""
    from tests.unit.test_connector_base import bound

    fill(client, "s", range(5))
    spout = RedisStreamSpout(
        redis_server.url, streams=["s"], outputs=["stream", "n"], group="g", block_ms=0
    )
    out = bound(spout)
    try:
        spout.next_tuple()
        assert [values[1] for values in out.on()] == ["0", "1", "2", "3", "4"]
        spout.seek(spout.position())  # the rollback: nothing of it was acked
        spout.next_tuple()
        assert [values[1] for values in out.on()][5:] == ["0", "1", "2", "3", "4"]
        assert pending(client, ["s"], "g") == 5  # still the group's, until acked
    finally:
        spout.close()


def test_entries_handed_over_in_a_reply_lost_with_the_connection_are_read_again(
    tmp_path: Path,
) -> None:
    """The server hands entries to the spout's consumer (they join its pending list) and
    dies before the reply arrives: once it is back, the spout reads its pending list again
    and emits exactly those entries (those in flight here already are not emitted twice);
    else they would wait ``claim_idle_ms`` for a claim."""
    from tests.unit.test_connector_base import bound

    server = RedisServer(tmp_path, persistent=True)
    server.start()
    client = redis.Redis.from_url(server.url)
    spout = RedisStreamSpout(
        server.url, streams=["s"], outputs=["stream", "n"], group="g", block_ms=0,
        backoff=Backoff(initial_secs=0.01, max_secs=0.01),
    )  # fmt: skip
    try:
        fill(client, "s", range(3))
        out = bound(spout)
        spout.next_tuple()
        assert [values[1] for values in out.on()] == ["0", "1", "2"]
        fill(client, "s", range(3, 6))
        # what the server did before it died: 3, 4, 5 handed to the spout's consumer
        client.xreadgroup("g", spout.consumer, {"s": ">"}, count=3)
        server.stop(signal.SIGKILL)
        spout.next_tuple()  # the read meets no server
        assert len(out.on()) == 3
        server.start()
        deadline = time.monotonic() + 10
        while len(out.on()) < 6 and time.monotonic() < deadline:
            spout.next_tuple()
        assert [values[1] for values in out.on()] == ["0", "1", "2", "3", "4", "5"]
        spout.next_tuple()
        assert len(out.on()) == 6
    finally:
        spout.close()
        client.close()
        server.stop()
