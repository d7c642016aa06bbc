"""Redis Streams: the spout, and the client every Redis connector module uses.

:class:`RedisStreamSpout` reads stream keys, one partition per key.
``guarantee="at_least_once"`` reads through a consumer group (``XREADGROUP``, one consumer
per task, ``XACK`` once the tuples are acked; on a restart, and after a lost connection
(whose lost reply may have handed it entries), the task first re-reads its own pending
entries, then claims the entries of dead consumers with ``XAUTOCLAIM``).
``guarantee="exactly_once"`` reads by stream id (``XREAD`` from the id stored in the last
complete checkpoint; no group).  The sinks are in :mod:`.redis_sinks`.

This is the only module importing ``redis`` (``pip install 'sparkstorm[redis]'``), lazily:
:func:`import_redis`, :func:`make_client`.  See docs/CONNECTORS.md, "Redis Streams".

Example::

    spout = RedisStreamSpout("redis://localhost:6379/0", streams=["orders:eu", "orders:us"],
                             outputs=["id", "amount"], group="billing")
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from topology.components import OutputFieldsDeclarer

from .restored import shown
from .retry import (
    Backoff,
    TransientError,
    check_names,
    check_number,
    check_text,
    missing_extra,
    setting_error,
)
from .source import PartitionedSource, Record

if TYPE_CHECKING:
    from topology.context import TopologyContext

#: Where an exactly-once read starts in a stream (its beginning).
FIRST_ID = "0-0"
#: A stream entry's id (what a position is).
_ENTRY_ID = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")
#: Seconds a call may wait for the server, beyond a blocking read's own wait.
SOCKET_TIMEOUT_SECS = 5.0

#: A spout's ``decode`` setting: an entry's fields (``{bytes: bytes}``) -> the tuple's values.
Decoder = Callable[[dict[bytes, bytes]], Sequence[Any]]


def import_redis() -> Any:
    """The ``redis`` package, or an ImportError naming the pip extra."""
    try:
        import redis
    except ImportError as exc:
        raise missing_extra("redis", "redis") from exc
    return redis


def make_client(url: str, block_ms: int = 0) -> Any:
    """A client for ``url`` that does not retry by itself (the bases retry with backoff);
    calls time out after :data:`SOCKET_TIMEOUT_SECS` beyond a read's ``block_ms``."""
    redis = import_redis()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url,
        retry=Retry(NoBackoff(), 0),
        socket_timeout=SOCKET_TIMEOUT_SECS + block_ms / 1000,
        socket_connect_timeout=SOCKET_TIMEOUT_SECS,
    )


def transient_client_errors() -> tuple[type[BaseException], ...]:
    """The client's exceptions worth retrying: a lost connection, a timeout."""
    redis = import_redis()
    # BusyLoadingError (a restarted server loading its data) is a ConnectionError.
    return (redis.ConnectionError, redis.TimeoutError)


def server_state_errors() -> tuple[type[BaseException], ...]:
    """Error replies that are the server's state, not the command's (retry them): out of
    memory (``maxmemory``), a read-only replica (a failover), ``TRYAGAIN``,
    ``CLUSTERDOWN``.  Every other ``ResponseError`` is the command's (``WRONGTYPE``)."""
    exceptions = import_redis().exceptions
    names = ("OutOfMemoryError", "ReadOnlyError", "TryAgainError", "ClusterDownError")
    return tuple(getattr(exceptions, n) for n in names if hasattr(exceptions, n))


def text(value: Any) -> str:
    """A reply's bytes as text (UTF-8)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


class RedisStreamSpout(PartitionedSource):
    """Reads Redis streams, one partition per stream key (``streams``).

    Args:
        url: the server, ``redis://[:password@]host:port/db`` (or ``rediss://``, ``unix://``).
        streams: the stream keys to read; task ``i`` of ``n`` reads ``sorted(streams)[i::n]``.
        outputs: the output fields.  By default each is the entry field of that name (text,
            UTF-8), and an entry lacking one is a bad record (stream ``errors``).
        decode: instead, a function of the entry's fields (``{bytes: bytes}``) returning the
            tuple's values; raising sends the entry to ``errors``.
        group: the consumer group (at-least-once; default: the topology's name), created
            at the start of each stream (and the stream with it) when missing.  The
            consumer is ``<component>#<task index>``: a restarted task finds its own
            pending entries.
        block_ms: how long a read of a stream with nothing new waits for entries (0: not
            at all).  Keep it small: the spout's thread waits, once per idle stream.
        count: most entries one Redis call returns.
        claim_idle_ms: at-least-once: entries other consumers of the group have held
            longer than this are claimed (``XAUTOCLAIM``), at the start and then as often.
        guarantee, max_batch, commit_interval_secs, backoff: see :class:`PartitionedSource`.

    A position is a stream id (text); at-least-once, committing a position ``XACK``\\ s the
    entries read up to it.  Exactly-once reads have no group: a new deployment without
    the checkpoints starts at the beginning of each stream.

    Raises:
        ValueError: a setting is out of range (the message names it).

    Example (needs ``pip install 'sparkstorm[redis]'`` to run; making it connects to
    nothing):

        >>> url = "redis://localhost:6379/0"
        >>> spout = RedisStreamSpout(url, streams=["events"], outputs=["user", "action"])
        >>> RedisStreamSpout(url, streams=["events"], outputs=["user"], count=0)
        Traceback (most recent call last):
        ...
        ValueError: RedisStreamSpout: count must be an integer >= 1, got 0
    """

    def __init__(
        self,
        url: str,
        *,
        streams: Sequence[str],
        outputs: Sequence[str],
        decode: Decoder | None = None,
        group: str | None = None,
        block_ms: int = 10,
        count: int = 100,
        claim_idle_ms: int = 30_000,
        guarantee: str = "at_least_once",
        max_batch: int = 500,
        commit_interval_secs: float = 1.0,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(
            guarantee=guarantee,
            max_batch=max_batch,
            commit_interval_secs=commit_interval_secs,
            backoff=backoff,
        )
        check_text(self, "url", url)
        self.streams = sorted(check_names(self, "streams", streams))
        self.fields = check_names(self, "outputs", outputs)
        if decode is not None and not callable(decode):
            raise setting_error(self, "decode", "a function of the entry's fields or None", decode)
        check_text(self, "group", group, optional=True)
        check_number(self, "block_ms", block_ms, integer=True)
        check_number(self, "count", count, minimum=1, integer=True)
        check_number(self, "claim_idle_ms", claim_idle_ms, integer=True)
        self.url = url
        self.decoder = decode
        self.group = group
        self.block_ms = block_ms
        self.count = count
        self.claim_idle_ms = claim_idle_ms

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(list(self.fields))
        super().declare_output_fields(declarer)

    # -- the connector ----------------------------------------------------------------------

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.client: Any = make_client(self.url, self.block_ms)
        self.transient_errors = transient_client_errors()
        self.group_name = self.group or context.topology_name
        self.consumer = f"{context.component_id}#{context.task_index}"
        self._grouped: set[str] = set()  # streams whose group is known to exist
        # at-least-once, per stream: the own pending entries still to re-read (the id
        # after which to go on; absent once done), where the XAUTOCLAIM scan is, when the
        # next scan starts, and the ids read and not yet XACKed (in reading order).
        self._history: dict[str, str] = {s: FIRST_ID for s in self.streams}
        self._claim_cursor: dict[str, str] = {s: FIRST_ID for s in self.streams}
        self._claim_at: dict[str, float] = {s: 0.0 for s in self.streams}
        self._unacked: dict[str, deque[str]] = {s: deque() for s in self.streams}
        self._unacked_ids: dict[str, set[str]] = {s: set() for s in self.streams}

    def disconnect(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()

    def partitions(self) -> list[str]:
        return list(self.streams)

    def restored_problem(self, partition: Any, position: Any) -> str | None:
        """A restored partition must be one of ``streams``, its position an entry id
        (``<ms>-<seq>``) or None."""
        problem = super().restored_problem(partition, position)
        if problem is not None:
            return problem
        if partition not in self.streams:
            return f"not one of the streams {list(self.streams)}"
        if position is not None and not (
            isinstance(position, str) and _ENTRY_ID.fullmatch(position)
        ):
            return f"position {shown(position)} is not an entry id"
        return None

    def start_position(self, partition: str) -> str:
        return FIRST_ID

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        n = min(self.count, max_records)
        try:
            if self.guarantee == "exactly_once":
                return self._read_by_id(partition, position or FIRST_ID, n)
            return self._read_group(partition, n)
        except import_redis().ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self._grouped.discard(partition)  # the stream or its group went away: again
            raise TransientError(f"consumer group of {partition!r} is missing: {exc}") from exc
        except self.transient_errors:
            # A reply lost with the connection may have handed entries to this consumer
            # (they are in its pending list, never seen here): read that list first again.
            if self.guarantee == "at_least_once":
                self._history[partition] = FIRST_ID
            raise

    def _read_by_id(self, stream: str, after: str, n: int) -> list[Record]:
        block = self.block_ms or None
        reply = self.client.xread({stream: after}, count=n, block=block)
        return self._records(stream, reply)

    def _read_group(self, stream: str, n: int) -> list[Record]:
        if stream not in self._grouped:
            try:
                self.client.xgroup_create(stream, self.group_name, id=FIRST_ID, mkstream=True)
            except import_redis().ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
            self._grouped.add(stream)
        after = self._history.get(stream)
        while after is not None:  # first, what this consumer was handed and never acked
            reply = self.client.xreadgroup(self.group_name, self.consumer, {stream: after}, count=n)
            records = self._records(stream, reply)
            if not records:
                del self._history[stream]
                break
            after = self._history[stream] = records[-1].position
            fresh = [r for r in records if r.position not in self._unacked_ids[stream]]
            if fresh:  # (the others are in flight here already)
                return self._delivered(stream, fresh)
        now = self.backoff.clock()
        if now >= self._claim_at[stream]:
            records = self._claim(stream, n, now)
            if records:
                return records
        reply = self.client.xreadgroup(
            self.group_name, self.consumer, {stream: ">"}, count=n, block=self.block_ms or None
        )
        return self._delivered(stream, self._records(stream, reply))

    def _claim(self, stream: str, n: int, now: float) -> list[Record]:
        """One XAUTOCLAIM step: entries other consumers held over ``claim_idle_ms``."""
        reply = self.client.xautoclaim(
            stream,
            self.group_name,
            self.consumer,
            self.claim_idle_ms,
            self._claim_cursor[stream],
            count=n,
        )
        cursor, entries = text(reply[0]), reply[1]
        if cursor == FIRST_ID:  # the scan is over: the next one after claim_idle_ms
            self._claim_at[stream] = now + self.claim_idle_ms / 1000
        self._claim_cursor[stream] = cursor
        records = self._records(stream, [[stream, entries]])
        fresh = [r for r in records if r.position not in self._unacked_ids[stream]]
        if fresh:
            self.log(f"claimed {len(fresh)} entries of {stream!r} from other consumers")
        return self._delivered(stream, fresh)

    def _records(self, stream: str, reply: Any) -> list[Record]:
        if not reply:
            return []
        if isinstance(reply, Mapping):  # RESP3
            reply = list(reply.items())
        out = []
        for _, entries in reply:
            for entry_id, fields in entries:
                position = text(entry_id)
                out.append(Record(stream, position, fields, key=position))
        return out

    def _delivered(self, stream: str, records: list[Record]) -> list[Record]:
        for record in records:
            self._unacked[stream].append(record.position)
            self._unacked_ids[stream].add(record.position)
        return records

    def seek(self, position: Any) -> None:
        """A restore (a checkpointed topology rolled back).  Exactly-once: read again from
        the checkpoint's ids.  At-least-once: the group ignores positions, so everything
        this consumer has not acknowledged (XACK) is read again from its pending entries."""
        super().seek(position)
        if self.guarantee == "at_least_once":
            self._history = {s: FIRST_ID for s in self.streams}
            for stream in self.streams:
                self._unacked[stream].clear()
                self._unacked_ids[stream].clear()

    def commit(self, positions: dict[str, Any]) -> None:
        """At-least-once: ``XACK`` the entries read up to each position (every one of them
        was acked or was a bad record).  Exactly-once: nothing (there is no group)."""
        if self.guarantee != "at_least_once":
            return
        done: dict[str, list[str]] = {}
        for stream, position in positions.items():
            if position not in self._unacked_ids.get(stream, ()):
                continue
            ids = []
            for entry_id in self._unacked[stream]:
                ids.append(entry_id)
                if entry_id == position:
                    break
            done[stream] = ids
        if not done:
            return
        pipe = self.client.pipeline(transaction=False)
        for stream, ids in done.items():
            pipe.xack(stream, self.group_name, *ids)
        pipe.execute()
        for stream, ids in done.items():
            for _ in ids:
                self._unacked_ids[stream].discard(self._unacked[stream].popleft())

    def decode(self, record: Record) -> list[Any]:
        fields = record.value
        if fields is None:  # a pending entry deleted (trimmed) before it was processed
            raise ValueError(f"entry {record.position} was deleted from the stream")
        if self.decoder is not None:
            return list(self.decoder(fields))
        values = []
        for name in self.fields:
            try:
                raw = fields[name.encode()]
            except KeyError:
                have = sorted(text(k) for k in fields)
                raise ValueError(f"entry has no field {name!r} (fields: {have})") from None
            values.append(text(raw))
        return values
