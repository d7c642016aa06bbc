"""Rendering helpers and a hand-built status report shared by the status unit tests.

Renderings are printed on a recording rich Console and read back as plain text; styles
are read back by parsing the ANSI export into a :class:`rich.text.Text`."""

from __future__ import annotations

import io
from typing import Any

from rich.color import Color
from rich.console import Console, RenderableType
from rich.style import Style
from rich.text import Text

from topology.stats.status_report import CAPACITY_WARNING

NOW = 1_700_000_000.0
STALE_AFTER = 3.0
RED = Color.parse("red").number


# -- rendering helpers ------------------------------------------------------------------------


def _console() -> Console:
    return Console(record=True, width=140, file=io.StringIO())


def render(renderable: RenderableType) -> str:
    console = _console()
    console.print(renderable)
    return console.export_text()


def render_styled(renderable: RenderableType) -> Text:
    """The rendering with its styles, parsed back from the ANSI export."""
    console = _console()
    console.print(renderable)
    return Text.from_ansi(console.export_text(styles=True))


def style_at(text: Text, needle: str) -> Style:
    """The style of the first character of the one occurrence of ``needle`` in ``text``."""
    plain = text.plain
    assert plain.count(needle) == 1, (needle, plain)
    return text.get_style_at_offset(_console(), plain.index(needle))


def cell_style(text: Text, row: str, column: int) -> Style:
    """The style of the first non-blank character of cell ``column`` in the one line that
    contains ``row``."""
    plain = text.plain
    starts = [i for i, line in _lines_at(plain) if row in line]
    assert len(starts) == 1, (row, plain)
    line = plain[starts[0] :].split("\n", 1)[0]
    bars = [i for i, ch in enumerate(line) if ch == "│"]
    begin, end = bars[column] + 1, bars[column + 1]
    offset = begin + (len(line[begin:end]) - len(line[begin:end].lstrip()))
    return text.get_style_at_offset(_console(), starts[0] + offset)


def _lines_at(plain: str) -> list[tuple[int, str]]:
    out, at = [], 0
    for line in plain.split("\n"):
        out.append((at, line))
        at += len(line) + 1
    return out


def is_red(style: Style) -> bool:
    return style.color is not None and style.color.number == RED


def line_with(output: str, needle: str) -> str:
    [line] = [line for line in output.splitlines() if needle in line]
    return line


def row(output: str, first: str) -> list[str]:
    """The cells of the one table row whose first cell is ``first``."""
    rows = [cells(line) for line in output.splitlines() if line.startswith("│")]
    [found] = [r for r in rows if r[0] == first]
    return found


def cells(line: str) -> list[str]:
    """The cells of one table row (rich draws ``│`` between columns)."""
    return [c.strip() for c in line.strip().strip("│").split("│")]


# -- a hand-built report ----------------------------------------------------------------------

TRACEBACK_1 = (
    "Traceback (most recent call last):\n"
    '  File "bolts.py", line 12, in execute\n'
    "    raise KeyError(word)\n"
    "KeyError: 'zebra'\n"
)
TRACEBACK_2 = (
    "Traceback (most recent call last):\n"
    '  File "bolts.py", line 40, in execute\n'
    "    db.write(row)\n"
    "ConnectionError: database is gone\n\n"
)


def make_report() -> dict[str, Any]:
    return {
        "schema": 1,
        "window": "600",
        "window_name": "10m",
        "generated_at": NOW,
        "topology": {
            "name": "wordcount",
            "id": "wordcount-1-1700000000",
            "status": "ACTIVE",
            "uptime_secs": 3725.0,
            "workers": 2,
            "workers_alive": 2,
            "tasks": 9,
        },
        "spouts": [
            {
                "id": "sentences",
                "tasks": 2,
                "emitted": 12345,
                "transferred": 12345,
                "acked": 12000,
                "failed": 345,
                "failed_by": {"timeout": 45, "failed": 300},
                "pending": 17,
                "complete_latency_ms": 3.25,
            },
            {
                "id": "quiet",
                "tasks": 1,
                "emitted": 0,
                "transferred": 0,
                "acked": 0,
                "failed": 0,
                "failed_by": {},
                "pending": 0,
                "complete_latency_ms": 0.0,
            },
        ],
        "bolts": [
            {
                "id": "split",
                "tasks": 3,
                "executed": 12345,
                "emitted": 61725,
                "transferred": 61725,
                "acked": 12299,
                "failed": 46,
                "failed_by": {"failed": 40, "error": 6},
                "execute_latency_ms": 0.125,
                "process_latency_ms": 0.25,
                "capacity": 0.953,
            },
            {
                "id": "count",
                "tasks": 2,
                "executed": 61725,
                "emitted": 0,
                "transferred": 0,
                "acked": 61725,
                "failed": 0,
                "failed_by": {},
                "execute_latency_ms": 12.5,
                "process_latency_ms": 13.0,
                "capacity": CAPACITY_WARNING,  # at the threshold: not yet a bottleneck
            },
            {
                "id": "audit",
                "tasks": 1,
                "executed": 10,
                "emitted": 0,
                "transferred": 0,
                "acked": 10,
                "failed": 0,
                "failed_by": {},
                "execute_latency_ms": 0.5,
                "process_latency_ms": 0.5,
                "capacity": 0.123,
            },
        ],
        "workers": [
            {
                "worker": 0,
                "host": "node-a",
                "pid": 4242,
                "executor": "exec-1",
                "uptime_secs": 3725.0,
                "heartbeat_age_secs": 0.5,
                "stats_age_secs": 0.5,
                "tasks": [1, 3, 5],
            },
            {
                "worker": 1,
                "host": "node-b",
                "pid": 4343,
                "executor": "exec-2",
                "uptime_secs": 61.0,
                "heartbeat_age_secs": 42.0,
                "stats_age_secs": 42.0,
                "tasks": [2, 4, 6],
            },
        ],
        "errors": [
            {
                "component": "count",
                "task": 4,
                "worker": 1,
                "host": "node-b",
                "time": NOW - 5,
                "text": TRACEBACK_2,
            },
            {
                "component": "split",
                "task": 3,
                "worker": 0,
                "host": "node-a",
                "time": NOW - 60,
                "text": TRACEBACK_1,
            },
        ],
    }


def coordinator_status(**changes: Any) -> dict[str, Any]:
    """The checkpoint coordinator's part of a worker's status (and of the report)."""
    return {
        "last_complete": 41,
        "last_complete_age_secs": 0.4,
        "last_duration_secs": 0.012,
        "interval_secs": 1.0,
        "completed": 40,
        "abandoned": 1,
        "recoveries": 2,
        "recovering": False,
        "history": [],
    } | changes
