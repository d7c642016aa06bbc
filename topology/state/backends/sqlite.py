"""The ``sqlite`` provider, the default: one SQLite file per topology under
``topology.state.dir`` on the machine's disk (WAL, shared by every worker process of the
machine) — fine for LocalCluster and ``sparkstorm local``."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from operator import itemgetter
from pathlib import Path
from typing import Any

from topology import config as cfg
from topology import user_dirs
from topology.errors import ConfigError

from . import pins as pin_records
from . import sqlite_schema as schema
from .registry import (
    KEEP_COMPLETE,
    CheckpointGone,
    Entries,
    local_state_folder,
    register,
    retained,
    state_folder,
)

#: How long opening a SQLite store waits for other processes opening it at the same time.
OPEN_TIMEOUT_SECS = 30.0
#: How long a statement waits for another process's transaction (SQLite's busy timeout).
BUSY_SECS = 30.0
#: Rows of one :meth:`SqliteBackend.write` per transaction: a scope's rows of a checkpoint
#: (millions, for a state whose keys all change) go in several, so no one transaction
#: holds the WAL, and they stay invisible until :meth:`SqliteBackend.complete` anyway.
WRITE_CHUNK_ROWS = 50_000
#: WAL size past which a writer checkpoints it into the database and truncates it.
WAL_LIMIT_BYTES = 64 << 20
#: How long that checkpoint waits for other processes' transactions and older readers.
WAL_WAIT_SECS = 2.0
#: Keys of a scope read per read transaction by :meth:`SqliteBackend.read_all`, so a long
#: restore or savepoint copy does not hold one snapshot (and the WAL) while it streams.
READ_PAGE_KEYS = 16_384


@register("sqlite")
class SqliteBackend:
    """Checkpoints in one SQLite file (WAL mode: every worker process of one machine),
    created 0600 in a checked directory, and so are its ``-wal`` and ``-shm`` files, which
    SQLite opens by name: one someone else made (in a shared directory) is refused."""

    @classmethod
    def open(cls, conf: Mapping[str, Any], state_id: str) -> SqliteBackend:
        folder = local_state_folder(conf)
        if folder is None:
            raise ConfigError(
                f"{cfg.STATE_DIR} {state_folder(conf)!r}: the sqlite provider keeps its file "
                "on local disk: give a local directory, or use the directory provider"
            )
        return cls(os.path.join(folder, f"{state_id}.sqlite"), retained(conf))

    @classmethod
    def remove(cls, conf: Mapping[str, Any], state_id: str) -> None:
        folder = local_state_folder(conf)
        if folder is None:
            return
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, f"{state_id}.sqlite{suffix}"))

    def __init__(self, path: str, retained: int = KEEP_COMPLETE) -> None:
        user_dirs.make_dirs(os.path.dirname(path) or ".")
        for suffix in ("", "-wal", "-shm"):  # 0600 and this user's before SQLite opens them
            user_dirs.private_file(Path(path + suffix), cfg.STATE_DIR)
        self.path = path
        #: Complete checkpoints kept (``topology.state.checkpoints.retained``).
        self.retained = retained
        self._local = threading.local()
        #: WAL size at which :meth:`_bound_wal` tries again after it could not truncate
        self._wal_retry_at = 0
        deadline = time.monotonic() + OPEN_TIMEOUT_SECS
        while True:
            try:
                self._create(self._db())
                return
            except sqlite3.OperationalError as exc:
                # the worker processes of a machine open one new file at once: switching it
                # to WAL needs a lock that SQLite refuses at once instead of waiting for it
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode=WAL")
        schema.ensure(db)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=BUSY_SECS, isolation_level=None)
            db.execute("PRAGMA synchronous=NORMAL")
            # a WAL the checkpoint reset is cut back to this size (not left at its peak)
            db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            self._local.db = db
        return db

    def _transaction(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            result = work(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return result

    def _bound_wal(self) -> None:
        """Between transactions: once the WAL passes :data:`WAL_LIMIT_BYTES`, copy it into
        the database and truncate it.  Every worker process writes into the one WAL, and
        SQLite's own (passive) checkpoints only rewind the WAL when a writer begins while
        no other process is writing or checkpointing; with writers overlapping all the
        time (a loaded machine) that moment never comes and the WAL grows without bound.
        This checkpoint waits (:data:`WAL_WAIT_SECS` at most) for the other writers'
        transactions and checkpoints to end and for readers of older snapshots; when it
        cannot (a long read), it tries again once the WAL grew by another limit."""
        try:
            size = os.stat(self.path + "-wal").st_size
        except FileNotFoundError:
            return
        if size <= max(WAL_LIMIT_BYTES, self._wal_retry_at):
            return
        db = self._db()
        deadline = time.monotonic() + WAL_WAIT_SECS
        db.execute(f"PRAGMA busy_timeout={int(WAL_WAIT_SECS * 1000)}")
        try:
            # busy at once: another connection's checkpoint (SQLite's automatic one after
            # a commit) holds the checkpoint lock, which the busy timeout does not wait for
            while busy := db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.002)
        finally:
            db.execute(f"PRAGMA busy_timeout={int(BUSY_SECS * 1000)}")
        self._wal_retry_at = size + WAL_LIMIT_BYTES if busy else 0

    def reserve(self) -> int:
        def work(db: sqlite3.Connection) -> int:
            highest = max(
                db.execute(f"SELECT MAX({column}) FROM {table}").fetchone()[0] or 0
                for table, column in (
                    ("versions", "checkpoint"),
                    ("staged", "checkpoint"),
                    ("complete", "checkpoint"),
                    ("reserved", "id"),
                )
            )
            db.execute("DELETE FROM reserved")
            db.execute("INSERT INTO reserved VALUES (?)", (highest + 1,))
            return int(highest + 1)

        return int(self._transaction(work))

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None:
        """Stage ``entries`` under (``checkpoint``, ``epoch``) in key order (the inserts
        walk ``versions`` from page to page instead of all over it), :data:`WRITE_CHUNK_ROWS`
        a transaction.  A write at or below the newest complete checkpoint is dropped: that
        completion dropped every row at or below it it did not commit, so this one (late,
        from before a rollback) could never be read."""

        def stage(db: sqlite3.Connection, *, chunk: Entries) -> bool:
            if checkpoint <= _latest(db):
                return False
            db.execute("INSERT OR IGNORE INTO staged VALUES (?, ?)", (checkpoint, epoch))
            db.executemany(
                "INSERT OR REPLACE INTO versions (scope, key, checkpoint, epoch, value) "
                "VALUES (?, ?, ?, ?, ?)",
                [(scope, key, checkpoint, epoch, value) for key, value in chunk],
            )
            return True

        rows = sorted(entries, key=itemgetter(0))  # stable: the last of a key's rows wins
        for start in range(0, len(rows), WRITE_CHUNK_ROWS):
            chunk = rows[start : start + WRITE_CHUNK_ROWS]
            if not self._transaction(functools.partial(stage, chunk=chunk)):
                return
            self._bound_wal()

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        """Commit (``checkpoint``, ``epoch``): unstage it, and drop every other pair staged
        at or below it with its rows (an aborted checkpoint, another epoch's), so every row
        at or below the newest complete checkpoint is committed; then compact."""

        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM staged WHERE checkpoint = ? AND epoch = ?", (checkpoint, epoch))
            aborted = db.execute(
                "SELECT checkpoint, epoch FROM staged WHERE checkpoint <= ?", (checkpoint,)
            ).fetchall()
            for pair in aborted:
                db.execute(
                    "DELETE FROM versions INDEXED BY versions_by_checkpoint "
                    "WHERE checkpoint = ? AND epoch = ?",
                    pair,
                )
                db.execute("DELETE FROM staged WHERE checkpoint = ? AND epoch = ?", pair)
            db.execute(
                "INSERT OR REPLACE INTO complete VALUES (?, ?)", (checkpoint, json.dumps(info))
            )
            kept = [
                row[0]
                for row in db.execute(
                    "SELECT checkpoint FROM complete ORDER BY checkpoint DESC LIMIT ?",
                    (self.retained,),
                )
            ]
            _drop_stale_pins(db)
            db.execute(
                "DELETE FROM complete WHERE checkpoint < ? AND checkpoint NOT IN "
                "(SELECT checkpoint FROM pinned)",
                (min(kept),),
            )
            pinned = db.execute("SELECT MIN(checkpoint) FROM pinned").fetchone()[0]
            oldest = min(kept) if pinned is None else min(min(kept), pinned)
            _compact(db, oldest)

        self._transaction(work)
        self._bound_wal()

    def latest(self) -> int:
        return _latest(self._db())

    def scopes(self) -> list[str]:
        """One seek per scope: the next scope name, then whether it has a row at or below
        the newest complete checkpoint (a committed one)."""
        db = self._db()
        found: list[str] = []
        db.execute("BEGIN")
        try:
            latest = _latest(db)
            row = db.execute("SELECT MIN(scope) FROM versions").fetchone()
            while row is not None and row[0] is not None:
                scope = str(row[0])
                committed = db.execute(
                    "SELECT 1 FROM versions WHERE scope = ? AND checkpoint <= ? LIMIT 1",
                    (scope, latest),
                ).fetchone()
                if committed:
                    found.append(scope)
                row = db.execute(
                    "SELECT scope FROM versions WHERE scope > ? ORDER BY scope LIMIT 1", (scope,)
                ).fetchone()
        finally:
            db.execute("COMMIT")
        return found

    def pin(self, checkpoint: int) -> None:
        def work(db: sqlite3.Connection) -> None:
            if db.execute("SELECT 1 FROM complete WHERE checkpoint = ?", (checkpoint,)).fetchone():
                db.execute(
                    "INSERT OR REPLACE INTO pinned (checkpoint, holder) VALUES (?, ?)",
                    (checkpoint, pin_records.record()),
                )
            else:
                raise CheckpointGone(checkpoint, self.latest())

        self._transaction(work)

    def unpin(self, checkpoint: int) -> None:
        self._transaction(
            lambda db: db.execute("DELETE FROM pinned WHERE checkpoint = ?", (checkpoint,))
        )

    def info(self, checkpoint: int) -> dict[str, Any]:
        row = (
            self._db()
            .execute("SELECT info FROM complete WHERE checkpoint = ?", (checkpoint,))
            .fetchone()
        )
        if row is None:
            raise CheckpointGone(checkpoint, self.latest())
        return dict(json.loads(row[0]))

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        return {k: v for k, v in self.read_all(checkpoint, scope) if keep(k)}

    def read_all(self, checkpoint: int, scope: str) -> Iterator[tuple[bytes, bytes]]:
        """Per key of ``scope``, its newest row at or below ``checkpoint`` and the newest
        complete checkpoint (committed), in key order, :data:`READ_PAGE_KEYS` keys a read
        transaction.  Between pages, newer checkpoints may complete and compact: a
        checkpoint that is no longer kept (not retained, not pinned) raises
        :class:`CheckpointGone` rather than give a part of it."""
        db = self._db()
        upto = min(checkpoint, _latest(db))
        kept = self._kept(db, upto)
        after: bytes | None = None
        while True:
            db.execute("BEGIN")
            try:
                if kept and not self._kept(db, upto):
                    raise CheckpointGone(checkpoint, _latest(db))
                page = db.execute(
                    "SELECT key, value, MAX(checkpoint) FROM versions WHERE scope = ? AND "
                    f"key {'>=' if after is None else '>'} ? AND checkpoint <= ? "
                    "GROUP BY key ORDER BY key LIMIT ?",
                    (scope, b"" if after is None else after, upto, READ_PAGE_KEYS),
                ).fetchall()
            finally:
                db.execute("COMMIT")
            for key, value, _ in page:
                if value is not None:
                    yield bytes(key), bytes(value)
            if len(page) < READ_PAGE_KEYS:
                return
            after = bytes(page[-1][0])

    @staticmethod
    def _kept(db: sqlite3.Connection, checkpoint: int) -> bool:
        return bool(
            db.execute("SELECT 1 FROM complete WHERE checkpoint = ?", (checkpoint,)).fetchone()
        )

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


def _drop_stale_pins(db: sqlite3.Connection) -> None:
    """Delete the pins whose holder is gone or let the lease lapse (:func:`.pins.stale`); a
    pin without a record (taken before pins had holders) counts as taken now and is
    given one, so its lease runs from here."""
    now = time.time()
    for checkpoint, holder in db.execute("SELECT checkpoint, holder FROM pinned").fetchall():
        raw = holder if isinstance(holder, bytes) else b""
        pin = pin_records.parse(raw, now)
        if pin_records.stale(pin, now):
            db.execute("DELETE FROM pinned WHERE checkpoint = ?", (checkpoint,))
        elif pin.host is None:
            record = json.dumps({"host": "", "pid": 0, "at": now}).encode()
            db.execute("UPDATE pinned SET holder = ? WHERE checkpoint = ?", (record, checkpoint))


def _latest(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT MAX(checkpoint) FROM complete").fetchone()[0] or 0)


def _compact(db: sqlite3.Connection, oldest: int) -> None:
    """Drop the rows no restore at or above ``oldest`` can read: a row is needed only while
    it is its key's newest at or below ``oldest``.  Only the keys of the checkpoints that
    have fallen to the oldest since the last call are looked at (the rest went then), so a
    checkpoint's completion costs its changes, not the state: each such row seeks its key's
    older rows, next to it in ``versions``' key order."""
    row = db.execute("SELECT MAX(upto) FROM compacted").fetchone()
    done = int(row[0] or 0)
    if oldest <= done:
        return
    db.execute(
        "DELETE FROM versions WHERE (scope, key, checkpoint, epoch) IN ("
        "SELECT e.scope, e.key, e.checkpoint, e.epoch FROM versions AS n "
        "INDEXED BY versions_by_checkpoint JOIN versions AS e "
        "ON e.scope = n.scope AND e.key = n.key AND e.checkpoint < n.checkpoint "
        "WHERE n.checkpoint > ? AND n.checkpoint <= ?)",
        (done, oldest),
    )
    db.execute("DELETE FROM compacted")
    db.execute("INSERT INTO compacted VALUES (?)", (oldest,))
