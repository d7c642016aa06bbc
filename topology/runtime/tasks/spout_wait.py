"""How long a spout task waits after a ``next_tuple`` call that emitted nothing (pure).

Storm's ``topology.spout.wait.strategy``.  The wait only spaces the calls to ``next_tuple``:
the executor keeps serving tuples, acks and control meanwhile.

- ``sleep``: always ``topology.sleep.spout.wait.strategy.time.ms``.
- ``progressive``: that wait after the first empty call, doubled after each further one
  up to ``topology.spout.wait.progressive.max.millis``; an emit starts it afresh.  An idle
  polling spout then costs a few calls per second instead of a thousand, at the price of
  noticing new data up to the maximum wait later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topology import config as cfg

#: ``wait(empty_calls) -> seconds``: the wait after ``empty_calls`` empty calls in a row.
SpoutWait = Callable[[int], float]


def fixed_wait(seconds: float) -> SpoutWait:
    """The ``sleep`` strategy: ``seconds`` after every empty call."""
    return lambda empty_calls: seconds


def progressive_wait(first: float, longest: float) -> SpoutWait:
    """The ``progressive`` strategy: ``first`` doubled per further empty call, at most
    ``longest`` (``first`` when ``longest`` is smaller)."""
    longest = max(first, longest)
    if first <= 0.0:
        return lambda empty_calls: 0.0

    def wait(empty_calls: int) -> float:
        # 2 ** 60 * any positive first is beyond every sane longest: cap the exponent
        return min(longest, first * (1 << min(max(0, empty_calls - 1), 60)))

    return wait


def spout_wait(conf: dict[str, Any]) -> SpoutWait:
    """The strategy a topology's (validated) ``conf`` asks for."""
    first = conf[cfg.TOPOLOGY_SPOUT_WAIT_MS] / 1000.0
    if conf[cfg.TOPOLOGY_SPOUT_WAIT_STRATEGY] == "progressive":
        return progressive_wait(first, conf[cfg.TOPOLOGY_SPOUT_WAIT_MAX_MS] / 1000.0)
    return fixed_wait(first)
