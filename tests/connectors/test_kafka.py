"""The Kafka connectors against librdkafka's mock cluster (tests/connectors/kafka_mock.py):
partitions dealt to tasks, bad records on ``errors``, at-least-once through a SIGKILLed
worker (every record delivered, duplicates counted), every broker down for a few seconds
mid-run (nothing lost), and exactly-once into a transactional sink read back with
``read_committed`` through two SIGKILLs."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.connectors.kafka_components import PacedKafkaSpout
from tests.connectors.kafka_mock import KafkaMock
from tests.integration.helpers import wait_for
from topology import DEAD_LETTER_STREAM, LocalCluster, TopologyBuilder
from topology.assignment import Assignment
from topology.connectors import Backoff, TransientError
from topology.connectors.kafka import HEADERS, KafkaSpout
from topology.connectors.kafka_sinks import KafkaSink, KafkaTransactionalSink
from topology.connectors.retry import retrying
from topology.context import TopologyContext
from topology.errors import SparkstormError

pytestmark = [pytest.mark.connectors]

_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_names)}"


class Recorder:
    """Stands in for the runtime collector of a spout driven directly."""

    #: The component and task it stands for (what dead letters name).
    component, task = "src", 1

    def __init__(self) -> None:
        self.emitted: list[tuple[str, list[Any], Any]] = []
        self.errors: list[Any] = []

    def emit(self, values: Any, msg_id: Any = None, stream: str = "default") -> list[int]:
        self.emitted.append((stream, list(values), msg_id))
        return [1]  # (one task takes every stream)

    def report_error(self, error: Any) -> None:
        self.errors.append(error)

    def log(self, message: str) -> None:
        pass

    def on(self, stream: str = "default") -> list[tuple[list[Any], Any]]:
        return [(values, msg_id) for s, values, msg_id in self.emitted if s == stream]


class Watching(Recorder):
    """A recorder whose ``seen`` event is set once a logged line contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.seen = text, threading.Event()

    def log(self, message: str) -> None:
        if self.text in message:
            self.seen.set()


def in_background(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """``call()`` on a daemon thread; the list gets its result, or the exception raised."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@contextlib.contextmanager
def brokers_down(kafka: KafkaMock) -> Iterator[None]:
    """Every broker down for the block (and up again however it ends)."""
    kafka.brokers_down()
    try:
        yield
    finally:
        kafka.brokers_up()


#: Backoff of the start-up tests: quick tries, no long pause once the brokers are back.
QUICK = Backoff(initial_secs=0.05, max_secs=0.2)


def context(component: str, tasks: int, index: int) -> Any:
    ids = {component: list(range(1, tasks + 1))}
    owners = {t: component for t in ids[component]}
    assignment = Assignment(ids, owners, [sorted(owners)])
    task = ids[component][index]
    return TopologyContext("t", component, task, index, 0, (task,), None, assignment)  # type: ignore[arg-type]


def opened(spout: KafkaSpout, tasks: int = 1, index: int = 0) -> Recorder:
    recorder = Recorder()
    spout._collector = recorder  # type: ignore[assignment]
    spout.open({}, context("in", tasks, index))
    return recorder


def drain(spout: KafkaSpout, recorder: Recorder, n: int, timeout: float = 20) -> None:
    """Call ``next_tuple`` until ``n`` tuples were emitted (on any stream but the dead-letter
    stream, which has a copy of each tuple of ``errors``); no more come."""
    deadline = time.monotonic() + timeout

    def emitted() -> int:
        return sum(1 for stream, _, _ in recorder.emitted if stream != DEAD_LETTER_STREAM)

    while emitted() < n:
        assert time.monotonic() < deadline, f"{emitted()} of {n} emitted"
        spout.next_tuple()
        time.sleep(0.005)
    for _ in range(20):
        spout.next_tuple()
    assert emitted() == n


def produce(kafka: KafkaMock, topic: str, values: list[tuple[int | None, bytes]]) -> None:
    from confluent_kafka import Producer

    producer = Producer(kafka.config())
    for partition, value in values:
        if partition is None:
            producer.produce(topic, value)
        else:
            producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0


def read_back(
    kafka: KafkaMock,
    topic: str,
    done: Callable[[list[str]], bool],
    timeout: float,
    quiet: float = 0.0,
) -> list[str]:
    """The values of ``topic`` (read_committed) from the start until ``done`` holds and
    nothing more came for ``quiet`` seconds."""
    return [value for value, _ in read_messages(kafka, topic, done, timeout, quiet)]


def read_messages(
    kafka: KafkaMock,
    topic: str,
    done: Callable[[list[str]], bool],
    timeout: float,
    quiet: float = 0.0,
) -> list[tuple[str, dict[str, str]]]:
    """As :func:`read_back`, each value with its headers."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        kafka.config(**{"group.id": unique("reader"), "isolation.level": "read_committed"})
    )
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
        values: list[str] = []
        messages: list[tuple[str, dict[str, str]]] = []
        deadline = time.monotonic() + timeout
        last_new = time.monotonic()
        while not done(values) or time.monotonic() - last_new < quiet:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: {len(values)} values read in {timeout}s")
            for msg in consumer.consume(500, timeout=0.2):
                if msg.error() is None:
                    values.append(msg.value().decode())
                    headers = {k: v.decode() for k, v in msg.headers() or []}
                    messages.append((values[-1], headers))
                    last_new = time.monotonic()
        return messages
    finally:
        consumer.close()


def committed_only(messages: list[tuple[str, dict[str, str]]]) -> tuple[list[str], int]:
    """The values a real broker's ``read_committed`` would show, and how many were dropped.

    librdkafka's mock cluster (2.16) writes transaction markers but does not hide the
    records of ABORTED transactions from ``read_committed`` readers.  The sink aborts a
    transaction only when it is killed amid a commit (then the restarted task's
    ``init_transactions`` aborts it and the task produces the checkpoint's records again);
    its records carry the checkpoint, the sink and the producing process (the attempt).
    Per (sink, run, checkpoint) only the attempt produced last committed: drop the others, as
    the broker would.  (That a commit done before a crash is not repeated after it — the
    marker — is checked without this filter by the test of the markers.)"""
    final = {}
    for _, headers in messages:
        sink, run, checkpoint, attempt = (headers[name] for name in HEADERS)
        final[sink, run, checkpoint] = attempt
    kept = [
        value for value, h in messages if final[tuple(h[n] for n in HEADERS[:3])] == h[HEADERS[3]]
    ]
    return kept, len(messages) - len(kept)


class Producing:
    """A producer thread that holds back its last records until :meth:`release`."""

    def __init__(self, thread: threading.Thread, released: threading.Event) -> None:
        self.thread, self.released = thread, released

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def release(self) -> None:
        self.released.set()


def produced_in_background(
    kafka: KafkaMock, topic: str, n: int, secs: float, held: int = 2000
) -> Iterator[Producing]:
    """A thread producing ``"0"`` .. ``str(n-1)`` to ``topic``: the first ``n - held`` over
    about ``secs`` seconds, the last ``held`` once the loop body is done (or released), so
    that kills made in the body land mid-run however slow the machine is."""
    released = threading.Event()

    def run() -> None:
        from confluent_kafka import Producer

        producer = Producer(kafka.config(**{"linger.ms": 5}))
        started = time.monotonic()
        for i in range(n):
            if i == n - held:
                producer.flush(30)
                released.wait(90)
            producer.produce(topic, str(i).encode(), str(i % 97).encode())
            if i % 100 == 99:
                producer.poll(0)
                time.sleep(max(0.0, started + secs * i / n - time.monotonic()))
        producer.flush(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield Producing(thread, released)
    finally:
        released.set()
        thread.join(60)


def kill_worker(cluster: LocalCluster, name: str, worker: int) -> None:
    restarts = cluster.restarts(name).get(worker, 0)
    os.kill(cluster.worker_pids(name)[worker], signal.SIGKILL)
    wait_for(lambda: cluster.restarts(name).get(worker, 0), lambda n: n > restarts, 30)


def output_size(kafka: KafkaMock, topic: str) -> int:
    """Records (and transaction markers) written to ``topic`` so far: its high watermarks."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(kafka.config(**{"group.id": unique("size")}))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in meta.partitions
        )
    finally:
        consumer.close()


# -- the spout driven directly ---------------------------------------------------------------


@pytest.mark.timeout(60)
def test_partitions_are_dealt_to_the_tasks_and_each_reads_only_its_own(
    kafka_mock: KafkaMock,
) -> None:
    topic = unique("split")
    kafka_mock.create_topic(topic, 5)
    produce(kafka_mock, topic, [(p, f"{p}-{i}".encode()) for p in range(5) for i in range(10)])
    every = sorted(f"{topic}:{p}" for p in range(5))
    seen: list[str] = []
    for index in range(3):
        spout = KafkaSpout(topic, bootstrap_servers=kafka_mock.bootstrap_servers, group_id="g")
        recorder = opened(spout, tasks=3, index=index)
        assert spout.owned == every[index::3]
        drain(spout, recorder, 10 * len(spout.owned))
        for values, (partition, _position) in recorder.on():
            assert partition in spout.owned
            assert values[1].startswith(partition.rsplit(":", 1)[1] + "-")
        seen.extend(p for _, (p, _pos) in recorder.on())
        spout.close()
    assert sorted(set(seen)) == every and len(seen) == 50


@pytest.mark.timeout(60)
def test_a_record_that_does_not_decode_goes_to_errors_and_is_committed_past(
    kafka_mock: KafkaMock,
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic, group = unique("bad"), unique("bad-group")
    kafka_mock.create_topic(topic, 1)
    produce(kafka_mock, topic, [(0, b'{"n": 1}'), (0, b"not json"), (0, b'{"n": 2}')])
    spout = KafkaSpout(
        topic,
        bootstrap_servers=kafka_mock.bootstrap_servers,
        group_id=group,
        value_format="json",
        commit_interval_secs=0,
    )
    recorder = opened(spout)
    drain(spout, recorder, 3)
    [(error, _)] = recorder.on("errors")
    assert error[:2] == [f"{topic}:0", 2] and error[3] == "not json"
    assert error[2].startswith("JSONDecodeError")
    good = recorder.on()
    assert [values[1] for values, _ in good] == [{"n": 1}, {"n": 2}]
    for _, msg_id in good:
        spout.ack(msg_id)
    spout.close()  # commits: past the bad record too
    consumer = Consumer(kafka_mock.config(**{"group.id": group}))
    [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    consumer.close()
    assert tp.offset == 3


@pytest.mark.timeout(60)
def test_an_offset_commit_with_the_brokers_down_gives_up_in_time_and_succeeds_later(
    kafka_mock: KafkaMock,
) -> None:
    """A synchronous commit waits for the group coordinator for ever while no broker
    answers; the spout's commit waits ``timeout_secs`` for the answer, then fails as a
    transient error (the base commits again later), and commits once the brokers are up."""
    from confluent_kafka import Consumer, TopicPartition

    topic, group = unique("commit"), unique("commit-group")
    kafka_mock.create_topic(topic, 1)
    produce(kafka_mock, topic, [(0, b"a"), (0, b"b")])
    spout = KafkaSpout(
        topic, bootstrap_servers=kafka_mock.bootstrap_servers, group_id=group, timeout_secs=1.0
    )
    recorder = opened(spout)
    drain(spout, recorder, 2)
    with brokers_down(kafka_mock):
        thread, out = in_background(lambda: spout.commit({f"{topic}:0": 1}))
        thread.join(15)
        assert not thread.is_alive(), "the commit hangs while the brokers are down"
        [failure] = out
        assert isinstance(failure, TransientError) and "not answered in 1s" in str(failure)
    # as the base commits: again while it is a transient error (the brokers reconnecting,
    # the answer to the commit that timed out coming first: it must not land last)
    retrying(lambda: spout.commit({f"{topic}:0": 2}), QUICK, "offset commit")
    spout.close()
    consumer = Consumer(kafka_mock.config(**{"group.id": group}))
    [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    consumer.close()
    assert tp.offset == 2


@pytest.mark.timeout(60)
def test_a_spout_started_with_the_brokers_down_waits_for_them(kafka_mock: KafkaMock) -> None:
    """open() retries the metadata and offset requests while no broker answers (instead of
    the worker dying), and reads once they are back."""
    topic = unique("late")
    kafka_mock.create_topic(topic, 2)
    produce(kafka_mock, topic, [(p, b"x") for p in (0, 1)])
    spout = KafkaSpout(
        topic, bootstrap_servers=kafka_mock.bootstrap_servers, group_id=unique("late"),
        timeout_secs=0.5, backoff=QUICK,
    )  # fmt: skip
    recorder = Watching("start-up: ")
    spout._collector = recorder  # type: ignore[assignment]
    with brokers_down(kafka_mock):
        thread, out = in_background(lambda: spout.open({}, context("in", 1, 0)))
        assert recorder.seen.wait(20), f"no retry at start-up: {out}"
        assert thread.is_alive()  # still waiting
    thread.join(20)
    assert out == [None]
    assert spout.owned == [f"{topic}:0", f"{topic}:1"]
    drain(spout, recorder, 2)
    spout.close()


@pytest.mark.timeout(60)
def test_a_start_up_that_gives_up_names_the_component_and_the_servers(
    kafka_mock: KafkaMock,
) -> None:
    topic = unique("never")
    kafka_mock.create_topic(topic, 1)
    servers = kafka_mock.bootstrap_servers
    spout = KafkaSpout(
        topic, bootstrap_servers=servers, group_id="g", timeout_secs=0.3,
        startup_timeout_secs=1.0, backoff=QUICK,
    )  # fmt: skip
    spout._collector = Recorder()  # type: ignore[assignment]
    with brokers_down(kafka_mock), pytest.raises(SparkstormError) as failure:
        spout.open({}, context("orders", 1, 0))
    message = str(failure.value)
    assert message.startswith("KafkaSpout 'orders': start-up gave up after")
    assert "startup_timeout_secs=1" in message and repr(servers) in message
    spout.disconnect()


@pytest.mark.timeout(60)
def test_a_transactional_sink_started_with_the_brokers_down_waits_for_them(
    kafka_mock: KafkaMock,
) -> None:
    """``init_transactions`` times out while no broker answers: retried, not fatal."""
    topic = unique("tx-late")
    kafka_mock.create_topic(topic, 1)
    kafka_mock.create_topic(f"{topic}.sparkstorm-commits", 1)
    sink = KafkaTransactionalSink(
        topic, bootstrap_servers=kafka_mock.bootstrap_servers, timeout_secs=0.5, backoff=QUICK,
        transactional_id_prefix=unique("tx-late"),
    )  # fmt: skip
    recorder = Watching("start-up: init_transactions")
    sink._collector = recorder  # type: ignore[assignment]
    with brokers_down(kafka_mock):
        thread, out = in_background(lambda: sink.connect({}, context("out", 1, 0)))
        assert recorder.seen.wait(20), f"no retry at start-up: {out}"
    thread.join(20)
    assert out == [None]
    # as the runtime commits: brokers just back may time a call out (a transient error)
    handle = {"run": sink.run, "records": [[None, b"after"]]}
    retrying(lambda: sink.commit(handle, 1), QUICK, "commit of checkpoint 1")
    assert read_back(kafka_mock, topic, lambda v: len(v) >= 1, 10) == ["after"]
    sink.disconnect()


# -- topologies on a LocalCluster ------------------------------------------------------------

N = 6000


@pytest.mark.timeout(120)
def test_at_least_once_every_record_arrives_after_a_worker_is_killed(
    kafka_mock: KafkaMock, tmp_path: Path
) -> None:
    source, sink = unique("alo-in"), unique("alo-out")
    kafka_mock.create_topic(source, 4)
    kafka_mock.create_topic(sink, 2)
    servers = kafka_mock.bootstrap_servers
    builder = TopologyBuilder()
    spout = KafkaSpout(source, bootstrap_servers=servers, group_id=unique("alo"), max_batch=100)
    builder.set_spout("in", spout, 2)
    builder.set_bolt(
        "out", KafkaSink(sink, bootstrap_servers=servers, batch_size=100), 2
    ).shuffle_grouping("in")
    topology = builder.create_topology()
    conf = {"topology.workers": 2, "topology.max.spout.pending": 500}
    with LocalCluster() as cluster:
        for producing in produced_in_background(kafka_mock, source, N, 3.0):
            cluster.submit_topology("alo", conf, topology)
            wait_for(lambda: output_size(kafka_mock, sink), lambda n: n > 500, 30, 0.1)
            kill_worker(cluster, "alo", 1)
            assert producing.is_alive()  # the kill landed mid-run
        values = read_back(kafka_mock, sink, lambda v: len(set(v)) >= N, 60)
        counts = Counter(values)
        assert set(counts) == {str(i) for i in range(N)}
        duplicates = len(values) - N
        print(f"at-least-once through a SIGKILL: {N} records, {duplicates} delivered twice")
        assert not cluster.errors("alo").get("in")


#: How long every broker is down in the outage test.  5 s rather than the 10 s of the other
#: connectors' outage tests: the same happens (each client loses its connections, retries
#: with its backoff, reconnects once the brokers are up) and it saves CI 5 s.
OUTAGE_SECS = 5.0


@pytest.mark.timeout(120)
def test_every_broker_down_for_seconds_mid_run_loses_nothing(kafka_mock: KafkaMock) -> None:
    """At-least-once, KafkaSpout -> KafkaSink, while every broker of the cluster is down
    for OUTAGE_SECS (connections closed, new ones refused): the spout's reads and commits
    and the sink's writes wait and retry; every record, those produced before the outage
    and after it, arrives (duplicates allowed, counted)."""
    source, sink = unique("down-in"), unique("down-out")
    kafka_mock.create_topic(source, 2)
    kafka_mock.create_topic(sink, 2)
    servers = kafka_mock.bootstrap_servers
    before, after = 1000, 500
    produce(kafka_mock, source, [(i % 2, str(i).encode()) for i in range(before)])
    quick = Backoff(initial_secs=0.1, max_secs=1.0)
    builder = TopologyBuilder()
    spout = PacedKafkaSpout(
        source,
        bootstrap_servers=servers,
        group_id=unique("down"),
        rate=100.0,
        max_batch=100,
        commit_interval_secs=0.2,
        backoff=quick,
    )
    builder.set_spout("in", spout, 2)
    out = KafkaSink(sink, bootstrap_servers=servers, batch_size=50, backoff=quick)
    builder.set_bolt("out", out, 2).shuffle_grouping("in")
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 60}
    with LocalCluster() as cluster:
        cluster.submit_topology("down", conf, builder.create_topology())
        written = wait_for(lambda: output_size(kafka_mock, sink), lambda n: n >= 200, 30, 0.05)
        kafka_mock.brokers_down()
        try:
            time.sleep(OUTAGE_SECS)
        finally:
            kafka_mock.brokers_up()
        assert written < before  # the outage landed mid-run (the spouts read 200 a second)
        total = before + after
        produce(kafka_mock, source, [(i % 2, str(i).encode()) for i in range(before, total)])
        values = read_back(kafka_mock, sink, lambda v: len(set(v)) >= total, 60)
        counts = Counter(values)
        assert set(counts) == {str(i) for i in range(total)}
        print(
            f"every broker down {OUTAGE_SECS:g}s mid-run: {total} records, "
            f"{len(values) - total} delivered twice"
        )
        assert not cluster.errors("down")


@pytest.mark.timeout(120)
def test_exactly_once_into_a_transactional_sink_through_two_killed_workers(
    kafka_mock: KafkaMock, tmp_path: Path
) -> None:
    source, sink = unique("eo-in"), unique("eo-out")
    kafka_mock.create_topic(source, 4)
    kafka_mock.create_topic(sink, 2)
    kafka_mock.create_topic(f"{sink}.sparkstorm-commits", 1)
    servers = kafka_mock.bootstrap_servers
    builder = TopologyBuilder()
    spout = KafkaSpout(
        source,
        bootstrap_servers=servers,
        group_id=unique("eo"),
        guarantee="exactly_once",
        max_batch=100,
    )
    builder.set_spout("in", spout, 2)
    out = KafkaTransactionalSink(
        sink, bootstrap_servers=servers, transactional_id_prefix=unique("eo"), batch_size=100
    )
    builder.set_bolt("out", out, 2).shuffle_grouping("in")
    topology = builder.create_topology()
    conf = {
        "topology.workers": 2,
        "topology.state.dir": str(tmp_path),
        "topology.state.checkpoint.interval.ms": 300,
    }
    with LocalCluster() as cluster:
        for producing in produced_in_background(kafka_mock, source, N, 3.0):
            cluster.submit_topology("eo", conf, topology)
            wait_for(lambda: output_size(kafka_mock, sink), lambda n: n > 500, 30, 0.1)
            kill_worker(cluster, "eo", 0)  # the coordinator's worker
            wait_for(lambda: output_size(kafka_mock, sink), lambda n: n > 2500, 30, 0.1)
            kill_worker(cluster, "eo", 1)
            assert producing.is_alive()  # the kills landed mid-run
        # then a few more checkpoints: anything committed twice would show up
        messages = read_messages(kafka_mock, sink, lambda v: len(set(v)) >= N, 60, quiet=1.5)
        values, aborted = committed_only(messages)
        counts = Counter(values)
        assert set(counts) == {str(i) for i in range(N)}
        assert [v for v, c in counts.items() if c > 1] == []
        print(f"exactly-once through two SIGKILLs: {N} records once each ({aborted} dropped)")
        assert not cluster.errors("eo").get("out")


@pytest.mark.timeout(60)
def test_the_marker_skips_a_commit_done_before_a_crash_and_lets_one_cut_short_be_redone(
    kafka_mock: KafkaMock,
) -> None:
    topic, prefix = unique("marks"), unique("marks")
    kafka_mock.create_topic(topic, 1)
    kafka_mock.create_topic(f"{topic}.sparkstorm-commits", 1)

    def process() -> KafkaTransactionalSink:
        """The task's sink in a new process: connect fences the one before."""
        sink = KafkaTransactionalSink(
            topic, bootstrap_servers=kafka_mock.bootstrap_servers, transactional_id_prefix=prefix
        )
        sink._collector = Recorder()  # type: ignore[assignment]
        sink.connect({}, context("out", 1, 0))
        return sink

    first = process()
    one = {"run": first.run, "records": [[b"k", b"1"], [b"k", b"2"]]}
    first.commit(one, 1)
    again = process()  # the notification of 1 was lost in a crash: the restore commits again
    again.commit(one, 1)
    assert read_back(kafka_mock, topic, lambda v: len(v) >= 2, 10, quiet=0.5) == ["1", "2"]

    two = {"run": again.run, "records": [[b"k", b"3"], [None, b"4"]]}
    again.producer.begin_transaction()  # killed amid the commit of 2: produced, not committed
    headers = dict(zip(HEADERS, (again.transactional_id, again.run, "2", again.run)))
    again.producer.produce(topic, b"3", b"k", headers=headers)
    again.producer.flush(10)
    redone = process()  # aborts that transaction
    redone.commit(two, 2)
    redone.commit(two, 2)  # (a repeated notification)
    process().commit(two, 2)  # and after one more restart
    fresh = process()  # a new deployment: fresh checkpoint ids, its own run
    fresh.commit({"run": fresh.run, "records": [[None, b"5"]]}, 1)
    messages = read_messages(kafka_mock, topic, lambda v: "5" in v, 10, quiet=0.5)
    values, aborted = committed_only(messages)
    assert values == ["1", "2", "3", "4", "5"] and aborted <= 1
