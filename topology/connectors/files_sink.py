"""A sink writing JSON lines or Parquet part files into partitioned directories, through
fsspec (any URL), exactly once by a two-phase commit through checkpoints.

Example::

    sink = FileSink("s3://bucket/orders", format="parquet",
                    partition_by=lambda row: {"date": row["ts"][:10]})
    builder.set_bolt("store", sink, 2).shuffle_grouping("orders")

writes ``s3://bucket/orders/date=2026-11-25/part-store-0-00000042-<run>-3.parquet``,
readable by ``spark.read.parquet("s3://bucket/orders")``.

Rows are written to hidden in-progress files
(``.inprogress-<component>-<task>-<checkpoint>-<n>.<ext>``, in the directory of their
partition; Spark and :class:`~topology.connectors.files.FileSource` skip names starting
with ``.`` or ``_``).  ``exactly_once`` (default): when the task aligns checkpoint *k* its
files are closed (complete, flushed, fsynced on local disks) and their paths stored in
checkpoint *k*; once *k* is complete each is renamed to its final ``part-...`` name — an
idempotent rename (done when the source is gone and the target exists), done again after
a restore for the handles the restored checkpoint holds; in-progress files of this task no
checkpoint holds are deleted at a restore.  ``at_least_once``: a file is published as soon
as it is rolled (and at each checkpoint); a restore replays what came after the last
checkpoint, so published rows may repeat.  A visible file is never partial.

Creating a part file and publishing one (the rename) are safe to do again, so an
``OSError`` there — a directory made read-only, a store refusing or timing out — is
retried with ``backoff`` (blocking the executor: backpressure) until ``max_retry_secs``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from topology.config import TOPOLOGY_TICK_TUPLE_FREQ_SECS

from .file_store import PartFile, filesystem, find_files, outside, publish, remove
from .restored import RestoreRefusals, shown
from .retry import retrying
from .sink import TransactionalSink

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.tuple import Tuple

SINK_FORMATS = ("json", "parquet")
SINK_GUARANTEES = ("exactly_once", "at_least_once")
#: The name prefix of in-progress files.
IN_PROGRESS = ".inprogress-"
#: The extensions of part files, whatever the format (a restore may publish files an
#: earlier version of the topology wrote in another).
PART_EXTENSIONS = (".jsonl", ".jsonl.gz", ".parquet")
#: Errors of the store retried when creating or publishing a part file (both idempotent).
STORE_ERRORS = (OSError,)

#: How rows are sent to directories: a field, fields, or a function of the row (a dict
#: field -> value) giving ``{column: value}`` or a relative directory (``"date=2026-11-25"``).
PartitionBy = str | list[str] | Callable[[dict[str, Any]], "Mapping[str, Any] | str"] | None


@dataclass
class _Staging:
    """The open transaction: a file per partition directory, and those rolled already."""

    hint: int
    open: dict[str, PartFile] = field(default_factory=dict)
    closed: list[str] = field(default_factory=list)


class FileSink(TransactionalSink):
    """Writes tuples as rows of part files under ``url`` (a path or any fsspec URL).

    Args:
        url: the output directory.
        format: ``"json"`` (JSON lines, one object per tuple) or ``"parquet"``.
        fields: the column names of the tuple's values (default: the input's fields).
        partition_by: a field name or names (Hive directories ``name=value/``, the column
            left out of the file, as Spark expects), or a function of the row returning
            ``{column: value}`` (those columns left out) or a relative directory.
        roll_size_bytes: start a new part file once one holds this many bytes (JSON:
            before compression; Parquet: row groups written).
        roll_interval_secs: ... or once one is this old (None: only by size and, exactly
            once, at each checkpoint).
        guarantee: ``"exactly_once"`` (publish at checkpoints) or ``"at_least_once"``
            (publish at every roll and checkpoint).
        compression: JSON: None or ``"gzip"`` (``.jsonl.gz``); Parquet: pyarrow's codec
            name (default ``"snappy"``).
        schema: Parquet: a ``pyarrow.Schema`` of the written columns (default: inferred
            from each file's first rows; give it when a column may be all null).
        row_group_rows: Parquet rows buffered per row group.
        storage_options: passed to fsspec.
        **settings: the :class:`TransactionalSink` settings (``batch_size``...).

    Raises:
        ValueError: an unknown format or guarantee, or a setting out of range.

    Example: Parquet files under ``date=.../`` directories (making the sink connects to
    nothing; a topology with it is checkpointed):

        >>> sink = FileSink("s3://bucket/orders", format="parquet", partition_by="date")
        >>> FileSink("/data/out", format="csv")
        Traceback (most recent call last):
        ...
        ValueError: FileSink format must be one of ('json', 'parquet'), got 'csv'
    """

    def __init__(
        self,
        url: str,
        *,
        format: str = "json",
        fields: list[str] | None = None,
        partition_by: PartitionBy = None,
        roll_size_bytes: int = 128 * 1024 * 1024,
        roll_interval_secs: float | None = None,
        guarantee: str = "exactly_once",
        compression: str | None = None,
        schema: Any = None,
        row_group_rows: int = 10_000,
        storage_options: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        if format not in SINK_FORMATS:
            raise ValueError(f"FileSink format must be one of {SINK_FORMATS}, got {format!r}")
        if guarantee not in SINK_GUARANTEES:
            raise ValueError(f"guarantee must be one of {SINK_GUARANTEES}, got {guarantee!r}")
        if roll_size_bytes < 1 or row_group_rows < 1:
            raise ValueError("roll_size_bytes and row_group_rows must be >= 1")
        if roll_interval_secs is not None and roll_interval_secs <= 0:
            raise ValueError(f"roll_interval_secs must be > 0, got {roll_interval_secs}")
        if compression not in (None, "gzip") and format == "json":
            raise ValueError(f"JSON compression must be None or 'gzip', got {compression!r}")
        self.url = url
        self.format = format
        self.fields = list(fields) if fields is not None else None
        self.partition_by = [partition_by] if isinstance(partition_by, str) else partition_by
        self.roll_size_bytes = roll_size_bytes
        self.roll_interval_secs = roll_interval_secs
        self.guarantee = guarantee
        self.compression = compression
        self.schema = schema
        self.row_group_rows = row_group_rows
        self.storage_options = dict(storage_options or {})
        self.clock: Callable[[], float] = time.monotonic

    @property
    def extension(self) -> str:
        if self.format == "parquet":
            return ".parquet"
        return ".jsonl.gz" if self.compression == "gzip" else ".jsonl"

    def get_component_configuration(self) -> Mapping[str, Any] | None:
        if self.roll_interval_secs is None:
            return None
        return {TOPOLOGY_TICK_TUPLE_FREQ_SECS: self.roll_interval_secs / 2}

    # -- the connector ----------------------------------------------------------------------

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._fs, self._root = filesystem(self.url, self.storage_options)
        self._fs.makedirs(self._root, exist_ok=True)
        self._component, self._task = context.component_id, context.task_index
        self._run = uuid.uuid4().hex[:8]  # makes final names unique across restarts
        self._seq = 0
        self._staging: _Staging | None = None
        self._columns = self.fields or _input_fields(context)

    def begin(self, checkpoint_hint: int) -> _Staging:
        self._staging = _Staging(checkpoint_hint)
        return self._staging

    def write(self, txn: _Staging, records: list[list[Any]]) -> None:
        for directory, (keep, rows) in self._place(records).items():
            part = txn.open.get(directory)
            if part is None:
                part = txn.open[directory] = self._new_part(directory, txn.hint, keep)
            part.write(rows)
            if part.size >= self.roll_size_bytes:
                self._roll(txn, directory)
        self._roll_old(txn)

    def pre_commit(self, txn: _Staging, checkpoint: int) -> list[list[str]]:
        for directory in list(txn.open):
            self._roll(txn, directory)
        self._staging = None
        if self.guarantee == "at_least_once":
            return []  # published already
        return [[path, self._final(path, checkpoint)] for path in txn.closed]

    def commit(self, handle: Any, checkpoint: int) -> None:
        for source, target in handle:
            if not self._publish(source, target):
                self.log(f"checkpoint {checkpoint}: neither {source} nor {target} exists")

    def abort(self, txn: _Staging) -> None:
        for part in txn.open.values():
            part.discard()
        for path in txn.closed:
            remove(self._fs, path)
        self._staging = None

    def abort_others(self, keep: list[Any]) -> None:
        """Delete this task's in-progress files that no handle in ``keep`` names (under
        the sink's directory only: not through a symbolic link leading out of it)."""
        kept = {str(pair[0]) for handle in keep for pair in handle or ()}
        for path in find_files(self._fs, self._root):
            if path not in kept and self._is_mine(path.rsplit("/", 1)[-1]):
                if outside(self._fs, self._root, path) is None:
                    remove(self._fs, path)

    def restored_handle(self, handle: Any, refusals: RestoreRefusals) -> Any:
        """The ``[in-progress file, part file]`` pairs of a restored handle that
        :meth:`commit` may rename: both under the sink's directory (:func:`outside`: no
        ``..``, no symbolic link leading out), in one directory, named as this component
        names its in-progress and part files; None when none is."""
        if not isinstance(handle, list | tuple):
            refusals.refuse(f"handle {shown(handle)}", "not a list of [source, target] paths")
            return None
        kept = []
        for pair in handle:
            problem = self._pair_problem(pair)
            if problem is None:
                kept.append(pair)
            else:
                refusals.refuse(f"handle path {shown(pair)}", problem)
        if len(kept) == len(handle):
            return handle
        return kept or None

    def _pair_problem(self, pair: Any) -> str | None:
        """Why a restored ``[source, target]`` pair may not be renamed (None: it may)."""
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            return "not a [source, target] pair of paths"
        for path in pair:
            problem = outside(self._fs, self._root, path)
            if problem is not None:
                return problem
        (folder, source), (target_folder, target) = (p.rsplit("/", 1) for p in pair)
        if folder != target_folder:
            return "source and target in different directories"
        if not source.startswith(f"{IN_PROGRESS}{self._component}-"):
            return f"the source is not an in-progress file of {self._component!r}"
        if not target.startswith(f"part-{self._component}-"):
            return f"the target is not a part file of {self._component!r}"
        if not any(source.endswith(e) and target.endswith(e) for e in PART_EXTENSIONS):
            return f"not a part file's extension ({', '.join(PART_EXTENSIONS)}) on both"
        return None

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick() and self._staging is not None:
            self._roll_old(self._staging)
        super().execute(tup)

    def cleanup(self) -> None:
        """An orderly stop: at-least-once publishes what it wrote; exactly-once leaves it
        hidden (no checkpoint holds it; the next start deletes it)."""
        try:
            if self.guarantee == "at_least_once" and self._staging is not None:
                self.pre_commit(self._staging, 0)
        finally:
            super().cleanup()

    # -- files ------------------------------------------------------------------------------

    def _place(self, records: list[list[Any]]) -> dict[str, tuple[list[int] | None, list[Any]]]:
        """The records grouped by partition directory, in order, each group with the
        indexes of the values its files hold (None: all; the partition columns are left
        out).  Rows stay value lists: no object per row unless ``partition_by`` is a
        function (it is given a dict) or a partition value is unhashable."""
        if not records:
            return {}
        width = len(self._columns)
        if set(map(len, records)) != {width}:
            found = next(len(v) for v in records if len(v) != width)
            raise ValueError(
                f"{self._component}: {found} values for the {width} fields {self._columns}"
            )
        by = self.partition_by
        if by is None:
            return {"": (None, records)}
        if not callable(by):
            try:
                return self._place_by_fields(records, by)
            except TypeError:  # an unhashable partition value: row by row
                pass
        placed: dict[str, tuple[list[int] | None, list[Any]]] = {}
        for values in records:
            directory, dropped = self._where(values)
            group = placed.get(directory)
            if group is None:
                group = placed[directory] = (self._kept(dropped), [])
            group[1].append(values)
        return placed

    def _place_by_fields(
        self, records: list[list[Any]], by: list[str]
    ) -> dict[str, tuple[list[int] | None, list[Any]]]:
        """:meth:`_place` for partition fields: grouped by their values (and types, so
        ``1`` and ``True`` stay apart), one directory name per group."""
        at = [self._columns.index(name) for name in by]
        groups: dict[tuple[Any, ...], list[Any]] = {}
        for values in records:
            key = tuple([(values[i].__class__, values[i]) for i in at])
            group = groups.get(key)
            if group is None:
                group = groups[key] = []
            group.append(values)
        keep = self._kept(by)
        placed: dict[str, tuple[list[int] | None, list[Any]]] = {}
        for key, rows in groups.items():
            directory = _directory({name: v for name, (_, v) in zip(by, key, strict=True)})
            placed.setdefault(directory, (keep, []))[1].extend(rows)
        return placed

    def _where(self, values: list[Any]) -> tuple[str, Iterable[str]]:
        """The partition directory of one row, and the columns it leaves out."""
        by = self.partition_by
        if callable(by):
            where = by(dict(zip(self._columns, values, strict=True)))
            if isinstance(where, str):
                return where.strip("/"), ()
            columns = dict(where)
        else:
            columns = {name: values[self._columns.index(name)] for name in by or ()}
        return _directory(columns), columns

    def _kept(self, dropped: Iterable[str]) -> list[int] | None:
        """Indexes of the fields a file holds when the columns ``dropped`` are left out
        (None: all of them)."""
        left_out = set(dropped)
        if not left_out.intersection(self._columns):
            return None
        return [i for i, name in enumerate(self._columns) if name not in left_out]

    def _new_part(self, directory: str, hint: int, keep: list[int] | None) -> PartFile:
        folder = f"{self._root}/{directory}" if directory else self._root
        name = f"{IN_PROGRESS}{self._component}-{self._task}-{hint}-{self._seq}{self.extension}"
        self._seq += 1

        def create() -> PartFile:
            self._fs.makedirs(folder, exist_ok=True)
            return PartFile(
                self._fs,
                f"{folder}/{name}",
                self.format,
                self.clock(),
                columns=self._columns,
                keep=keep,
                compression=self.compression,
                schema=self.schema,
                row_group_rows=self.row_group_rows,
            )

        return retrying(
            create, self.backoff, f"creating {folder}/{name}", transient=STORE_ERRORS, log=self.log
        )

    def _publish(self, source: str, target: str) -> bool:
        """:func:`publish`, retried while the store fails (the rename is idempotent)."""
        return retrying(
            lambda: publish(self._fs, source, target),
            self.backoff,
            f"publishing {source}",
            transient=STORE_ERRORS,
            log=self.log,
        )

    def _roll(self, txn: _Staging, directory: str) -> None:
        """Close the part file of ``directory`` (at-least-once: publish it)."""
        part = txn.open.pop(directory)
        part.close()
        if self.guarantee == "at_least_once":
            if not self._publish(part.path, self._final(part.path, txn.hint)):
                # its rows would be lost: fail the write, so the topology rolls back
                raise FileNotFoundError(f"{part.path} vanished before it was published")
        else:
            txn.closed.append(part.path)

    def _roll_old(self, txn: _Staging) -> None:
        if self.roll_interval_secs is None:
            return
        now = self.clock()
        for directory, part in list(txn.open.items()):
            if now - part.opened_at >= self.roll_interval_secs:
                self._roll(txn, directory)

    def _final(self, path: str, checkpoint: int) -> str:
        """``part-<component>-<task>-<checkpoint>-<run>-<n>.<ext>`` beside ``path``."""
        folder, name = path.rsplit("/", 1)
        n = name[: -len(self.extension)].rsplit("-", 1)[1]
        stem = f"part-{self._component}-{self._task}-{checkpoint:08d}-{self._run}-{n}"
        return f"{folder}/{stem}{self.extension}"

    def _is_mine(self, name: str) -> bool:
        if not name.startswith(IN_PROGRESS):
            return False
        parts = name[len(IN_PROGRESS) :].rsplit("-", 3)
        return len(parts) == 4 and parts[0] == self._component and parts[1] == str(self._task)


def _directory(columns: Mapping[str, Any]) -> str:
    """Hive's ``name=value/...`` directory of partition columns."""
    return "/".join(f"{quote(str(k), safe='')}={_escape(v)}" for k, v in columns.items())


def _escape(value: Any) -> str:
    """A partition value in a directory name, as Hive and Spark escape it."""
    return "__HIVE_DEFAULT_PARTITION__" if value is None else quote(str(value), safe=" ")


def _input_fields(context: TopologyContext) -> list[str]:
    """The fields of this component's input streams (all alike), or an error."""
    spec = context._topology.components[context.component_id]
    found = {tuple(context.output_fields(i.component, i.stream)) for i in spec.inputs}
    if len(found) != 1:
        raise ValueError(
            f"{context.component_id}: FileSink needs fields= (its inputs have "
            f"{len(found)} different field lists)"
        )
    return list(found.pop())
