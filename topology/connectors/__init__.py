"""Connectors: spouts and bolts over external systems, on shared bases.

The bases — :class:`PartitionedSource` (at-least-once or exactly-once reads of a
partitioned, replayable source), :class:`BatchingSink` (idempotent batched writes) and
:class:`TransactionalSink` (exactly-once writes by a two-phase commit through checkpoints),
with :class:`TransientError`, :class:`Backoff`, :func:`retrying` and :class:`RowErrors` —
and the connectors built on them (Redis Streams, PostgreSQL, Kafka, files), each needing
its pip extra
(``pip install 'sparkstorm[kafka]'``...).  Names are imported on first use (PEP 562), so
``import topology.connectors`` loads no client library.  See docs/CONNECTORS.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from .files import FileSource as FileSource
    from .files import FileSpout as FileSpout
    from .files_sink import FileSink as FileSink
    from .kafka import KafkaSpout as KafkaSpout
    from .kafka_sinks import KafkaSink as KafkaSink
    from .kafka_sinks import KafkaTransactionalSink as KafkaTransactionalSink
    from .postgres import PostgresSink as PostgresSink
    from .postgres import PostgresTransactionalSink as PostgresTransactionalSink
    from .postgres_source import PostgresPollingSource as PostgresPollingSource
    from .redis_sinks import RedisStreamSink as RedisStreamSink
    from .redis_sinks import RedisTransactionalSink as RedisTransactionalSink
    from .redis_streams import RedisStreamSpout as RedisStreamSpout
    from .retry import Backoff as Backoff
    from .retry import TransientError as TransientError
    from .retry import missing_extra as missing_extra
    from .retry import retrying as retrying
    from .sink import BatchingSink as BatchingSink
    from .sink import RowErrors as RowErrors
    from .sink import TransactionalSink as TransactionalSink
    from .source import PartitionedSource as PartitionedSource
    from .source import Record as Record

#: Public name -> the module (in this package) that defines it.  A connector adds its
#: public classes here and to the imports above.
_EXPORTS: dict[str, str] = {
    "Record": "source",
    "FileSource": "files",
    "FileSpout": "files",
    "FileSink": "files_sink",
    "PartitionedSource": "source",
    "BatchingSink": "sink",
    "RowErrors": "sink",
    "TransactionalSink": "sink",
    "TransientError": "retry",
    "Backoff": "retry",
    "retrying": "retry",
    "missing_extra": "retry",
    "PostgresSink": "postgres",
    "PostgresTransactionalSink": "postgres",
    "PostgresPollingSource": "postgres_source",
    "KafkaSpout": "kafka",
    "KafkaSink": "kafka_sinks",
    "KafkaTransactionalSink": "kafka_sinks",
    "RedisStreamSpout": "redis_streams",
    "RedisStreamSink": "redis_sinks",
    "RedisTransactionalSink": "redis_sinks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
