"""The files connector's storage layer: fsspec filesystems, and the part files
:class:`~topology.connectors.files_sink.FileSink` writes (JSON lines or Parquet) and
publishes by rename.  The only module that imports ``fsspec`` and ``pyarrow``, lazily
(``pip install 'sparkstorm[files]'``).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .retry import missing_extra


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


def is_local(fs: Any) -> bool:
    """Whether ``fs`` is the machine's own filesystem (where symbolic links lead)."""
    protocol = getattr(fs, "protocol", ())
    return "file" in (protocol if isinstance(protocol, tuple | list) else (protocol,))


def outside(fs: Any, root: str, path: Any) -> str | None:
    """Why ``path`` (read back from a checkpoint: hostile) is not a path strictly under
    ``root`` on ``fs``, or None when it is.  It must be a string that starts with
    ``root/``, with no empty, ``.`` or ``..`` part and no NUL; on the local filesystem it
    must also stay under ``root`` once symbolic links are resolved (as far as they exist).
    Other filesystems have no links: the path itself decides, and it cannot leave the
    configured prefix (a URL with another protocol or bucket does not start with it).

    >>> from fsspec.implementations.memory import MemoryFileSystem
    >>> outside(MemoryFileSystem(), "/out", "/out/../etc/passwd")
    "'..' in the path"
    >>> outside(MemoryFileSystem(), "/out", "/out/date=1/part-0.jsonl") is None
    True
    """
    if not isinstance(path, str) or "\x00" in path:
        return "not a path"
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        return f"not under {root}"
    parts = path[len(prefix) :].split("/")
    if ".." in parts:
        return "'..' in the path"
    if "" in parts or "." in parts:
        return "an empty or '.' part in the path"
    if is_local(fs):
        real_root = os.path.realpath(root).rstrip(os.sep) + os.sep
        if not os.path.realpath(path).startswith(real_root):
            return f"leads out of {root} through a symbolic link"
    return None


# -- part files (FileSink) --------------------------------------------------------------------


class PartFile:
    """One part file being written under a hidden name: JSON lines (optionally gzip) or
    Parquet.  Rows come as value lists in the order of ``columns``; the file holds the
    columns at indexes ``keep`` (default: all) — a partition's own columns are left out.
    ``size`` counts bytes written (JSON before compression; Parquet row groups flushed);
    ``close`` makes it complete and durable.

    Parquet rows are buffered as they come (the lists themselves, no per-row object) and
    turned into Arrow columns a row group at a time; the first row group's inferred types
    (or ``schema``) are the file's schema.
    """

    def __init__(
        self,
        fs: Any,
        path: str,
        format: str,
        opened_at: float,
        *,
        columns: Sequence[str],
        keep: Sequence[int] | None = None,
        compression: str | None = None,
        schema: Any = None,
        row_group_rows: int = 10_000,
    ) -> None:
        self.fs, self.path, self.format, self.opened_at = fs, path, format, opened_at
        self.rows = 0
        self._keep = list(range(len(columns))) if keep is None else list(keep)
        self._names = [columns[i] for i in self._keep]
        self._all = len(self._keep) == len(columns)  # rows are written whole
        self._raw = fs.open(path, "wb")
        self._out: Any = self._raw
        self._parquet: Any = None
        self._schema = schema
        self._pending: list[Sequence[Any]] = []
        self._row_group_rows = row_group_rows
        self._json_bytes = 0
        self._codec = compression
        if format == "json" and compression:
            self._out = fsspec_module().compression.compr[compression](self._raw, mode="wb")

    @property
    def size(self) -> int:
        return self._json_bytes if self.format == "json" else int(self._raw.tell())

    def write(self, rows: list[Sequence[Any]]) -> None:
        """Append ``rows`` (value lists in ``columns`` order, each as long as it)."""
        self.rows += len(rows)
        if self.format == "json":
            self._write_json(rows)
            return
        self._pending.extend(rows)
        if len(self._pending) >= self._row_group_rows:
            self._flush_rows()

    def _write_json(self, rows: list[Sequence[Any]]) -> None:
        names, keep = self._names, self._keep
        dumps = json.JSONEncoder(separators=(",", ":"), default=str).encode
        if self._all:
            lines = [dumps(dict(zip(names, r, strict=True))) for r in rows]
        else:
            lines = [dumps({n: r[i] for n, i in zip(names, keep, strict=True)}) for r in rows]
        data = ("\n".join(lines) + "\n").encode()
        self._json_bytes += len(data)
        self._out.write(data)

    def _flush_rows(self) -> None:
        if not self._pending:
            return
        pa, pq = pyarrow_modules()
        rows, self._pending = self._pending, []
        values = list(zip(*rows, strict=True))  # the columns, transposed in C
        data = {name: values[i] for name, i in zip(self._names, self._keep, strict=True)}
        schema = self._schema if self._parquet is None else self._parquet.schema
        if schema is not None:  # as from_pylist: the schema's columns, null when absent
            data = {f.name: data.get(f.name, (None,) * len(rows)) for f in schema}
        table = pa.Table.from_pydict(data, schema=schema)
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(
                self._raw, table.schema, compression=self._codec or "snappy"
            )
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
