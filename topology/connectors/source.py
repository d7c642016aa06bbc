"""A spout over a partitioned, replayable source (a Kafka topic, Redis streams, files...).

A connector subclasses :class:`PartitionedSource` and says how to list partitions and read
records from a position; the base splits partitions among the component's tasks, tracks
what is in flight, commits positions and routes records that do not decode to the
component's dead-letter stream (``source``: the partition; ``values``: the position and
the raw text) and, as before, to its ``errors`` stream (deprecated: subscribe to the
dead-letter stream).  Two guarantees:

* ``at_least_once`` (default): every tuple has msg id ``(partition, position)``; a failed
  one is emitted again; per partition, the position below which everything was acked is
  committed to the source (:meth:`PartitionedSource.commit`) at most every
  ``commit_interval_secs`` and on ``close``.  A restart resumes from the committed
  positions, so records after the last commit are delivered again.
* ``exactly_once``: the topology must be checkpointed; the positions are stored with each
  checkpoint (``position`` / ``seek``), and committed to the source only for records a
  complete checkpoint holds (acks come with checkpoints then), at ``checkpoint_complete``.

Example (a list per partition)::

    class Lists(PartitionedSource):
        outputs = ["n"]
        def __init__(self, data):
            super().__init__(guarantee="at_least_once")
            self.data = data                      # {partition: [values]}
        def partitions(self):
            return sorted(self.data)
        def start_position(self, partition):
            return 0
        def read(self, partition, position, max_records):
            rows = self.data[partition][position:position + max_records]
            return [Record(partition, position + i + 1, v) for i, v in enumerate(rows)]
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topology.components import OutputFieldsDeclarer
from topology.constants import COORDINATOR_COMPONENT, DEAD_LETTER_STREAM
from topology.errors import SparkstormError
from topology.failure_policy import dead_letter
from topology.stateful import ReplayableSpout

from .restored import RestoreRefusals, refusal_counter, shown
from .retry import Backoff, Transient, TransientError, check_choice, check_number, setting_error

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.metrics import Counter

GUARANTEES = ("at_least_once", "exactly_once")
#: The stream bad records go to, and its fields.
ERRORS_STREAM = "errors"
ERROR_FIELDS = ["partition", "position", "error", "raw"]
#: Longest ``raw`` of an ``errors`` tuple, in characters.
MAX_RAW_CHARS = 1_000


@dataclass(frozen=True)
class Record:
    """One record read from a partition (what :meth:`PartitionedSource.read` returns).

    Args:
        partition: the partition it was read from.
        position: the position AFTER it (where reading goes on), msgpack-encodable.
        value: what :meth:`PartitionedSource.decode` turns into the tuple's values.
        key: the source's key, if it has one.

    Example:
        >>> Record("orders-0", 42, b'{"id": 7}')
        Record(partition='orders-0', position=42, value=b'{"id": 7}', key=None)
    """

    partition: str
    position: Any
    value: Any
    key: Any = None


@dataclass
class _InFlight:
    position: Any
    values: list[Any] | None  # kept to re-emit on fail (at-least-once); None otherwise
    done: bool = False


class PartitionedSource(ReplayableSpout):
    """Base of the source connectors: implement :meth:`partitions`, :meth:`read`,
    :meth:`start_position`, and as the source allows :meth:`committed`, :meth:`commit`,
    :meth:`decode`, :meth:`connect`, :meth:`disconnect`; declare ``outputs``.

    The constructor's arguments are keyword-only; a subclass passes them on to
    ``super().__init__``.

    Args:
        guarantee: ``"at_least_once"`` or ``"exactly_once"`` (module docstring).
        max_batch: most records one ``next_tuple`` reads and emits.
        commit_interval_secs: least time between two commits to the source.
        backoff: pauses after a read that raised a transient error (and the clock used).

    Raises:
        ValueError: a setting is out of range or an unknown guarantee (the message names
            it).

    Example: a source over two in-memory lists, run on the in-process runner:

        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> from topology.testing import CaptureBolt
        >>> DATA = {"p0": ["a", "b"], "p1": ["c"]}
        >>> class ListSource(PartitionedSource):
        ...     outputs = ["letter"]
        ...     def partitions(self):
        ...         return list(DATA)
        ...     def start_position(self, partition):
        ...         return 0
        ...     def read(self, partition, position, max_records):
        ...         rows = DATA[partition][position : position + max_records]
        ...         return [Record(partition, position + i + 1, row) for i, row in enumerate(rows)]
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("letters", ListSource(max_batch=10))
        >>> _ = builder.set_bolt("capture", CaptureBolt()).shuffle_grouping("letters")
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> _ = runner.run_until(lambda: len(runner.instance("capture").captured) == 3)
        >>> sorted(values for _, _, values in runner.instance("capture").captured)
        [['a'], ['b'], ['c']]
        >>> ListSource(guarantee="exactly_twice")
        Traceback (most recent call last):
        ...
        ValueError: ListSource: guarantee must be one of ('at_least_once', 'exactly_once'), ...
    """

    #: The client's own exception classes worth retrying (set them in ``connect`` when
    #: they come from the lazily imported client); :class:`TransientError` always is.
    transient_errors: Transient = ()

    def __init__(
        self,
        *,
        guarantee: str = "at_least_once",
        max_batch: int = 500,
        commit_interval_secs: float = 1.0,
        backoff: Backoff | None = None,
    ) -> None:
        check_choice(self, "guarantee", guarantee, GUARANTEES)
        check_number(self, "max_batch", max_batch, minimum=1, integer=True)
        check_number(self, "commit_interval_secs", commit_interval_secs)
        if backoff is not None and not isinstance(backoff, Backoff):
            raise setting_error(self, "backoff", "a Backoff or None", backoff)
        self.guarantee = guarantee
        self.max_batch = max_batch
        self.commit_interval_secs = commit_interval_secs
        self.backoff = backoff or Backoff()

    # -- what a connector implements --------------------------------------------------------

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Open clients (called first in ``open``, before :meth:`partitions`).

        Args:
            conf: the component's config.
            context: the task's context.
        """

    def disconnect(self) -> None:
        """Close clients (called last in ``close``, after the final commit)."""

    def partitions(self) -> list[str]:
        """List the source's partitions.

        Returns:
            Every partition's id (stable ids; the base sorts them).

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement partitions()")

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        """Read records of a partition (must not block for long).

        Args:
            partition: the partition's id.
            position: where to read from (None: where :meth:`start_position` says).
            max_records: the most records to return.

        Returns:
            Up to ``max_records`` records from ``position`` on; [] when none is ready.

        Raises:
            TransientError: (or one of ``transient_errors``) the read is tried again
                after a pause.
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement read()")

    def start_position(self, partition: str) -> Any:
        """Where to start in a partition when nothing is committed.

        Args:
            partition: the partition's id.

        Returns:
            The position, or None (the reader's own default).
        """
        return None

    def committed(self, partition: str) -> Any | None:
        """Read back the position committed in the source (None by default).

        Args:
            partition: the partition's id.

        Returns:
            The committed position, or None when there is none.
        """
        return None

    def commit(self, positions: dict[str, Any]) -> None:
        """Make positions durable in the source; no-op by default.

        Args:
            positions: partition -> the position below which every record was acked.
        """

    def decode(self, record: Record) -> list[Any]:
        """Turn a record into the tuple's values.

        Args:
            record: the record read.

        Returns:
            The output values (by default ``[record.value]``); it may raise, and the
            record then goes to the dead-letter stream.
        """
        return [record.value]

    def restored_problem(self, partition: Any, position: Any) -> str | None:
        """Why ``partition`` and its ``position``, read back from a restored checkpoint
        (hostile: it may come from a crafted savepoint), must not be used; None when they
        may.  A connector refuses partitions it is not configured for (a stream, topic or
        table not in its settings, a file outside its directory) and positions of another
        shape than :meth:`read` takes.  The default takes any string partition (one of no
        task is ignored anyway) and any position.

        Args:
            partition: the partition read back.
            position: its position read back.

        Returns:
            Why they must not be used, or None when they may.
        """
        if not isinstance(partition, str):
            return "a partition that is not a string"
        return None

    def adopt_restored(self, partition: str) -> None:
        """A restored position names ``partition``, which this task does not read yet and
        :meth:`restored_problem` took: adopt it if it is this task's (a source whose
        partitions come and go, e.g. files found after the checkpoint's listing).  By
        default nothing: the partitions are fixed.

        Args:
            partition: the partition's id.
        """

    # -- the spout --------------------------------------------------------------------------

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare ``outputs``, and the ``errors`` stream unless ``outputs`` has it.

        Args:
            declarer: where the streams are declared.
        """
        super().declare_output_fields(declarer)
        if ERRORS_STREAM not in declarer.streams:
            declarer.declare(ERROR_FIELDS, ERRORS_STREAM)

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """:meth:`connect`, then adopt this task's share of the partitions.

        Args:
            conf: the component's config.
            context: the task's context.

        Raises:
            SparkstormError: ``guarantee="exactly_once"`` in a topology that is not
                checkpointed.
        """
        if self.guarantee == "exactly_once" and not is_checkpointed(context):
            raise SparkstormError(
                f"{context.component_id}: guarantee='exactly_once' needs a checkpointed "
                "topology (one with a StatefulBolt or a TransactionalSink); add one, or use "
                "guarantee='at_least_once'"
            )
        self.connect(conf, context)
        self.task_index, self.task_count = context.task_index, len(context.component_tasks())
        #: This task's partitions (sorted).
        self.owned: list[str] = []
        self.bad_records: Counter = context.register_counter(
            "bad_records", "records decode() could not turn into a tuple"
        )
        self._refused = refusal_counter(context)
        self._task_name = f"{context.component_id}#{context.task_index}"
        self._next: dict[str, Any] = {}
        self._reset_tracking()
        for partition in self.assigned(sorted(self.partitions())):
            self.adopt(partition)
        self._turn = 0
        self._read_attempts = 0
        self._resume_at = 0.0
        self._commit_at = self.backoff.clock() + self.commit_interval_secs

    def assigned(self, partitions: list[str]) -> list[str]:
        """This task's share of ``partitions`` (sorted ids of every partition): by default
        every ``task_count``-th from ``task_index`` on, the same after a worker rebalance
        (the task count does not change).  Override to split otherwise (a source whose
        partitions come and go, e.g. files, splits by a stable hash of the id).

        Args:
            partitions: the sorted ids of every partition.

        Returns:
            The partitions this task reads.
        """
        return partitions[self.task_index :: self.task_count]

    def adopt(self, partition: str) -> None:
        """Start reading ``partition`` in this task, from its committed position (else its
        start position).  Called by ``open`` for each assigned partition; a source that
        finds partitions later (a new file) calls it then.  Adopting one twice is a no-op.

        Args:
            partition: the partition's id.
        """
        if partition in self._next:
            return
        self.owned.append(partition)
        self.owned.sort()
        position = self.committed(partition)
        self._next[partition] = self.start_position(partition) if position is None else position
        self._in_flight[partition] = {}
        self._order[partition] = deque()

    def release(self, partition: str) -> bool:
        """Stop reading ``partition`` in this task and forget its books (a source whose
        partitions go away, e.g. deleted files, calls it).

        Args:
            partition: the partition's id.

        Returns:
            False, and nothing changes, while records of it are in flight; True when it is
            not (or no longer) read here.
        """
        if partition not in self._next:
            return True
        if self._in_flight.get(partition):
            return False
        self.owned.remove(partition)
        for books in (self._next, self._in_flight, self._order, self._committable):
            books.pop(partition, None)
        self._committed.pop(partition, None)
        return True

    def _reset_tracking(self) -> None:
        self._in_flight: dict[str, dict[Any, _InFlight]] = {p: {} for p in self.owned}
        self._order: dict[str, deque[Any]] = {p: deque() for p in self.owned}
        self._committable: dict[str, Any] = {}
        self._committed: dict[str, Any] = {}
        self._replay: deque[tuple[str, Any]] = deque()

    def next_tuple(self) -> None:
        """Commit when due, re-emit failed records, then read and emit up to
        ``max_batch`` records of this task's partitions."""
        now = self.backoff.clock()
        if now >= self._commit_at:
            self._commit_at = now + self.commit_interval_secs
            self._commit()
        budget = self.max_batch
        while self._replay and budget:
            partition, key = self._replay.popleft()
            entry = self._in_flight.get(partition, {}).get(key)
            if entry is not None and not entry.done and entry.values is not None:
                self.emit(entry.values, msg_id=(partition, entry.position))
                budget -= 1
        if now < self._resume_at or not self.owned:
            return
        count = len(self.owned)
        start, self._turn = self._turn % count, self._turn + 1
        for i in range(count):
            if not budget:
                return
            budget -= self._read_partition(self.owned[(start + i) % count], budget, now)

    def _read_partition(self, partition: str, budget: int, now: float) -> int:
        """Read and emit up to ``budget`` records of ``partition``; how many were read."""
        transient: Transient = (TransientError, *self.transient_errors)
        try:
            records = self.read(partition, self._next[partition], budget)
        except transient as exc:
            self._read_attempts += 1
            pause = self.backoff.delay(self._read_attempts)
            self._resume_at = now + pause
            self.log(f"read of {partition} failed, next try in {pause:.2f}s: {exc!r}")
            return budget
        self._read_attempts = 0
        for record in records:
            self._emit_record(record)
        return len(records)

    def _emit_record(self, record: Record) -> None:
        partition = record.partition
        self._next[partition] = record.position
        key = _key(record.position)
        try:
            values = list(self.decode(record))
            # the emit checks the values (their count, msgpack) before anything is sent
            self.emit(values, msg_id=(partition, record.position))
        except Exception as exc:  # a bad record: to the dead-letter stream, consumed
            self.bad_records.inc()
            self._track(partition, key, _InFlight(record.position, None, done=True))
            self._advance(partition)
            self._dead_letter(record, exc)
            return
        kept = values if self.guarantee == "at_least_once" else None
        self._track(partition, key, _InFlight(record.position, kept))

    def _dead_letter(self, record: Record, exc: Exception) -> None:
        """A record that did not decode: to the dead-letter stream (``source`` its
        partition, ``values`` its position and raw text) and, as before, the ``errors``
        stream; reported as the component's error when neither has a subscriber."""
        raw = _raw(record.value)
        collector = self._collector
        letter = dead_letter(
            component=collector.component,
            task=collector.task,
            source=record.partition,
            stream="",
            values=[record.position, raw],
            error=exc,
            attempts=1,
            time=time.time(),
        )
        heard = self.emit(letter, None, DEAD_LETTER_STREAM)
        error = f"{type(exc).__name__}: {exc}"
        heard += self.emit([record.partition, record.position, error, raw], None, ERRORS_STREAM)
        if not heard:
            exc.add_note(
                f"{collector.component}: record {record.position!r} of {record.partition} "
                "does not decode; it was skipped (subscribe a bolt or a sink to the "
                f"dead-letter stream {DEAD_LETTER_STREAM!r} to keep such records)"
            )
            self.report_error(exc)

    def _track(self, partition: str, key: Any, entry: _InFlight) -> None:
        if key not in self._in_flight[partition]:
            self._order[partition].append(key)
        self._in_flight[partition][key] = entry

    def _advance(self, partition: str) -> None:
        """Move the committable position over the acked records at the front."""
        order, entries = self._order[partition], self._in_flight[partition]
        while order and entries[order[0]].done:
            self._committable[partition] = entries.pop(order.popleft()).position

    def ack(self, msg_id: Any) -> None:
        """The record was fully processed: its position may be committed.

        Args:
            msg_id: ``(partition, position)`` of the record.
        """
        partition, position = msg_id
        entry = self._in_flight.get(partition, {}).get(_key(position))
        if entry is not None:
            entry.done, entry.values = True, None
            self._advance(partition)

    def fail(self, msg_id: Any) -> None:
        """Emit the record again (at-least-once; a checkpointed topology seeks instead).

        Args:
            msg_id: ``(partition, position)`` of the record.
        """
        partition, position = msg_id
        if self.guarantee == "at_least_once":
            self._replay.append((partition, _key(position)))

    def position(self) -> dict[str, Any]:
        """Where this task reads on (stored with each checkpoint).

        Returns:
            ``{partition: next position}`` for this task's partitions.
        """
        return dict(self._next)

    def seek(self, position: Any) -> None:
        """Read on from ``{partition: position}`` (partitions it lacks keep theirs).  What
        :meth:`restored_problem` refuses is ignored, counted and reported once
        (:mod:`.restored`); partitions of other tasks are ignored.

        Args:
            position: ``{partition: position}`` from a restored checkpoint.
        """
        refusals = RestoreRefusals(self, self._task_name, self._refused)
        if not isinstance(position, dict):
            refusals.refuse(f"position {shown(position)}", "not a {partition: position} map")
            position = {}
        for partition, where in position.items():
            problem = self.restored_problem(partition, where)
            if problem is not None:
                refusals.refuse(f"partition {shown(partition)}", problem)
                continue
            if partition not in self._next:
                self.adopt_restored(partition)
            if partition in self._next:
                self._next[partition] = where
        refusals.report()
        committed, committable = self._committed, self._committable
        self._reset_tracking()  # what was in flight is read again from the positions
        self._committed, self._committable = committed, committable
        self._resume_at = 0.0

    def checkpoint_complete(self, checkpoint: int) -> None:
        """Commit to the source what complete checkpoints hold (exactly-once).

        Args:
            checkpoint: the completed checkpoint's id.
        """
        if self.guarantee == "exactly_once":
            self._commit()

    def close(self) -> None:
        """Commit what was acked, then :meth:`disconnect`."""
        try:
            self._commit()
        finally:
            self.disconnect()

    def _commit(self) -> None:
        """Commit the positions that moved since the last commit (errors are reported and
        the commit tried again at the next interval: a later one covers it)."""
        due = {p: v for p, v in self._committable.items() if self._committed.get(p, _NONE) != v}
        if not due:
            return
        try:
            self.commit(due)
        except Exception as exc:
            self.log(f"commit of {sorted(due)} failed, next try in a while: {exc!r}")
            if not isinstance(exc, (TransientError, *self.transient_errors)):
                self.report_error(exc)
            return
        self._committed.update(due)


_NONE = object()


def is_checkpointed(context: TopologyContext) -> bool:
    try:
        return bool(context.component_tasks(COORDINATOR_COMPONENT))
    except KeyError:
        return False


def _key(position: Any) -> Any:
    """A position as a dict key (msgpack gives lists and maps back)."""
    if isinstance(position, list | tuple):
        return tuple(_key(p) for p in position)
    if isinstance(position, dict):
        return tuple(sorted((_key(k), _key(v)) for k, v in position.items()))
    return position


def _raw(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", "replace")
    else:
        text = value if isinstance(value, str) else repr(value)
    return text[:MAX_RAW_CHARS]
