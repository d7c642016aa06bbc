"""``NexmarkSpout``: Nexmark's events generated inside the spout, each task its share.

Task *i* of *k* emits events ``i, i + k, ...`` below ``events`` (so the events and every
query's result are the same whatever *k*), each with its event number as msg id: a failed
event is generated again from its number and emitted again.  As a ``ReplayableSpout`` its
position is the next event number, so a checkpointed topology restarts from there.  After
its last event a task emits the end marker (:func:`~.generator.end_marker`, no msg id),
which moves event-time windows past their last window.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from topology import ReplayableSpout

from .generator import GeneratorConfig, end_marker, generator

#: Events a ``next_tuple`` call emits at most.
BATCH = 100


class NexmarkSpout(ReplayableSpout):
    """Emits ``[event]`` (field ``event``) for its share of events ``0 .. events - 1``.

    Args:
        events: how many events in all (every task together).
        config: the generator's configuration (seed, rate...).
        msg_ids: emit with msg ids (acked, replayed on failure) or without.
        end: emit the end marker after the last event.
        batch: events per ``next_tuple`` call.
        report: a folder where each task writes ``spout-<task index>.json`` (its events and
            the wall time it emitted the last one) when it is done: a runner reads it
            there, without asking the workers for their results while they run.
    """

    outputs = ["event"]

    def __init__(
        self,
        events: int,
        config: GeneratorConfig | None = None,
        *,
        msg_ids: bool = True,
        end: bool = True,
        batch: int = BATCH,
        report: str | None = None,
    ) -> None:
        self.events = events
        self.config = config or GeneratorConfig()
        self.msg_ids = msg_ids
        self.end = end
        self.batch = batch
        self.report = report

    def open(self, conf: Any, context: Any) -> None:
        self.generator = generator(self.config)
        self.task_index = context.task_index
        self.first = self.next = context.task_index
        self.step = len(context.component_tasks())
        self.again: list[int] = []
        self.ended = False
        self.emitted = self.acked = self.failed = 0
        self.done_at: float | None = None

    def next_tuple(self) -> None:
        emit = self.emit
        if self.again:
            n = self.again.pop()
            emit([self.generator.event(n)], msg_id=n)
            return
        n, step = self.next, self.step
        if n < self.events:
            stop = min(self.events, n + step * self.batch)
            batch = self.generator.events(n, stop, step)
            if self.msg_ids:
                for i, event in enumerate(batch):
                    emit([event], msg_id=n + i * step)
            else:
                for event in batch:
                    emit([event])
            self.next = n + step * len(batch)
            self.emitted += len(batch)
        elif not self.ended:
            self.ended = True
            self.done_at = time.time()
            if self.end:
                emit([end_marker(self.config)])
            if self.report is not None:
                path = os.path.join(self.report, f"spout-{self.task_index}.json")
                with open(path + ".tmp", "w") as out:
                    json.dump({"emitted": self.emitted, "done_at": self.done_at}, out)
                os.replace(path + ".tmp", path)

    def ack(self, msg_id: Any) -> None:
        self.acked += 1

    def fail(self, msg_id: Any) -> None:
        self.failed += 1
        self.again.append(msg_id)

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = int(position)
        self.ended = False

    def collect_results(self) -> dict[str, Any]:
        """Counts and when the task emitted its last event (wall-clock seconds)."""
        return {
            "emitted": self.emitted,
            "acked": self.acked,
            "failed": self.failed,
            "next": self.next,
            "done_at": self.done_at,
        }
