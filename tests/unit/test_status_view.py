"""Unit tests for the status report and its rich renderings (no ZooKeeper, no workers).

Renderings are printed on a recording rich Console and read back as plain text; styles
are read back by parsing the ANSI export into a :class:`rich.text.Text`."""

from __future__ import annotations

import copy
import io
import json
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner
from rich.color import Color
from rich.console import Console, RenderableType
from rich.style import Style
from rich.text import Text

from cli import monitor as monitor_cli
from cli import status as status_cli
from cli.main import cli
from cli.monitor import HISTORY, monitor_view, rates_table
from cli.status_view import (
    SPARK_CHARS,
    bolts_table,
    errors_table,
    sparkline,
    spouts_table,
    status_view,
    workers_table,
)
from topology.stats.status_report import CAPACITY_WARNING, ERRORS_SHOWN, build_report

pytestmark = pytest.mark.timeout(30)

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
                "failed_by": {},
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


# -- status_view ------------------------------------------------------------------------------


def test_status_view_shows_summary_and_every_spout_and_bolt_with_its_numbers() -> None:
    out = render(status_view(make_report(), STALE_AFTER))

    assert "Topology wordcount" in out and "window 10m" in out
    summary = cells(line_with(out, "wordcount-1-1700000000"))
    assert summary == ["ACTIVE", "1h02m05s", "2/2", "9", "wordcount-1-1700000000"]

    assert row(out, "sentences") == [
        "sentences",
        "2",
        "12,345",
        "12,000",
        "345 (failed 300, timeout 45)",
        "17",
        "3.250",
    ]
    assert row(out, "quiet") == ["quiet", "1", "0", "0", "0", "0", "0.000"]
    assert row(out, "split") == [
        "split",
        "3",
        "12,345",
        "61,725",
        "12,299",
        "46",
        "0.125",
        "0.250",
        "0.953",
    ]
    assert row(out, "count") == [
        "count",
        "2",
        "61,725",
        "0",
        "61,725",
        "0",
        "12.5",
        "13.0",
        "0.800",
    ]
    assert row(out, "audit") == [
        "audit",
        "1",
        "10",
        "0",
        "10",
        "0",
        "0.500",
        "0.500",
        "0.123",
    ]


def test_spout_and_bolt_failures_are_red_and_zero_failures_are_not() -> None:
    styled = render_styled(spouts_table(make_report()))
    assert is_red(style_at(styled, "345 (failed 300, timeout 45)"))
    quiet = render_styled(spouts_table({"spouts": make_report()["spouts"][1:]}))
    assert not is_red(style_at(quiet, "0.000"))

    bolts = render_styled(bolts_table(make_report()))
    assert is_red(cell_style(bolts, "│ split ", 5))
    assert not is_red(cell_style(bolts, "│ count ", 5))  # failed 0


def test_bolt_above_capacity_warning_is_highlighted_and_others_are_not() -> None:
    styled = render_styled(bolts_table(make_report()))

    hot = style_at(styled, "0.953")
    assert is_red(hot) and hot.bold
    for calm in ("0.800", "0.123"):  # at the threshold and well below it
        style = style_at(styled, calm)
        assert not is_red(style) and not style.bold, calm


def test_stale_worker_is_marked_stale_in_red_and_a_fresh_one_is_not() -> None:
    report = make_report()
    out = render(workers_table(report, STALE_AFTER))
    stale = cells(line_with(out, "node-b"))
    fresh = cells(line_with(out, "node-a"))
    assert stale == ["1", "node-b", "4343", "exec-2", "1m01s", "42.0s STALE", "2,4,6"]
    assert fresh == ["0", "node-a", "4242", "exec-1", "1h02m05s", "0.5s", "1,3,5"]
    assert out.count("STALE") == 1

    styled = render_styled(workers_table(report, STALE_AFTER))
    assert is_red(style_at(styled, "42.0s STALE"))
    assert not is_red(style_at(styled, "0.5s"))

    # the same worker is fresh when the threshold is above its heartbeat age
    relaxed = render(workers_table(report, stale_after=60.0))
    assert "STALE" not in relaxed


def test_errors_table_shows_the_last_line_of_each_error_newest_first() -> None:
    out = render(errors_table(make_report()))

    assert "ConnectionError: database is gone" in out
    assert "KeyError: 'zebra'" in out
    assert "Traceback" not in out and "bolts.py" not in out
    assert out.index("ConnectionError") < out.index("KeyError")
    newest = cells(line_with(out, "ConnectionError"))
    assert newest[1:] == ["count", "4", "node-b", "ConnectionError: database is gone"]
    assert cells(line_with(out, "KeyError"))[1:] == ["split", "3", "node-a", "KeyError: 'zebra'"]
    assert "No errors reported." not in out

    styled = render_styled(errors_table(make_report()))
    assert is_red(style_at(styled, "KeyError: 'zebra'"))


def test_no_errors_is_said_in_words() -> None:
    report = make_report()
    report["errors"] = []
    out = render(status_view(report, STALE_AFTER))
    assert "No errors reported." in out
    assert "Last errors" not in out


# -- sparkline --------------------------------------------------------------------------------


def test_sparkline_of_increasing_values_increases() -> None:
    line = sparkline([float(v) for v in range(8)])
    assert len(line) == 8
    assert all(c in SPARK_CHARS for c in line)
    ranks = [SPARK_CHARS.index(c) for c in line]
    assert ranks == sorted(ranks) and len(set(ranks)) == 8  # strictly increasing
    assert line[0] == SPARK_CHARS[0] and line[-1] == SPARK_CHARS[-1]


def test_sparkline_of_many_monotonic_values_never_decreases() -> None:
    values = [v * 37.5 for v in range(HISTORY)]
    ranks = [SPARK_CHARS.index(c) for c in sparkline(values)]
    assert len(ranks) == HISTORY
    assert ranks == sorted(ranks)
    assert ranks[0] == 0 and ranks[-1] == len(SPARK_CHARS) - 1


def test_sparkline_of_zeros_and_of_nothing() -> None:
    assert sparkline([0.0] * 5) == SPARK_CHARS[0] * 5
    assert sparkline([]) == ""
    assert sparkline([3.0]) == SPARK_CHARS[-1]
    assert sparkline([5.0, 5.0, 5.0]) == SPARK_CHARS[-1] * 3


def test_sparkline_keeps_one_character_per_value() -> None:
    for values in ([1.0, 0.0, 2.0], [0.5] * 17, [float(v % 3) for v in range(HISTORY)]):
        assert len(sparkline(values)) == len(values)


# -- monitor_view -----------------------------------------------------------------------------


def test_monitor_view_has_header_rates_and_sparkline() -> None:
    history = deque([0.0, 10.0, 20.0, 40.0], maxlen=HISTORY)
    rates = {"emitted": 1234.4, "acked": 1200.0, "failed": 7.0}
    out = render(monitor_view(make_report(), rates, history, STALE_AFTER))

    header = out.splitlines()[0]
    assert header.startswith("wordcount ACTIVE")
    assert "workers 2/2" in header and "tasks 9" in header and "window 10m" in header
    assert "Ctrl-C" in header
    assert "acked/s" in out
    assert f"acked/s, last {HISTORY} refreshes" in out
    spark = sparkline(list(history))
    assert cells(line_with(out, spark)) == ["1,234", "1,200", "7", spark]
    # the spout, bolt and worker tables come along
    for name in ("sentences", "split", "count", "node-b"):
        assert name in out
    assert "42.0s STALE" in out


def test_monitor_header_status_is_green_when_active_and_yellow_otherwise() -> None:
    history: deque[float] = deque(maxlen=HISTORY)
    rates = {"emitted": 0.0, "acked": 0.0, "failed": 0.0}
    report = make_report()
    active = render_styled(monitor_view(report, rates, history, STALE_AFTER))
    assert style_at(active, "ACTIVE").color.number == Color.parse("green").number
    report["topology"]["status"] = "INACTIVE"
    inactive = render_styled(monitor_view(report, rates, history, STALE_AFTER))
    assert style_at(inactive, "INACTIVE").color.number == Color.parse("yellow").number


def test_rates_table_failed_rate_is_red_only_when_nonzero() -> None:
    history = deque([1.0], maxlen=HISTORY)
    failing = render_styled(rates_table({"emitted": 9.0, "acked": 8.0, "failed": 3.0}, history))
    assert is_red(style_at(failing, "3"))  # the failed/s cell
    calm = render(rates_table({"emitted": 9.0, "acked": 9.0, "failed": 0.0}, history))
    assert cells(line_with(calm, SPARK_CHARS[-1])) == ["9", "9", "0", SPARK_CHARS[-1]]


# -- build_report -----------------------------------------------------------------------------

WINDOW_ACKED = {"600": 10, "10800": 20, "86400": 30, ":all-time": 40}


def _window(acked: int, **extra: Any) -> dict[str, Any]:
    base = {
        "emitted": {"default": acked + 1},
        "transferred": {"default": acked + 1},
        "failed_by": {"timeout": 1} if acked else {},
        "executed": acked,
        "acked": acked,
        "failed": 1 if acked else 0,
        "execute_secs": 0.0,
        "process_secs": 0.0,
        "process_count": 0,
        "complete_secs": 0.0,
        "complete_count": 0,
        "capacity": 0.0,
        "execute_latency_ms": 0.0,
        "process_latency_ms": 0.0,
        "complete_latency_ms": 0.0,
    }
    base.update(extra)
    return base


def _task(component: str, kind: str, scale: int = 1, **extra: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "component": component,
        "kind": kind,
        "windows": {wid: _window(n * scale, **extra) for wid, n in WINDOW_ACKED.items()},
    }
    if kind == "spout":
        task["pending"] = 2
    return task


COMPONENTS = {
    "spout": {"kind": "spout", "tasks": 2},
    "bolt": {"kind": "bolt", "tasks": 2},
    "idle": {"kind": "bolt", "tasks": 1},
}
TOPOLOGY = {
    "name": "t",
    "id": "t-1",
    "status": "ACTIVE",
    "uptime_secs": 5.0,
    "workers": 2,
    "workers_alive": 2,
    "tasks": 5,
}


def _worker_stats() -> list[dict[str, Any]]:
    return [
        {
            "worker": 0,
            "pid": 100,
            "host": "h0",
            "time": NOW - 1,
            "uptime_secs": 9.0,
            "tasks": {
                "3": _task("spout", "spout"),
                "1": _task("bolt", "bolt", execute_secs=1.0, executed=100, capacity=0.5),
            },
        },
        {
            "worker": 1,
            "pid": 101,
            "host": "h1",
            "time": NOW - 2,
            "uptime_secs": 8.0,
            "tasks": {
                "4": _task("spout", "spout", scale=2),
                "2": _task("bolt", "bolt", execute_secs=3.0, executed=100, capacity=0.9),
            },
        },
    ]


@pytest.mark.parametrize(
    ("window", "wid", "name"),
    [
        ("10m", "600", "10m"),
        ("600", "600", "10m"),
        ("3h", "10800", "3h"),
        ("1d", "86400", "1d"),
        ("all", ":all-time", "all"),
        ("all-time", ":all-time", "all"),
        (":all-time", ":all-time", "all"),
    ],
)
def test_build_report_window_names_pick_that_window(window: str, wid: str, name: str) -> None:
    report = build_report(TOPOLOGY, COMPONENTS, _worker_stats(), window=window, now=NOW)
    assert (report["window"], report["window_name"]) == (wid, name)
    [spout] = report["spouts"]
    assert spout["acked"] == 3 * WINDOW_ACKED[wid]  # one task x1, the other x2
    assert spout["emitted"] == 3 * WINDOW_ACKED[wid] + 2
    assert json.loads(json.dumps(report)) == report  # plain JSON


@pytest.mark.parametrize("window", ["5m", "10 minutes", "", "601"])
def test_build_report_rejects_unknown_windows(window: str) -> None:
    with pytest.raises(ValueError, match="unknown stats window"):
        build_report(TOPOLOGY, COMPONENTS, _worker_stats(), window=window, now=NOW)


def test_build_report_merges_tasks_of_a_component_across_workers() -> None:
    report = build_report(TOPOLOGY, COMPONENTS, _worker_stats(), window="10m", now=NOW)
    assert report["schema"] == 1 and report["generated_at"] == NOW
    assert report["topology"] == TOPOLOGY
    [spout] = report["spouts"]
    assert spout == {
        "id": "spout",
        "tasks": 2,
        "emitted": 32,
        "transferred": 32,
        "acked": 30,
        "failed": 2,
        "failed_by": {"timeout": 2},
        "pending": 4,
        "complete_latency_ms": 0.0,
    }
    bolts = {b["id"]: b for b in report["bolts"]}
    assert list(bolts) == ["bolt", "idle"]  # sorted by id
    bolt = bolts["bolt"]
    assert bolt["executed"] == 200
    assert bolt["execute_latency_ms"] == pytest.approx(4.0 * 1000 / 200)
    assert bolt["capacity"] == 0.9  # the busiest task, as in Storm's UI
    idle = bolts["idle"]  # declared but reported by no worker: all zeros
    assert (idle["executed"], idle["acked"], idle["failed"], idle["capacity"]) == (0, 0, 0, 0.0)
    assert idle["tasks"] == 1


def test_build_report_workers_from_stats_and_heartbeats() -> None:
    beats = {
        0: {"pid": 100, "host": "h0", "executor": "e0", "beat_at": NOW - 1.5, "stats_at": NOW - 3},
        2: {"pid": 102, "host": "h2", "executor": "e2", "beat_at": NOW - 30},  # no stats yet
    }
    report = build_report(TOPOLOGY, COMPONENTS, _worker_stats(), beats, now=NOW)
    workers = {w["worker"]: w for w in report["workers"]}
    assert list(workers) == [0, 1, 2]
    assert workers[0] == {
        "worker": 0,
        "host": "h0",
        "pid": 100,
        "executor": "e0",
        "uptime_secs": 9.0,
        "heartbeat_age_secs": 1.5,
        "stats_age_secs": 3.0,
        "tasks": [1, 3],
    }
    assert workers[1]["heartbeat_age_secs"] is None  # no heartbeat: stale in the views
    assert workers[1]["stats_age_secs"] == 2.0  # from the reply's own time
    assert (workers[1]["pid"], workers[1]["tasks"]) == (101, [2, 4])
    assert workers[2]["heartbeat_age_secs"] == 30.0 and workers[2]["tasks"] == []

    out = render(workers_table(report, STALE_AFTER))
    assert "STALE" not in line_with(out, "h0")
    assert "STALE" in line_with(out, "h1") and "STALE" in line_with(out, "h2")


def test_build_report_errors_newest_first_and_capped() -> None:
    errors = {
        "bolt": [
            {"task": 1, "worker": 0, "host": "h0", "time": NOW - i, "text": f"bolt error {i}"}
            for i in range(ERRORS_SHOWN)
        ],
        "spout": [{"task": 3, "worker": 0, "host": "h0", "time": NOW + 1, "text": "newest"}],
    }
    report = build_report(TOPOLOGY, COMPONENTS, _worker_stats(), errors=errors, now=NOW)
    listed = report["errors"]
    assert len(listed) == ERRORS_SHOWN
    assert listed[0] == {
        "component": "spout",
        "task": 3,
        "worker": 0,
        "host": "h0",
        "time": NOW + 1,
        "text": "newest",
    }
    assert [e["text"] for e in listed[1:]] == [f"bolt error {i}" for i in range(ERRORS_SHOWN - 1)]


# -- the commands against a stand-in cluster (no ZooKeeper) -----------------------------------


class FakeCluster:
    """Answers ``stats`` with the hand-built report; all-time acked grows 50 per call."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.report = report
        self.conf = {"topology.stats.interval.secs": 1.0}
        self.calls: list[tuple[str, str]] = []
        self._acked = 0

    def stats(self, name: str, window: str = "10m", fresh: bool = True) -> dict[str, Any]:
        self.calls.append((name, window))
        report = copy.deepcopy(self.report)
        report["window"] = window
        if window == ":all-time":
            self._acked += 50
            report["spouts"][0]["acked"] = self._acked
        return report


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    cluster = FakeCluster(make_report())

    @contextmanager
    def session(config: Any) -> Iterator[FakeCluster]:
        yield cluster

    monkeypatch.setattr(status_cli, "cluster_session", session)
    monkeypatch.setattr(monitor_cli, "cluster_session", session)
    return cluster


def test_status_json_prints_the_report(fake: FakeCluster) -> None:
    result = CliRunner().invoke(cli, ["status", "wordcount", "--json", "--window", "3h"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema"] == 1
    assert report["spouts"][0]["acked"] == 12000
    assert fake.calls == [("wordcount", "10800")]  # the window name became its id


def test_status_text_renders_the_view(fake: FakeCluster) -> None:
    result = CliRunner().invoke(cli, ["status", "wordcount"])
    assert result.exit_code == 0, result.output
    for word in ("sentences", "split", "12,345", "KeyError: 'zebra'", "42.0s STALE"):
        assert word in result.output, word
    assert fake.calls == [("wordcount", "600")]


def test_status_refuses_an_unknown_window_before_connecting(fake: FakeCluster) -> None:
    result = CliRunner().invoke(cli, ["status", "wordcount", "--window", "5m"])
    assert result.exit_code == 2
    assert "unknown stats window '5m'" in result.output
    assert fake.calls == []


def test_monitor_refreshes_then_stops(fake: FakeCluster) -> None:
    result = CliRunner().invoke(
        cli, ["monitor", "wordcount", "--iterations", "2", "--interval", "0.01"]
    )
    assert result.exit_code == 0, result.output
    assert "acked/s" in result.output
    assert "wordcount ACTIVE" in result.output
    assert "monitor stopped" in result.output
    # one all-time baseline, then per refresh the window's report and the all-time totals
    assert (
        fake.calls
        == [("wordcount", ":all-time")]
        + [
            ("wordcount", "600"),
            ("wordcount", ":all-time"),
        ]
        * 2
    )


# -- an 80-column terminal --------------------------------------------------------------------


def test_bolt_ids_stay_whole_on_an_80_column_terminal() -> None:
    report = make_report()
    report["bolts"][0]["id"] = "word-splitter"
    report["bolts"][1]["id"] = "word-counter"
    console = Console(record=True, width=80, file=io.StringIO())
    console.print(bolts_table(report))
    out = console.export_text()
    assert "word-splitter" in out and "word-counter" in out


def test_list_shows_whole_names_on_an_80_column_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli import operations

    class Listing:
        def topologies(self) -> list[dict[str, Any]]:
            return [
                {
                    "id": "statuscli-1-1700000000",
                    "name": "statuscli",
                    "status": "ACTIVE",
                    "workers": 2,
                    "workers_alive": 2,
                    "tasks": 6,
                    "uptime_secs": 3.0,
                    "error": None,
                    "emitted_per_sec": 145.0,
                    "acked_per_sec": 145.0,
                    "failed_per_sec": 0.0,
                }
            ]

    @contextmanager
    def session(config: Any) -> Iterator[Listing]:
        yield Listing()

    monkeypatch.setattr(operations, "cluster_session", session)
    result = CliRunner().invoke(cli, ["list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    # the id is in `list --json` and `status`; the table keys on the whole name
    assert "ack/s" in result.output and "fail/s" in result.output
    assert "│ statuscli " in result.output
    assert "…" not in result.output
