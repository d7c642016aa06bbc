"""Positions and handles a connector gets back from a checkpoint are hostile input.

A checkpoint may have been seeded from a savepoint anyone could have written, so a source
checks every partition and position :meth:`~.source.PartitionedSource.seek` is given
(:meth:`~.source.PartitionedSource.restored_problem`: a partition it is not configured
for, a file outside its directory, a position of the wrong shape) and a sink every
pre-committed handle it is asked to commit after a restore
(:meth:`~.sink.TransactionalSink.restored_handle`: a path outside its directory, another
sink's marker).  What fails is dropped: :class:`RestoreRefusals` logs it (the first
:data:`LOGGED`), counts it in the task's ``restored_refused`` counter
(``sparkstorm_user_restored_refused_total``) and reports it once per restore as the
component's error, naming the component and the first path or partition refused.  The
task goes on with the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topology.printable import printable

if TYPE_CHECKING:
    from topology.components import Component
    from topology.context import TopologyContext
    from topology.metrics import Counter

#: The counter of refusals each connector task registers.
COUNTER = "restored_refused"
#: Refusals of one restore written to the worker's log one by one; the rest are counted.
LOGGED = 10
#: Characters of a refused path or partition shown.
SHOWN_CHARS = 200


def refusal_counter(context: TopologyContext) -> Counter:
    """The task's ``restored_refused`` counter."""
    return context.register_counter(
        COUNTER, "partitions, positions and handles a restore refused (outside the component)"
    )


def shown(value: Any) -> str:
    """A restored path, partition or handle for a message: printable, one line, clipped."""
    text = value if isinstance(value, str) else repr(value)
    text = printable(text)
    return repr(text[:SHOWN_CHARS]) + ("..." if len(text) > SHOWN_CHARS else "")


class RestoreRefusals:
    """What one restore of one connector task refused (see the module docstring)."""

    def __init__(self, component: Component, name: str, counter: Counter) -> None:
        self.component, self.name, self.counter = component, name, counter
        self.count = 0
        self.first: str | None = None

    def refuse(self, what: str, reason: str) -> None:
        """Drop ``what`` (a phrase naming the path or partition, :func:`shown`) for
        ``reason``."""
        self.count += 1
        self.counter.inc()
        text = f"{self.name}: a restored checkpoint's {what} is refused: {reason}"
        if self.first is None:
            self.first = text
        if self.count <= LOGGED:
            self.component.log(text)

    def report(self) -> None:
        """The refusals as one error of the component (nothing when there were none)."""
        if self.first is not None:
            more = self.count - 1
            tail = f" (and {more:,} more refused: see the worker log)" if more else ""
            self.component.report_error(f"{self.first}; it is ignored{tail}")
