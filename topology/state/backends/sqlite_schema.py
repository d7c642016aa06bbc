"""The tables of the ``sqlite`` provider's file, and the migration of a file written by an
earlier version.

Schema 1 (this one, ``PRAGMA user_version = 1``):

* ``versions`` — one row per (scope, key, checkpoint, epoch) written, the value (``NULL``:
  deleted), a ``WITHOUT ROWID`` table in key order (a restore scans a scope in order); the
  index ``versions_by_checkpoint`` finds a checkpoint's rows (to drop an aborted one, to
  compact);
* ``staged`` — the (checkpoint, epoch) pairs written and not yet complete: completing a
  checkpoint drops every staged pair at or below it but its own, with its rows, so every
  row at or below the newest complete checkpoint is committed, and nothing marks rows one
  by one;
* ``complete`` (completion records), ``pinned`` (pins with their holder: :mod:`.pins`),
  ``reserved`` (the last id reserved) and ``compacted`` (how far compaction went), as
  before.

Schema 0 (before): an ``entries`` rowid table with a ``committed`` flag per row, a primary
key index, ``by_checkpoint`` and the partial index ``uncommitted``.  :func:`ensure` turns
it into schema 1 in one transaction when a store is opened: the committed rows and the
rows of checkpoints newer than the newest complete one (in flight) are kept, the rest
(uncommitted rows of checkpoints that can never complete) dropped.  A view takes the
name ``entries``, so that a process of an earlier version fails to open the file.
"""

from __future__ import annotations

import sqlite3

#: ``PRAGMA user_version`` of a file with these tables.
SCHEMA = 1

_TABLES = (
    "CREATE TABLE IF NOT EXISTS versions (scope TEXT NOT NULL, key BLOB NOT NULL, "
    "checkpoint INTEGER NOT NULL, epoch INTEGER NOT NULL, value BLOB, "
    "PRIMARY KEY (scope, key, checkpoint, epoch)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS versions_by_checkpoint ON versions (checkpoint, epoch)",
    "CREATE TABLE IF NOT EXISTS staged (checkpoint INTEGER, epoch INTEGER, "
    "PRIMARY KEY (checkpoint, epoch)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS complete (checkpoint INTEGER PRIMARY KEY, info TEXT)",
    "CREATE TABLE IF NOT EXISTS reserved (id INTEGER)",
    # complete checkpoints kept whatever their age (a savepoint being taken)
    # with who holds each pin and since when (a stale one is dropped: see .pins)
    "CREATE TABLE IF NOT EXISTS pinned (checkpoint INTEGER PRIMARY KEY, holder BLOB)",
    "CREATE TABLE IF NOT EXISTS compacted (upto INTEGER)",
)


#: A view where schema 0 kept its rows: a process of an earlier version opening this file
#: fails at once ("views may not be indexed", creating its index on ``entries``) instead of
#: writing rows no one reads.
_OLD_OPENERS_FAIL = (
    "CREATE VIEW IF NOT EXISTS entries AS "
    "SELECT 'written by a newer sparkstorm: upgrade this worker' AS upgrade"
)


def ensure(db: sqlite3.Connection) -> None:
    """Make ``db``'s tables schema :data:`SCHEMA`, migrating a schema-0 store, in one
    ``BEGIN IMMEDIATE`` transaction (the worker processes of a machine open the file at
    once: the first migrates, the others find it done)."""
    if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
            for statement in _TABLES:
                db.execute(statement)
            _add_pin_holders(db)
            if "committed" in _columns(db, "entries"):
                _migrate_entries(db)
            db.execute(_OLD_OPENERS_FAIL)
            db.execute(f"PRAGMA user_version = {SCHEMA}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def _add_pin_holders(db: sqlite3.Connection) -> None:
    if "holder" not in _columns(db, "pinned"):  # a store from before pins had holders
        db.execute("ALTER TABLE pinned ADD COLUMN holder BLOB")


def _migrate_entries(db: sqlite3.Connection) -> None:
    """Schema 0's ``entries`` into ``versions`` and ``staged``, then dropped."""
    latest = int(db.execute("SELECT MAX(checkpoint) FROM complete").fetchone()[0] or 0)
    keep = "committed = 1 OR checkpoint > ?"
    db.execute(
        "INSERT OR REPLACE INTO versions (scope, key, checkpoint, epoch, value) "
        f"SELECT scope, key, checkpoint, epoch, value FROM entries WHERE {keep}",
        (latest,),
    )
    db.execute(
        "INSERT OR IGNORE INTO staged (checkpoint, epoch) "
        "SELECT DISTINCT checkpoint, epoch FROM entries WHERE committed = 0 AND checkpoint > ?",
        (latest,),
    )
    db.execute("DROP TABLE entries")  # and its indexes
