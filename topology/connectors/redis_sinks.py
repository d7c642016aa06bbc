"""Redis sinks: write tuples to a stream or to hashes, batched or exactly once.

* :class:`RedisStreamSink` (a :class:`BatchingSink`) — ``XADD`` each tuple to a stream
  (at-least-once: a replay appends again), or ``HSET`` it into a hash keyed by its key
  fields (idempotent: a replay overwrites).
* :class:`RedisTransactionalSink` (a :class:`TransactionalSink`) — exactly-once: the tuples
  of a checkpoint are kept in the checkpoint (write-ahead) and written once it is complete
  in one ``MULTI`` / ``EXEC`` with the marker key ``sparkstorm:sink:<component>#<task>``
  holding the last checkpoint written; a commit finding its checkpoint there is skipped.
  The target keys are ``WATCH``\\ ed and their types checked first, so the ``EXEC`` never
  meets a ``WRONGTYPE`` half way (Redis has no rollback): all of a checkpoint or nothing.

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

from topology.errors import DataError

from .redis_streams import (
    import_redis,
    make_client,
    server_state_errors,
    text,
    transient_client_errors,
)
from .restored import RestoreRefusals, shown
from .retry import TransientError, check_names, check_number, check_text, setting_error
from .sink import BatchingSink, RowErrors, TransactionalSink

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.metrics import Counter
    from topology.tuple import Tuple

#: Prefix of a transactional sink's marker key: ``sparkstorm:sink:<component>#<task>``.
MARKER_PREFIX = "sparkstorm:sink:"
#: Checks, in one round trip, the types of the keys (KEYS) against ARGV[1]; the first key
#: holding another type (missing keys are fine), with its type, or nil.
_CHECK_TYPES = """
for _, key in ipairs(KEYS) do
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= ARGV[1] then return {key, found} end
end
return nil
"""


class WrongTypeError(ValueError):
    """A target key of a Redis sink holds another type than the sink writes (a string
    where it writes hashes...): nothing of the commit was written."""


class _Target:
    """Where a sink writes a tuple: an entry of ``stream`` (XADD), or a hash whose key is
    ``hash_prefix`` + the ``hash_key`` fields' values joined by ``:`` (HSET)."""

    def __init__(
        self,
        owner: object,
        stream: str | None,
        hash_key: Sequence[str] | None,
        hash_prefix: str,
        maxlen: int | None,
    ) -> None:
        if (stream is None) == (hash_key is None):
            rule = "given when hash_key is not (exactly one of stream= and hash_key=)"
            raise setting_error(owner, "stream", rule, stream)
        check_text(owner, "stream", stream, optional=True)
        if not isinstance(hash_prefix, str):
            raise setting_error(owner, "hash_prefix", "a string", hash_prefix)
        check_number(owner, "maxlen", maxlen, minimum=1, integer=True, optional=True)
        if maxlen is not None and stream is None:
            raise setting_error(owner, "maxlen", "None without stream=", maxlen)
        self.stream = stream
        self.hash_key = None if hash_key is None else check_names(owner, "hash_key", hash_key)
        self.hash_prefix = hash_prefix
        self.maxlen = maxlen

    @property
    def type(self) -> str:
        """The Redis type of the keys written (``TYPE``'s answer)."""
        return "stream" if self.stream is not None else "hash"

    def key(self, fields: Sequence[str], values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
        """The key a tuple goes to, and its fields as Redis stores them."""
        if len(fields) != len(values):
            raise ValueError(f"{len(values)} values for the fields {list(fields)}")
        mapping = {name: _encode(v) for name, v in zip(fields, values)}
        if self.stream is not None:
            return self.stream, mapping
        assert self.hash_key is not None
        try:
            parts = [text(mapping[name]) for name in self.hash_key]
        except KeyError as exc:
            raise ValueError(f"no key field {exc} among the fields {list(fields)}") from None
        return self.hash_prefix + ":".join(parts), mapping

    def add(self, pipe: Any, key: str, mapping: dict[str, Any]) -> None:
        """Queue the write of ``mapping`` to ``key`` (from :meth:`key`) on ``pipe``."""
        if self.stream is not None:
            pipe.xadd(key, mapping, maxlen=self.maxlen, approximate=True)
        else:
            pipe.hset(key, mapping=mapping)


def _encode(value: Any) -> Any:
    """A tuple value as Redis stores it: bytes, text and numbers as they are, anything else
    (None, booleans, lists, maps) as JSON."""
    if isinstance(value, bytes | str) or (
        isinstance(value, int | float) and not isinstance(value, bool)
    ):
        return value
    return json.dumps(value)


class _RedisWriter:
    """What both sinks share: their settings (``url``, the target, ``fields``; the rest go
    to the base), the client (opened in ``connect``, closed in ``disconnect``) and the
    field names, taken from the first tuple unless given."""

    def __init__(
        self,
        url: str,
        *,
        stream: str | None = None,
        hash_key: Sequence[str] | None = None,
        hash_prefix: str = "",
        fields: Sequence[str] | None = None,
        maxlen: int | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        check_text(self, "url", url)
        self.url = url
        self.target = _Target(self, stream, hash_key, hash_prefix, maxlen)
        self.fields = None if fields is None else check_names(self, "fields", fields)

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
        batch_size, flush_interval_secs, max_retry_secs, backoff: see :class:`BatchingSink`
            (keyword arguments passed on to it).

    Values are stored as they are when bytes, text or numbers, else as JSON.  A row Redis
    refuses (``WRONGTYPE``: its key holds another type) or that lacks a ``hash_key`` field
    goes to the dead-letter stream; the rest of its batch is written (docs/ERRORS.md).
    Replies that are the server's state (``OOM``, ``READONLY``...) are transient errors.

    Raises:
        ValueError: not exactly one of ``stream`` and ``hash_key``, or a setting out of
            range.

    Example (needs ``pip install 'sparkstorm[redis]'`` to run; making it connects to
    nothing):

        >>> sink = RedisStreamSink("redis://localhost:6379/0", stream="totals", maxlen=10_000)
        >>> RedisStreamSink("redis://localhost:6379/0")
        Traceback (most recent call last):
        ...
        ValueError: RedisStreamSink: stream must be given when hash_key is not ...
    """

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().connect(conf, context)
        exceptions = import_redis().exceptions
        self.data_errors = (exceptions.ResponseError,)  # WRONGTYPE and its like ...
        self._server_states = server_state_errors()  # ... but not OOM, READONLY...
        # ... nor a user the server's ACL refuses (NOPERM): the sink's, not a row's
        self.sink_errors = (exceptions.NoPermissionError, exceptions.AuthenticationError)

    def write_batch(self, records: list[list[Any]]) -> None:
        """One pipeline; the rows Redis refused (a ``WRONGTYPE`` key...) or that name no
        key are raised as :class:`RowErrors` once the others are written."""
        assert self.fields is not None  # set by the first tuple
        pipe = self.client.pipeline(transaction=False)
        refused: dict[int, BaseException] = {}
        queued = []
        for i, values in enumerate(records):
            try:
                key, mapping = self.target.key(self.fields, values)
            except ValueError as exc:
                refused[i] = DataError(f"{type(self).__name__}: {exc}")
                continue
            self.target.add(pipe, key, mapping)
            queued.append(i)
        replies = pipe.execute(raise_on_error=False) if queued else []
        for reply in replies:
            if isinstance(reply, self._server_states):  # not the rows': the batch again
                raise TransientError(f"{type(self).__name__}: {reply}") from reply
            if isinstance(reply, self.sink_errors):
                raise reply
        refused.update((i, r) for i, r in zip(queued, replies) if isinstance(r, Exception))
        if refused:
            raise RowErrors(refused)


class RedisTransactionalSink(_RedisWriter, TransactionalSink):
    """Writes exactly once: the tuples of a checkpoint are stored in it (write-ahead) and
    written once it is complete, in one ``MULTI`` / ``EXEC`` that also sets the marker key
    ``sparkstorm:sink:<component>#<task>@<process>`` to the checkpoint; the marker is ``WATCH``\\ ed
    and a commit finding its checkpoint (or a later one) there writes nothing, so the
    re-commit after a crash is harmless.  Readers see data once per checkpoint.

    Args:
        url: as for :class:`RedisStreamSink`.
        stream: as for :class:`RedisStreamSink`.
        hash_key: as for :class:`RedisStreamSink`.
        hash_prefix: as for :class:`RedisStreamSink`.
        fields: as for :class:`RedisStreamSink`.
        maxlen: as for :class:`RedisStreamSink`.
        batch_size, max_retry_secs, backoff: as for :class:`TransactionalSink`.

    The tuple values must be msgpack-encodable (they are kept in the checkpoint until
    written).

    The marker is named per process (``marker_id``, carried in the handle): a new
    deployment, whose checkpoint ids start at 1 again, never meets an old one.

    A commit is all or nothing: the target keys are ``WATCH``\\ ed with the marker and their
    types checked before ``MULTI``; a key holding another type (a string where hashes are
    written) raises :class:`WrongTypeError` naming the key and the sink, with nothing
    written (the topology rolls back; the commit fails again until the key is fixed).

    Raises:
        ValueError: not exactly one of ``stream`` and ``hash_key``, or a setting out of
            range.

    Example (needs ``pip install 'sparkstorm[redis]'`` to run; making it connects to
    nothing):

        >>> url = "redis://localhost:6379/0"
        >>> sink = RedisTransactionalSink(url, hash_key=["word"], hash_prefix="count:")
        >>> RedisTransactionalSink(url, hash_key="word")
        Traceback (most recent call last):
        ...
        ValueError: RedisTransactionalSink: hash_key must be a non-empty list of distinct ...
    """

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
        """Write the handle's rows and move its marker to ``checkpoint`` in one ``EXEC``,
        unless the marker is there already; :class:`WrongTypeError`, with nothing written,
        when a target key holds another type."""
        marker, fields, rows = handle
        writes = [self.target.key(fields, values) for values in rows]
        keys = list(dict.fromkeys(key for key, _ in writes))
        redis = import_redis()
        with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(marker, *keys)  # any change before EXEC: look again
                    done = pipe.get(marker)
                    if done is not None and int(done) >= checkpoint:
                        pipe.unwatch()
                        self.skipped.inc()
                        self.log(f"checkpoint {checkpoint} was already written: skipped")
                        return
                    self._check_types(pipe, marker, keys, checkpoint)
                    pipe.multi()
                    for key, mapping in writes:
                        self.target.add(pipe, key, mapping)
                    pipe.set(marker, checkpoint)
                    pipe.execute()
                    return
                except redis.WatchError:  # the marker or a key changed meanwhile
                    continue

    def restored_handle(self, handle: Any, refusals: RestoreRefusals) -> Any:
        """A restored ``[marker, fields, rows]`` whose marker is one of this component's
        marker keys (never another key of the server), fields names and rows as many
        values as fields; None (refused) for anything else."""
        mine = MARKER_PREFIX + self.sink_prefix
        if not (isinstance(handle, list | tuple) and len(handle) == 3):
            refusals.refuse(f"handle {shown(handle)}", "not [marker, fields, rows]")
            return None
        marker, fields, rows = handle
        if not (isinstance(marker, str) and marker.startswith(mine)):
            refusals.refuse(f"marker key {shown(marker)}", f"not a key {mine}...")
            return None
        if not (
            isinstance(fields, list | tuple)
            and all(isinstance(f, str) for f in fields)
            and isinstance(rows, list | tuple)
            and all(isinstance(r, list | tuple) and len(r) == len(fields) for r in rows)
        ):
            refusals.refuse(f"handle of marker {shown(marker)}", "rows that do not fit its fields")
            return None
        return handle

    def _check_types(self, pipe: Any, marker: str, keys: list[str], checkpoint: int) -> None:
        """Raise :class:`WrongTypeError` (unwatching) when one of ``keys`` holds another
        type than the sink writes; one script call, on the watching connection."""
        wrong = pipe.eval(_CHECK_TYPES, len(keys), *keys, self.target.type) if keys else None
        if wrong:
            pipe.unwatch()
            key, found = text(wrong[0]), text(wrong[1])
            sink = marker.removeprefix(MARKER_PREFIX).split("@")[0]
            raise WrongTypeError(
                f"{type(self).__name__} {sink}: key {key!r} holds a {found}, not a "
                f"{self.target.type}; nothing of checkpoint {checkpoint} was written "
                "(delete or rename the key, or write elsewhere)"
            )
