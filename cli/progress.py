"""Progress in the terminal: the steps of a long wait (``kill``, ``rebalance``,
``savepoint``) on stderr, and the live table of a running topology (rich) from worker
status replies."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import click
from rich.table import Table

from topology.constants import RESERVED_PREFIX
from topology.deploy.progress import Update
from topology.stats.rolling import ALL_TIME

from .status_view import count, table_with_key

#: Back to the start of the line and clear it (a terminal's live line).
CLEAR_LINE = "\r\x1b[2K"


class WaitLines:
    """The steps of a long wait on ``stream``, each on a line of its own ending in
    ``...``; an :class:`~topology.deploy.progress.Update` of the current step (a
    countdown, what the wait still waits for) rewrites one live line below it when
    ``stream`` is a terminal, and is dropped otherwise (a pipe, a file, a CI log), so that
    each step is printed once.  :meth:`close` clears the live line (before the result)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._terminal = stream.isatty()
        self._live = False

    def __call__(self, line: str) -> None:
        if isinstance(line, Update):
            if self._terminal:  # cut to the width: a wrapped line would not be cleared
                width = shutil.get_terminal_size().columns - len("...") - 1
                click.echo(f"{CLEAR_LINE}{line[:width]}...", file=self._stream, nl=False)
                self._live = True
            return
        self.close()
        click.echo(f"{line}...", file=self._stream)

    def close(self) -> None:
        """Clear the live line, if one is shown."""
        if self._live:
            click.echo(CLEAR_LINE, file=self._stream, nl=False)
            self._live = False


@contextmanager
def wait_lines() -> Iterator[WaitLines]:
    """:class:`WaitLines` on stderr, whose result goes to stdout: scripts read the result
    alone, and the live line is gone before it is printed."""
    lines = WaitLines(click.get_text_stream("stderr"))
    try:
        yield lines
    finally:
        lines.close()


def component_totals(status: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """component -> summed counters (emitted, transferred, executed, acked, failed, errors)
    of every incarnation of its tasks: each task's all-time window, which includes what
    it did before a restart (a task's top-level counters are its live process's only)."""
    totals: dict[str, dict[str, int]] = {}
    for worker in status:
        for entry in worker["tasks"].values():
            task = {**entry, **((entry.get("windows") or {}).get(ALL_TIME) or {})}
            t = totals.setdefault(
                task["component"],
                {
                    "tasks": 0,
                    "emitted": 0,
                    "transferred": 0,
                    "executed": 0,
                    "acked": 0,
                    "failed": 0,
                    "errors": 0,
                },
            )
            t["tasks"] += 1
            t["emitted"] += sum(task["emitted"].values())
            t["transferred"] += sum(task["transferred"].values())
            for key in ("executed", "acked", "failed", "errors"):
                t[key] += int(task.get(key) or 0)
    return totals


def progress_table(
    title: str,
    totals: dict[str, dict[str, int]],
    previous: dict[str, dict[str, int]],
    seconds: float,
) -> Table:
    """A table of per-component counters with rates since ``previous``."""
    names = [name for name in sorted(totals) if not name.startswith(RESERVED_PREFIX)]
    table = table_with_key(
        title,
        ("component", "tasks", "emitted", "executed", "exec/s", "acked", "failed", "errors"),
        numeric_from=1,
        key_width=max(map(len, names), default=0),
    )
    for name in sorted(totals):
        if name.startswith(RESERVED_PREFIX):
            continue
        t = totals[name]
        before = previous.get(name, {}).get("executed", 0)
        rate = (t["executed"] - before) / seconds if seconds > 0 else 0.0
        table.add_row(
            name,
            str(t["tasks"]),
            count(t["emitted"]),
            count(t["executed"]),
            count(rate),
            count(t["acked"]),
            count(t["failed"]),
            f"[red]{t['errors']}[/red]" if t["errors"] else "0",
        )
    return table
