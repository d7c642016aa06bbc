"""Unit tests for the ``status`` and ``monitor`` commands against a stand-in cluster."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner
from rich.color import Color

from cli import monitor as monitor_cli
from cli import status as status_cli
from cli.main import cli
from tests.unit.status_helpers import (
    cells,
    make_report,
)
from topology.stats.prometheus import TopologySnapshot

pytestmark = pytest.mark.timeout(30)

NOW = 1_700_000_000.0
STALE_AFTER = 3.0
RED = Color.parse("red").number

# -- the commands against a stand-in cluster (no ZooKeeper) -----------------------------------


class FakeZk:
    """The connection a long-running command announces the state of."""

    hosts = "127.0.0.1:2181"

    def __init__(self) -> None:
        self.listeners: list[Any] = []

    def on_connection_change(self, callback: Any) -> None:
        self.listeners.append(callback)


class FakeCluster:
    """Answers ``stats`` with the hand-built report; all-time acked grows 50 per call."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.report = report
        self.zk = FakeZk()
        self.conf = {"topology.stats.interval.secs": 1.0}
        self.calls: list[tuple[str, str]] = []
        self._acked = 0

    def stats(self, name: str, window: str = "10m", fresh: bool = True) -> dict[str, Any]:
        self.calls.append((name, window))
        report = copy.deepcopy(self.report)
        report["window"] = window
        return report

    def snapshot(self, name: str, window: str = "10m", fresh: bool = True) -> TopologySnapshot:
        """The report and one worker's reply: a sample taken 2 s after the last with 50
        more acked trees (25/s)."""
        self._acked += 50
        spout = {"kind": "spout", "emitted": {"default": self._acked}, "acked": self._acked}
        reply = {"worker": 0, "pid": 1, "time": self._acked / 25, "tasks": {"1": spout}}
        return TopologySnapshot(self.stats(name, window), [reply])


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
    # a baseline, then one snapshot per refresh: rates from the samples' own times
    assert fake.calls == [("wordcount", "600")] * 3
    assert "samples every 2.0s" in result.output
    rows = [cells(line) for line in result.output.splitlines() if line.startswith("│")]
    assert [row[:3] for row in rows if len(row) == 4][-1] == ["25", "25", "0"]  # per second
