"""Unit tests for ``build_report``: windows, merging tasks, workers, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.color import Color

from cli.status_view import (
    workers_table,
)
from tests.unit.status_helpers import (
    coordinator_status,
    line_with,
    render,
)
from topology.stats.status_report import ERRORS_SHOWN, build_report

pytestmark = pytest.mark.timeout(30)

NOW = 1_700_000_000.0
STALE_AFTER = 3.0
RED = Color.parse("red").number

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
        "dead_lettered": 0,
        "retried": 0,
        "errors": 0,
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
        0: {
            "pid": 100,
            "host": "h0",
            "executor": "e0",
            "endpoint": "tcp://h0:40100",
            "beat_at": NOW - 1.5,
            "stats_at": NOW - 3,
        },
        2: {"pid": 102, "host": "h2", "executor": "e2", "beat_at": NOW - 30},  # no stats yet
    }
    report = build_report(TOPOLOGY, COMPONENTS, _worker_stats(), beats, now=NOW)
    workers = {w["worker"]: w for w in report["workers"]}
    assert list(workers) == [0, 1, 2]
    assert workers[0] == {
        "worker": 0,
        "host": "h0",
        "pid": 100,
        "port": 40100,
        "executor": "e0",
        "uptime_secs": 9.0,
        "heartbeat_age_secs": 1.5,
        "stats_age_secs": 3.0,
        "tasks": [1, 3],
        "restarts": 0,
        "restart_reason": None,
        "next_start_in_secs": None,
        "stalled_secs": None,
        "busy_in": None,
        "dropped_frames": 0,
        "dropped_by": {},
        "congested": False,
        "throttled_by": [],
        "receive_queue": 0,
        "components": ["bolt", "spout"],
        "full_peers": [],
    }
    assert workers[1]["heartbeat_age_secs"] is None  # no heartbeat: stale in the views
    assert workers[1]["stats_age_secs"] == 2.0  # from the reply's own time
    assert (workers[1]["pid"], workers[1]["tasks"]) == (101, [2, 4])
    assert workers[2]["heartbeat_age_secs"] == 30.0 and workers[2]["tasks"] == []

    out = render(workers_table(report, STALE_AFTER))
    assert "STALE" not in line_with(out, "h0")
    assert "STALE" in line_with(out, "h1") and "STALE" in line_with(out, "h2")


def test_build_report_errors_newest_first_and_capped_per_component() -> None:
    errors = {
        "bolt": [
            {"task": 1, "worker": 0, "host": "h0", "time": NOW - i, "text": f"bolt error {i}"}
            for i in range(ERRORS_SHOWN + 5)
        ],
        "spout": [{"task": 3, "worker": 0, "host": "h0", "time": NOW + 1, "text": "newest"}],
    }
    report = build_report(TOPOLOGY, COMPONENTS, _worker_stats(), errors=errors, now=NOW)
    listed = report["errors"]
    assert len(listed) == ERRORS_SHOWN + 1  # the bolt's newest ERRORS_SHOWN, and the spout's
    assert listed[0] == {
        "component": "spout",
        "task": 3,
        "worker": 0,
        "host": "h0",
        "time": NOW + 1,
        "text": "newest",
    }
    assert [e["text"] for e in listed[1:]] == [f"bolt error {i}" for i in range(ERRORS_SHOWN)]


def test_build_report_workers_carry_restarts_and_the_next_start() -> None:
    beats = {0: {"pid": 100, "beat_at": NOW - 1, "stalled_secs": 12.5, "busy_in": "split:3"}}
    supervision = {
        0: {"restarts": 2, "reason": "worker 0 ended: boom", "next_start_at": None},
        1: {"restarts": 4, "reason": "worker 1 ended: oom", "next_start_at": NOW + 7.25},
    }
    report = build_report(TOPOLOGY, COMPONENTS, [], beats, now=NOW, supervision=supervision)
    workers = {w["worker"]: w for w in report["workers"]}
    assert workers[0]["restarts"] == 2 and workers[0]["next_start_in_secs"] is None
    assert (workers[0]["stalled_secs"], workers[0]["busy_in"]) == (12.5, "split:3")
    assert workers[1]["restarts"] == 4  # down: no heartbeat, still listed
    assert workers[1]["restart_reason"] == "worker 1 ended: oom"
    assert workers[1]["next_start_in_secs"] == 7.2


def test_build_report_checkpoints_only_for_a_checkpointed_topology() -> None:
    assert build_report(TOPOLOGY, COMPONENTS, _worker_stats(), now=NOW)["checkpoints"] is None
    replies = _worker_stats()
    coordinator = coordinator_status()
    replies[0]["checkpoints"] = {
        "coordinator": coordinator,
        "rollbacks": 2,
        "declined": 0,
        "paused": False,
        "waiting_acks": 30,
    }
    replies[1]["checkpoints"] = {
        "rollbacks": 1,
        "declined": 3,
        "paused": True,
        "waiting_acks": 5,
        "restore_refused": 4,
    }
    section = build_report(TOPOLOGY, COMPONENTS, replies, now=NOW)["checkpoints"]
    assert section == coordinator | {
        "rollbacks": 3,
        "declined": 3,
        "waiting_acks": 35,
        "restore_refused": 4,
        "paused_workers": 1,
    }


def test_build_report_checkpoint_history_checked_row_by_row() -> None:
    """The coordinator's history comes through (newest first); rows a worker's reply holds
    of the wrong shape are left out, not trusted (a cluster reads them from ZooKeeper)."""
    row = {
        "id": 42,
        "status": "completed",
        "triggered_at": NOW - 2,
        "duration_secs": 0.25,
        "alignment_ms": 1.5,
        "bytes": 18000,
        "tasks_reported": 3,
        "components": {"count": {"bytes": 18000, "alignment_ms": 1.5, "tasks": 2}},
        "reason": None,
    }
    junk = [
        "x",
        {**row, "id": "42"},
        {**row, "status": "done"},
        {**row, "triggered_at": -1},
        {**row, "id": 43, "components": {"count": {"bytes": "big"}}, "reason": "r" * 900},
    ]
    replies = _worker_stats()
    history = [row, *junk]
    replies[0]["checkpoints"] = {"coordinator": coordinator_status(history=history)}
    got = build_report(TOPOLOGY, COMPONENTS, replies, now=NOW)["checkpoints"]["history"]
    assert got[0] == row
    assert [r["id"] for r in got] == [42, 43]
    assert got[1]["components"] == {} and len(got[1]["reason"]) == 500
    replies[0]["checkpoints"] = {"coordinator": coordinator_status(history=[row] * 80)}
    assert len(build_report(TOPOLOGY, COMPONENTS, replies, now=NOW)["checkpoints"]["history"]) == 50
