"""The ``directory`` provider: files under ``topology.state.dir`` read as a path or an
``fsspec`` URL (``file://``, ``hdfs://``, ``s3://`` where fsspec and the filesystem are
installed): a directory every host sees, for clusters where a task restarts on another
host."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import IO, Any

from topology import user_dirs
from topology.errors import ConfigError

from . import pins as pin_records
from .codec import pack_entries, unpack_entries
from .directory_stream import (
    SORTED,
    Entry,
    merged,
    sorted_entries,
    write_entries,
)
from .registry import (
    KEEP_COMPLETE,
    CheckpointGone,
    CorruptCheckpoint,
    Entries,
    local_state_folder,
    register,
    retained,
    state_folder,
)

#: Times a read lists a scope again when a compaction removed a file it was reading (the
#: fold holds the same entries under another name).
READ_ATTEMPTS = 5
#: Largest completion record read (bytes): larger ones are not complete checkpoints.
MAX_RECORD_BYTES = 1 << 20


@register("directory")
class DirectoryBackend:
    """Checkpoints as files under a directory every host sees (a path, or an fsspec URL).

    ``scopes/<scope>/<checkpoint>-<epoch>-<writer>`` hold the rows one task wrote;
    ``complete/<checkpoint>`` names the epoch whose files that checkpoint commits; rows up
    to the oldest kept checkpoint are folded into ``<checkpoint>-compacted`` files;
    ``pinned/<checkpoint>`` keeps a checkpoint (and the files it needs) through that.
    """

    @classmethod
    def open(cls, conf: Mapping[str, Any], state_id: str) -> DirectoryBackend:
        local = local_state_folder(conf, state_id)  # made and checked when it is local
        return cls(local or f"{state_folder(conf)}/{state_id}", retained(conf))

    @classmethod
    def remove(cls, conf: Mapping[str, Any], state_id: str) -> None:
        """Delete the topology's folder, under a path or any fsspec URL."""
        folder = state_folder(conf)
        local = local_state_folder(conf)
        if local is not None:
            shutil.rmtree(os.path.join(local, state_id), True)
            return
        import fsspec  # noqa: PLC0415 - only for URLs

        fs, root = fsspec.core.url_to_fs(f"{folder}/{state_id}")
        try:
            fs.rm(root, recursive=True)
        except FileNotFoundError:
            pass

    def __init__(self, url: str, retained: int = KEEP_COMPLETE) -> None:
        self.url = url.rstrip("/")
        #: Complete checkpoints kept (``topology.state.checkpoints.retained``).
        self.retained = retained
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
            user_dirs.make_dirs(path)
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
        return sorted(
            n for n in names if n.isascii() and not n.startswith(".") and ".tmp-" not in n
        )

    def _put(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` atomically (a temporary name, then a rename)."""
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        if self.fs is None:
            with open(tmp, "wb", opener=user_dirs.private_opener) as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        else:
            with self.fs.open(tmp, "wb") as f:
                f.write(data)
            self.fs.mv(tmp, path)

    def _put_entries(self, path: str, entries: Iterator[Entry]) -> None:
        """Write ``entries`` packed to ``path`` atomically, streamed to a local file (an
        array header of fixed width, filled in last: memory holds a write buffer, not the
        entries); under an fsspec URL packed in memory first."""
        if self.fs is not None:
            self._put(path, pack_entries(list(entries)))
            return
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        try:
            with open(tmp, "wb", opener=user_dirs.private_opener) as f:
                write_entries(f, entries)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            self._remove(tmp)
            raise

    def _get(self, path: str, most: int = -1) -> bytes:
        """The bytes of ``path`` (the first ``most + 1`` of them when ``most`` is given)."""
        if self.fs is None:
            with open(path, "rb") as f:
                return f.read(most + 1 if most >= 0 else -1)
        with self.fs.open(path, "rb") as f:
            return bytes(f.read(most + 1 if most >= 0 else -1))

    def _entries(self, path: str) -> Iterator[tuple[bytes, bytes | None]]:
        """The entries of one data file, read as hostile input (:class:`CorruptCheckpoint`
        naming the file for anything but what :meth:`write` stores)."""
        try:
            yield from unpack_entries(self._get(path))
        except ValueError as exc:
            raise CorruptCheckpoint(f"checkpoint file {path}: {exc}") from None

    def _open_sized(self, path: str) -> tuple[IO[bytes], int]:
        """``path`` opened for reading, and its size."""
        if self.fs is None:
            f: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by the reader
            return f, os.fstat(f.fileno()).st_size
        return self.fs.open(path, "rb"), int(self.fs.size(path))

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
        """Complete checkpoint -> the epoch it committed (a record that is not one
        :meth:`complete` wrote makes no checkpoint complete)."""
        out = {}
        for name in self._list(self._path("complete")):
            if name.isdigit():
                try:
                    raw = self._get(self._path("complete", name), MAX_RECORD_BYTES)
                    epoch = json.loads(raw)["epoch"] if len(raw) <= MAX_RECORD_BYTES else None
                except (FileNotFoundError, ValueError, TypeError, KeyError, RecursionError):
                    continue
                if type(epoch) is int:
                    out[int(name)] = epoch
        return out

    def _data_files(self, folder: str) -> list[tuple[int, str]]:
        """``(checkpoint, name)`` of the data files of a scope's folder (other names are
        not this provider's: left alone)."""
        out = []
        for name in self._list(folder):
            head = name.split("-")[0]
            if head.isdigit():
                out.append((int(head), name))
        return out

    def reserve(self) -> int:
        ids = [self.latest(), 0]
        for folder in self._list(self._path("scopes")):
            ids += [c for c, _ in self._data_files(self._path("scopes", folder))]
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
            f"{folder}/{checkpoint:012d}-{epoch}-{writer}{SORTED}",
            pack_entries(sorted_entries(entries)),
        )

    def complete(self, checkpoint: int, epoch: int, info: dict[str, Any]) -> None:
        self._put(
            self._path("complete", f"{checkpoint:012d}"),
            json.dumps({**info, "epoch": epoch}).encode(),
        )
        completed = self._completed()
        kept = sorted(completed)[-self.retained :]
        # a pinned checkpoint's files, and the completion records of every checkpoint from
        # it on (which make those files valid), stay until it is unpinned
        oldest = min([kept[0], *self._pins()])
        for folder in self._list(self._path("scopes")):
            self._compact(self._path("scopes", folder), completed, oldest, checkpoint)
        for old in completed:
            if old < oldest:
                self._remove(self._path("complete", f"{old:012d}"))

    def _valid(self, name: str, completed: dict[int, int]) -> bool:
        head, epoch, *_ = name.split("-") + [""]
        return epoch == "compacted" or completed.get(int(head)) == _int_or_none(epoch)

    def _compact(self, folder: str, completed: dict[int, int], oldest: int, newest: int) -> None:
        """Fold the valid files up to ``oldest`` into one; remove garbage up to ``newest``."""
        files = self._data_files(folder)
        for checkpoint, name in files:
            if checkpoint <= newest and not self._valid(name, completed):
                self._remove(f"{folder}/{name}")
        old = [n for c, n in files if c <= oldest and self._valid(n, completed)]
        if not old or (len(old) == 1 and old[0].split("-")[1:2] == ["compacted"]):
            return  # (a lone file is folded too: its completion record goes away next)
        compacted = f"{oldest:012d}-compacted{SORTED}"
        try:  # names sort by checkpoint id first
            live = ((k, v) for k, v in self._merged(folder, old) if v is not None)
            self._put_entries(f"{folder}/{compacted}", live)
        except CorruptCheckpoint:
            return  # left as it is: a restore reports it
        for name in old:
            if name != compacted:
                self._remove(f"{folder}/{name}")

    def latest(self) -> int:
        return max(self._completed(), default=0)

    def _pins(self) -> list[int]:
        """The pinned checkpoints; stale pins (:func:`.pins.stale`: a killed holder's)
        are removed on the way."""
        out = []
        for name in self._list(self._path("pinned")):
            if name.isdigit():
                pin = self._pin_record(name)
                if pin is not None and pin_records.stale(pin):
                    self._remove(self._path("pinned", name))
                else:
                    out.append(int(name))
        return out

    def _pin_record(self, name: str) -> pin_records.Pin | None:
        """The record of ``pinned/<name>`` (None: it is gone)."""
        path = self._path("pinned", name)
        try:
            raw = self._get(path, pin_records.MAX_RECORD_BYTES)
            if self.fs is None:
                written = os.stat(path).st_mtime
            else:
                modified = self.fs.modified(path)
                written = modified.timestamp()
        except FileNotFoundError:
            return None
        except (OSError, NotImplementedError, AttributeError):
            written = time.time()  # no time known: the lease runs from now
        return pin_records.parse(raw, written)

    def scopes(self) -> list[str]:
        completed = self._completed()
        return sorted(
            folder.replace("%2F", "/").replace("%25", "%")
            for folder in self._list(self._path("scopes"))
            if any(
                self._valid(n, completed) for _, n in self._data_files(self._path("scopes", folder))
            )
        )

    def pin(self, checkpoint: int) -> None:
        """Write ``pinned/<checkpoint>``, then make sure no compaction that ran without
        seeing it dropped the checkpoint: one that lists the pins after this has (its
        completion record is newer than the newest seen here), and the older ones fold
        only checkpoints ``retained`` behind theirs.  The file records this process and the
        time (:mod:`.pins`): pinning again renews it; a compaction removes it once stale."""
        name = f"{checkpoint:012d}"
        held = self._pin_record(name)
        self._mkdirs(self._path("pinned"))
        self._put(self._path("pinned", name), pin_records.record())
        if held is not None and held.mine():
            return  # a renewal: the pin held all along
        completed = self._completed()
        latest = max(completed, default=0)
        if checkpoint not in completed or latest >= checkpoint + self.retained:
            self.unpin(checkpoint)
            raise CheckpointGone(checkpoint, latest)

    def unpin(self, checkpoint: int) -> None:
        self._remove(self._path("pinned", f"{checkpoint:012d}"))

    def info(self, checkpoint: int) -> dict[str, Any]:
        path = self._path("complete", f"{checkpoint:012d}")
        try:
            raw = self._get(path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            raise CheckpointGone(checkpoint, self.latest()) from None
        try:
            record = json.loads(raw) if len(raw) <= MAX_RECORD_BYTES else None
        except (ValueError, RecursionError):
            record = None
        if not isinstance(record, dict):
            raise CorruptCheckpoint(f"completion record {path} is not one this provider wrote")
        record.pop("epoch", None)
        return dict(record)

    def read_all(self, checkpoint: int, scope: str) -> Iterator[tuple[bytes, bytes]]:
        """Streamed: the scope's files merged in key order, a read buffer per file in
        memory (files an older version wrote unsorted are read whole).  A file folded into
        a compacted one meanwhile makes it list the files again and go on after the last
        key it gave."""
        after: bytes | None = None
        for attempt in range(READ_ATTEMPTS):
            try:
                for key, value in self._read_all(checkpoint, scope):
                    if after is None or key > after:
                        after = key
                        if value is not None:
                            yield key, value
                return
            except FileNotFoundError:  # folded into a compacted file meanwhile: list again
                if attempt == READ_ATTEMPTS - 1:
                    raise

    def read(
        self, checkpoint: int, scope: str, keep: Callable[[bytes], bool]
    ) -> dict[bytes, bytes]:
        return {k: v for k, v in self.read_all(checkpoint, scope) if keep(k)}

    def _read_all(self, checkpoint: int, scope: str) -> Iterator[Entry]:
        """The scope's entries as of ``checkpoint`` in key order, deletions included."""
        folder = self._scope_folder(scope)
        completed = self._completed()
        names = [
            name
            for at, name in self._data_files(folder)
            if at <= checkpoint and self._valid(name, completed)
        ]
        return self._merged(folder, names)

    def _merged(self, folder: str, names: list[str]) -> Iterator[Entry]:
        """The entries of ``names`` (oldest first) merged, one a key, the newest winning,
        in key order: streamed when every file is sorted, else read whole."""
        if all(name.endswith(SORTED) for name in names):
            paths = [f"{folder}/{name}" for name in names]
            return merged([(path, partial(self._open_sized, path)) for path in paths])
        whole: dict[bytes, bytes | None] = {}
        for name in names:
            whole.update(self._entries(f"{folder}/{name}"))
        return iter(sorted(whole.items()))

    def close(self) -> None:
        pass


def _int_or_none(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None
