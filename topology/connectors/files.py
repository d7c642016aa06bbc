"""Files through fsspec — a local path or any URL (``memory://``, ``s3://``, ``hdfs://``...):
:class:`FileSource` reads lines or JSON lines of the files of a directory or glob, watching
it for new files, gzip and the other compressions fsspec knows included.

Example::

    builder.set_spout(
        "orders",
        FileSource("s3://bucket/orders/*.json.gz", format="json", fields=["id", "amount"],
                   guarantee="exactly_once"),
        2,
    )

Each file is a partition (its path relative to the directory watched, or to the glob's
fixed prefix) and belongs to one task, by a stable hash of that path; a position is
``[byte offset, lines read]`` of the (decompressed) file.
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import os
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from grouping.hashing import stable_hash
from topology.components import OutputFieldsDeclarer

from .file_store import filesystem, fsspec_module, hidden, outside
from .restored import shown
from .retry import TransientError
from .source import MAX_RAW_CHARS, PartitionedSource, Record, is_checkpointed

if TYPE_CHECKING:
    from topology.context import TopologyContext

FORMATS = ("lines", "json")
#: Longest line read by default (below ``topology.transfer.max.frame.bytes``).
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
#: Listings in a row a file must be missing from before its books are dropped.
LISTINGS_BEFORE_FORGETTING = 2


class _Overlong(bytes):
    """The first bytes of a line longer than ``max_line_bytes``, and its length."""

    length: int


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
        max_line_bytes: a longer line is not held in memory: it goes to the ``errors``
            stream (its first bytes) and reading goes on after it.
        **settings: the :class:`PartitionedSource` settings (``guarantee``, ``max_batch``...).

    Plain files may grow by appending (only lines ended by a newline are read); compressed
    files must appear whole (write them under a hidden name and rename), their last line
    needs no newline.  A plain file that shrinks below the position read is read again from
    its start; a file gone from two listings in a row, read to its end, is forgotten (one
    created again under its name is a new file).  At-least-once commits nothing: a restart
    reads every file again; ``guarantee="exactly_once"`` resumes from the checkpoint.

    Raises:
        ValueError: an unknown ``format``, ``fields`` without ``format="json"``, or a
            setting out of range.

    Example:
        >>> source = FileSource(
        ...     "s3://bucket/orders/*.json.gz", format="json", fields=["id", "amount"],
        ...     include_source=True, guarantee="exactly_once",
        ... )
        >>> source.output_fields()
        ['file', 'line_no', 'id', 'amount']
        >>> FileSource("/data", fields=["id"])
        Traceback (most recent call last):
        ...
        ValueError: FileSource fields= needs format='json'
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
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        name = type(self).__name__
        if format not in FORMATS:
            raise ValueError(f"{name} format must be one of {FORMATS}, got {format!r}")
        if fields is not None and format != "json":
            raise ValueError(f"{name} fields= needs format='json'")
        if poll_interval_secs < 0:
            raise ValueError(f"{name} poll_interval_secs must be >= 0, got {poll_interval_secs}")
        if max_line_bytes < 1:
            raise ValueError(f"{name} max_line_bytes must be >= 1, got {max_line_bytes}")
        self.max_line_bytes = max_line_bytes
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
        self._missing: dict[str, int] = {}  # owned file -> listings in a row without it
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
        if not whole and offset > self._sizes.get(partition, offset):
            self.log(f"{partition} shrank below the position read ({offset}): read from its start")
            offset = line_no = 0
        try:
            reader = self._reader(partition, offset)
            while len(records) < max_records:
                raw, length = self._line(reader, whole)
                if not raw.endswith(b"\n") and not (raw and whole) and length == len(raw):
                    self._rest(partition)  # the end, or a line still being written
                    return records
                offset, line_no = offset + length, line_no + 1
                value = raw if isinstance(raw, _Overlong) else raw.rstrip(b"\r\n")
                records.append(Record(partition, [offset, line_no], value))
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

    def _line(self, reader: Any, whole: bool) -> tuple[bytes, int]:
        """The next line and its length in the file; for a line over ``max_line_bytes``, an
        :class:`_Overlong` with its first bytes, the rest read past (not kept) — or
        ``(b"", 0)`` when that line has no end yet in a file that may grow (``whole``
        False: read again, all of it, once the file grows)."""
        limit = self.max_line_bytes
        raw = reader.readline(limit + 1)
        if len(raw) <= limit or raw.endswith(b"\n"):
            return raw, len(raw)
        length = len(raw)
        while True:
            chunk = reader.readline(limit)
            length += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        if not chunk and not whole:
            return b"", 0
        head = _Overlong(raw[:MAX_RAW_CHARS])
        head.length = length
        return head, length

    def _rest(self, partition: str) -> None:
        """Read to its end: not again until a listing finds it changed."""
        self._drop_handle(partition)
        self._exhausted[partition] = self._sizes.get(partition, -1)

    def decode(self, record: Record) -> list[Any]:
        if isinstance(record.value, _Overlong):
            raise ValueError(
                f"line {record.position[1]} is {record.value.length} bytes, over "
                f"max_line_bytes={self.max_line_bytes}"
            )
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
        super().seek(position)
        self._exhausted.clear()

    def restored_problem(self, partition: Any, position: Any) -> str | None:
        """A restored file must be one this source would read: listed now, or a name
        relative to its directory (no ``..``, no hidden part, not through a symbolic link
        leading out: :func:`~.file_store.outside`) that matches its file, pattern or
        glob; its position ``[byte offset, lines read]``."""
        problem = super().restored_problem(partition, position)
        if problem is not None:
            return problem
        if not (
            isinstance(position, list | tuple)
            and len(position) == 2
            and all(type(p) is int and 0 <= p < 2**63 for p in position)
        ):
            return f"position {shown(position)} is not [byte offset, lines read]"
        if partition in self._sizes:
            return None  # listed now: read whatever the checkpoint says
        return self._name_problem(partition)

    def _name_problem(self, name: str) -> str | None:
        """Why ``name`` (relative to the directory) is not a file this source reads."""
        path = f"{self._root}/{name}"
        problem = outside(self._fs, self._root, path)
        if problem is not None:
            return f"{problem} ({self.url})"
        if any(hidden(part) for part in name.split("/")):
            return "a hidden file or directory (named _... or .…)"
        if self._glob:
            if not fnmatch.fnmatchcase(path, self._path):
                return f"not a file of {self.url}"
        elif self._path != self._root:
            if path != self._path:
                return f"not the file {self.url}"
        elif not self.recursive and "/" in name:
            return "in a subdirectory (recursive=False)"
        elif not fnmatch.fnmatch(name.rsplit("/", 1)[-1], self.pattern):
            return f"not matching pattern {self.pattern!r}"
        return None

    def adopt_restored(self, partition: str) -> None:
        """A file known to the checkpoint but not listed now (deleted, or found after its
        listing), read on by the task its stable hash names."""
        if self._mine(partition):
            self.adopt(partition)

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
        self._forget_vanished(listing)

    def _forget_vanished(self, listing: dict[str, int]) -> None:
        """Drop the books of files missing from ``LISTINGS_BEFORE_FORGETTING`` listings in
        a row once nothing of them is in flight, so a directory whose files are rotated
        away does not grow this task's memory and checkpoints for ever."""
        for name in [n for n in self.owned if n not in listing]:
            self._missing[name] = missing = self._missing.get(name, 0) + 1
            if missing >= LISTINGS_BEFORE_FORGETTING and self.release(name):
                self._drop_handle(name)
                for books in (self._missing, self._exhausted):
                    books.pop(name, None)
        for name in [n for n in self._missing if n in listing]:
            del self._missing[name]

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


class FileSpout(FileSource):
    """Lines of files — a local path or any fsspec URL — with the guarantee the topology
    gives: exactly-once when it is checkpointed (the positions go in its checkpoints),
    otherwise at-least-once (a failed line is emitted again).

    Args:
        path: a file, a directory (its files matching ``pattern``) or a glob; a local path
            is made absolute where the topology is built.
        pattern: a glob on the file names of a directory.
        lines_per_call: most lines one ``next_tuple`` emits.
        scan_secs: how often the directory is listed again for new and grown files.
        include_source: emit ``[file, line_no, line]`` instead of ``[line]``.
        encoding: how lines are decoded (undecodable bytes are replaced).
        **options: the other :class:`FileSource` settings (``compression``,
            ``storage_options``, ``recursive``, ``format``, ``guarantee`` to fix one...).

    Msg ids are ``(file, [byte offset after the line, line number])``.

    Raises:
        ValueError: a setting is out of range (``lines_per_call`` < 1, an unknown
            ``format``...).

    Example: the lines of the ``*.log`` files of a directory (here in fsspec's memory
    file system), run on the in-process runner:

        >>> import fsspec
        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> from topology.testing import CaptureBolt
        >>> fsspec.filesystem("memory").pipe("/doc-logs/app.log", b"started\\nstopped\\n")
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("lines", FileSpout("memory:///doc-logs", pattern="*.log"))
        >>> _ = builder.set_bolt("capture", CaptureBolt()).shuffle_grouping("lines")
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> _ = runner.run_until(lambda: len(runner.instance("capture").captured) == 2)
        >>> [values for _, _, values in runner.instance("capture").captured]
        [['started'], ['stopped']]
        >>> fsspec.filesystem("memory").rm("/doc-logs", recursive=True)

        A setting out of range is refused where the spout is made:

        >>> FileSpout("/var/log/app", lines_per_call=0)
        Traceback (most recent call last):
        ...
        ValueError: FileSpout lines_per_call must be >= 1, got 0
    """

    def __init__(
        self,
        path: str,
        pattern: str = "*",
        lines_per_call: int = 100,
        scan_secs: float = 1.0,
        include_source: bool = False,
        encoding: str = "utf-8",
        **options: Any,
    ) -> None:
        if lines_per_call < 1:
            raise ValueError(f"FileSpout lines_per_call must be >= 1, got {lines_per_call}")
        self._guarantee_given = "guarantee" in options
        super().__init__(
            path if "://" in path else os.path.abspath(path),
            pattern=pattern,
            max_batch=lines_per_call,
            poll_interval_secs=scan_secs,
            include_source=include_source,
            encoding=encoding,
            **options,
        )

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        if not self._guarantee_given:
            self.guarantee = "exactly_once" if is_checkpointed(context) else "at_least_once"
        super().open(conf, context)
