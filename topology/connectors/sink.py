"""Bolts that write to an external system: batched (at-least-once) or transactional.

* :class:`BatchingSink` (at-least-once, idempotent): tuples are written in batches by
  :meth:`BatchingSink.write_batch` and acked after the write; a replayed tuple is written
  again, so the write should be an upsert keyed by something in the tuple.  A row the
  system refuses (a data error) goes to the dead-letter stream and the rest is written:
  one bad row never replays a batch for ever (docs/ERRORS.md).
* :class:`TransactionalSink` (exactly-once, in a checkpointed topology): a two-phase commit
  driven by checkpoints — data staged since the last checkpoint is pre-committed when the
  task aligns a checkpoint (the handle is stored in that checkpoint) and committed once the
  checkpoint is complete; after a crash the handles of the restored checkpoint are
  committed again (commits are idempotent), and whatever else was staged is dropped.

Example (print every batch)::

    class Print(BatchingSink):
        def write_batch(self, records):
            for values in records:
                print(*values)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from topology.components import Bolt
from topology.config import STATE_MAX_PARALLELISM, TOPOLOGY_TICK_TUPLE_FREQ_SECS
from topology.state.kv import DEFAULT_KEY_GROUPS, key_owner
from topology.stateful import StatefulBolt

from .restored import RestoreRefusals, refusal_counter, shown
from .retry import Backoff, Transient, TransientError, check_number, retrying, setting_error

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.state.kv import KeyValueState
    from topology.tuple import Tuple

#: First element of the state keys of pre-committed handles: ``("pending", checkpoint, n)``.
PENDING = "pending"


def _check_settings(
    owner: object, batch_size: int, max_retry_secs: float | None, backoff: Backoff | None
) -> None:
    """Refuse bad settings shared by both sinks, naming ``owner``'s class and the setting."""
    check_number(owner, "batch_size", batch_size, minimum=1, integer=True)
    check_number(owner, "max_retry_secs", max_retry_secs, optional=True)
    if backoff is not None and not isinstance(backoff, Backoff):
        raise setting_error(owner, "backoff", "a Backoff or None", backoff)


class RowErrors(Exception):
    """What :meth:`BatchingSink.write_batch` raises when the system refused some rows and
    wrote the others (a Redis pipeline answers per command): ``errors`` maps the index of
    each refused row in the batch to its error.

    Args:
        errors: the index of each refused row in the batch -> its error.

    Example:
        >>> class Store(BatchingSink):
        ...     def write_batch(self, records):
        ...         refused = {i: ValueError("empty id") for i, r in enumerate(records) if not r[0]}
        ...         # ... write the other rows ...
        ...         if refused:
        ...             raise RowErrors(refused)
        >>> error = RowErrors({1: ValueError("empty id")})
        >>> print(error)
        1 row(s) refused, the first: ValueError('empty id')
        >>> error.errors
        {1: ValueError('empty id')}
    """

    def __init__(self, errors: Mapping[int, BaseException]) -> None:
        self.errors = dict(errors)
        first = next(iter(self.errors.values()), None)
        super().__init__(f"{len(self.errors)} row(s) refused, the first: {first!r}")


class BatchingSink(Bolt):
    """Writes tuples in batches, acking them once written (at-least-once).

    Implement :meth:`write_batch` (and :meth:`connect` / :meth:`disconnect` to open and
    close clients).  A batch is written when it holds ``batch_size`` tuples, on a tick
    every ``flush_interval_secs`` and at ``cleanup``.  A write that raises
    :class:`TransientError` (or one of ``transient_errors``) is retried with ``backoff``
    until ``max_retry_secs`` (None: forever); blocking the executor meanwhile is the
    backpressure.  One that still fails then fails every tuple of the batch (they are
    replayed: a lost connection is not the rows' fault) and is reported.

    An error of ``sink_errors`` (the sink itself is wrong: a missing table, no permission)
    is no row's either: the batch is failed and reported, so the pipeline waits for a fix.

    Any other error is a row's: the batch is split in halves, written apart, until the
    rows that fail alone are found (a write may also name them itself:
    :class:`RowErrors`); the others are written and acked.  A row that fails alone goes
    to the component's failure policy (``topology.errors.*``): with a data error — a
    :class:`~topology.errors.DataError` or one of ``data_errors``, the client's classes
    for data the system refuses — it goes to the dead-letter stream at once; with any
    other error it is written alone again later (:meth:`retry_input`), as many times as
    the policy's ``retries``, then dead-lettered (or failed, with the ``fail`` action).

    The constructor's arguments are keyword-only; a subclass passes them on to
    ``super().__init__``.

    Args:
        batch_size: tuples per write.
        flush_interval_secs: a part-full batch is written after at most this long.
        max_retry_secs: give up retrying a transient error after this long (None: never,
            unless ``backoff`` has a limit).
        backoff: the pauses between attempts, and the clock and sleep they use.

    Raises:
        ValueError: a setting is out of range (the message names it).

    Example: a sink printing each batch of two, run on the in-process runner:

        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> from topology.testing import FeederSpout
        >>> class Print(BatchingSink):
        ...     def write_batch(self, records):
        ...         print(records)
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("words", FeederSpout(["word"], [["a"], ["b"], ["c"], ["d"]]))
        >>> _ = builder.set_bolt("print", Print(batch_size=2)).shuffle_grouping("words")
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> runner.turn(30)
        [['a'], ['b']]
        [['c'], ['d']]
        >>> Print(batch_size=0)
        Traceback (most recent call last):
        ...
        ValueError: Print: batch_size must be an integer >= 1, got 0
    """

    #: The client's own exception classes worth retrying (set them in ``connect`` when
    #: they come from the lazily imported client); :class:`TransientError` always is.
    transient_errors: Transient = ()
    #: The client's own exception classes for a row the system refuses (a value no
    #: column takes, a broken constraint, a record too large): never retried.
    data_errors: Transient = ()
    #: The client's classes saying the sink is wrong: failed and replayed, never dead-lettered.
    sink_errors: Transient = ()

    def __init__(
        self,
        *,
        batch_size: int = 500,
        flush_interval_secs: float = 1.0,
        max_retry_secs: float | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        _check_settings(self, batch_size, max_retry_secs, backoff)
        check_number(self, "flush_interval_secs", flush_interval_secs, strict=True)
        self.batch_size = batch_size
        self.flush_interval_secs = flush_interval_secs
        self.max_retry_secs = max_retry_secs
        self.backoff = _with_limit(backoff, max_retry_secs)

    # -- what a connector implements --------------------------------------------------------

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Open clients (called at the end of ``prepare``).

        Args:
            conf: the component's config.
            context: the task's context.
        """

    def disconnect(self) -> None:
        """Close clients (called last in ``cleanup``, after the final write)."""

    def write_batch(self, records: list[list[Any]]) -> None:
        """Write a batch (make it idempotent: a replayed tuple is written again).

        Args:
            records: the values of the batch's tuples, in order.

        Raises:
            TransientError: (or one of ``transient_errors``) worth another try later.
            RowErrors: some rows were refused and the others written.
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement write_batch()")

    # -- the bolt ---------------------------------------------------------------------------

    def get_component_configuration(self) -> Mapping[str, Any] | None:
        """A tick every ``flush_interval_secs``, to write part-full batches.

        Returns:
            ``{"topology.tick.tuple.freq.secs": flush_interval_secs}``.
        """
        return {TOPOLOGY_TICK_TUPLE_FREQ_SECS: self.flush_interval_secs}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Start an empty batch, then :meth:`connect`.

        Args:
            conf: the component's config.
            context: the task's context.
        """
        self._batch: list[Tuple] = []
        self.connect(conf, context)

    def execute(self, tup: Tuple) -> None:
        """Add a tuple to the batch (a tick writes the batch); a full batch is written.

        Args:
            tup: the input tuple.
        """
        if tup.is_tick():
            self.flush()
            return
        self._batch.append(tup)
        if len(self._batch) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        """Write the batch now; ack its tuples once written (see the class docstring for
        what a failed write does)."""
        batch, self._batch = self._batch, []
        if batch:
            self._write(batch)

    def retry_input(self, tup: Tuple) -> None:
        """The failure policy's next attempt at a row that failed alone: written alone now
        and acked.

        Args:
            tup: the row's tuple.

        Raises:
            Exception: what the write raised (a transient error past ``max_retry_secs``
                fails the tuple instead: it is replayed).
        """
        not_the_rows: Transient = (TransientError, *self.transient_errors, *self.sink_errors)
        try:
            self._write_rows([tup])
        except not_the_rows as exc:  # (transient: past max_retry_secs)
            self.report_error(exc)
            self.fail(tup, exc)
            return
        except RowErrors as exc:
            raise next(iter(exc.errors.values())) from None
        self.ack(tup)

    def _write(self, batch: list[Tuple]) -> None:
        """Write ``batch``: ack what was written; split what failed until the rows that
        fail alone are found, and hand those to the failure policy."""
        not_the_rows: Transient = (TransientError, *self.transient_errors, *self.sink_errors)
        try:
            self._write_rows(batch)
        except not_the_rows as exc:  # (transient: past max_retry_secs)
            self.report_error(exc)
            for t in batch:
                self.fail(t, exc)
            return
        except RowErrors as exc:
            refused = {i: e for i, e in exc.errors.items() if 0 <= i < len(batch)}
            for i, t in enumerate(batch):
                if i not in refused:
                    self.ack(t)
            for i, error in refused.items():
                self._collector.input_failed(batch[i], error)
            return
        except Exception as exc:
            if len(batch) == 1:
                self._collector.input_failed(batch[0], exc)
                return
            half = len(batch) // 2
            self._write(batch[:half])
            self._write(batch[half:])
            return
        for t in batch:
            self.ack(t)

    def _write_rows(self, batch: list[Tuple]) -> None:
        """``write_batch`` of the rows of ``batch``, transient errors retried."""
        records = [list(t.values) for t in batch]
        retrying(
            lambda: self.write_batch(records),
            self.backoff,
            f"write of {len(records)} records",
            transient=self.transient_errors,
            log=self.log,
        )

    def cleanup(self) -> None:
        """Write the last batch, then :meth:`disconnect`."""
        try:
            self.flush()
        finally:
            self.disconnect()


class TransactionalSink(StatefulBolt):
    """Writes exactly once by a two-phase commit through checkpoints.

    Implement :meth:`begin`, :meth:`write`, :meth:`pre_commit`, :meth:`commit` (idempotent:
    record the checkpoint beside the data and skip it when present) and, when pre-committed
    data can be left behind, :meth:`abort_others` / :meth:`abort`.  ``self.sink_id``
    (``"component#task_index"``) names this task; ``self.marker_id`` (``sink_id`` and a
    per-process id) names its commit markers: carry it in the handle, so a restored handle
    is checked against its own marker and a new deployment never meets an old one.  Tuples
    are acked on ``execute``; the checkpoint acks the spout's msg ids.

    The constructor's arguments are keyword-only; a subclass passes them on to
    ``super().__init__``.

    Args:
        batch_size: tuples buffered before a :meth:`write`.
        max_retry_secs: give up retrying a commit's transient error after this long.
        backoff: the pauses between attempts, and the clock and sleep they use.

    Raises:
        ValueError: a setting is out of range (the message names it).

    Example: a sink staging rows in memory and publishing them at each checkpoint
    (a real one stages in the external system):

        >>> PUBLISHED = {}
        >>> class Publish(TransactionalSink):
        ...     def begin(self, checkpoint_hint):
        ...         return []
        ...     def write(self, txn, records):
        ...         txn.extend(records)
        ...     def pre_commit(self, txn, checkpoint):
        ...         return txn  # the handle: stored in the checkpoint
        ...     def commit(self, handle, checkpoint):
        ...         PUBLISHED[checkpoint] = handle  # idempotent: a second call is the same
        >>> sink = Publish(batch_size=100)
        >>> Publish(max_retry_secs=-1)
        Traceback (most recent call last):
        ...
        ValueError: Publish: max_retry_secs must be a number >= 0 or None, got -1
    """

    #: The client's own exception classes worth retrying (see :class:`BatchingSink`).
    transient_errors: Transient = ()
    #: Its state is its tasks' open transactions (named by task): not rescalable.
    rescalable = False

    def __init__(
        self,
        *,
        batch_size: int = 500,
        max_retry_secs: float | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        _check_settings(self, batch_size, max_retry_secs, backoff)
        self.batch_size = batch_size
        self.max_retry_secs = max_retry_secs
        self.backoff = _with_limit(backoff, max_retry_secs)

    # -- what a connector implements --------------------------------------------------------

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Open clients (called at the end of ``prepare``).

        Args:
            conf: the component's config.
            context: the task's context.
        """

    def disconnect(self) -> None:
        """Close clients (called in ``cleanup``)."""

    def begin(self, checkpoint_hint: int) -> Any:
        """Open a transaction or staging area.

        Args:
            checkpoint_hint: the checkpoint its data is likely for (a hint: the data goes
                to the next checkpoint this task aligns).

        Returns:
            The transaction, passed to :meth:`write`, :meth:`pre_commit` and :meth:`abort`.

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement begin()")

    def write(self, txn: Any, records: list[list[Any]]) -> None:
        """Stage a batch in a transaction (invisible to readers).

        Args:
            txn: what :meth:`begin` returned.
            records: the values of the batch's tuples, in order.

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement write()")

    def pre_commit(self, txn: Any, checkpoint: int) -> Any:
        """Make a transaction durable but still invisible.

        Args:
            txn: what :meth:`begin` returned.
            checkpoint: the checkpoint it belongs to.

        Returns:
            A msgpack-encodable handle for :meth:`commit`, stored in the checkpoint (the
            rows themselves, a prepared transaction's name, file paths).

        Raises:
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement pre_commit()")

    def commit(self, handle: Any, checkpoint: int) -> None:
        """Make a pre-committed transaction's data visible.  Idempotent: it is called again
        after a crash for a checkpoint that may already be committed.

        Args:
            handle: what :meth:`pre_commit` returned.
            checkpoint: the checkpoint it belongs to.

        Raises:
            TransientError: (or one of ``transient_errors``) retried with ``backoff``.
            NotImplementedError: the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement commit()")

    def abort_others(self, keep: list[Any]) -> None:
        """After a restore: drop pre-committed data this task left behind (prepared
        transactions, in-progress files); no-op by default.

        Args:
            keep: the handles the restored checkpoint holds (to be committed, not dropped).
        """

    def abort(self, txn: Any) -> None:
        """Drop an open transaction (a rollback made its data void); no-op by default.

        Args:
            txn: what :meth:`begin` returned.
        """

    def restored_handle(self, handle: Any, refusals: RestoreRefusals) -> Any:
        """The part of ``handle``, read back from a restored checkpoint (hostile: it may
        come from a crafted savepoint), that :meth:`commit` may act on; None when nothing
        of it may.  Whatever is dropped goes to ``refusals.refuse(what, why)``
        (:mod:`.restored`).  Check what :meth:`commit` would trust: its shape, and that
        every path or bookkeeping name it holds is this sink's (under its directory, its
        own marker).  The default keeps the handle whole.

        Args:
            handle: the handle as stored.
            refusals: where to report what is dropped.

        Returns:
            What :meth:`commit` may act on, or None.
        """
        return handle

    # -- the bolt ---------------------------------------------------------------------------

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Name the task (``sink_id``, ``marker_id``), then :meth:`connect`.

        Args:
            conf: the component's config.
            context: the task's context.
        """
        self.sink_id = f"{context.component_id}#{context.task_index}"
        #: How every ``sink_id`` (and ``marker_id``) of this component's tasks starts.
        self.sink_prefix = f"{context.component_id}#"
        #: This process's commit-marker name: a handle carries the marker id of the process
        #: that pre-committed it and is checked against that marker only, so a new deployment
        #: (checkpoint ids from 1 again) or a restarted task never meets an old marker.
        self.marker_id = f"{self.sink_id}@{uuid.uuid4().hex[:12]}"
        self._index = context.task_index
        self._tasks = len(context.component_tasks())
        self._key_groups = int(conf.get(STATE_MAX_PARALLELISM) or DEFAULT_KEY_GROUPS)
        self._buffer: list[list[Any]] = []
        self._txn: Any = None
        self._pending: dict[int, Any] = {}  # checkpoint -> its state key
        self._last = 0  # the newest checkpoint seen
        self._broken: BaseException | None = None
        self._refused = refusal_counter(context)
        self.connect(conf, context)

    def init_state(self, state: KeyValueState) -> None:
        """Commit the handles the restored checkpoint holds (what :meth:`restored_handle`
        keeps of each; refusals reported once, :mod:`.restored`), then drop everything
        else.

        Args:
            state: the task's state, as restored (empty at the first start).
        """
        super().init_state(state)
        if self._txn is not None:
            txn, self._txn = self._txn, None
            self.abort(txn)
        self._buffer, self._broken = [], None
        self._pending = {}
        refusals = RestoreRefusals(self, self.sink_id, self._refused)
        for key in list(state):
            if isinstance(key, tuple) and len(key) == 3 and key[0] == PENDING:
                handle = state.get(key)
                kept = self._restored(key, handle, refusals)
                if kept is None:
                    state.delete(key)
                    continue
                if kept is not handle:
                    state.put(key, kept)
                self._pending[key[1]] = key
        refusals.report()
        if self._pending:
            self._last = max(self._last, *self._pending)
            self._commit_through(max(self._pending))
        self.abort_others([])

    def _restored(self, key: tuple[Any, ...], handle: Any, refusals: RestoreRefusals) -> Any:
        """What of a restored handle stored under ``key`` may be committed, or None."""
        if type(key[1]) is not int or not 0 < key[1] < 2**63:
            refusals.refuse(f"handle under {shown(key)}", "not a checkpoint's id")
            return None
        try:
            return self.restored_handle(handle, refusals)
        except Exception as exc:  # a connector's check tripped on the shape: refuse it all
            refusals.refuse(f"handle of checkpoint {key[1]}", f"{type(exc).__name__}: {exc}")
            return None

    def execute(self, tup: Tuple) -> None:
        """Buffer the tuple's values (a full buffer is written to the open transaction)
        and ack it; a failed write fails it, so the topology rolls back.

        Args:
            tup: the input tuple.
        """
        if self._broken is not None:  # staged data was lost: ask for the rollback
            self.fail(tup, self._broken)
            return
        if not tup.is_tick():
            self._buffer.append(list(tup.values))
            if len(self._buffer) >= self.batch_size:
                try:
                    self._write()
                except Exception as exc:  # the transaction is lost, not this row's fault:
                    self.report_error(exc)  # roll back at once (never a retry or a dead
                    self.fail(tup, exc)  # letter, which would ack it and roll back nothing)
                    return
        self.ack(tup)

    def _write(self) -> None:
        batch, self._buffer = self._buffer, []
        if not batch or self._broken is not None:
            return
        try:
            if self._txn is None:
                self._txn = self.begin(self._last + 1)
            self.write(self._txn, batch)
        except Exception as exc:  # the rollback this asks for resets the sink
            self._broken = exc
            raise

    def pre_checkpoint(self, checkpoint: int) -> None:
        """Pre-commit what was staged and keep its handle in this checkpoint's state.

        Args:
            checkpoint: the checkpoint's id.

        Raises:
            RuntimeError: an earlier write failed: the task declines the checkpoint and
                waits for the rollback.
        """
        self._last = max(self._last, checkpoint)
        self._write()
        if self._broken is not None:
            raise RuntimeError(
                f"{self.sink_id} cannot take part in checkpoint {checkpoint}: a write "
                f"failed ({self._broken!r}); waiting for the rollback"
            )
        if self._txn is None:
            return  # nothing staged since the last checkpoint
        txn, self._txn = self._txn, None
        try:
            handle = retrying(
                lambda: self.pre_commit(txn, checkpoint),
                self.backoff,
                f"pre-commit of checkpoint {checkpoint}",
                transient=self.transient_errors,
                log=self.log,
            )
        except Exception as exc:  # declines the checkpoint; the next tuple asks to roll back
            self._broken = exc
            raise
        key = self._pending_key(checkpoint)
        self.state.put(key, handle)
        self._pending[checkpoint] = key

    def checkpoint_complete(self, checkpoint: int) -> None:
        """Commit, in order, every handle of a checkpoint up to ``checkpoint``.

        Args:
            checkpoint: the completed checkpoint's id.
        """
        self._last = max(self._last, checkpoint)
        self._commit_through(checkpoint)

    def _commit_through(self, checkpoint: int) -> None:
        for done in sorted(c for c in self._pending if c <= checkpoint):
            key = self._pending[done]
            handle = self.state.get(key)
            retrying(
                partial(self.commit, handle, done),
                self.backoff,
                f"commit of checkpoint {done}",
                transient=self.transient_errors,
                log=self.log,
            )
            self.state.delete(key)
            del self._pending[done]

    def _pending_key(self, checkpoint: int) -> tuple[str, int, int]:
        """A state key for ``checkpoint``'s handle that this task owns when the state is
        keyed (every input a fields grouping): ``(PENDING, checkpoint, n)``, the first n
        whose key falls to this task index, so no two tasks write the same key."""
        n, single = 0, bool(getattr(self.state, "single_field", False))
        while (
            key_owner((PENDING, checkpoint, n), self._tasks, self._key_groups, single)
            != self._index
        ):
            n += 1
        return (PENDING, checkpoint, n)

    def cleanup(self) -> None:
        """:meth:`disconnect` (what is staged waits for the next checkpoint or a restore)."""
        self.disconnect()


def _with_limit(backoff: Backoff | None, max_retry_secs: float | None) -> Backoff:
    """``backoff`` (default: :class:`Backoff`) with ``max_retry_secs`` when one is given."""
    base = backoff or Backoff()
    return base if max_retry_secs is None else replace(base, max_retry_secs=max_retry_secs)
