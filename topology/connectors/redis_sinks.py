"""Redis sinks: write tuples to a stream or to hashes, batched or exactly once.

* :class:`RedisStreamSink` (a :class:`BatchingSink`) — ``XADD`` each tuple to a stream
  (at-least-once: a replay appends again), or ``HSET`` it into a hash keyed by its key
  fields (idempotent: a replay overwrites).
* :class:`RedisTransactionalSink` (a :class:`TransactionalSink`) — exactly-once: the tuples
  of a checkpoint are kept in the checkpoint (write-ahead) and written once it is complete
  in one ``MULTI`` / ``EXEC`` with the marker key ``sparkstorm:sink:<component>#<task>``
  holding the last checkpoint written; a commit finding its checkpoint there is skipped.

The ``redis`` client comes from :mod:`.redis_streams` (the one module importing it).  See
docs/CONNECTORS.md, "Redis Streams".

Example::

    builder.set_bolt(
        "by-id", RedisStreamSink("redis://localhost:6379/0", hash_key=["id"],
                                 hash_prefix="order:"), 2).fields_grouping("orders", ["id"])
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .redis_streams import import_redis, make_client, text, transient_client_errors
from .retry import Backoff
from .sink import BatchingSink, TransactionalSink

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.metrics import Counter
    from topology.tuple import Tuple

#: Prefix of a transactional sink's marker key: ``sparkstorm:sink:<component>#<task>``.
MARKER_PREFIX = "sparkstorm:sink:"


class _Target:
    """Where a sink writes a tuple: an entry of ``stream`` (XADD), or a hash whose key is
    ``hash_prefix`` + the ``hash_key`` fields' values joined by ``:`` (HSET)."""

    def __init__(
        self,
        stream: str | None,
        hash_key: Sequence[str] | None,
        hash_prefix: str,
        maxlen: int | None,
    ) -> None:
        if (stream is None) == (hash_key is None):
            raise ValueError("give exactly one of stream= (XADD) and hash_key= (HSET)")
        if hash_key is not None and (not hash_key or isinstance(hash_key, str)):
            raise ValueError(f"hash_key must be a non-empty list of field names, got {hash_key!r}")
        if maxlen is not None and (stream is None or maxlen < 1):
            raise ValueError("maxlen (>= 1) goes with stream=")
        self.stream = stream
        self.hash_key = None if hash_key is None else list(hash_key)
        self.hash_prefix = hash_prefix
        self.maxlen = maxlen

    def add(self, pipe: Any, fields: Sequence[str], values: Sequence[Any]) -> None:
        if len(fields) != len(values):
            raise ValueError(f"{len(values)} values for the fields {list(fields)}")
        mapping = {name: _encode(v) for name, v in zip(fields, values)}
        if self.stream is not None:
            pipe.xadd(self.stream, mapping, maxlen=self.maxlen, approximate=True)
            return
        assert self.hash_key is not None
        try:
            parts = [text(mapping[name]) for name in self.hash_key]
        except KeyError as exc:
            raise ValueError(f"no key field {exc} among the fields {list(fields)}") from None
        pipe.hset(self.hash_prefix + ":".join(parts), mapping=mapping)


def _encode(value: Any) -> Any:
    """A tuple value as Redis stores it: bytes, text and numbers as they are, anything else
    (None, booleans, lists, maps) as JSON."""
    if isinstance(value, bytes | str) or (
        isinstance(value, int | float) and not isinstance(value, bool)
    ):
        return value
    return json.dumps(value)


class _RedisWriter:
    """What both sinks share: the client (opened in ``connect``, closed in ``disconnect``)
    and the field names, taken from the first tuple unless given."""

    url: str
    fields: list[str] | None

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.client: Any = make_client(self.url)
        self.transient_errors = transient_client_errors()

    def disconnect(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()

    def execute(self, tup: Tuple) -> None:
        if self.fields is None and not tup.is_tick():
            self.fields = list(tup.fields)
        super().execute(tup)  # type: ignore[misc]


class RedisStreamSink(_RedisWriter, BatchingSink):
    """Writes tuples in batches (one pipeline each), acking them once written.

    Args:
        url: the server (as for :class:`RedisStreamSpout`).
        stream: ``XADD`` each tuple to this stream, its fields as the entry's fields —
            at-least-once: a replayed tuple is appended again.
        hash_key: or ``HSET`` each tuple into the hash ``hash_prefix`` + the values of these
            fields joined by ``:`` — idempotent: a replay overwrites with the same values.
        hash_prefix: the prefix of the hash keys (e.g. ``"order:"``).
        fields: the names of the tuple's values (default: the tuple's own fields).
        maxlen: with ``stream``, trim it to about this many entries (``MAXLEN ~``).
        batch_size, flush_interval_secs, max_retry_secs, backoff: see :class:`BatchingSink`.

    Values are stored as they are when bytes, text or numbers, else as JSON.
    """

    def __init__(
        self,
        url: str,
        *,
        stream: str | None = None,
        hash_key: Sequence[str] | None = None,
        hash_prefix: str = "",
        fields: Sequence[str] | None = None,
        maxlen: int | None = None,
        batch_size: int = 500,
        flush_interval_secs: float = 1.0,
        max_retry_secs: float | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(
            batch_size=batch_size,
            flush_interval_secs=flush_interval_secs,
            max_retry_secs=max_retry_secs,
            backoff=backoff,
        )
        self.url = url
        self.target = _Target(stream, hash_key, hash_prefix, maxlen)
        self.fields = None if fields is None else list(fields)

    def write_batch(self, records: list[list[Any]]) -> None:
        assert self.fields is not None  # set by the first tuple
        pipe = self.client.pipeline(transaction=False)
        for values in records:
            self.target.add(pipe, self.fields, values)
        pipe.execute()


class RedisTransactionalSink(_RedisWriter, TransactionalSink):
    """Writes exactly once: the tuples of a checkpoint are stored in it (write-ahead) and
    written once it is complete, in one ``MULTI`` / ``EXEC`` that also sets the marker key
    ``sparkstorm:sink:<component>#<task>@<process>`` to the checkpoint; the marker is ``WATCH``\\ ed
    and a commit finding its checkpoint (or a later one) there writes nothing, so the
    re-commit after a crash is harmless.  Readers see data once per checkpoint.

    Args: ``url``, ``stream`` / ``hash_key`` / ``hash_prefix``, ``fields``, ``maxlen`` as for
    :class:`RedisStreamSink`; ``batch_size``, ``max_retry_secs``, ``backoff`` as for
    :class:`TransactionalSink`.  The tuple values must be msgpack-encodable (they are kept
    in the checkpoint until written).

    The marker is named per process (``marker_id``, carried in the handle): a new
    deployment, whose checkpoint ids start at 1 again, never meets an old one.
    """

    def __init__(
        self,
        url: str,
        *,
        stream: str | None = None,
        hash_key: Sequence[str] | None = None,
        hash_prefix: str = "",
        fields: Sequence[str] | None = None,
        maxlen: int | None = None,
        batch_size: int = 500,
        max_retry_secs: float | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, max_retry_secs=max_retry_secs, backoff=backoff)
        self.url = url
        self.target = _Target(stream, hash_key, hash_prefix, maxlen)
        self.fields = None if fields is None else list(fields)

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().connect(conf, context)
        self.skipped: Counter = context.register_counter(
            "commits_skipped", "commits of checkpoints the marker showed already written"
        )

    def begin(self, checkpoint_hint: int) -> list[list[Any]]:
        return []

    def write(self, txn: list[list[Any]], records: list[list[Any]]) -> None:
        txn.extend(records)

    def pre_commit(self, txn: list[list[Any]], checkpoint: int) -> list[Any]:
        """The handle is ``[marker key, fields, rows]``: the rows are kept in the checkpoint,
        the marker key is this process's (``marker_id``)."""
        return [MARKER_PREFIX + self.marker_id, list(self.fields or []), txn]

    def commit(self, handle: Any, checkpoint: int) -> None:
        marker, fields, rows = handle
        redis = import_redis()
        with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(marker)
                    done = pipe.get(marker)
                    if done is not None and int(done) >= checkpoint:
                        pipe.unwatch()
                        self.skipped.inc()
                        self.log(f"checkpoint {checkpoint} was already written: skipped")
                        return
                    pipe.multi()
                    for values in rows:
                        self.target.add(pipe, fields, values)
                    pipe.set(marker, checkpoint)
                    pipe.execute()
                    return
                except redis.WatchError:  # the marker changed meanwhile: look again
                    continue
