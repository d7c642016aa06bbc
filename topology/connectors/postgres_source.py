"""PostgreSQL polling source (docs/CONNECTORS.md, "PostgreSQL"): one partition per table,
``SELECT ... WHERE col > position ORDER BY col LIMIT n`` over an increasing column.  The
client and the shared helpers come from :mod:`.postgres`, the only module that imports
``psycopg``.
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from topology.components import OutputFieldsDeclarer

from .postgres import (
    POSITIONS_TABLE,
    STATEMENT_TIMEOUT_SECS,
    _check_link,
    _create_table,
    _Link,
    _names,
    _psycopg,
    _sql,
    _table_name,
)
from .restored import shown
from .retry import check_names, check_text, retrying
from .source import PartitionedSource, Record

if TYPE_CHECKING:
    import psycopg

    from topology.context import TopologyContext


class PostgresPollingSource(PartitionedSource):
    """Reads new rows of tables (a partition each) by polling an increasing column.

    A position is the ``position_column`` value of the last row read (timestamps, numerics
    and UUIDs as text, which PostgreSQL casts back).  The column must be unique and grow as
    rows become visible: a row committed after one with a larger value is never read
    (concurrent writers of a sequence can do that; see docs/CONNECTORS.md).

    Args:
        dsn: a libpq connection string or URL.
        table: a table name, or several with the same columns (a partition each).
        columns: the columns read, which are the output fields.
        position_column: the unique, increasing column that orders the rows.
        start_after: where to start when nothing is committed (None: the first row).
        source_id: names its positions in ``positions_table`` (default
            ``"<topology>/<component>"``).
        positions_table: where positions are committed (created when missing).
        connect_timeout_secs: as for :class:`~.postgres.PostgresSink`.
        statement_timeout_secs: as for :class:`~.postgres.PostgresSink` (a read cancelled
            by its timeout is retried after a backoff pause).
        **settings: the :class:`PartitionedSource` settings.

    Raises:
        ValueError: a setting is out of range (the message names it).

    ``decode`` turns ``record.value`` (a dict of the columns read) into the values: dates
    and times as ISO text, numerics, UUIDs, addresses as text, intervals as seconds; other
    types raise (the row goes to ``errors``).  Override it to parse or check rows.

    Example (needs ``pip install 'sparkstorm[postgres]'`` to run; making it connects to
    nothing):

        >>> dsn = "postgresql://app@db/shop"
        >>> source = PostgresPollingSource(dsn, ["orders_eu", "orders_us"], ["id", "amount"], "id")
        >>> PostgresPollingSource(dsn, "orders", ["id", "amount"], "id", max_batch=0)
        Traceback (most recent call last):
        ...
        ValueError: PostgresPollingSource: max_batch must be an integer >= 1, got 0
    """

    def __init__(
        self,
        dsn: str,
        table: str | Sequence[str],
        columns: Sequence[str],
        position_column: str,
        *,
        start_after: Any = None,
        source_id: str | None = None,
        positions_table: str = POSITIONS_TABLE,
        connect_timeout_secs: float = 10.0,
        statement_timeout_secs: float | None = STATEMENT_TIMEOUT_SECS,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        _check_link(self, dsn, connect_timeout_secs, statement_timeout_secs)
        if isinstance(table, str):
            check_text(self, "table", table)
        self.dsn = dsn
        self.tables = [table] if isinstance(table, str) else check_names(self, "table", table)
        self.columns = check_names(self, "columns", columns)
        check_text(self, "position_column", position_column)
        check_text(self, "source_id", source_id, optional=True)
        check_text(self, "positions_table", positions_table)
        self.position_column = position_column
        self.start_after = start_after
        self.source_id = source_id
        self.positions_table = positions_table
        self.connect_timeout_secs = connect_timeout_secs
        self.statement_timeout_secs = statement_timeout_secs

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(list(self.columns))
        super().declare_output_fields(declarer)

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.transient_errors = (_psycopg().OperationalError,)
        self._link = _Link(self.dsn, self.connect_timeout_secs, self.statement_timeout_secs)
        self._name = self.source_id or f"{context.topology_name}/{context.component_id}"
        self._positions_ready = False
        self._read = [self.position_column, *(c for c in self.columns if c != self.position_column)]

    def partitions(self) -> list[str]:
        return list(self.tables)

    def restored_problem(self, partition: Any, position: Any) -> str | None:
        """A restored partition must be one of the tables, its position a value of the
        position column (null, a number or a string; never a list or map)."""
        problem = super().restored_problem(partition, position)
        if problem is not None:
            return problem
        if partition not in self.tables:
            return f"not one of the tables {self.tables}"
        if not (position is None or isinstance(position, bool | int | float | str)):
            return f"position {shown(position)} is not a position column's value"
        return None

    def start_position(self, partition: str) -> Any:
        return self.start_after

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        s = _sql()
        col = s.Identifier(self.position_column)
        where = " WHERE {} IS NOT NULL" if position is None else " WHERE {} > %s"  # NULL: unread
        after = s.SQL(where).format(col)
        stmt = s.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT %s").format(
            _names(self._read), _table_name(partition), after, col
        )
        params = (max_records,) if position is None else (position, max_records)
        rows = self._link.run(lambda conn: conn.execute(stmt, params).fetchall())
        return [
            Record(partition, _position(row[0]), dict(zip(self._read, row, strict=True)))
            for row in rows
        ]

    def decode(self, record: Record) -> list[Any]:
        row = record.value
        return [_plain(row[c], c) for c in self.columns]

    def committed(self, partition: str) -> Any | None:
        s = _sql()
        stmt = s.SQL("SELECT position FROM {} WHERE source = %s AND part = %s").format(
            _table_name(self.positions_table)
        )
        pg = _psycopg()

        def fetch(conn: psycopg.Connection[Any]) -> Any:
            try:
                found = conn.execute(stmt, (self._name, partition)).fetchone()
            except pg.errors.UndefinedTable:
                return None
            return None if found is None else found[0]

        return retrying(
            lambda: self._link.run(fetch),
            self.backoff,
            f"read of the committed position of {partition}",
            transient=self.transient_errors,
            log=self.log,
        )

    def commit(self, positions: dict[str, Any]) -> None:
        pg = _psycopg()
        table = _table_name(self.positions_table)
        stmt = pg.sql.SQL(
            "INSERT INTO {} (source, part, position) VALUES (%s, %s, %s) "
            "ON CONFLICT (source, part) DO UPDATE SET position = EXCLUDED.position"
        ).format(table)
        rows = [(self._name, p, pg.types.json.Jsonb(v)) for p, v in sorted(positions.items())]

        def work(conn: psycopg.Connection[Any]) -> None:
            if not self._positions_ready:
                _create_table(conn, table, _POSITIONS_COLUMNS)
                self._positions_ready = True
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(stmt, rows)

        self._link.run(work)

    def disconnect(self) -> None:
        self._link.close()


#: The columns of the positions table.
_POSITIONS_COLUMNS = "source text, part text, position jsonb NOT NULL, PRIMARY KEY (source, part)"
#: Column value types a tuple carries as text.
_AS_TEXT = (decimal.Decimal, uuid.UUID, ipaddress.IPv4Address, ipaddress.IPv6Address)
_NETWORKS = (ipaddress.IPv4Network, ipaddress.IPv6Network)


def _position(value: Any) -> Any:
    """A position column's value as a msgpack-encodable position."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


def _plain(value: Any, column: str) -> Any:
    """A column's value as a tuple value (msgpack-encodable)."""
    if value is None or isinstance(value, bool | int | float | str | bytes | dict):
        return value
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, _AS_TEXT + _NETWORKS):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if isinstance(value, list | tuple):
        return [_plain(v, column) for v in value]
    raise TypeError(
        f"column {column!r}: no tuple value for {type(value).__name__}; override decode()"
    )
