"""How a long operation (``kill``, ``rebalance``, a savepoint, a drain) says how it goes.

An operation is given a :data:`Progress`, a callable it hands one line per *step*
(deactivated, relaunching, stopping).  A line of the class :class:`Update` is not a step
but news of the current one (a countdown, what a wait still waits for): a terminal shows
it in place of the previous update, while a pipe, a file or a log drops it, so that each
step is printed once however long it takes.  A plain callable (``lines.append``) receives
every line, updates included (an :class:`Update` is a ``str``).

>>> said = []
>>> steps = Steps(said.append, every=0.0)
>>> steps.say("deactivated"); steps.count_down("draining", 25); steps.say("deactivated")
>>> said, isinstance(said[-1], Update)
(['deactivated', 'draining: 25s left'], True)
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Where a long operation says how it goes: one line per step (None: silence).
Progress = Callable[[str], None] | None

#: Seconds between two updates of one step (a terminal's live line).
UPDATE_EVERY_SECS = 1.0


class Update(str):
    """News of the current step (see the module docstring): shown in place of the
    previous update in a terminal, dropped where lines cannot be rewritten."""


def say(progress: Progress, line: str) -> None:
    """Hand ``line`` to ``progress``, if there is one."""
    if progress is not None:
        progress(line)


class Steps:
    """Says each step once, and the news of the current step (updates) at most every
    ``every`` seconds (default :data:`UPDATE_EVERY_SECS`; ``clock``: monotonic seconds)."""

    def __init__(
        self,
        progress: Progress,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._progress = progress
        self._every = UPDATE_EVERY_SECS if every is None else every
        self._clock = clock
        self._steps: set[str] = set()
        self._update: str | None = None
        self._updated_at = clock()

    def say(self, line: str) -> None:
        """Say the step ``line``, once: a step already said is not said again."""
        if self._progress is not None and line not in self._steps:
            self._steps.add(line)
            self._update = None
            self._updated_at = self._clock()
            self._progress(line)

    def update(self, line: str) -> None:
        """Say ``line`` as an :class:`Update` of the current step, if the last line was
        said ``every`` seconds ago or more and this update is news."""
        now = self._clock()
        if self._progress is not None and line != self._update:
            if now - self._updated_at >= self._every:
                self._update = line
                self._updated_at = now
                self._progress(Update(line))

    def count_down(self, what: str, left: float) -> None:
        """``<what>: 25s left`` as an update, while more than half a second is left."""
        if left > 0.5:
            self.update(f"{what}: {left:.0f}s left")
