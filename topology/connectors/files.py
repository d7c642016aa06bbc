"""Files through fsspec — a local path or any URL (``memory://``, ``s3://``, ``hdfs://``...):
:class:`FileSource` reads lines or JSON lines of the files of a directory or glob, watching
it for new files; the part files :class:`~topology.connectors.files_sink.FileSink` writes
are made here (JSON lines or Parquet).  The only module that imports ``fsspec`` and
``pyarrow``, lazily (``pip install 'sparkstorm[files]'``).

Example::

    builder.set_spout(
        "orders",
        FileSource("s3://bucket/orders/*.json.gz", format="json", fields=["id", "amount"],
                   guarantee="exactly_once"),
        2,
    )

Each file is a partition (its path relative to the directory watched, or to the glob's
fixed prefix) and belongs to one task, by a stable hash of that path; a position is
``[byte offset, lines read]`` of the (decompressed) file.  Why not extend ``FileSpout``:
it lives in ``topology.state``, a layer below the connectors, which may not import
fsspec; it stays as it is (local files, no errors stream), and this is its fsspec twin
on the connector base.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import os
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from grouping.hashing import stable_hash
from topology.components import OutputFieldsDeclarer

from .retry import TransientError, missing_extra
from .source import PartitionedSource, Record

if TYPE_CHECKING:
    from topology.context import TopologyContext

FORMATS = ("lines", "json")


def fsspec_module() -> Any:
    try:
        import fsspec
    except ImportError as exc:
        raise missing_extra("fsspec", "files") from exc
    return fsspec


def pyarrow_modules() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise missing_extra("pyarrow", "files") from exc
    return pyarrow, pyarrow.parquet


def filesystem(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path in it (no trailing ``/``)."""
    fs, path = fsspec_module().core.url_to_fs(url, **dict(storage_options or {}))
    return fs, (path.rstrip("/") or path)


def hidden(name: str) -> bool:
    """Spark's rule (and ours): a file or directory named ``_...`` or ``.…`` is not data."""
    return name.startswith(("_", "."))


def _relative(root: str, path: str) -> str:
    return path[len(root) :].lstrip("/") if path.startswith(root) else path


class FileSource(PartitionedSource):
    """Lines (``format="lines"``) or JSON lines (``format="json"``) of files, any fsspec URL.

    Args:
        url: a file, a directory (its files matching ``pattern``) or a glob
            (``s3://b/logs/2026-*/*.gz``); hidden files (``_x``, ``.x``) are skipped.
        pattern: a glob on the file names of a directory.
        recursive: also read the files of a directory's subdirectories.
        format: ``"lines"`` emits ``[line]``; ``"json"`` parses each line — a line that is
            not a JSON object (or lacks a field) goes to the ``errors`` stream.
        fields: ``format="json"``: the object's fields to emit, in order (None: the whole
            object as one field ``record``).
        include_source: put ``file`` and ``line_no`` (1-based) before the values.
        poll_interval_secs: how often the directory or glob is listed again for new files
            and files that grew.
        compression: ``"infer"`` (by extension: ``.gz``, ``.bz2``...), None or a name.
        encoding: how lines are decoded (undecodable bytes are replaced).
        storage_options: passed to fsspec (credentials, endpoint...).
        **settings: the :class:`PartitionedSource` settings (``guarantee``, ``max_batch``...).

    Plain files may grow by appending (only lines ended by a newline are read); compressed
    files must appear whole (write them under a hidden name and rename), their last line
    needs no newline.  At-least-once commits nothing: a restart reads every file again;
    ``guarantee="exactly_once"`` resumes from the checkpoint.
    """

    def __init__(
        self,
        url: str,
        *,
        pattern: str = "*",
        recursive: bool = False,
        format: str = "lines",
        fields: list[str] | None = None,
        include_source: bool = False,
        poll_interval_secs: float = 1.0,
        compression: str | None = "infer",
        encoding: str = "utf-8",
        storage_options: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        if format not in FORMATS:
            raise ValueError(f"FileSource format must be one of {FORMATS}, got {format!r}")
        if fields is not None and format != "json":
            raise ValueError("FileSource fields= needs format='json'")
        if poll_interval_secs < 0:
            raise ValueError(f"poll_interval_secs must be >= 0, got {poll_interval_secs}")
        self.url = url
        self.pattern = pattern
        self.recursive = recursive
        self.format = format
        self.fields = list(fields) if fields is not None else None
        self.include_source = include_source
        self.poll_interval_secs = poll_interval_secs
        self.compression = compression
        self.encoding = encoding
        self.storage_options = dict(storage_options or {})

    def output_fields(self) -> list[str]:
        values = ["line"] if self.format == "lines" else (self.fields or ["record"])
        return (["file", "line_no"] if self.include_source else []) + values

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.output_fields())
        super().declare_output_fields(declarer)  # the errors stream

    # -- the connector ----------------------------------------------------------------------

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._fs, path = filesystem(self.url, self.storage_options)
        self._glob = fsspec_module().core.has_magic(path)
        if self._glob:
            fixed = path[: min(path.index(c) for c in "*?[" if c in path)]
            self._root = fixed.rsplit("/", 1)[0]
            self._path = path
        elif self._fs.isfile(path):
            self._root, self._path = path.rsplit("/", 1)[0], path
        else:
            self._root = self._path = path
        self._sizes: dict[str, int] = {}  # file -> size at the last listing
        self._exhausted: dict[str, int] = {}  # file -> its size when read to the end
        self._handles: dict[str, tuple[Any, Any, int]] = {}  # file -> raw, reader, offset
        self._next_scan = 0.0

    def disconnect(self) -> None:
        for name in list(self._handles):
            self._drop_handle(name)

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().open(conf, context)
        self._scan()

    def assigned(self, partitions: list[str]) -> list[str]:
        """Files come and go, so a file belongs to the task its stable hash names (the same
        after any restart), not to a slot in a sorted list."""
        return [name for name in partitions if self._mine(name)]

    def partitions(self) -> list[str]:
        return sorted(self._list())

    def start_position(self, partition: str) -> list[int]:
        return [0, 0]

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        if self._exhausted.get(partition, -1) == self._sizes.get(partition):
            return []  # read to the end, and not grown since
        offset, line_no = (int(p) for p in (position or [0, 0]))
        records: list[Record] = []
        whole = self._codec(partition) is not None  # a compressed file ends with its last line
        try:
            reader = self._reader(partition, offset)
            while len(records) < max_records:
                raw = reader.readline()
                if not raw.endswith(b"\n") and not (raw and whole):
                    self._rest(partition)  # the end, or a line still being written
                    return records
                offset, line_no = offset + len(raw), line_no + 1
                records.append(Record(partition, [offset, line_no], raw.rstrip(b"\r\n")))
            raw_file, reader, _ = self._handles[partition]
            self._handles[partition] = (raw_file, reader, offset)
        except FileNotFoundError:  # deleted: nothing more to read
            self._rest(partition)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            self.log(f"{partition} is incomplete or corrupt, read again when it changes: {exc!r}")
            self._rest(partition)
        except OSError as exc:  # a flaky store: the base rests, then reads again
            self._drop_handle(partition)
            if records:
                return records
            raise TransientError(f"reading {partition}: {exc!r}") from exc
        return records

    def _rest(self, partition: str) -> None:
        """Read to its end: not again until a listing finds it changed."""
        self._drop_handle(partition)
        self._exhausted[partition] = self._sizes.get(partition, -1)

    def decode(self, record: Record) -> list[Any]:
        text = record.value.decode(self.encoding, "replace")
        if self.format == "lines":
            values: list[Any] = [text]
        else:
            row = json.loads(text)
            if not isinstance(row, dict):
                raise ValueError(f"not a JSON object: {type(row).__name__}")
            values = [row] if self.fields is None else [row[f] for f in self.fields]
        if self.include_source:
            values = [record.partition, record.position[1], *values]
        return values

    # -- files: listing, ownership, readers ------------------------------------------------

    def next_tuple(self) -> None:
        if self.backoff.clock() >= self._next_scan:
            self._scan()
        super().next_tuple()

    def seek(self, position: Any) -> None:
        for name in dict(position):  # a file found after open, known to the checkpoint
            if self._mine(name):
                self.adopt(name)
        super().seek(position)
        self._exhausted.clear()

    def _mine(self, name: str) -> bool:
        return stable_hash([name]) % self.task_count == self.task_index

    def _list(self) -> dict[str, int]:
        """``{file: size}`` of every data file (relative names)."""
        fs = self._fs
        fs.invalidate_cache()
        if self._glob:
            found = fs.glob(self._path, detail=True)
        elif self._path != self._root:
            found = {self._path: fs.info(self._path)} if fs.exists(self._path) else {}
        else:
            found = fs.find(self._path, maxdepth=None if self.recursive else 1, detail=True)
        out = {}
        for path, info in found.items():
            name = _relative(self._root, path)
            base = name.rsplit("/", 1)[-1]
            if info.get("type") == "directory" or any(hidden(p) for p in name.split("/")):
                continue
            if self._glob or fnmatch.fnmatch(base, self.pattern):
                out[name] = int(info.get("size") or 0)
        return out

    def _scan(self) -> None:
        self._next_scan = self.backoff.clock() + self.poll_interval_secs
        try:
            listing = self._list()
        except (FileNotFoundError, OSError) as exc:
            self.log(f"listing {self.url} failed, next try in {self.poll_interval_secs}s: {exc!r}")
            return
        self._sizes = listing
        for name in sorted(listing):
            if self._mine(name):
                self.adopt(name)

    def _codec(self, name: str) -> str | None:
        if self.compression == "infer":
            return fsspec_module().utils.infer_compression(name)
        return self.compression

    def _reader(self, name: str, offset: int) -> Any:
        cached = self._handles.get(name)
        if cached is not None and cached[2] == offset:
            return cached[1]
        self._drop_handle(name)
        raw = self._fs.open(f"{self._root}/{name}" if self._root else name, "rb")
        codec = self._codec(name)
        if codec is None:
            reader = raw
        else:
            reader = fsspec_module().compression.compr[codec](raw, mode="rb")
        reader.seek(offset)  # a compressed one decompresses up to there
        self._handles[name] = (raw, reader, offset)
        return reader

    def _drop_handle(self, name: str) -> None:
        handle = self._handles.pop(name, None)
        if handle is not None:
            for f in (handle[1], handle[0]):
                try:
                    f.close()
                except Exception:  # noqa: S110 - closing a reader that failed
                    pass


# -- part files (FileSink) --------------------------------------------------------------------


class PartFile:
    """One part file being written under a hidden name: JSON lines (optionally gzip) or
    Parquet.  ``size`` counts bytes written (JSON before compression; Parquet row groups
    flushed); ``close`` makes it complete and durable."""

    def __init__(
        self,
        fs: Any,
        path: str,
        format: str,
        opened_at: float,
        *,
        compression: str | None = None,
        schema: Any = None,
        row_group_rows: int = 10_000,
    ) -> None:
        self.fs, self.path, self.format, self.opened_at = fs, path, format, opened_at
        self.rows = 0
        self._raw = fs.open(path, "wb")
        self._out: Any = self._raw
        self._parquet: Any = None
        self._schema = schema
        self._pending: list[dict[str, Any]] = []
        self._row_group_rows = row_group_rows
        self._json_bytes = 0
        self._codec = compression
        if format == "json" and compression:
            self._out = fsspec_module().compression.compr[compression](self._raw, mode="wb")

    @property
    def size(self) -> int:
        return self._json_bytes if self.format == "json" else int(self._raw.tell())

    def write(self, rows: list[dict[str, Any]]) -> None:
        self.rows += len(rows)
        if self.format == "json":
            data = b"".join(
                json.dumps(r, separators=(",", ":"), default=str).encode() + b"\n" for r in rows
            )
            self._json_bytes += len(data)
            self._out.write(data)
            return
        self._pending.extend(rows)
        if len(self._pending) >= self._row_group_rows:
            self._flush_rows()

    def _flush_rows(self) -> None:
        if not self._pending:
            return
        pa, pq = pyarrow_modules()
        rows, self._pending = self._pending, []
        if self._parquet is None:
            table = pa.Table.from_pylist(rows, schema=self._schema)
            self._parquet = pq.ParquetWriter(
                self._raw, table.schema, compression=self._codec or "snappy"
            )
        else:
            table = pa.Table.from_pylist(rows, schema=self._parquet.schema)
        self._parquet.write_table(table)

    def close(self) -> None:
        """Write what is buffered and the footer; flush and fsync where the store can."""
        if self.format == "parquet":
            self._flush_rows()
            if self._parquet is not None:
                self._parquet.close()
        elif self._out is not self._raw:
            self._out.close()  # the gzip trailer (the raw file stays open)
        self._raw.flush()
        try:
            os.fsync(self._raw.fileno())
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            pass  # not a local file: the store makes it durable on close
        self._raw.close()

    def discard(self) -> None:
        """Close without caring, and delete."""
        for f in (self._out, self._raw):
            try:
                f.close()
            except Exception:  # noqa: S110 - the file is deleted next
                pass
        remove(self.fs, self.path)


def publish(fs: Any, source: str, target: str) -> bool:
    """Rename ``source`` to ``target``, idempotently: done already when ``source`` is gone
    and ``target`` exists; a rename that copied but did not delete (object stores) is
    finished.  False when neither exists (someone removed the data)."""
    if fs.exists(source):
        if fs.exists(target):
            remove(fs, source)
        else:
            fs.mv(source, target)
        return True
    return bool(fs.exists(target))


def remove(fs: Any, path: str) -> None:
    try:
        fs.rm(path)
    except FileNotFoundError:
        pass


def find_files(fs: Any, root: str) -> list[str]:
    """Every file under ``root`` (none when it does not exist)."""
    try:
        fs.invalidate_cache()
        return sorted(fs.find(root))
    except FileNotFoundError:
        return []
