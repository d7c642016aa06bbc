"""Direct grouping: the emitter decides which task receives each tuple.

Guarantee: a tuple goes to exactly the task named by the emitting component's
``emit_direct(task, ...)``.  The grouping itself never routes: :meth:`choose_tasks`
returns ``[]``, and it is the output collector that checks the named task is one of
the subscriber's ``target_tasks`` (and that the stream was declared direct), raising
an error otherwise.  A plain ``emit`` on such an edge reaches no task of this
subscriber.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import GroupingContext


class DirectGrouping:
    """Marker grouping for direct streams; routing happens in the collector."""

    def prepare(self, context: GroupingContext) -> None:
        pass

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        return []
