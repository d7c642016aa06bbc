"""A bolt that kills its worker process once, for the crash-and-relaunch tests.

Kept in an importable module, like ``components.py``, so worker processes can unpickle it
by reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topology import Bolt, TopologyContext, Tuple


class WorkerCrash(BaseException):
    """Not an ``Exception``: the executor's per-tuple handler lets it through, so it ends
    the worker process as an uncaught error in the runtime would."""


class CrashOnce(Bolt):
    """Acks every tuple; the task on worker ``worker`` raises :class:`WorkerCrash` at its
    ``after``-th tuple, once per ``marker`` file (a relaunched worker finds the marker and
    runs on)."""

    def __init__(self, marker: str, worker: int, after: int) -> None:
        self.marker = marker
        self.worker = worker
        self.after = after

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.crashes = self.worker == context.worker_index
        self.executed = 0

    def execute(self, tup: Tuple) -> None:
        self.executed += 1
        if self.crashes and self.executed >= self.after:
            marker = Path(self.marker)
            try:
                marker.touch(exist_ok=False)  # one task of one incarnation wins
            except FileExistsError:
                self.crashes = False
            else:
                raise WorkerCrash(f"crashing on tuple {self.executed}")
        self.ack(tup)

    def collect_results(self) -> dict[str, Any]:
        return {"executed": self.executed}
