"""Kafka sinks (see :mod:`topology.connectors.kafka`, which owns the client import and
docs/CONNECTORS.md#kafka).

* :class:`KafkaSink`: batches through an idempotent producer (at-least-once).
* :class:`KafkaTransactionalSink`: exactly-once.  A Kafka transaction cannot outlive its
  producer, so a checkpoint's records are written ahead into the checkpoint and produced
  in one transaction, with a marker record, once it is complete (again after a restore,
  unless the marker is there).  Its ``init_transactions`` is retried with backoff while
  Kafka is out of reach, for up to ``startup_timeout_secs``.
"""

from __future__ import annotations

import json
import time
import uuid
import zlib
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from topology.errors import DataError

from .kafka import (
    _ACCESS,
    HEADERS,
    STARTUP_TIMEOUT_SECS,
    _check_common,
    _encode,
    _kafka,
    _raise_kafka,
    starting,
)
from .restored import RestoreRefusals, shown
from .retry import TransientError, check_number, check_text
from .sink import BatchingSink, RowErrors, TransactionalSink

if TYPE_CHECKING:
    from topology.context import TopologyContext


class _Producing:
    """What both sinks share: settings, tuple values to key and value, producing."""

    producer: Any

    def __init__(
        self,
        topic: str,
        *,
        bootstrap_servers: str,
        key_index: int | None = 0,
        value_index: int = 1,
        config: Mapping[str, Any] | None = None,
        timeout_secs: float = 30.0,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        check_text(self, "topic", topic)
        _check_common(self, bootstrap_servers, config, timeout_secs, None)
        check_number(self, "key_index", key_index, integer=True, optional=True)
        check_number(self, "value_index", value_index, integer=True)
        self.topic, self.key_index, self.value_index = topic, key_index, value_index
        self.bootstrap_servers = bootstrap_servers
        self.config = dict(config or {})
        self.timeout_secs = timeout_secs

    def _kv(self, values: list[Any]) -> list[bytes | None]:
        key = None if self.key_index is None else values[self.key_index]
        return [_encode(key), _encode(values[self.value_index])]

    def _produce(self, topic: str, key: Any, value: Any, **kw: Any) -> None:
        """Queue one record; while the client's queue is full, serve deliveries for up to
        ``timeout_secs``, then give up with a :class:`TransientError` (brokers away)."""
        deadline = time.monotonic() + self.timeout_secs
        while True:
            try:
                self.producer.produce(topic, value, key, **kw)
                return
            except BufferError as exc:  # the local queue is full: let deliveries drain it
                if time.monotonic() >= deadline:
                    raise TransientError(
                        f"{topic}: the producer's queue stayed full for {self.timeout_secs}s"
                    ) from exc
                self.producer.poll(0.05)


class KafkaSink(_Producing, BatchingSink):
    """Writes each tuple to ``topic`` with an idempotent producer (at-least-once: a
    replayed tuple is written again; a compacted topic keyed by the tuple's key makes the
    result exactly-once per key).

    Args:
        topic: where to write.
        bootstrap_servers: ``host:port,...`` of the cluster.
        key_index: the tuple field that is the record key (None: no key).
        value_index: the tuple field that is the record value (bytes as they are, str as
            utf-8, None as None, anything else as JSON; keys too).
        config: more librdkafka producer settings (override the defaults).
        timeout_secs: longest wait for Kafka's acknowledgements of a batch (then: retry).
        **settings: the base's ``batch_size``, ``flush_interval_secs``, ``max_retry_secs``...

    A record Kafka refuses (larger than ``message.max.bytes``, invalid) goes to the
    dead-letter stream; the rest of its batch is written (docs/ERRORS.md).

    Raises:
        ValueError: a setting is out of range (the message names it).

    Example (needs ``pip install 'sparkstorm[kafka]'`` to run; making it connects to
    nothing):

        >>> sink = KafkaSink("totals", bootstrap_servers="kafka1:9092", key_index=0)
        >>> KafkaSink("totals", bootstrap_servers="kafka1:9092", batch_size=0)
        Traceback (most recent call last):
        ...
        ValueError: KafkaSink: batch_size must be an integer >= 1, got 0
    """

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._kafka = _kafka()
        # what write_batch raises as KafkaException is no record's (those it refuses are
        # RowErrors): an unknown topic, no authorization
        self.sink_errors = (self._kafka.KafkaException,)
        self.producer = self._kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "enable.idempotence": True,
                "linger.ms": 5,
                **self.config,
            }
        )

    def disconnect(self) -> None:
        self.producer.flush(self.timeout_secs)

    def write_batch(self, records: list[list[Any]]) -> None:
        """Produce every record and wait for Kafka's acknowledgements; records Kafka
        refuses (too large, invalid) are raised as :class:`RowErrors` once the others are
        written."""
        errors: list[Any] = []
        refused: dict[int, BaseException] = {}
        kafka = self._kafka

        def delivered(index: int, error: Any, _msg: Any) -> None:
            if error is None:
                return
            if error.code() in _refused_codes(kafka):
                refused[index] = DataError(f"{self.topic}: Kafka refused the record: {error}")
            else:
                errors.append(error)

        for index, values in enumerate(records):
            key, value = self._kv(values)
            try:
                self._produce(self.topic, key, value, on_delivery=partial(delivered, index))
            except kafka.KafkaException as exc:  # refused before it left: too large...
                if not exc.args or exc.args[0].code() not in _refused_codes(kafka):
                    raise
                refused[index] = DataError(f"{self.topic}: Kafka refused the record: {exc}")
        left = self.producer.flush(self.timeout_secs)
        if left:
            raise TransientError(f"{left} records not acknowledged by Kafka in time")
        if errors:
            error = errors[0]
            if error.retriable() and not error.fatal():
                raise TransientError(f"{len(errors)} records not delivered: {error}")
            raise kafka.KafkaException(error)
        if refused:
            raise RowErrors(refused)


def _refused_codes(kafka: Any) -> frozenset[int]:
    """The codes of errors that are a record's own (another attempt meets them again)."""
    error = kafka.KafkaError
    return frozenset({error.MSG_SIZE_TOO_LARGE, error.INVALID_RECORD, error.INVALID_MSG})


class KafkaTransactionalSink(_Producing, TransactionalSink):
    """Writes each tuple to ``topic`` exactly once: a checkpoint's records are kept in it
    (the handle: ``{"run", "records"}``) and produced in one Kafka transaction with a
    marker ``{"run", "checkpoint"}`` (key: the transactional id) once it is complete; a
    commit whose marker is the newest there is skipped.  Readers use ``read_committed``.

    Args:
        topic: where to write.
        **settings: ``bootstrap_servers``, ``key_index``, ``value_index``, ``config``,
            ``timeout_secs`` as for :class:`KafkaSink`; ``batch_size``,
            ``max_retry_secs``, ``backoff`` as for :class:`TransactionalSink`.
        transactional_id_prefix: the task's producer is ``<prefix>-<component>-<task>``
            (default prefix: the topology's name); ``init_transactions`` fences the task's
            previous process and aborts what it left open.
        marker_topic: where commit markers go (default ``<topic>.sparkstorm-commits``;
            create it compacted where topics are not created automatically).
        startup_timeout_secs: how long ``init_transactions`` is retried (with ``backoff``)
            while Kafka is out of reach, before the task fails naming the component and
            ``bootstrap_servers`` (None: forever).

    Raises:
        ValueError: a setting is out of range (the message names it).

    Example (needs ``pip install 'sparkstorm[kafka]'`` to run; making it connects to
    nothing):

        >>> sink = KafkaTransactionalSink("totals", bootstrap_servers="kafka1:9092")
        >>> sink.marker_topic
        'totals.sparkstorm-commits'
        >>> KafkaTransactionalSink("totals", bootstrap_servers="")
        Traceback (most recent call last):
        ...
        ValueError: KafkaTransactionalSink: bootstrap_servers must be a non-empty string, got ''
    """

    def __init__(
        self,
        topic: str,
        *,
        transactional_id_prefix: str | None = None,
        marker_topic: str | None = None,
        startup_timeout_secs: float | None = STARTUP_TIMEOUT_SECS,
        **settings: Any,  # bootstrap_servers, key_index...: as KafkaSink
    ) -> None:
        super().__init__(topic, **settings)
        check_text(self, "transactional_id_prefix", transactional_id_prefix, optional=True)
        check_text(self, "marker_topic", marker_topic, optional=True)
        check_number(self, "startup_timeout_secs", startup_timeout_secs, optional=True)
        self.prefix = transactional_id_prefix
        self.marker_topic = marker_topic or f"{topic}.sparkstorm-commits"
        self.startup_timeout_secs = startup_timeout_secs

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._kafka = _kafka()
        prefix = self.prefix or context.topology_name
        self.transactional_id = f"{prefix}-{context.component_id}-{context.task_index}"
        self.run = uuid.uuid4().hex  # names the handles (and so the markers) of this process
        self.producer = self._kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "transactional.id": self.transactional_id,
                "enable.idempotence": True,
                **self.config,
            }
        )
        # fences the previous incarnation and aborts the transaction it left open
        limit = self.startup_timeout_secs
        deadline = None if limit is None else self.backoff.clock() + limit
        what = f"init_transactions of {self.transactional_id!r}"
        starting(self, context.component_id, self._init_transactions, what, self.backoff, deadline)
        self._marked: tuple[str, int] | None = None  # the newest marker: (run, checkpoint)
        self._open: int | None = None  # the checkpoint of the open transaction
        self._marker_at: int | None = None  # this sink's partition of the marker topic

    def _init_transactions(self) -> None:
        try:
            self.producer.init_transactions(self.timeout_secs)
        except self._kafka.KafkaException as exc:
            _raise_kafka(exc, "init_transactions")

    def disconnect(self) -> None:
        self._abort_open()

    def begin(self, checkpoint_hint: int) -> list[list[bytes | None]]:
        return []

    def write(self, txn: list[list[bytes | None]], records: list[list[Any]]) -> None:
        txn.extend(self._kv(values) for values in records)

    def pre_commit(self, txn: list[list[bytes | None]], checkpoint: int) -> Any:
        return {"run": self.run, "records": txn}  # write-ahead: the records themselves

    def commit(self, handle: Any, checkpoint: int) -> None:
        run, records = handle["run"], handle["records"]
        if self._marked is None:
            self._marked = self._read_marker()
        if self._marked[0] == run and self._marked[1] >= checkpoint:
            return  # committed before a crash that lost the notification
        kafka = self._kafka
        if self._open != checkpoint:
            self._abort_open()
            try:
                self.producer.begin_transaction()
                self._open = checkpoint
                self._produce_handle(run, records, checkpoint)
            except BaseException:  # half a transaction must never be committed later
                self._abort_open()
                raise
        try:
            self.producer.commit_transaction(self.timeout_secs)
        except kafka.KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                self._abort_open()
                raise TransientError(f"transaction of checkpoint {checkpoint}: {error}") from exc
            _raise_kafka(exc, f"commit of checkpoint {checkpoint}")  # retriable: commit again
        self._open = None
        self._marked = (run, checkpoint)

    def restored_handle(self, handle: Any, refusals: RestoreRefusals) -> Any:
        """A restored ``{"run", "records"}``: a run name and ``[key, value]`` records of
        bytes (or nil); None (refused) for anything else."""
        records = handle.get("records") if isinstance(handle, dict) else None
        if not (
            isinstance(handle.get("run") if isinstance(handle, dict) else None, str)
            and isinstance(records, list | tuple)
            and all(
                isinstance(r, list | tuple)
                and len(r) == 2
                and all(v is None or isinstance(v, bytes) for v in r)
                for r in records
            )
        ):
            refusals.refuse(f"handle {shown(handle)}", 'not {"run", "records": [[key, value]]}')
            return None
        return handle

    def _produce_handle(self, run: str, records: list[Any], checkpoint: int) -> None:
        """A handle's records, then the marker, into the open transaction."""
        headers = dict(zip(HEADERS, (self.transactional_id, run, str(checkpoint), self.run)))
        try:
            for key, value in records:
                self._produce(self.topic, key, value, headers=headers)
            # data before marker: a visible marker (even aborted, in the mock) has its data
            self.producer.flush(self.timeout_secs)
            marker = json.dumps({"run": run, "checkpoint": checkpoint})
            self._produce(
                self.marker_topic,
                self.transactional_id.encode(),
                marker.encode(),
                partition=self._marker_partition(),
            )
        except self._kafka.KafkaException as exc:
            _raise_kafka(exc, f"records of checkpoint {checkpoint}")

    def abort_others(self, keep: list[Any]) -> None:
        self._abort_open()  # (``init_transactions`` aborted what an earlier process left)

    def _abort_open(self) -> None:
        if self._open is not None:
            self._open = None
            try:
                self.producer.abort_transaction(self.timeout_secs)
            except self._kafka.KafkaException as exc:
                self.log(f"abort of an open transaction failed: {exc!r}")

    def _marker_partition(self) -> int:
        if self._marker_at is None:
            meta = self.producer.list_topics(self.marker_topic, timeout=self.timeout_secs)
            found = meta.topics.get(self.marker_topic)
            if found is None or found.error is not None or not found.partitions:
                raise TransientError(f"marker topic {self.marker_topic!r} not available")
            self._marker_at = zlib.crc32(self.transactional_id.encode()) % len(found.partitions)
        return self._marker_at

    def _read_marker(self) -> tuple[str, int]:
        """This sink's last committed marker ``(run, checkpoint)`` (``("", 0)``: none),
        read with ``read_committed`` up to the partition's end as it is now."""
        kafka = self._kafka
        tp = kafka.TopicPartition(self.marker_topic, self._marker_partition())
        access = {k: v for k, v in self.config.items() if k.startswith(_ACCESS)}
        consumer = kafka.Consumer(
            {"bootstrap.servers": self.bootstrap_servers, "isolation.level": "read_committed"}
            | {"group.id": f"{self.transactional_id}.markers", "enable.auto.commit": False}
            | access
        )
        try:
            newest = ("", 0)
            try:  # (brokers just back may not answer in time: a transient error)
                _low, high = consumer.get_watermark_offsets(tp, timeout=self.timeout_secs)
            except kafka.KafkaException as exc:
                _raise_kafka(exc, f"reading the end of marker topic {tp.topic!r}")
            consumer.assign([kafka.TopicPartition(tp.topic, tp.partition, kafka.OFFSET_BEGINNING)])
            deadline = time.monotonic() + self.timeout_secs
            mine = self.transactional_id.encode()
            while high > 0 and consumer.position([tp])[0].offset < high:
                if time.monotonic() > deadline:
                    raise TransientError(f"marker topic {tp.topic!r} not read to {high} in time")
                msg = consumer.poll(0.2)
                if msg is None or msg.error() is not None:
                    continue
                if msg.key() == mine:
                    marker = json.loads(msg.value())
                    newest = (str(marker["run"]), int(marker["checkpoint"]))
            return newest
        finally:
            consumer.close()
