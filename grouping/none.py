"""None grouping: the subscriber does not care which task gets a tuple.

Guarantee: none beyond delivery to exactly one target task.  As in Storm, it is
currently implemented as a shuffle grouping (even round-robin spread per source task),
but topologies must not rely on that.
"""

from __future__ import annotations

from .shuffle import ShuffleGrouping


class NoneGrouping(ShuffleGrouping):
    """Routing for subscribers that do not care; currently a shuffle grouping."""

    kind = "none"
