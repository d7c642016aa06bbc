"""A :class:`~topology.StatefulBolt` task's live state, in memory or on local disk
(``topology.state.backend``), with optional expiry (``topology.state.ttl.secs``).

:func:`~topology.state.live.factory.open_live_state` opens one; every backend is a
:class:`LiveState`, whose changes :meth:`~LiveState.take_changes` gives in stored form for
incremental checkpoints and :meth:`~LiveState.load` takes back at a restore;
:func:`stored_value` reads any stored value (with or without its TTL time) back to the
user's value.
"""

from .base import Change, LiveState, StateSize
from .codec import stored_entry, stored_value

__all__ = [
    "Change",
    "LiveState",
    "StateSize",
    "stored_entry",
    "stored_value",
]
