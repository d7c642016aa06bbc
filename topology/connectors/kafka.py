"""Kafka connectors — the only module that imports ``confluent_kafka`` (lazily; ``pip
install 'sparkstorm[kafka]'``).  See docs/CONNECTORS.md#kafka.

* :class:`KafkaSpout`: topic partitions (ids ``"topic:N"``) dealt to the spout's tasks by
  the base and assigned by hand (no group rebalancing: the split is deterministic);
  ``group.id`` names where offsets are committed.  A position is the offset after a record.
* :class:`~.kafka_sinks.KafkaSink` and :class:`~.kafka_sinks.KafkaTransactionalSink`
  (at-least-once and exactly-once) live in :mod:`.kafka_sinks`, through :func:`_kafka`.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from .retry import TransientError, missing_extra
from .source import PartitionedSource, Record

if TYPE_CHECKING:
    from topology.context import TopologyContext

#: How a spout decodes keys and values.
FORMATS = ("utf-8", "json", "bytes")
#: Headers of a :class:`KafkaTransactionalSink`'s records: its transactional id, the run
#: (process) that wrote the handle ahead, the checkpoint, the process that produced them.
HEADERS = ("sparkstorm.sink", "sparkstorm.run", "sparkstorm.checkpoint", "sparkstorm.attempt")
#: Producer settings the sink's marker reader uses too (how to reach the cluster).
_ACCESS = ("security.", "sasl.", "ssl.", "client.")


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
    """Re-raise a client error: retriable ones as :class:`TransientError`."""
    error: Any = exc.args[0] if exc.args else None
    if callable(getattr(error, "retriable", None)) and error.retriable() and not error.fatal():
        raise TransientError(f"{what}: {error}") from exc
    raise exc


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
        **settings: the base's ``guarantee``, ``max_batch``, ``commit_interval_secs``...
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
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        for fmt in (value_format, key_format):
            if fmt not in FORMATS:
                raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
        if start not in ("earliest", "latest"):
            raise ValueError(f"start must be 'earliest' or 'latest', got {start!r}")
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.value_format, self.key_format = value_format, key_format
        self.start = start
        self.config = dict(config or {})
        self.timeout_secs = timeout_secs

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        kafka = _kafka()
        self._kafka = kafka
        self.consumer = kafka.Consumer(
            {"bootstrap.servers": self.bootstrap_servers, "group.id": self.group_id}
            | {"enable.auto.commit": False, "enable.auto.offset.store": False}
            | {"auto.offset.reset": self.start, "isolation.level": "read_committed"}
            | self.config
        )
        self._committed_offsets: dict[str, int | None] | None = None
        self._assigned = False
        self._expect: dict[str, Any] = {}  # partition -> the position the next record has
        self._buffer: dict[str, deque[Any]] = {}

    def disconnect(self) -> None:
        self.consumer.close()

    def partitions(self) -> list[str]:
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
        known = self._committed_offsets
        if known is None or partition not in known:  # one request for the task's partitions
            wanted = sorted({*self.assigned(sorted(self.partitions())), partition})
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

    def start_position(self, partition: str) -> Any:
        """The partition's first offset (``start="earliest"``) or its end (``"latest"``),
        as a number: a checkpoint taken before the first record must hold where reading
        began, not "the end", which moves on."""
        try:
            low, high = self.consumer.get_watermark_offsets(
                self._kafka.TopicPartition(*_split(partition)), timeout=self.timeout_secs
            )
        except self._kafka.KafkaException as exc:
            _raise_kafka(exc, f"offsets of {partition}")
        return low if self.start == "earliest" else high

    def commit(self, positions: dict[str, Any]) -> None:
        tps = [
            self._kafka.TopicPartition(*_split(p), int(offset))
            for p, offset in positions.items()
            if offset is not None
        ]
        if not tps:
            return
        try:
            self.consumer.commit(offsets=tps, asynchronous=False)
        except self._kafka.KafkaException as exc:
            _raise_kafka(exc, "offset commit")

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

    def _fill(self) -> None:
        """Move what the client has prefetched into the per-partition buffers."""
        messages = self.consumer.consume(num_messages=self.max_batch, timeout=0)
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
