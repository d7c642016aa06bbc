"""Kafka connectors — the only module that imports ``confluent_kafka`` (lazily; ``pip
install 'sparkstorm[kafka]'``).  See docs/CONNECTORS.md#kafka.

* :class:`KafkaSpout`: topic partitions (ids ``"topic:N"``) dealt to the spout's tasks by
  the base and assigned by hand (no group rebalancing: the split is deterministic);
  ``group.id`` names where offsets are committed.  A position is the offset after a record.
  Its start-up (metadata, committed offsets, watermarks) is retried with backoff while
  Kafka is out of reach, for up to ``startup_timeout_secs``; an offset commit waits at most
  ``timeout_secs`` for Kafka's answer, then counts as a transient failure.
* :class:`~.kafka_sinks.KafkaSink` and :class:`~.kafka_sinks.KafkaTransactionalSink`
  (at-least-once and exactly-once) live in :mod:`.kafka_sinks`, through :func:`_kafka`.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from topology.errors import SparkstormError

from .restored import shown
from .retry import (
    Backoff,
    TransientError,
    check_choice,
    check_names,
    check_number,
    check_text,
    missing_extra,
    retrying,
    setting_error,
)
from .source import PartitionedSource, Record

if TYPE_CHECKING:
    from topology.context import TopologyContext

T = TypeVar("T")

#: How a spout decodes keys and values.
FORMATS = ("utf-8", "json", "bytes")
#: Headers of a :class:`KafkaTransactionalSink`'s records: its transactional id, the run
#: (process) that wrote the handle ahead, the checkpoint, the process that produced them.
HEADERS = ("sparkstorm.sink", "sparkstorm.run", "sparkstorm.checkpoint", "sparkstorm.attempt")
#: Producer settings the sink's marker reader uses too (how to reach the cluster).
_ACCESS = ("security.", "sasl.", "ssl.", "client.")
#: Longest a component's start-up waits for Kafka by default (seconds): under the 60 s a
#: worker has to start (``supervisor.worker.start.timeout.secs``), so that the error says
#: what was waited for.
STARTUP_TIMEOUT_SECS = 45.0
#: librdkafka's local error codes that mean "Kafka out of reach for now" (not flagged
#: retriable by the client: a request timed out, every broker down, no coordinator yet).
_UNREACHABLE = ("_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "_WAIT_COORD", "_TIMED_OUT_QUEUE")


def _kafka() -> Any:
    try:
        import confluent_kafka
    except ImportError as exc:
        raise missing_extra("confluent_kafka", "kafka") from exc
    return confluent_kafka


def _split(partition: str) -> tuple[str, int]:
    topic, _, number = partition.rpartition(":")
    return topic, int(number)


def _decode(raw: bytes | None, fmt: str) -> Any:
    if raw is None or fmt == "bytes":
        return raw
    text = raw.decode("utf-8")
    return json.loads(text) if fmt == "json" else text


def _encode(value: Any) -> bytes | None:
    """bytes as they are, str as utf-8, None as None (a tombstone), anything else as JSON."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _raise_kafka(exc: Exception, what: str) -> NoReturn:
    """Re-raise a client error: retriable ones, and Kafka out of reach, as
    :class:`TransientError`."""
    error: Any = exc.args[0] if exc.args else None
    if callable(getattr(error, "retriable", None)) and not error.fatal():
        unreachable = {getattr(_kafka().KafkaError, code) for code in _UNREACHABLE}
        if error.retriable() or error.code() in unreachable:
            raise TransientError(f"{what}: {error}") from exc
    raise exc


def _check_common(owner: object, servers: Any, config: Any, timeout: Any, startup: Any) -> None:
    """Refuse bad settings every Kafka connector has, naming ``owner``'s class."""
    check_text(owner, "bootstrap_servers", servers)
    if config is not None and not isinstance(config, Mapping):
        raise setting_error(owner, "config", "a mapping of librdkafka settings or None", config)
    check_number(owner, "timeout_secs", timeout, strict=True)
    check_number(owner, "startup_timeout_secs", startup, optional=True)


def starting(
    owner: Any, component: str, call: Callable[[], T], what: str, backoff: Backoff, deadline: Any
) -> T:
    """``call()`` at start-up, retried with ``backoff`` while it raises a transient error
    (Kafka out of reach, a topic not there yet) until ``deadline`` (a ``backoff.clock()``
    time; None: forever); then a :class:`SparkstormError` naming the component and its
    ``bootstrap_servers``, so the worker's failure says what it waited for."""
    left = None if deadline is None else max(0.0, deadline - backoff.clock())
    try:
        return retrying(
            call, replace(backoff, max_retry_secs=left), f"start-up: {what}", log=owner.log
        )
    except TransientError as exc:
        raise SparkstormError(
            f"{type(owner).__name__} {component!r}: start-up gave up after "
            f"startup_timeout_secs={owner.startup_timeout_secs:g} ({what}: {exc}); is Kafka "
            f"up at bootstrap_servers {owner.bootstrap_servers!r}?"
        ) from exc


class KafkaSpout(PartitionedSource):
    """Reads ``topics`` (a name or a list) from Kafka; emits ``[key, value]``.

    Args:
        topics: the topic(s) to read; every partition of each is a partition of the source.
        bootstrap_servers: ``host:port,...`` of the cluster.
        group_id: the consumer group whose offsets are read at start and committed (no
            group membership: partitions are assigned by hand).
        value_format, key_format: ``"utf-8"`` (str), ``"json"`` or ``"bytes"``; a record
            that does not decode goes to the ``errors`` stream.
        start: ``"earliest"`` or ``"latest"``: where a partition without an offset starts.
        config: more librdkafka consumer settings (override the defaults).
        timeout_secs: longest wait for a metadata or offset request, and for Kafka's
            answer to an offset commit (then the commit is tried again later).
        startup_timeout_secs: how long ``open`` retries (with ``backoff``) while Kafka is
            out of reach or a topic is missing, before it fails naming the component and
            ``bootstrap_servers`` (None: forever).
        **settings: the base's ``guarantee``, ``max_batch``, ``commit_interval_secs``...

    Raises:
        ValueError: a setting is out of range or not one of its choices (the message
            names it).

    Example (needs ``pip install 'sparkstorm[kafka]'`` to run; making it connects to
    nothing):

        >>> spout = KafkaSpout(
        ...     "orders", bootstrap_servers="kafka1:9092", group_id="billing", value_format="json"
        ... )
        >>> spout.outputs
        ['key', 'value']
        >>> KafkaSpout("orders", bootstrap_servers="kafka1:9092", group_id="g", start="middle")
        Traceback (most recent call last):
        ...
        ValueError: KafkaSpout: start must be one of ('earliest', 'latest'), got 'middle'
    """

    outputs = ["key", "value"]

    def __init__(
        self,
        topics: str | list[str],
        *,
        bootstrap_servers: str,
        group_id: str,
        value_format: str = "utf-8",
        key_format: str = "utf-8",
        start: str = "earliest",
        config: Mapping[str, Any] | None = None,
        timeout_secs: float = 10.0,
        startup_timeout_secs: float | None = STARTUP_TIMEOUT_SECS,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        _check_common(self, bootstrap_servers, config, timeout_secs, startup_timeout_secs)
        check_text(self, "group_id", group_id)
        check_choice(self, "value_format", value_format, FORMATS)
        check_choice(self, "key_format", key_format, FORMATS)
        check_choice(self, "start", start, ("earliest", "latest"))
        if isinstance(topics, str):
            check_text(self, "topics", topics)
        self.topics = [topics] if isinstance(topics, str) else check_names(self, "topics", topics)
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.value_format, self.key_format = value_format, key_format
        self.start = start
        self.config = dict(config or {})
        self.timeout_secs = timeout_secs
        self.startup_timeout_secs = startup_timeout_secs

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        kafka = _kafka()
        self._kafka = kafka
        self.consumer = kafka.Consumer(
            {"bootstrap.servers": self.bootstrap_servers, "group.id": self.group_id}
            | {"enable.auto.commit": False, "enable.auto.offset.store": False}
            | {"auto.offset.reset": self.start, "isolation.level": "read_committed"}
            | self.config
            | {"on_commit": self._on_commit}
        )
        self._component = context.component_id
        limit = self.startup_timeout_secs
        self._startup_deadline = None if limit is None else self.backoff.clock() + limit
        #: Answers to offset commits: {(topic, partition, offset)...} -> error or None.
        self._commit_results: dict[frozenset[tuple[str, int, int]], Any] = {}
        #: The offset commit sent and not answered yet (it timed out), or None.
        self._unanswered: frozenset[tuple[str, int, int]] | None = None
        self._committed_offsets: dict[str, int | None] | None = None
        self._assigned = False
        self._expect: dict[str, Any] = {}  # partition -> the position the next record has
        self._buffer: dict[str, deque[Any]] = {}

    def disconnect(self) -> None:
        self.consumer.close()

    def _starting(self, call: Callable[[], T], what: str) -> T:
        return starting(self, self._component, call, what, self.backoff, self._startup_deadline)

    def partitions(self) -> list[str]:
        """Every partition of ``topics`` (retried at start-up: see :func:`starting`)."""
        return self._starting(self._partitions, f"metadata of {self.topics}")

    def _partitions(self) -> list[str]:
        out: list[str] = []
        for topic in self.topics:
            try:
                meta = self.consumer.list_topics(topic, timeout=self.timeout_secs)
            except self._kafka.KafkaException as exc:
                _raise_kafka(exc, f"metadata of {topic}")
            found = meta.topics.get(topic)
            if found is None or found.error is not None or not found.partitions:
                error = None if found is None else found.error
                raise TransientError(
                    f"topic {topic!r} not available ({error}): create it, or check "
                    f"bootstrap_servers {self.bootstrap_servers!r}"
                )
            out.extend(f"{topic}:{n}" for n in sorted(found.partitions))
        return out

    def committed(self, partition: str) -> Any | None:
        """The group's offset of ``partition`` (fetched for all the task's partitions at
        once; retried at start-up)."""
        return self._starting(lambda: self._fetch_committed(partition), "committed offsets")

    def _fetch_committed(self, partition: str) -> Any | None:
        known = self._committed_offsets
        if known is None or partition not in known:  # one request for the task's partitions
            wanted = sorted({*self.assigned(sorted(self._partitions())), partition})
            tps = [self._kafka.TopicPartition(*_split(p)) for p in wanted]
            try:
                found = self.consumer.committed(tps, timeout=self.timeout_secs)
            except self._kafka.KafkaException as exc:
                _raise_kafka(exc, "committed offsets")
            known = dict(known or {})
            for tp in found:
                known[f"{tp.topic}:{tp.partition}"] = tp.offset if tp.offset >= 0 else None
            self._committed_offsets = known
        return known.get(partition)

    def restored_problem(self, partition: Any, position: Any) -> str | None:
        """A restored partition must be ``<topic>:<n>`` of one of ``topics``, its position
        an offset (an int >= 0) or None."""
        problem = super().restored_problem(partition, position)
        if problem is not None:
            return problem
        topic, _, number = partition.rpartition(":")
        if topic not in self.topics or not (number.isascii() and number.isdigit()):
            return f"not a partition of the topics {self.topics}"
        if position is not None and (type(position) is not int or not 0 <= position < 2**63):
            return f"position {shown(position)} is not an offset"
        return None

    def start_position(self, partition: str) -> Any:
        """The partition's first offset (``start="earliest"``) or its end (``"latest"``),
        as a number: a checkpoint taken before the first record must hold where reading
        began, not "the end", which moves on (retried at start-up)."""
        tp = self._kafka.TopicPartition(*_split(partition))

        def watermarks() -> tuple[int, int]:
            try:
                found = self.consumer.get_watermark_offsets(tp, timeout=self.timeout_secs)
            except self._kafka.KafkaException as exc:
                _raise_kafka(exc, f"offsets of {partition}")
            return tuple(found)

        low, high = self._starting(watermarks, f"offsets of {partition}")
        return low if self.start == "earliest" else high

    def commit(self, positions: dict[str, Any]) -> None:
        """Commit the offsets to the group, waiting at most ``timeout_secs`` for Kafka's
        answer (served by the consumer while it keeps buffering records); no answer in
        time, or a retriable error, is a :class:`TransientError`: the base commits again
        at the next interval.  One commit is in flight at a time: while an earlier one
        that timed out is still unanswered, the next waits for that answer first (else the
        client could deliver the older offsets after the newer and take them back)."""
        tps = [
            self._kafka.TopicPartition(*_split(p), int(offset))
            for p, offset in positions.items()
            if offset is not None
        ]
        if not tps:
            return
        deadline = time.monotonic() + self.timeout_secs
        if self._unanswered is not None:
            self._await_answer(self._unanswered, deadline, "an earlier offset commit")
            self._commit_results.pop(self._unanswered)
            self._unanswered = None
        self._commit_results.clear()  # (answers nobody waits for)
        wanted = frozenset((tp.topic, tp.partition, tp.offset) for tp in tps)
        try:
            self.consumer.commit(offsets=tps, asynchronous=True)
        except self._kafka.KafkaException as exc:
            _raise_kafka(exc, "offset commit")
        self._unanswered = wanted
        self._await_answer(wanted, deadline, f"offset commit of {sorted(positions)}")
        self._unanswered = None
        error = self._commit_results.pop(wanted)
        if error is not None:
            _raise_kafka(self._kafka.KafkaException(error), "offset commit")

    def _await_answer(self, commit: frozenset[Any], deadline: float, what: str) -> None:
        """Serve the consumer until ``commit`` is answered; a :class:`TransientError` at
        ``deadline``."""
        wait = 0.001  # the answer ends no wait of consume: short ones, growing
        while commit not in self._commit_results:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TransientError(
                    f"{what} not answered in {self.timeout_secs:g}s "
                    f"(bootstrap_servers {self.bootstrap_servers!r})"
                )
            self._fill(min(wait, left))
            wait = min(2 * wait, 0.05)

    def _on_commit(self, error: Any, partitions: list[Any]) -> None:
        """The consumer's answer to an offset commit (served by ``consume``)."""
        failed = error or next((tp.error for tp in partitions if tp.error), None)
        done = frozenset((tp.topic, tp.partition, tp.offset) for tp in partitions)
        self._commit_results[done] = failed

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        if not self._assigned or self._expect.get(partition) != position:
            self._assign(self.position())  # first read, or the base seeked (a rollback)
        buffer = self._buffer[partition]
        if len(buffer) < max_records:
            self._fill()
        records: list[Record] = []
        while buffer and len(records) < max_records:
            msg = buffer.popleft()
            records.append(Record(partition, msg.offset() + 1, msg.value(), msg.key()))
        if records:
            self._expect[partition] = records[-1].position
        return records

    def _assign(self, positions: dict[str, Any]) -> None:
        """(Re)assign every partition of the task at ``positions`` (None: ``start``)."""
        logical = (
            self._kafka.OFFSET_BEGINNING if self.start == "earliest" else self._kafka.OFFSET_END
        )
        tps = [
            self._kafka.TopicPartition(*_split(p), logical if pos is None else int(pos))
            for p, pos in positions.items()
        ]
        self.consumer.assign(tps)
        self._assigned = True
        self._expect = dict(positions)
        self._buffer = {p: deque() for p in positions}

    def _fill(self, timeout: float = 0) -> None:
        """Move what the client has prefetched (waiting up to ``timeout`` for some) into
        the per-partition buffers; serves the consumer's callbacks too."""
        messages = self.consumer.consume(num_messages=self.max_batch, timeout=timeout)
        failure = None
        for msg in messages:
            error = msg.error()
            if error is not None:
                if error.code() != self._kafka.KafkaError._PARTITION_EOF:
                    failure = failure or error
                continue
            buffer = self._buffer.get(f"{msg.topic()}:{msg.partition()}")
            if buffer is not None:
                buffer.append(msg)
        if failure is not None:
            if failure.fatal():
                raise self._kafka.KafkaException(failure)
            raise TransientError(f"consume: {failure}")

    def decode(self, record: Record) -> list[Any]:
        return [_decode(record.key, self.key_format), _decode(record.value, self.value_format)]
