"""The ``sqlite`` provider, the default: one SQLite file per topology under
``topology.state.dir`` on the machine's disk (WAL, shared by every worker process of the
machine) — fine for LocalCluster and ``sparkstorm local``."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from topology import config as cfg
from topology import user_dirs
from topology.errors import ConfigError

from . import pins as pin_records
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
        db.execute(
            "CREATE TABLE IF NOT EXISTS entries (scope TEXT, key BLOB, checkpoint INTEGER, "
            "epoch INTEGER, value BLOB, committed INTEGER DEFAULT 0, "
            "PRIMARY KEY (scope, key, checkpoint, epoch))"
        )
        db.execute("CREATE INDEX IF NOT EXISTS by_checkpoint ON entries (checkpoint, epoch)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS complete (checkpoint INTEGER PRIMARY KEY, info TEXT)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS reserved (id INTEGER)")
        # complete checkpoints kept whatever their age (a savepoint being taken)
        # with who holds each pin and since when (a stale one is dropped: see .pins)
        db.execute(
            "CREATE TABLE IF NOT EXISTS pinned (checkpoint INTEGER PRIMARY KEY, holder BLOB)"
        )
        columns = {row[1] for row in db.execute("PRAGMA table_info(pinned)")}
        if "holder" not in columns:  # a store from before pins had holders
            try:
                db.execute("ALTER TABLE pinned ADD COLUMN holder BLOB")
            except sqlite3.OperationalError as exc:  # another process added it meanwhile
                if "duplicate column" not in str(exc):
                    raise
        # what completing a checkpoint touches, so it costs what changed, not the whole state
        db.execute(
            "CREATE INDEX IF NOT EXISTS uncommitted ON entries (checkpoint) WHERE committed = 0"
        )
        db.execute("CREATE TABLE IF NOT EXISTS compacted (upto INTEGER)")

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA synchronous=NORMAL")
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

    def reserve(self) -> int:
        def work(db: sqlite3.Connection) -> int:
            highest = max(
                db.execute(f"SELECT MAX({column}) FROM {table}").fetchone()[0] or 0
                for table, column in (
                    ("entries", "checkpoint"),
                    ("complete", "checkpoint"),
                    ("reserved", "id"),
                )
            )
            db.execute("DELETE FROM reserved")
            db.execute("INSERT INTO reserved VALUES (?)", (highest + 1,))
            return int(highest + 1)

        return int(self._transaction(work))

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None:
        self._transaction(
            lambda db: db.executemany(
                "INSERT OR REPLACE INTO entries (scope, key, checkpoint, epoch, value) "
                "VALUES (?, ?, ?, ?, ?)",
                ((scope, key, checkpoint, epoch, value) for key, value in entries),
            )
        )

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE entries SET committed = 1 WHERE checkpoint = ? AND epoch = ?",
                (checkpoint, epoch),
            )
            db.execute(
                "DELETE FROM entries INDEXED BY uncommitted "
                "WHERE committed = 0 AND checkpoint <= ?",
                (checkpoint,),
            )
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

    def latest(self) -> int:
        row = self._db().execute("SELECT MAX(checkpoint) FROM complete").fetchone()
        return int(row[0] or 0)

    def scopes(self) -> list[str]:
        rows = self._db().execute(
            "SELECT DISTINCT scope FROM entries WHERE committed = 1 ORDER BY scope"
        )
        return [str(row[0]) for row in rows]

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
        rows = self._db().execute(
            "SELECT key, value FROM entries e WHERE scope = ? AND committed = 1 AND "
            "checkpoint = (SELECT MAX(checkpoint) FROM entries WHERE scope = e.scope AND "
            "key = e.key AND committed = 1 AND checkpoint <= ?)",
            (scope, checkpoint),
        )
        return ((bytes(k), bytes(v)) for k, v in rows if v is not None)

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


def _compact(db: sqlite3.Connection, oldest: int) -> None:
    """Drop the committed rows no restore at or above ``oldest`` can read: a row is needed
    only while it is its key's newest at or below ``oldest``.  Only the rows superseded by
    a row of a checkpoint that has fallen to the oldest since the last call are looked at
    (the rest went then), so a checkpoint's completion costs its changes, not the state."""
    row = db.execute("SELECT MAX(upto) FROM compacted").fetchone()
    done = int(row[0] or 0)
    if oldest <= done:
        return
    db.execute(
        "DELETE FROM entries WHERE rowid IN (SELECT e.rowid FROM entries n JOIN entries e "
        "ON e.scope = n.scope AND e.key = n.key WHERE n.committed = 1 AND n.checkpoint > ? "
        "AND n.checkpoint <= ? AND e.committed = 1 AND e.checkpoint < n.checkpoint)",
        (done, oldest),
    )
    db.execute("DELETE FROM compacted")
    db.execute("INSERT INTO compacted VALUES (?)", (oldest,))
