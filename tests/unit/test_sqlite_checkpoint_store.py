"""The ``sqlite`` provider's own file: its write path against a plain-dict model of the
provider contract, a store written by the schema before (migrated on open), late writes,
paged reads and the WAL's bound."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topology.state.backends import CheckpointGone, SqliteBackend, pins, sqlite_schema
from topology.state.backends import sqlite as sqlite_backend

pytestmark = pytest.mark.timeout(120)

ALL = lambda key: True  # noqa: E731

# -- the write path against a model --------------------------------------------------------

KEYS = st.sampled_from([b"", b"a", b"b", b"c", b"d\x00", b"e" * 12])
VALUES = st.none() | st.binary(min_size=1, max_size=3)
STEP = st.tuples(
    st.lists(st.tuples(st.sampled_from(["s", "t"]), KEYS, VALUES), max_size=8),  # writes
    st.sampled_from(["complete", "abort", "rollback"]),  # what becomes of them
    st.booleans(),  # a late write under an earlier checkpoint and epoch follows
)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=12), retained=st.integers(1, 3))
def test_the_store_reads_what_a_dict_of_complete_checkpoints_holds(
    steps: list[tuple[list[tuple[str, bytes, bytes | None]], str, bool]], retained: int
) -> None:
    """Checkpoints written in chunks of 2 rows and read in pages of 2 keys, some completed,
    some abandoned, some rolled back to a new epoch, with late writes of old ones: every
    kept checkpoint reads as the model's copy of the state then."""
    saved = sqlite_backend.WRITE_CHUNK_ROWS, sqlite_backend.READ_PAGE_KEYS
    sqlite_backend.WRITE_CHUNK_ROWS, sqlite_backend.READ_PAGE_KEYS = 2, 2
    try:
        with tempfile.TemporaryDirectory() as folder:
            store = SqliteBackend(os.path.join(folder, "s.sqlite"), retained)
            _check_against_model(store, steps, retained)
            store.close()
    finally:
        sqlite_backend.WRITE_CHUNK_ROWS, sqlite_backend.READ_PAGE_KEYS = saved


def _check_against_model(
    store: SqliteBackend,
    steps: list[tuple[list[tuple[str, bytes, bytes | None]], str, bool]],
    retained: int,
) -> None:
    state: dict[str, dict[bytes, bytes]] = {}
    complete: dict[int, dict[str, dict[bytes, bytes]]] = {}
    epoch, previous = 1, (0, 0)
    for writes, fate, late in steps:
        checkpoint = store.reserve()
        for scope in ("s", "t"):
            entries = [(k, v) for s, k, v in writes if s == scope]
            if entries:
                store.write(checkpoint, epoch, scope, entries)
        if late and previous[0]:
            store.write(previous[0], previous[1], "s", [(b"a", b"late")])
        previous = (checkpoint, epoch)
        if fate == "complete":
            store.complete(checkpoint, epoch, {"n": checkpoint})
            for scope, key, value in writes:
                if value is None:
                    state.setdefault(scope, {}).pop(key, None)
                else:
                    state.setdefault(scope, {})[key] = value
            complete[checkpoint] = {s: dict(kv) for s, kv in state.items()}
        elif fate == "rollback":
            epoch += 1
    kept = sorted(complete)[-retained:]
    assert store.latest() == (kept[-1] if kept else 0)
    for checkpoint in kept:
        for scope in ("s", "t"):
            expected = complete[checkpoint].get(scope, {})
            assert dict(store.read_all(checkpoint, scope)) == expected, (checkpoint, scope)
            assert store.read(checkpoint, scope, ALL) == expected
    # a scope whose keys were all deleted keeps its newest rows (tombstones): still there
    assert store.scopes() == sorted(state)


def test_a_late_write_below_the_newest_complete_checkpoint_is_dropped(tmp_path: Path) -> None:
    store = SqliteBackend(str(tmp_path / "s.sqlite"))
    store.write(2, 10, "s", [(b"a", b"stale")])
    store.write(2, 11, "s", [(b"a", b"new")])
    store.complete(2, 11, {})
    store.write(2, 10, "s", [(b"a", b"later still")])
    store.write(1, 10, "s", [(b"b", b"older still")])
    rows = store._db().execute("SELECT key, value FROM versions").fetchall()
    assert rows == [(b"a", b"new")]
    assert store._db().execute("SELECT COUNT(*) FROM staged").fetchone()[0] == 0


def test_completion_drops_what_no_kept_checkpoint_needs(tmp_path: Path) -> None:
    """Rows superseded at or below the oldest kept checkpoint and rows of aborted
    checkpoints are gone from the file, not only unread."""
    store = SqliteBackend(str(tmp_path / "s.sqlite"), retained=3)
    for k in range(1, 11):
        store.write(k, 1, "s", [(b"hot", b"%d" % k), (b"k%d" % k, b"x")])
        store.write(k, 0, "s", [(b"aborted", b"%d" % k)])  # a rolled-back epoch's
        store.complete(k, 1, {})
    db = store._db()
    hot = db.execute("SELECT checkpoint FROM versions WHERE key = ? ORDER BY 1", (b"hot",))
    assert [row[0] for row in hot] == [8, 9, 10]
    assert not db.execute("SELECT 1 FROM versions WHERE key = ?", (b"aborted",)).fetchone()
    assert db.execute("SELECT COUNT(*) FROM staged").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM versions").fetchone()[0] == 3 + 10
    assert store.read(8, "s", ALL)[b"hot"] == b"8"


def test_a_paged_read_of_a_checkpoint_compacted_meanwhile_raises(tmp_path: Path) -> None:
    """A page read after its checkpoint stopped being kept could miss keys: refused."""
    store = SqliteBackend(str(tmp_path / "s.sqlite"), retained=1)
    store.write(1, 1, "s", [(b"%05d" % i, b"1") for i in range(3 * 16)])
    store.complete(1, 1, {})
    reading = store.read_all(1, "s")
    first = [next(reading) for _ in range(5)]
    assert first[0] == (b"00000", b"1")
    saved = sqlite_backend.READ_PAGE_KEYS
    sqlite_backend.READ_PAGE_KEYS = 16
    try:
        paged = store.read_all(1, "s")
        assert len([next(paged) for _ in range(16)]) == 16
        store.write(2, 1, "s", [(b"00020", b"2")])
        store.complete(2, 1, {})  # 1 is no longer kept
        with pytest.raises(CheckpointGone):
            list(paged)
    finally:
        sqlite_backend.READ_PAGE_KEYS = saved


# -- a store written by the schema before ----------------------------------------------------

SCHEMA_0 = (
    "CREATE TABLE entries (scope TEXT, key BLOB, checkpoint INTEGER, epoch INTEGER, "
    "value BLOB, committed INTEGER DEFAULT 0, PRIMARY KEY (scope, key, checkpoint, epoch))",
    "CREATE INDEX by_checkpoint ON entries (checkpoint, epoch)",
    "CREATE TABLE complete (checkpoint INTEGER PRIMARY KEY, info TEXT)",
    "CREATE TABLE reserved (id INTEGER)",
    "CREATE TABLE pinned (checkpoint INTEGER PRIMARY KEY, holder BLOB)",
    "CREATE INDEX uncommitted ON entries (checkpoint) WHERE committed = 0",
    "CREATE TABLE compacted (upto INTEGER)",
)


def _schema_0_store(path: Path) -> None:
    """What the provider before wrote: checkpoints 1-3 complete (2 pinned, by this
    process), a deleted key, rows of an aborted checkpoint and of one in flight."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    for statement in SCHEMA_0:
        db.execute(statement)
    rows = [
        ("count", b"a", 1, 7, b"1", 1),
        ("count", b"b", 1, 7, b"1", 1),
        ("count", b"a", 2, 7, b"2", 1),
        ("count", b"b", 3, 7, None, 1),
        ("count", b"c", 3, 7, b"3", 1),
        ("words#0", b"position", 3, 7, b"9", 1),
        ("count", b"a", 3, 6, b"aborted", 0),  # another epoch's, never completed
        ("count", b"a", 4, 7, b"in flight", 0),
    ]
    db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)", rows)
    for checkpoint in (1, 2, 3):
        db.execute(
            "INSERT INTO complete VALUES (?, ?)", (checkpoint, json.dumps({"n": checkpoint}))
        )
    db.execute("INSERT INTO pinned VALUES (2, ?)", (pins.record(),))
    db.execute("INSERT INTO reserved VALUES (4)")
    db.execute("INSERT INTO compacted VALUES (1)")
    db.close()


def _open_as_schema_0(path: Path) -> None:
    """What opening did before: create what is missing."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in SCHEMA_0:
            db.execute(
                statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS").replace(
                    "CREATE INDEX", "CREATE INDEX IF NOT EXISTS"
                )
            )
    finally:
        db.close()


def test_a_store_of_the_schema_before_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _schema_0_store(path)
    store = SqliteBackend(str(path))
    db = store._db()
    assert db.execute("PRAGMA user_version").fetchone()[0] == sqlite_schema.SCHEMA
    kind = db.execute("SELECT type FROM sqlite_master WHERE name = 'entries'").fetchone()
    assert kind == ("view",)  # the rows moved; an earlier version's opener fails on it
    with pytest.raises(sqlite3.OperationalError, match="views may not be indexed"):
        _open_as_schema_0(path)
    assert store.latest() == 3 and store.info(2) == {"n": 2}
    assert store.scopes() == ["count", "words#0"]
    assert store.read(3, "count", ALL) == {b"a": b"2", b"c": b"3"}
    assert store.read(2, "count", ALL) == {b"a": b"2", b"b": b"1"}  # pinned
    assert store.read(1, "count", ALL) == {b"a": b"1", b"b": b"1"}
    assert store.reserve() == 5
    store.complete(4, 7, {"n": 4})  # the checkpoint in flight completes after the upgrade
    assert store.read(4, "count", ALL) == {b"a": b"in flight", b"c": b"3"}
    for k in range(5, 10):
        store.write(k, 7, "count", [(b"c", str(k).encode())])
        store.complete(k, 7, {"n": k})
    assert store.read(2, "count", ALL) == {b"a": b"2", b"b": b"1"}  # still pinned
    store.unpin(2)
    store.write(10, 7, "count", [(b"d", b"10")])
    store.complete(10, 7, {})
    assert store.read(10, "count", ALL) == {b"a": b"in flight", b"c": b"9", b"d": b"10"}
    assert store.read(10, "words#0", ALL) == {b"position": b"9"}
    store.close()
    again = SqliteBackend(str(path))  # a second open finds it done
    assert again.read(10, "count", ALL)[b"d"] == b"10"
    again.close()


# -- the WAL's bound --------------------------------------------------------------------------


def test_the_wal_stays_bounded_through_wide_checkpoints_of_two_writers_and_a_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers (two connections, as two worker processes) write wide checkpoints at once
    while a reader pages through a scope: each writes far more than the limit, and the WAL
    never passes a few limits (SQLite's own checkpoints alone let it grow with the rows
    while writers overlap)."""
    limit = 1 << 20
    monkeypatch.setattr(sqlite_backend, "WAL_LIMIT_BYTES", limit)
    monkeypatch.setattr(sqlite_backend, "WRITE_CHUNK_ROWS", 2_000)
    monkeypatch.setattr(sqlite_backend, "READ_PAGE_KEYS", 500)
    path = str(tmp_path / "s.sqlite")
    seed = SqliteBackend(path)
    seed.write(1, 1, "seed", [(b"%08d" % i, b"x" * 8) for i in range(20_000)])
    seed.complete(1, 1, {})
    start = threading.Barrier(3)
    peaks: list[int] = []
    errors: list[BaseException] = []

    def wal() -> int:
        return os.stat(path + "-wal").st_size if os.path.exists(path + "-wal") else 0

    def writer(index: int) -> None:
        try:
            store = SqliteBackend(path)
            start.wait()
            for k in range(10):
                rows = [(os.urandom(10), b"%d" % i) for i in range(20_000)]
                store.write(2 + k, 1, f"count#{index}", rows)
                peaks.append(wal())
            store.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    reader = SqliteBackend(path)
    start.wait()
    read = 0
    while any(thread.is_alive() for thread in threads):
        for _ in reader.read_all(1, "seed"):
            read += 1
        peaks.append(wal())
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert read >= 20_000
    assert max(peaks) < 6 * limit, f"WAL reached {max(peaks):,} bytes"
    reader.close()
    seed.close()
