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
from collections.abc import Callable, Mapping
from typing import Any

from .registry import KEEP_COMPLETE, Entries, register, state_folder

#: How long opening a SQLite store waits for other processes opening it at the same time.
OPEN_TIMEOUT_SECS = 30.0


def _local_folder(conf: Mapping[str, Any]) -> str:
    return state_folder(conf).removeprefix("file://")


@register("sqlite")
class SqliteBackend:
    """Checkpoints in one SQLite file (WAL mode: every worker process of one machine)."""

    @classmethod
    def open(cls, conf: Mapping[str, Any], state_id: str) -> SqliteBackend:
        return cls(os.path.join(_local_folder(conf), f"{state_id}.sqlite"))

    @classmethod
    def remove(cls, conf: Mapping[str, Any], state_id: str) -> None:
        folder = _local_folder(conf)
        if "://" in folder:
            return
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, f"{state_id}.sqlite{suffix}"))

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.path = path
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
            db.execute("DELETE FROM entries WHERE committed = 0 AND checkpoint <= ?", (checkpoint,))
            db.execute(
                "INSERT OR REPLACE INTO complete VALUES (?, ?)", (checkpoint, json.dumps(info))
            )
            kept = [
                row[0]
                for row in db.execute(
                    "SELECT checkpoint FROM complete ORDER BY checkpoint DESC LIMIT ?",
                    (KEEP_COMPLETE,),
                )
            ]
            oldest = min(kept)
            db.execute("DELETE FROM complete WHERE checkpoint < ?", (oldest,))
            # a row at or below the oldest kept checkpoint is needed only while it is its
            # key's newest there
            db.execute(
                "DELETE FROM entries WHERE committed = 1 AND checkpoint < ? AND checkpoint < "
                "(SELECT MAX(e.checkpoint) FROM entries e WHERE e.scope = entries.scope "
                "AND e.key = entries.key AND e.committed = 1 AND e.checkpoint <= ?)",
                (oldest, oldest),
            )

        self._transaction(work)

    def latest(self) -> int:
        row = self._db().execute("SELECT MAX(checkpoint) FROM complete").fetchone()
        return int(row[0] or 0)

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        rows = self._db().execute(
            "SELECT key, value FROM entries e WHERE scope = ? AND committed = 1 AND "
            "checkpoint = (SELECT MAX(checkpoint) FROM entries WHERE scope = e.scope AND "
            "key = e.key AND committed = 1 AND checkpoint <= ?)",
            (scope, checkpoint),
        )
        return {bytes(k): bytes(v) for k, v in rows if v is not None and keep(bytes(k))}

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
