"""Where checkpoints are stored: one small interface, three providers.

A checkpoint is a set of *entries* per *scope* — a stateful bolt's scope is its component
(its keys, partitioned among its tasks by :func:`~topology.state.kv.key_owner`), a spout
task's scope is ``component#index`` — written incrementally (only what changed since the
previous checkpoint; ``None`` deletes a key), plus the *completion* record that makes a
checkpoint the one to restore.  Entries of a checkpoint that never completed are never
read: restore takes, per key, the newest entry at or below the restored checkpoint.

``topology.state.provider`` picks one:

* ``memory`` — this process only (the in-process runner, unit tests);
* ``sqlite`` — the default: one SQLite file per topology under ``topology.state.dir`` on
  the machine's disk (WAL, shared by every worker process of the machine) — fine for
  LocalCluster and ``sparkstorm local``;
* ``directory`` — files under ``topology.state.dir`` read as a path or an ``fsspec`` URL
  (``file://``, ``hdfs://``, ``s3://`` where fsspec and the filesystem are installed): a
  directory every host sees, for clusters where a task restarts on another host.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import msgpack

from topology import config as cfg
from topology.errors import ConfigError

Entries = list[tuple[bytes, bytes | None]]
#: Complete checkpoints kept (older ones and what only they need are removed).
KEEP_COMPLETE = 3
#: How long opening a SQLite store waits for other processes opening it at the same time.
OPEN_TIMEOUT_SECS = 30.0


class StateBackend(Protocol):
    """Durable storage of checkpoints; every method returns once what it did is durable.

    Rows are written under ``(checkpoint, epoch)``: the epoch is the recovery epoch of the
    writer (see :mod:`topology.state.checkpoint`).  :meth:`complete` commits exactly the rows
    of that pair, so a late write from before a rollback, even under a reused checkpoint
    id, is never read.
    """

    def reserve(self) -> int:
        """A new id above every id used so far, durably (a coordinator's incarnation)."""
        ...

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None: ...

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        """Commit the rows of ``(checkpoint, epoch)``; drop uncommitted rows at or below it
        and compact what only older checkpoints need."""
        ...

    def latest(self) -> int:
        """The newest complete checkpoint (0: none)."""
        ...

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        """The committed entries of ``scope`` as of ``checkpoint`` whose key ``keep`` takes."""
        ...

    def close(self) -> None: ...


class MemoryBackend:
    """Checkpoints in this process's memory (for tests and the in-process runner)."""

    def __init__(self) -> None:
        #: (scope, key) -> [(checkpoint, value)] committed, oldest first
        self._committed: dict[tuple[str, bytes], list[tuple[int, bytes | None]]] = {}
        #: (checkpoint, epoch) -> rows written, not yet committed
        self._staged: dict[tuple[int, int], list[tuple[str, bytes, bytes | None]]] = {}
        self._complete: dict[int, dict[str, Any]] = {}
        self._highest = 0
        self._lock = threading.Lock()

    def reserve(self) -> int:
        with self._lock:
            self._highest += 1
            return self._highest

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None:
        with self._lock:
            self._highest = max(self._highest, checkpoint)
            rows = self._staged.setdefault((checkpoint, epoch), [])
            rows.extend((scope, key, value) for key, value in entries)

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        with self._lock:
            for scope, key, value in self._staged.pop((checkpoint, epoch), []):
                versions = self._committed.setdefault((scope, key), [])
                versions[:] = [v for v in versions if v[0] != checkpoint] + [(checkpoint, value)]
            for staged in [s for s in self._staged if s[0] <= checkpoint]:
                del self._staged[staged]
            self._complete[checkpoint] = info
            kept = sorted(self._complete)[-KEEP_COMPLETE:]
            for old in [c for c in self._complete if c < kept[0]]:
                del self._complete[old]
            for versions in self._committed.values():
                older = [v for v in versions if v[0] <= kept[0]]
                if len(older) > 1:
                    versions[:] = [older[-1]] + [v for v in versions if v[0] > kept[0]]

    def latest(self) -> int:
        with self._lock:
            return max(self._complete, default=0)

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        out = {}
        with self._lock:
            for (row_scope, key), versions in self._committed.items():
                if row_scope != scope or not keep(key):
                    continue
                valid = [value for k, value in versions if k <= checkpoint]
                if valid and valid[-1] is not None:
                    out[key] = valid[-1]
        return out

    def close(self) -> None:
        pass


class SqliteBackend:
    """Checkpoints in one SQLite file (WAL mode: every worker process of one machine)."""

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


class DirectoryBackend:
    """Checkpoints as files under a directory every host sees (a path, or an fsspec URL).

    ``scopes/<scope>/<checkpoint>-<epoch>-<writer>`` hold the rows one task wrote;
    ``complete/<checkpoint>`` names the epoch whose files that checkpoint commits; rows up
    to the oldest kept checkpoint are folded into ``<checkpoint>-compacted`` files.
    """

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        if "://" in url and not url.startswith("file://"):
            try:
                import fsspec  # noqa: PLC0415 - optional
            except ImportError:
                raise ConfigError(
                    f"topology.state.dir {url!r} needs fsspec (pip install fsspec) and the "
                    "filesystem's package"
                ) from None
            self.fs: Any = fsspec.open(url).fs  # noqa: SIM115 - a filesystem, not a file
            self.root = self.fs._strip_protocol(url)
        else:
            self.fs = None
            self.root = url.removeprefix("file://")
        self._mkdirs(self._path("complete"))

    # -- filesystem helpers (plain os, or fsspec) -------------------------------------------

    def _path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def _mkdirs(self, path: str) -> None:
        if self.fs is None:
            os.makedirs(path, exist_ok=True)
        else:
            self.fs.makedirs(path, exist_ok=True)

    def _list(self, path: str) -> list[str]:
        try:
            names = (
                os.listdir(path)
                if self.fs is None
                else [p.rsplit("/", 1)[-1] for p in self.fs.ls(path, detail=False)]
            )
        except FileNotFoundError:
            return []
        return sorted(n for n in names if not n.startswith(".") and ".tmp-" not in n)

    def _put(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically (a temporary name, then a rename)."""
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        if self.fs is None:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        else:
            with self.fs.open(tmp, "wb") as f:
                f.write(data)
            self.fs.mv(tmp, path)

    def _get(self, path: str) -> bytes:
        if self.fs is None:
            with open(path, "rb") as f:
                return f.read()
        with self.fs.open(path, "rb") as f:
            return bytes(f.read())

    def _remove(self, path: str) -> None:
        try:
            if self.fs is None:
                os.remove(path)
            else:
                self.fs.rm(path)
        except FileNotFoundError:
            pass

    # -- the backend --------------------------------------------------------------------

    def _scope_folder(self, scope: str) -> str:
        return self._path("scopes", scope.replace("%", "%25").replace("/", "%2F"))

    def _completed(self) -> dict[int, int]:
        """Complete checkpoint -> the epoch it committed."""
        out = {}
        for name in self._list(self._path("complete")):
            if name.isdigit():
                out[int(name)] = int(json.loads(self._get(self._path("complete", name)))["epoch"])
        return out

    def reserve(self) -> int:
        ids = [self.latest(), 0]
        for folder in self._list(self._path("scopes")):
            ids += [int(n.split("-")[0]) for n in self._list(self._path("scopes", folder))]
        ids += [int(n) for n in self._list(self._path("reserved")) if n.isdigit()]
        new = max(ids) + 1
        self._mkdirs(self._path("reserved"))
        self._put(self._path("reserved", str(new)), b"")
        for old in self._list(self._path("reserved")):
            if old.isdigit() and int(old) < new:
                self._remove(self._path("reserved", old))
        return new

    def write(self, checkpoint: int, epoch: int, scope: str, entries: Entries) -> None:
        folder = self._scope_folder(scope)
        self._mkdirs(folder)
        writer = f"{os.getpid()}.{threading.get_ident()}.{time.time_ns()}"
        self._put(
            f"{folder}/{checkpoint:012d}-{epoch}-{writer}",
            msgpack.packb(entries, use_bin_type=True),
        )

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        self._put(
            self._path("complete", f"{checkpoint:012d}"),
            json.dumps({**info, "epoch": epoch}).encode(),
        )
        completed = self._completed()
        kept = sorted(completed)[-KEEP_COMPLETE:]
        for folder in self._list(self._path("scopes")):
            self._compact(self._path("scopes", folder), completed, kept[0], checkpoint)
        for old in completed:
            if old < kept[0]:
                self._remove(self._path("complete", f"{old:012d}"))

    def _valid(self, name: str, completed: dict[int, int]) -> bool:
        head, epoch, *_ = name.split("-") + [""]
        return epoch == "compacted" or completed.get(int(head)) == _int_or_none(epoch)

    def _compact(self, folder: str, completed: dict[int, int], oldest: int, newest: int) -> None:
        """Fold the valid files up to ``oldest`` into one; remove garbage up to ``newest``."""
        names = self._list(folder)
        for name in names:
            if int(name.split("-")[0]) <= newest and not self._valid(name, completed):
                self._remove(f"{folder}/{name}")
        old = [n for n in names if int(n.split("-")[0]) <= oldest and self._valid(n, completed)]
        if len(old) < 2:
            return
        merged: dict[bytes, bytes | None] = {}
        for name in old:  # names sort by checkpoint id first
            for key, value in msgpack.unpackb(self._get(f"{folder}/{name}"), raw=False):
                merged[key] = value
        entries = [(k, v) for k, v in merged.items() if v is not None]
        compacted = f"{oldest:012d}-compacted"
        self._put(f"{folder}/{compacted}", msgpack.packb(entries, use_bin_type=True))
        for name in old:
            if name != compacted:
                self._remove(f"{folder}/{name}")

    def latest(self) -> int:
        return max(self._completed(), default=0)

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        folder = self._scope_folder(scope)
        completed = self._completed()
        merged: dict[bytes, bytes | None] = {}
        for name in self._list(folder):
            if int(name.split("-")[0]) <= checkpoint and self._valid(name, completed):
                for key, value in msgpack.unpackb(self._get(f"{folder}/{name}"), raw=False):
                    merged[key] = value
        return {k: v for k, v in merged.items() if v is not None and keep(k)}

    def close(self) -> None:
        pass


def _int_or_none(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


_MEMORY: dict[str, MemoryBackend] = {}


def _folder(conf: dict[str, Any]) -> str:
    default = os.path.join(tempfile.gettempdir(), "sparkstorm-state")
    return str(conf.get(cfg.STATE_DIR) or default).rstrip("/")


def open_backend(conf: dict[str, Any], state_id: str) -> StateBackend:
    """The backend ``topology.state.provider`` names, for the checkpoints of ``state_id``
    (a topology id on a cluster)."""
    provider = conf.get(cfg.STATE_PROVIDER, "sqlite")
    if provider == "memory":
        return _MEMORY.setdefault(state_id, MemoryBackend())
    if provider == "sqlite":
        return SqliteBackend(
            os.path.join(_folder(conf).removeprefix("file://"), f"{state_id}.sqlite")
        )
    if provider == "directory":
        return DirectoryBackend(f"{_folder(conf)}/{state_id}")
    raise ConfigError(f"{cfg.STATE_PROVIDER} must be memory, sqlite or directory, got {provider!r}")


def remove_state(conf: dict[str, Any], state_id: str) -> None:
    """Delete every checkpoint of ``state_id`` (a killed LocalCluster topology's; local
    paths only: shared stores are left to their owners)."""
    provider = conf.get(cfg.STATE_PROVIDER, "sqlite")
    folder = _folder(conf).removeprefix("file://")
    if provider == "memory":
        _MEMORY.pop(state_id, None)
    elif "://" in folder:
        return
    elif provider == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, f"{state_id}.sqlite{suffix}"))
    elif provider == "directory":
        shutil.rmtree(os.path.join(folder, state_id), ignore_errors=True)


def encode_value(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def decode_value(raw: bytes) -> Any:
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def scope_entries(items: Iterable[tuple[str, Any]]) -> Entries:
    """``(name, value)`` pairs as entries (a spout task's position and pending ids)."""
    return [(name.encode(), encode_value(value)) for name, value in items]
