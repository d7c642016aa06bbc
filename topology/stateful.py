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
    """

    state: KeyValueState

    def init_state(self, state: KeyValueState) -> None:
        """Receive the task's state (``get``, ``put``, ``delete``, ``in``, iteration)."""
        self.state = state


class ReplayableSpout(Spout):
    """A spout over a source it can re-read from a position (an offset, a file and line).

    At each checkpoint the runtime asks :meth:`position` (what ``next_tuple`` would read
    next) and stores it; after a failure it calls :meth:`seek` with the position of the last
    complete checkpoint, right after ``open``.  Positions must be msgpack-encodable.  With
    one, a checkpointed topology is exactly-once whatever the spout's msg ids.
    """

    def position(self) -> Any:
        """Where reading goes on next (stored with each checkpoint)."""
        raise NotImplementedError(f"{type(self).__name__} must implement position()")

    def seek(self, position: Any) -> None:
        """Go back to ``position`` (from :meth:`position` at the restored checkpoint)."""
        raise NotImplementedError(f"{type(self).__name__} must implement seek()")


def is_checkpointed(components: Any) -> bool:
    """Whether a topology with these components takes checkpoints (it has state)."""
    return any(isinstance(c.instance, StatefulBolt) for c in components)
