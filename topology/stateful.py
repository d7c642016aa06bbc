"""Stateful bolts and replayable spouts: exactly-once state across failures.

A topology with a :class:`StatefulBolt` is *checkpointed*: every
``topology.state.checkpoint.interval.ms`` a checkpoint snapshots every stateful task's state
and every spout's position, with Flink's aligned barriers, into the state backend
(``topology.state.provider``).  After any failure every task restarts from the last
complete checkpoint and the spouts go back to its positions, so the state ends as if each
input had been applied exactly once.  See docs/STATE.md.

Example::

    class Count(StatefulBolt):
        outputs = ["word", "count"]
        def execute(self, tup):
            word = tup["word"]
            count = self.state.get(word, 0) + 1
            self.state.put(word, count)
            self.emit([word, count])

    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .components import Bolt, Spout

if TYPE_CHECKING:  # the state layer is above this one: the runtime makes the state
    from .state.kv import KeyValueState


class StatefulBolt(Bolt):
    """A bolt whose key-value ``self.state`` survives failures exactly once.

    ``init_state`` is called once per task, after ``prepare``, with the state restored from
    the last complete checkpoint (empty at the first start).  Use the fields-grouping key
    as the state key: keys are spread over the tasks as a fields grouping spreads them, so
    each task finds its keys' state however tasks move between workers.

    ``ack`` / ``fail`` / anchors work as for :class:`Bolt` but do not matter for the
    state: in a checkpointed topology a spout's msg id is acked once the checkpoint holding
    its effects is complete, and failures replay from the last checkpoint.

    Two hooks tell the task about checkpoints (both no-ops here; both run on the task's
    executor thread, between ``execute`` calls), so a sink can commit in two phases: stage
    what it wrote in ``pre_checkpoint`` (e.g. a transaction id, in ``self.state``), make it
    visible in ``checkpoint_complete``, and finish in ``init_state`` what a crash left
    staged.  See docs/STATE.md, "Hooks for sinks and sources".

    Example: a word count whose counts survive failures, run on the in-process runner:

        >>> from topology import TopologyBuilder
        >>> from topology.runtime.inprocess import InProcessRunner
        >>> from topology.testing import FeederSpout
        >>> class Count(StatefulBolt):
        ...     outputs = ["word", "count"]
        ...     def execute(self, tup):
        ...         word = tup["word"]
        ...         count = self.state.get(word, 0) + 1
        ...         self.state.put(word, count)
        ...         self.emit([word, count], anchors=tup)
        ...         self.ack(tup)
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("words", FeederSpout(["word"], [["a"], ["b"], ["a"]]))
        >>> _ = builder.set_bolt("count", Count()).fields_grouping("words", ["word"])
        >>> runner = InProcessRunner(builder.create_topology())
        >>> runner.activate()
        >>> _ = runner.run_until(lambda: runner.instance("count").state.get("a") == 2)
        >>> sorted(runner.instance("count").state.items())
        [('a', 2), ('b', 1)]
    """

    state: KeyValueState
    #: Whether its task count may change with its state (``rebalance -e``, a savepoint
    #: restored with another parallelism): keyed state moves by key group.  A bolt whose
    #: state belongs to its tasks whatever the keys (a sink's open transactions, named by
    #: task) sets False, and a rescale of it is refused.
    rescalable: bool = True
    #: What its state's values are (None: not declared): a type, a tuple of types, ``X |
    #: None``, ``list[...]`` or ``dict[..., ...]`` of those.  A format no backend stores as
    #: it is (a set, a tuple, a class of the author's) is refused at submit, and a savepoint
    #: restored into the bolt has every value checked against it
    #: (:mod:`topology.state.value_formats`).
    state_values: Any = None
    #: What ``self.state.merge(key, value)`` combines with: ``f(old, value)``, associative
    #: (None: addition).  A function of the class body is taken as it is (no ``self``):
    #: ``state_merge = max``.  See :mod:`topology.state.merges` (``append``, ``union``).
    state_merge: Any = None

    def init_state(self, state: KeyValueState) -> None:
        """Receive the task's state: once per task, after ``prepare``, and again after a
        recovery.  The default keeps it as ``self.state``.

        Args:
            state: the state of the last complete checkpoint (empty at the first start):
                ``get``, ``put``, ``merge``, ``delete``, ``in``, iteration.
        """
        self.state = state

    def pre_checkpoint(self, checkpoint: int) -> None:
        """The task aligned barrier ``checkpoint``: its inputs before the barrier were all
        executed, none after it yet.  Called before the state's changed keys are snapshotted,
        so whatever this puts into ``self.state`` is part of checkpoint ``checkpoint`` (and
        what a restore to it gives ``init_state``); tuples it emits go before the barrier.

        If it raises, the error is reported as the component's and the task declines the
        checkpoint (it is abandoned; its changes go into the next one).  Not called while
        the topology recovers.

        Args:
            checkpoint: the checkpoint's id (increasing).
        """

    def checkpoint_complete(self, checkpoint: int) -> None:
        """Checkpoint ``checkpoint`` is complete and durable: every task stored it and its
        completion record is written, so a recovery restores it (or a later one).

        Called at most once per task and checkpoint, with increasing ids, never for an
        abandoned checkpoint; only after this task's ``pre_checkpoint(checkpoint)``.  It may
        be missed: a crash or a recovery between the completion and the call loses it, and
        a task may hear only a later checkpoint.  Recovery must cover it: after a restore,
        ``init_state`` receives the state of the last complete checkpoint (which holds what
        ``pre_checkpoint`` put there), so finish there what this call would have finished.
        An error it raises is reported as the component's; the worker goes on.

        Args:
            checkpoint: the checkpoint's id.
        """


class ReplayableSpout(Spout):
    """A spout over a source it can re-read from a position (an offset, a file and line).

    At each checkpoint the runtime asks :meth:`position` (what ``next_tuple`` would read
    next) and stores it; after a failure it calls :meth:`seek` with the position of the last
    complete checkpoint, right after ``open``.  Positions must be msgpack-encodable.  With
    one, a checkpointed topology is exactly-once whatever the spout's msg ids.

    Example: a spout over a list, whose position is the index of the next word:

        >>> class Words(ReplayableSpout):
        ...     outputs = ["word"]
        ...     def open(self, conf, context):
        ...         self.words, self.at = ["a", "b", "a"], 0
        ...     def next_tuple(self):
        ...         if self.at < len(self.words):
        ...             self.emit([self.words[self.at]], msg_id=self.at)
        ...             self.at += 1
        ...     def position(self):
        ...         return self.at
        ...     def seek(self, position):
        ...         self.at = position
        >>> spout = Words()
        >>> spout.open({}, None)
        >>> spout.seek(2)
        >>> spout.position()
        2

        A ``{partition: position}`` position is split over new task counts by itself:

        >>> spout.rescale_position([{"p0": 5}, {"p1": 7}], task_index=0, tasks=1)
        {'p0': 5, 'p1': 7}
    """

    def position(self) -> Any:
        """Where reading goes on next (stored with each checkpoint).

        Returns:
            A msgpack-encodable position (an offset, a file and line, a dict of them...).

        Raises:
            NotImplementedError: the subclass does not implement it (every replayable
                spout must).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement position()")

    def seek(self, position: Any) -> None:
        """Go back to a stored position; called right after ``open`` on a recovery.

        Args:
            position: what :meth:`position` returned at the restored checkpoint.

        Raises:
            NotImplementedError: the subclass does not implement it (every replayable
                spout must).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement seek()")

    def rescale_position(self, positions: list[Any], task_index: int, tasks: int) -> Any:
        """The position task ``task_index`` of ``tasks`` starts from after a rescale (the
        spout had another task count at the restored checkpoint): ``positions`` are every
        old task's stored positions, in task order.

        The default serves a spout whose position is ``{partition: position}`` for the
        partitions its task reads (every :class:`~topology.connectors.PartitionedSource`):
        the dicts merged, so each new task seeks the partitions it now owns and no position
        is lost.  Any other position cannot be split without knowing the source: override
        this, or the rescale is reported as the component's error and the task starts from
        where ``open`` put it.

        Args:
            positions: every old task's stored position, in task order.
            task_index: this task's index among the new tasks.
            tasks: the new task count.

        Returns:
            The position this task seeks to.

        Raises:
            TypeError: the positions are not all dicts (override this method then).
        """
        if all(isinstance(p, dict) for p in positions):
            merged: dict[Any, Any] = {}
            for position in positions:
                merged.update(position)
            return merged
        raise TypeError(
            f"{type(self).__name__} was rescaled but its positions are not "
            "{partition: position} dicts: override rescale_position(positions, task_index, "
            "tasks) to say where each new task reads from"
        )

    def checkpoint_complete(self, checkpoint: int) -> None:
        """Checkpoint ``checkpoint`` is complete and durable: the position stored with it
        will never be read again from before it (e.g. commit a consumer offset, delete
        files read).  Called on the executor thread, after the msg ids it covers were
        acked; at most once per task and checkpoint, increasing, never for an abandoned
        one.  It may be missed (a crash or recovery in between): after a restore, ``seek``
        gets the position of the last complete checkpoint.  No-op by default; an error it
        raises is reported as the component's and the worker goes on.

        Args:
            checkpoint: the checkpoint's id.
        """


def hears_completions(instance: Any) -> bool:
    """Whether the coordinator tells a bolt's tasks that checkpoints completed: every
    :class:`StatefulBolt` and windowed bolt (the runtime keeps each task's key-value and
    window changes until it hears that a checkpoint holding them is complete, then calls
    ``checkpoint_complete``).  A windowed bolt is known by its ``take_window_changes``
    (``topology.windows`` is a layer above)."""
    return isinstance(instance, StatefulBolt) or hasattr(instance, "take_window_changes")


def is_checkpointed(components: Any) -> bool:
    """Whether a topology with these components takes checkpoints (it has state)."""
    return any(isinstance(c.instance, StatefulBolt) for c in components)
