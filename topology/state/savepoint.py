"""Savepoints: a topology's committed state as of one complete checkpoint, copied into a
directory of its own at any path or fsspec URL (the format, read and written here; taking
one from a running topology and restoring one are :mod:`topology.deploy.savepoints`)::

    <dir>/savepoint-<topology>-<UTC time>-<random>/
        _metadata.json        what it holds; written last: without it there is no savepoint
        scope-00000.msgpack   one file per scope: a msgpack stream of [key, value] pairs
        scope-00001.msgpack   (keys and values as the state backend stores them)

``_metadata.json``::

    {"format": 1, "topology": "wc", "topology_id": "wc-3-1767225600", "checkpoint": 42,
     "created_at": "2026-11-26T01:02:03Z", "key_groups": 128, "backend": "sqlite",
     "components": {"count": {"uid": "count", "kind": "bolt", "tasks": 2, "state": ["keyed"]}},
     "scopes": {"count": {"uid": "count", "file": "scope-00000.msgpack", "entries": 1000,
                          "bytes": 18000}}}

Scopes are named by the uid of the component they belong to (``<uid>``, ``<uid>#<task>``,
``<uid>/windows``...: :mod:`topology.runtime.checkpoint.state_layout`), so a new version of
a topology finds its state by uid.  Data files are written and read in chunks: a scope of
ten million keys never has to fit in memory.  ``_metadata.json`` and the data files are read
as hostile input (:mod:`.savepoint_schema`).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, BinaryIO, cast

import fsspec
import msgpack
from fsspec.implementations.local import LocalFileSystem

from .savepoint_schema import FORMAT_VERSION, MetadataProblem, SavepointError, check_metadata

__all__ = [
    "FORMAT_VERSION",
    "METADATA",
    "SavepointError",
    "SavepointInfo",
    "SavepointWriter",
    "ScopeFile",
    "list_savepoints",
    "read_savepoint",
    "read_scope",
]

#: The description of a savepoint, written after every data file.
METADATA = "_metadata.json"
#: Largest ``_metadata.json`` read (bytes).
MAX_METADATA_BYTES = 64 << 20
#: ``_metadata.json`` holds at most one JSON array or object per this many bytes (each of
#: its objects takes far more): a file of ``[],[],...`` would parse to 20 times its size.
BYTES_PER_CONTAINER = 16
#: Entries packed into one write of a data file.
CHUNK_ENTRIES = 4096
#: Largest key or value a data file may hold (bytes): anything bigger is a corrupt file.
MAX_ENTRY_BYTES = 256 << 20


@dataclass(frozen=True)
class ScopeFile:
    """One scope of a savepoint: whose (``uid``), where (``file``) and how much."""

    uid: str
    file: str
    entries: int
    bytes: int


@dataclass(frozen=True)
class SavepointInfo:
    """What a savepoint holds (its ``_metadata.json``) and where it is (``path``)."""

    path: str
    topology: str
    topology_id: str
    checkpoint: int
    created_at: str
    key_groups: int
    backend: str
    #: Component id -> ``{"uid", "kind", "tasks", "state": [kinds]}`` when it was taken.
    components: dict[str, dict[str, Any]]
    scopes: dict[str, ScopeFile]

    def metadata(self) -> dict[str, Any]:
        """The ``_metadata.json`` document."""
        return {
            "format": FORMAT_VERSION,
            "topology": self.topology,
            "topology_id": self.topology_id,
            "checkpoint": self.checkpoint,
            "created_at": self.created_at,
            "key_groups": self.key_groups,
            "backend": self.backend,
            "components": self.components,
            "scopes": {scope: asdict(f) for scope, f in self.scopes.items()},
        }

    def uids_with_state(self) -> dict[str, tuple[int, int]]:
        """Uid -> (entries, bytes) over its scopes, for every uid with at least one entry."""
        totals: dict[str, tuple[int, int]] = {}
        for f in self.scopes.values():
            entries, size = totals.get(f.uid, (0, 0))
            totals[f.uid] = (entries + f.entries, size + f.bytes)
        return {uid: t for uid, t in totals.items() if t[0]}

    def describe(self) -> dict[str, Any]:
        """The metadata with the path and, per component, its entries and bytes (what
        ``sparkstorm savepoint --inspect`` shows)."""
        totals = self.uids_with_state()
        return {
            "path": self.path,
            **self.metadata(),
            "components": {
                c: {
                    **info,
                    "entries": totals.get(info["uid"], (0, 0))[0],
                    "bytes": totals.get(info["uid"], (0, 0))[1],
                }
                for c, info in self.components.items()
            },
        }


def _filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` (a path or URL) and the path in it."""
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise SavepointError(f"savepoint location {url!r}: {exc}") from None
    return fs, str(root).rstrip("/")


def _joined(url: str, name: str) -> str:
    """``url``/``name`` as the user gave ``url`` (a local path made absolute)."""
    if "://" in url:
        return f"{url.rstrip('/')}/{name}"
    return os.path.join(os.path.abspath(url), name)


class SavepointWriter:
    """Writes one savepoint under ``directory``: :meth:`add_scope` per scope, then
    :meth:`finish` (the metadata, last); :meth:`abort` removes what was written."""

    def __init__(self, directory: str, topology: str, now: datetime | None = None) -> None:
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
        name = f"savepoint-{topology}-{stamp}-{secrets.token_hex(3)}"
        self.topology = topology
        self.created_at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.path = _joined(directory, name)
        self.fs, self.root = _filesystem(self.path)
        self.scopes: dict[str, ScopeFile] = {}
        try:
            self.fs.makedirs(self.root, exist_ok=True)
        except OSError as exc:
            raise SavepointError(f"cannot create savepoint {self.path}: {exc}") from None

    def add_scope(self, scope: str, uid: str, entries: Iterable[tuple[bytes, bytes]]) -> ScopeFile:
        """Write ``entries`` (stored keys and values) as ``scope``'s data file, in chunks."""
        file = f"scope-{len(self.scopes):05d}.msgpack"
        packer = msgpack.Packer(use_bin_type=True)
        count = size = 0
        with self.fs.open(f"{self.root}/{file}", "wb") as out:
            chunk: list[bytes] = []
            for key, value in entries:
                chunk.append(packer.pack((key, value)))
                count += 1
                if len(chunk) >= CHUNK_ENTRIES:
                    size += out.write(b"".join(chunk)) or 0
                    chunk = []
            size += out.write(b"".join(chunk)) or 0
        self.scopes[scope] = ScopeFile(uid, file, count, size)
        return self.scopes[scope]

    def finish(
        self,
        *,
        topology_id: str,
        checkpoint: int,
        key_groups: int,
        backend: str,
        components: dict[str, dict[str, Any]],
    ) -> SavepointInfo:
        """Write ``_metadata.json`` (under a temporary name, then renamed): from now on the
        savepoint is complete."""
        info = SavepointInfo(
            self.path,
            self.topology,
            topology_id,
            checkpoint,
            self.created_at,
            key_groups,
            backend,
            components,
            dict(self.scopes),
        )
        data = json.dumps(info.metadata(), indent=1, sort_keys=True).encode()
        tmp = f"{self.root}/.{METADATA}.tmp-{secrets.token_hex(4)}"
        with self.fs.open(tmp, "wb") as out:
            out.write(data)
        self.fs.mv(tmp, f"{self.root}/{METADATA}")
        return info

    def abort(self) -> None:
        """Remove the unfinished savepoint (best effort)."""
        try:
            self.fs.rm(self.root, recursive=True)
        except (OSError, FileNotFoundError):
            pass


def _open_regular(fs: Any, path: str, most: int, where: str) -> BinaryIO:
    """``path`` opened for reading when it is a regular file of at most ``most`` bytes;
    :class:`SavepointError` naming ``where`` for anything else (a FIFO, a device, a
    directory, a symbolic link, a larger file) before a byte is read.  A local file is
    opened without blocking (a FIFO would wait for a writer) and checked on the open
    descriptor; on other filesystems by what fsspec says of it."""
    if not isinstance(fs, LocalFileSystem):
        found = fs.info(path)
        kind, size = found.get("type"), found.get("size")
        if kind != "file" or not isinstance(size, int):
            raise SavepointError(f"{where} is not a regular file ({kind}): not read")
        _check_size(size, most, where)
        return cast(BinaryIO, fs.open(path, "rb"))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SavepointError(f"{where} is a symbolic link: not read") from None
        raise
    try:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            kind = "a directory" if stat.S_ISDIR(mode.st_mode) else "a FIFO or device"
            raise SavepointError(f"{where} is {kind}, not a regular file: not read")
        _check_size(mode.st_size, most, where)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_size(size: int, most: int, where: str) -> None:
    if size > most:
        raise SavepointError(f"{where} has {size:,} bytes, more than {most:,}: not read")


def read_savepoint(path: str) -> SavepointInfo:
    """The savepoint at ``path`` (a path or fsspec URL), its metadata checked;
    :class:`SavepointError` naming the file and field for anything else.  Reads only a
    regular ``_metadata.json`` of at most :data:`MAX_METADATA_BYTES`, with at most one
    JSON array or object per :data:`BYTES_PER_CONTAINER` bytes (so that parsing it stays
    within a few times its size)."""
    fs, root = _filesystem(path)
    where = f"savepoint {path}: {METADATA}"
    try:
        with _open_regular(fs, f"{root}/{METADATA}", MAX_METADATA_BYTES, where) as f:
            raw = f.read(MAX_METADATA_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        raise SavepointError(
            f"no savepoint at {path}: {METADATA} is missing (not a savepoint, or one that "
            "was never finished)"
        ) from None
    except OSError as exc:
        raise SavepointError(f"{where}: {exc}") from None
    _check_size(len(raw), MAX_METADATA_BYTES, where)
    containers = raw.count(b"[") + raw.count(b"{")
    if containers > len(raw) // BYTES_PER_CONTAINER + 16:
        raise SavepointError(
            f"{where}: {containers:,} arrays and objects in {len(raw):,} bytes, more than "
            f"one per {BYTES_PER_CONTAINER} bytes: not a savepoint's description"
        )
    try:
        data = check_metadata(json.loads(raw))
    except (ValueError, RecursionError) as exc:
        raise SavepointError(f"{where} is not JSON: {str(exc)[:200]}") from None
    except MetadataProblem as exc:
        raise SavepointError(f"{where}: {exc}") from None
    return SavepointInfo(
        path,
        data["topology"],
        data["topology_id"],
        data["checkpoint"],
        data["created_at"],
        data["key_groups"],
        data["backend"],
        {c: dict(v) for c, v in data["components"].items()},
        {
            scope: ScopeFile(v["uid"], v["file"], v["entries"], v["bytes"])
            for scope, v in data["scopes"].items()
        },
    )


#: Savepoints :func:`list_savepoints` describes at most (the newest), and directory
#: entries it looks at at most.
LISTED_SAVEPOINTS = 20
MAX_LISTED_ENTRIES = 100_000


def list_savepoints(
    directory: str, topology: str, limit: int = LISTED_SAVEPOINTS
) -> list[dict[str, Any]]:
    """The newest ``limit`` savepoints of ``topology`` in ``directory`` (a path or fsspec
    URL; what ``sparkstorm savepoint NAME`` writes there), newest first:
    ``{"path", "created_at", "checkpoint", "topology_id", "entries", "bytes"}`` (bytes of
    its data files), or ``{"path", "error"}`` for one that cannot be read (unfinished, or
    its metadata refused by :func:`read_savepoint`).  A missing directory has none."""
    fs, root = _filesystem(directory)
    prefix = f"savepoint-{topology}-"
    try:
        names = [str(n).rstrip("/").rsplit("/", 1)[-1] for n in fs.ls(root, detail=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise SavepointError(f"savepoint directory {directory}: {exc}") from None
    # savepoint-<topology>-<UTC time>-<random>: newest first by the time in the name
    mine = sorted(
        (n for n in names[:MAX_LISTED_ENTRIES] if n.startswith(prefix)),
        key=lambda n: n[len(prefix) :],
        reverse=True,
    )
    out: list[dict[str, Any]] = []
    for name in mine:
        path = _joined(directory, name)
        try:
            info = read_savepoint(path)
        except SavepointError as exc:
            out.append({"path": path, "error": str(exc)[:300]})
        else:
            if info.topology != topology:
                continue  # another topology's whose name starts the same
            out.append(
                {
                    "path": path,
                    "created_at": info.created_at,
                    "checkpoint": info.checkpoint,
                    "topology_id": info.topology_id,
                    "entries": sum(f.entries for f in info.scopes.values()),
                    "bytes": sum(f.bytes for f in info.scopes.values()),
                }
            )
        if len(out) >= limit:
            break
    return out


def read_scope(info: SavepointInfo, scope: str) -> Iterator[tuple[bytes, bytes]]:
    """The entries of ``scope`` in savepoint ``info``, streamed from its data file;
    :class:`SavepointError` (naming the file) for a missing, corrupt or miscounted one."""
    entry = info.scopes[scope]
    fs, root = _filesystem(info.path)
    where = f"savepoint {info.path}: {entry.file} (scope {scope!r})"
    count = 0
    try:
        with _open_regular(fs, f"{root}/{entry.file}", entry.bytes, where) as f:
            unpacker = msgpack.Unpacker(
                f,
                raw=False,
                use_list=False,
                max_buffer_size=2 * MAX_ENTRY_BYTES + 64,
                max_bin_len=MAX_ENTRY_BYTES,
                max_str_len=0,
                max_map_len=0,
                max_ext_len=0,
                max_array_len=2,
            )
            for item in unpacker:
                if not (
                    isinstance(item, tuple)
                    and len(item) == 2
                    and all(isinstance(part, bytes) for part in item)
                ):
                    raise SavepointError(f"{where}: entry {count} is not a [key, value] of bytes")
                count += 1
                if count > entry.entries:
                    break
                yield item
    except FileNotFoundError:
        raise SavepointError(f"{where} is missing") from None
    except SavepointError:
        raise
    except Exception as exc:  # msgpack's many errors for a corrupt stream, an I/O error
        raise SavepointError(f"{where} is corrupt after {count} entries: {exc!r:.200}") from None
    if count != entry.entries:
        held = f"more than {entry.entries}" if count > entry.entries else str(count)
        raise SavepointError(f"{where} holds {held} entries, {METADATA} says {entry.entries}")
