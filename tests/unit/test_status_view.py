"""Unit tests for the status and monitor views in the terminal (rich; no ZooKeeper)."""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner
from rich.color import Color
from rich.console import Console

from cli.main import cli
from cli.monitor import HISTORY, monitor_view, rates_table
from cli.status_view import (
    SPARK_CHARS,
    bolts_table,
    checkpoints_line,
    errors_table,
    nimbus_line,
    sparkline,
    spouts_table,
    status_view,
    worker_flow_table,
    workers_table,
)
from tests.unit.status_helpers import (
    cell_style,
    cells,
    coordinator_status,
    is_red,
    line_with,
    make_report,
    render,
    render_styled,
    row,
    style_at,
)

pytestmark = pytest.mark.timeout(30)

NOW = 1_700_000_000.0
STALE_AFTER = 3.0
RED = Color.parse("red").number

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
        "46 (error 6, failed 40)",
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
    assert newest[1:] == ["count", "-", "4", "node-b", "ConnectionError: database is gone"]
    split = cells(line_with(out, "KeyError"))[1:]
    assert split == ["split", "-", "3", "node-a", "KeyError: 'zebra'"]  # no counts: "-"
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
    failing = render_styled(
        rates_table({"emitted": 9.0, "acked": 8.0, "failed": 3.0}, history, 5.0)
    )
    assert is_red(style_at(failing, "3"))  # the failed/s cell
    calm = render(rates_table({"emitted": 9.0, "acked": 9.0, "failed": 0.0}, history, 5.0))
    assert cells(line_with(calm, SPARK_CHARS[-1])) == ["9", "9", "0", SPARK_CHARS[-1]]
    assert "samples every 5.0s" in calm
    waiting = render(rates_table(None, history, None))
    assert "waiting for samples" in waiting and cells(line_with(waiting, "-"))[:3] == ["-"] * 3


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

        def nimbuses(self) -> dict[str, Any]:
            return {"leader": None, "standbys": []}

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
    assert result.output.startswith("No nimbus leads")  # and says so first


def test_worker_state_says_down_and_busy() -> None:
    report = make_report()
    down, busy = report["workers"]
    down.update(next_start_in_secs=4.0, restarts=3)
    busy.update(heartbeat_age_secs=0.5, stalled_secs=40.0, busy_in="split:3")
    out = render(workers_table(report, STALE_AFTER))
    assert "DOWN, restart in 4s" in out
    assert "BUSY 40s in split:3" in out


def test_the_flow_table_names_congested_and_throttled_workers_and_restarts() -> None:
    report = make_report()
    congested, throttled = report["workers"]
    congested.update(congested=True, receive_queue=20000, restarts=3)
    congested["restart_reason"] = "worker 0 ended: Traceback ...\nMemoryError"
    throttled.update(throttled_by=[0, 2])
    out = render(worker_flow_table(report))
    assert cells(line_with(out, "congested")) == ["0", "congested", "20,000", "3", "MemoryError"]
    assert cells(line_with(out, "throttled")) == ["1", "throttled by 0,2", "0", "0", "-"]
    assert is_red(style_at(render_styled(worker_flow_table(report)), "congested"))
    assert "Backpressure and restarts" in render(status_view(report, STALE_AFTER))


def _checkpoints(**changes: Any) -> dict[str, Any]:
    workers = {"rollbacks": 3, "declined": 0, "waiting_acks": 35, "paused_workers": 0}
    return coordinator_status() | workers | changes


def test_checkpoints_line_only_for_a_checkpointed_topology() -> None:
    report = make_report()
    assert "Checkpoints" not in render(status_view(report, STALE_AFTER))
    report["checkpoints"] = _checkpoints()
    out = render(status_view(report, STALE_AFTER))
    assert "Checkpoints: #41 complete 0.4s ago (took 12 ms)" in out
    assert "40 completed, 1 abandoned, 2 recoveries, 35 spout acks waiting" in out
    assert "declined" not in out and "RECOVERING" not in out


def test_checkpoints_line_warns_when_late_recovering_or_declining() -> None:
    late = checkpoints_line({"checkpoints": _checkpoints(last_complete_age_secs=9.0)})
    assert late is not None and "yellow" in str(late.style)
    calm = checkpoints_line({"checkpoints": _checkpoints()})
    assert calm is not None and "yellow" not in str(calm.style)
    busy = checkpoints_line(
        {"checkpoints": _checkpoints(recovering=True, paused_workers=1, declined=4)}
    )
    assert busy is not None
    assert "4 declined (alignment gave up); RECOVERING (1 worker(s) restored, paused)" in str(busy)
    none_yet = checkpoints_line({"checkpoints": _checkpoints(last_complete=None)})
    assert none_yet is not None and str(none_yet).startswith("Checkpoints: none complete yet")


def test_nimbus_line_names_the_leader_and_standbys_or_warns_when_none_leads() -> None:
    assert nimbus_line(None) is None  # LocalCluster: no nimbus at all
    line = nimbus_line({"leader": "a:1:f", "standbys": ["b:2:e"]})
    assert line is not None and line.plain == "Nimbus: a:1:f leads; standbys: b:2:e"
    alone = nimbus_line({"leader": "a:1:f", "standbys": []})
    assert alone is not None and alone.plain.endswith("standbys: none")
    none = nimbus_line({"leader": None, "standbys": []})
    assert none is not None and none.plain.startswith("No nimbus leads")
    assert "red" in str(none.style)


def test_status_starts_with_the_no_nimbus_warning() -> None:
    report = {**make_report(), "nimbus": {"leader": None, "standbys": []}}
    assert render(status_view(report, STALE_AFTER)).lstrip().startswith("No nimbus leads")


def test_status_says_how_many_zookeeper_nodes_it_ignored_after_the_nimbus_line() -> None:
    report = {**make_report(), "nimbus": {"leader": "a:1:f", "standbys": []}}
    assert "ignored" not in render(status_view({**report, "zookeeper_ignored": 0}, STALE_AFTER))
    lines = render(status_view({**report, "zookeeper_ignored": 3}, STALE_AFTER)).splitlines()
    nimbus = next(i for i, line in enumerate(lines) if line.startswith("Nimbus:"))
    assert lines[nimbus + 1].startswith("ZooKeeper: 3 node(s) ignored")
