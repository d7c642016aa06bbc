"""PostgreSQL connectors (docs/CONNECTORS.md, "PostgreSQL"):

* :class:`PostgresSink` (at-least-once): a batch per transaction — upserts on ``key``
  (``INSERT ... ON CONFLICT (key) DO UPDATE``: a replay overwrites), else ``COPY``.
* :class:`PostgresTransactionalSink` (exactly-once, write-ahead): a checkpoint's rows are
  kept in the checkpoint, then written with the sink's marker row in ``sparkstorm_sink_commits``
  in ONE transaction, skipped when the marker holds that checkpoint or a later one.
* :class:`PostgresPollingSource`: one partition per table, ``SELECT ... WHERE col > position
  ORDER BY col LIMIT n`` over an increasing column.

Names are quoted (``psycopg.sql``); ``psycopg.OperationalError`` (connection lost, server
shutting down, a statement that ran past ``statement_timeout_secs``) is retried with
backoff on a new connection.  Only this module imports
``psycopg`` (``pip install 'sparkstorm[postgres]'``), on first use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from topology.errors import DataError
from topology.state.checkpoint import hashable

from .restored import RestoreRefusals, shown
from .retry import check_names, check_number, check_text, missing_extra, setting_error
from .sink import BatchingSink, TransactionalSink

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

    from topology.context import TopologyContext

T = TypeVar("T")

#: The marker table of :class:`PostgresTransactionalSink` (created when missing).
MARKER_TABLE = "sparkstorm_sink_commits"
#: Where :class:`PostgresPollingSource` commits its positions (created when missing).
POSITIONS_TABLE = "sparkstorm_source_positions"
#: Longest a statement may run (or wait for a lock) before the server cancels it.
STATEMENT_TIMEOUT_SECS = 60.0


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise missing_extra("psycopg", "postgres") from exc
    return psycopg


def _sql() -> Any:
    return _psycopg().sql


def _table_name(name: str) -> sql.Identifier:
    """``"schema.table"`` or ``"table"`` as a quoted identifier."""
    return _sql().Identifier(*name.split(".", 1))


def _names(names: Sequence[str]) -> sql.Composed:
    s = _sql()
    return s.SQL(", ").join(s.Identifier(n) for n in names)


def _check_link(
    owner: object, dsn: str, connect_timeout_secs: float, statement_timeout_secs: float | None
) -> None:
    """Refuse bad connection settings, naming ``owner``'s class and the setting."""
    check_text(owner, "dsn", dsn)
    check_number(owner, "connect_timeout_secs", connect_timeout_secs, strict=True)
    statement = statement_timeout_secs
    check_number(owner, "statement_timeout_secs", statement, strict=True, optional=True)


class _Link:
    """One autocommit connection, opened on first use and again after an operational error
    (a lost connection, a server shutting down, a statement cancelled by its timeout):
    :meth:`run` drops it and re-raises, so the caller's retry gets a new one.

    Each connection gets ``statement_timeout`` = ``statement_timeout_secs`` (None: the
    server's own setting) as soon as it is opened, so a statement blocked by a lock or a
    stuck server is cancelled (``QueryCanceled``, an ``OperationalError``) instead of
    hanging the task.  A ``SET`` rather than libpq ``options``, which poolers such as
    PgBouncer refuse and which would replace ``options`` given in the DSN."""

    #: TCP keepalives: a server gone without a word (a partition) is noticed in ~25 s.
    ALIVE = {
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
    }

    def __init__(
        self,
        dsn: str,
        connect_timeout_secs: float,
        statement_timeout_secs: float | None = STATEMENT_TIMEOUT_SECS,
    ) -> None:
        self.dsn = dsn
        self.connect_timeout_secs = connect_timeout_secs
        self.statement_timeout_secs = statement_timeout_secs
        self.conn: psycopg.Connection[Any] | None = None

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(connection)``, on a new connection when there is none or it broke; an
        ``OperationalError`` closes the connection and propagates (retry it)."""
        pg = _psycopg()
        try:
            if self.conn is None or self.conn.closed or self.conn.broken:
                self.close()
                self.conn = self._open()
            return work(self.conn)
        except pg.OperationalError:
            self.close()
            raise

    def _open(self) -> psycopg.Connection[Any]:
        pg = _psycopg()
        timeout = max(1, round(self.connect_timeout_secs))
        conn = pg.connect(self.dsn, autocommit=True, connect_timeout=timeout, **self.ALIVE)
        if self.statement_timeout_secs is not None:
            millis = max(1, round(self.statement_timeout_secs * 1000))
            try:
                conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(millis),))
            except BaseException:
                conn.close()
                raise
        return conn

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a broken connection: nothing more to do
                conn.close()


class _Rows:
    """Where a sink's rows go: ``table (columns)``, upserted on ``key`` when given."""

    def __init__(
        self,
        owner: object,
        table: str,
        columns: Sequence[str],
        key: Sequence[str] | None,
        json_columns: Sequence[str] = (),
    ) -> None:
        check_text(owner, "table", table)
        self.table = table
        self.columns = check_names(owner, "columns", columns)
        self.key = check_names(owner, "key", key) if key is not None else []
        json = check_names(owner, "json_columns", json_columns) if json_columns else []
        for name, given in (("key", self.key), ("json_columns", json)):
            missing = [k for k in given if k not in self.columns]
            if missing:
                rule = f"columns among {self.columns} (not {missing})"
                raise setting_error(owner, name, rule, given)
        #: Where the values sent as JSON whatever their type are (lists too).
        self.json_at = frozenset(self.columns.index(c) for c in json)

    def insert(self) -> sql.Composed:
        s = _sql()
        stmt = s.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            _table_name(self.table),
            _names(self.columns),
            s.SQL(", ").join([s.Placeholder()] * len(self.columns)),
        )
        if not self.key:
            return stmt
        rest = [c for c in self.columns if c not in self.key]
        if not rest:
            return stmt + s.SQL(" ON CONFLICT ({}) DO NOTHING").format(_names(self.key))
        updates = s.SQL(", ").join(
            s.SQL("{0} = EXCLUDED.{0}").format(s.Identifier(c)) for c in rest
        )
        return stmt + s.SQL(" ON CONFLICT ({}) DO UPDATE SET {}").format(_names(self.key), updates)

    def write(self, conn: psycopg.Connection[Any], rows: list[list[Any]]) -> None:
        """Write ``rows`` in the transaction ``conn`` is in: a ``COPY`` to append, or one
        upsert per row (executed as a pipeline)."""
        width = len(self.columns)
        for row in rows:
            if len(row) != width:
                raise DataError(
                    f"{self.table}: a row of {len(row)} values for the columns {self.columns}"
                )
        rows = [_adapt(row, self.json_at) for row in rows]
        with conn.cursor() as cur:
            if self.key:
                cur.executemany(self.insert(), rows)
                return
            stmt = (
                _sql()
                .SQL("COPY {} ({}) FROM STDIN")
                .format(_table_name(self.table), _names(self.columns))
            )
            with cur.copy(stmt) as copy:
                for row in rows:
                    copy.write_row(row)


def _adapt(row: list[Any], json_at: frozenset[int] = frozenset()) -> list[Any]:
    """A row with its dict values, and every value at ``json_at``, as JSON (for json /
    jsonb columns)."""
    if not json_at and not any(isinstance(v, dict) for v in row):
        return row
    jsonb = _psycopg().types.json.Jsonb
    return [jsonb(v) if i in json_at or isinstance(v, dict) else v for i, v in enumerate(row)]


class PostgresSink(BatchingSink):
    """Writes each batch of tuples as rows of ``table`` in one transaction (at-least-once).

    Args:
        dsn: a libpq connection string or URL.
        table: the table (``"schema.table"`` in a schema); it must exist.
        columns: the column of each tuple value.
        key: columns of a unique index to upsert on (a replay overwrites), or None to
            append with ``COPY`` (a replay appends again).
        json_columns: columns whose values are sent as JSON whatever their type (lists
            too; dicts always are), for json / jsonb columns — the dead-letter stream's
            ``values``.
        connect_timeout_secs: longest wait for a connection.
        statement_timeout_secs: longest a statement may run or wait for a lock before the
            server cancels it and the write is retried (None: the server's setting).
        **settings: the :class:`BatchingSink` settings.

    Raises:
        ValueError: a setting is out of range, or ``key`` / ``json_columns`` name columns
            not in ``columns``.

    A row PostgreSQL refuses — ``psycopg``'s ``DataError`` (a NUL in text, a value out of
    range) or ``IntegrityError`` (a broken constraint) — goes to the dead-letter stream;
    the other rows of its batch are written (found by writing halves apart).

    Example (needs ``pip install 'sparkstorm[postgres]'`` to run; making it connects to
    nothing):

        >>> dsn = "postgresql://app@db/shop"
        >>> sink = PostgresSink(dsn, "totals", ["word", "count"], key=["word"])
        >>> PostgresSink(dsn, "totals", ["word", "count"], key=["wrod"])
        Traceback (most recent call last):
        ...
        ValueError: PostgresSink: key must be columns among ['word', 'count'] (not ['wrod']), ...
    """

    def __init__(
        self,
        dsn: str,
        table: str,
        columns: Sequence[str],
        *,
        key: Sequence[str] | None = None,
        json_columns: Sequence[str] = (),
        connect_timeout_secs: float = 10.0,
        statement_timeout_secs: float | None = STATEMENT_TIMEOUT_SECS,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        _check_link(self, dsn, connect_timeout_secs, statement_timeout_secs)
        self.dsn = dsn
        self.rows = _Rows(self, table, columns, key, json_columns)
        self.connect_timeout_secs = connect_timeout_secs
        self.statement_timeout_secs = statement_timeout_secs

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        pg = _psycopg()
        self.transient_errors = (pg.OperationalError,)
        # a value no column takes (a NUL in text, a number out of range), a broken
        # constraint: the row goes to the dead-letter stream, the rest are written
        self.data_errors = (pg.DataError, pg.IntegrityError)
        # a missing table or column, no privilege: the sink's, not a row's
        self.sink_errors = (pg.ProgrammingError,)
        self._link = _Link(self.dsn, self.connect_timeout_secs, self.statement_timeout_secs)

    def write_batch(self, records: list[list[Any]]) -> None:
        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                self.rows.write(conn, records)

        self._link.run(work)

    def disconnect(self) -> None:
        self._link.close()


class PostgresTransactionalSink(TransactionalSink):
    """Writes tuples as rows of ``table`` exactly once, one transaction per checkpoint.

    Write-ahead: a task's rows between two checkpoints are stored in the checkpoint (the
    pre-commit) and written, with the task's marker row in ``marker_table``, in one
    transaction once it is complete (or at the restore, when that news was lost); a marker
    at that checkpoint or later makes the commit a no-op.

    Args:
        dsn: as for :class:`PostgresSink`.
        table: as for :class:`PostgresSink`.
        columns: as for :class:`PostgresSink`.
        key: as for :class:`PostgresSink` (without it rows are appended, still once).
        marker_table: the table of the tasks' marker rows (created when missing).
        connect_timeout_secs: as for :class:`PostgresSink`.
        statement_timeout_secs: as for :class:`PostgresSink`.
        **settings: the :class:`TransactionalSink` settings.

    Raises:
        ValueError: a setting is out of range (the message names it).

    Example (needs ``pip install 'sparkstorm[postgres]'`` to run; making it connects to
    nothing):

        >>> sink = PostgresTransactionalSink("postgresql://app@db/shop", "totals", ["word", "n"])
        >>> PostgresTransactionalSink("postgresql://app@db/shop", "", ["word"])
        Traceback (most recent call last):
        ...
        ValueError: PostgresTransactionalSink: table must be a non-empty string, got ''
    """

    def __init__(
        self,
        dsn: str,
        table: str,
        columns: Sequence[str],
        *,
        key: Sequence[str] | None = None,
        marker_table: str = MARKER_TABLE,
        connect_timeout_secs: float = 10.0,
        statement_timeout_secs: float | None = STATEMENT_TIMEOUT_SECS,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        _check_link(self, dsn, connect_timeout_secs, statement_timeout_secs)
        check_text(self, "marker_table", marker_table)
        self.dsn = dsn
        self.rows = _Rows(self, table, columns, key)
        self.marker_table = marker_table
        self.connect_timeout_secs = connect_timeout_secs
        self.statement_timeout_secs = statement_timeout_secs

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.transient_errors = (_psycopg().OperationalError,)
        self._link = _Link(self.dsn, self.connect_timeout_secs, self.statement_timeout_secs)
        self._marker_ready = False  # the marker table exists

    def begin(self, checkpoint_hint: int) -> dict[Any, list[Any]]:
        return {}  # with a key, the last row of each (what upserting them all would leave)

    def write(self, txn: dict[Any, list[Any]], records: list[list[Any]]) -> None:
        at = [self.rows.columns.index(k) for k in self.rows.key]
        for row in records:
            key = hashable([row[i] for i in at]) if at else len(txn)
            txn.pop(key, None)  # (the last row of a key goes last)
            txn[key] = row

    def pre_commit(self, txn: dict[Any, list[Any]], checkpoint: int) -> list[Any]:
        """The handle is ``[marker_id, rows]``: the rows kept in the checkpoint."""
        return [self.marker_id, list(txn.values())]

    def commit(self, handle: Any, checkpoint: int) -> None:
        sink, rows = handle
        self._link.run(lambda conn: self.commit_rows(conn, str(sink), list(rows), checkpoint))

    def restored_handle(self, handle: Any, refusals: RestoreRefusals) -> Any:
        """A restored ``[marker id, rows]`` whose marker id is one of this component's
        (never another sink's marker row) and rows as many values as ``columns``; None
        (refused) for anything else."""
        if not (isinstance(handle, list | tuple) and len(handle) == 2):
            refusals.refuse(f"handle {shown(handle)}", "not [marker id, rows]")
            return None
        sink, rows = handle
        if not (isinstance(sink, str) and sink.startswith(self.sink_prefix)):
            refusals.refuse(f"marker id {shown(sink)}", f"not one of {self.sink_prefix}...")
            return None
        width = len(self.rows.columns)
        if not (
            isinstance(rows, list | tuple)
            and all(isinstance(r, list | tuple) and len(r) == width for r in rows)
        ):
            refusals.refuse(f"handle of {shown(sink)}", f"rows that are not {width} values")
            return None
        return handle

    def commit_rows(
        self, conn: psycopg.Connection[Any], sink: str, rows: list[list[Any]], checkpoint: int
    ) -> bool:
        """Write ``rows`` and move ``sink``'s marker to ``checkpoint`` in one transaction,
        unless the marker is there or later already; True when written."""
        s = _sql()
        markers = _table_name(self.marker_table)
        if not self._marker_ready:
            _create_table(conn, markers, "sink text PRIMARY KEY, checkpoint bigint NOT NULL")
            self._marker_ready = True
        with conn.transaction():  # the marker row exists, then is locked: one commit at once
            conn.execute(s.SQL(_MARKER_ADD).format(markers), (sink,))
            found = conn.execute(s.SQL(_MARKER_LOCK).format(markers), (sink,)).fetchone()
            if found is not None and found[0] >= checkpoint:
                return False
            self.rows.write(conn, rows)
            conn.execute(s.SQL(_MARKER_MOVE).format(markers), (checkpoint, sink))
        return True

    def disconnect(self) -> None:
        self._link.close()


_MARKER_ADD = "INSERT INTO {} (sink, checkpoint) VALUES (%s, -1) ON CONFLICT DO NOTHING"
_MARKER_LOCK = "SELECT checkpoint FROM {} WHERE sink = %s FOR UPDATE"
_MARKER_MOVE = "UPDATE {} SET checkpoint = %s WHERE sink = %s"


def _create_table(conn: psycopg.Connection[Any], table: sql.Identifier, columns: str) -> None:
    """``CREATE TABLE IF NOT EXISTS``, tolerating another task creating it concurrently."""
    pg = _psycopg()
    stmt = pg.sql.SQL("CREATE TABLE IF NOT EXISTS {} (" + columns + ")").format(table)
    with contextlib.suppress(pg.errors.UniqueViolation, pg.errors.DuplicateTable):
        conn.execute(stmt)  # (those: created meanwhile by another task)
