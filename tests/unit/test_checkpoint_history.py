"""The checkpoint history: the pure ring the coordinator's host feeds, and what a
checkpointed topology's coordinator reports through it on the in-process runner."""

from __future__ import annotations

from typing import Any

import pytest

from cli.status_view import checkpoint_history_table, status_view
from tests.unit.status_helpers import coordinator_status, make_report, render
from tests.unit.test_stateful_runtime import CONF, WORDS, Count, Words, run
from topology import TopologyBuilder
from topology.runtime.inprocess import InProcessRunner
from topology.state.checkpoint_history import HISTORY_SIZE, CheckpointHistory

pytestmark = pytest.mark.timeout(60)


def test_a_checkpoint_row_sums_its_tasks_per_component() -> None:
    h = CheckpointHistory()
    h.begin(7, now=100.0, wall=1_800_000_000.0)
    assert h.rows()[0] | {"components": None} == {
        "id": 7,
        "status": "in_progress",
        "triggered_at": 1_800_000_000.0,
        "duration_secs": None,
        "alignment_ms": 0.0,
        "bytes": 0,
        "tasks_reported": 0,
        "components": None,
        "reason": None,
    }
    h.task_done(7, "count", alignment_ms=2.5, size=100)
    h.task_done(7, "count", alignment_ms=1.0, size=50)
    h.task_done(7, "words", alignment_ms=0.0, size=12)
    h.completed(7, now=100.25)
    [row] = h.rows()
    assert row["status"] == "completed" and row["duration_secs"] == 0.25
    assert (row["bytes"], row["alignment_ms"], row["tasks_reported"]) == (162, 2.5, 3)
    assert row["components"] == {
        "count": {"bytes": 150, "alignment_ms": 2.5, "tasks": 2},
        "words": {"bytes": 12, "alignment_ms": 0.0, "tasks": 1},
    }
    h.task_done(7, "count", 9.0, 999)  # after completion: ignored
    assert h.rows()[0]["bytes"] == 162


def test_abandoned_checkpoints_keep_their_reason_and_the_ring_is_bounded() -> None:
    h = CheckpointHistory()
    h.begin(1, 0.0, 0.0)
    h.abandoned(1, "task 4 declined it", 1.5)
    h.begin(2, 2.0, 2.0)
    h.abandoned(None, "a recovery started", 3.0)  # every one in progress
    h.completed(2, 4.0)  # too late: stays abandoned
    assert [(r["id"], r["status"], r["reason"], r["duration_secs"]) for r in h.rows()] == [
        (2, "abandoned", "a recovery started", 1.0),
        (1, "abandoned", "task 4 declined it", 1.5),
    ]
    for k in range(3, 3 + 2 * HISTORY_SIZE):
        h.begin(k, float(k), float(k))
    rows = h.rows()
    assert len(rows) == HISTORY_SIZE and rows[0]["id"] == 2 + 2 * HISTORY_SIZE
    assert len(h._started) <= HISTORY_SIZE  # nothing kept for rows pushed out


def _two_spouts() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("left", Words(WORDS[:3000]))
    builder.set_spout("right", Words(WORDS[3000:]))
    count = builder.set_bolt("count", Count(), 2)
    count.fields_grouping("left", ["word"]).fields_grouping("right", ["word"])
    return builder.create_topology()


def test_the_coordinator_reports_each_checkpoint_with_its_components() -> None:
    """Checkpoints of a running topology: trigger time on the wall clock (the runner's), a
    duration, the
    bytes each component stored (a spout's position, a bolt's changed keys) and its tasks,
    newest first; a bolt with two inputs aligned."""
    runner = InProcessRunner(_two_spouts(), CONF)
    runner.activate()
    before = runner.clock()
    workers = runner.workers.values()
    coordinator = next(
        w.checkpoints for w in workers if w.checkpoints and w.checkpoints.coordinator
    )
    while coordinator.coordinator.completed < 5:  # type: ignore[union-attr]
        run(runner, 1)
    history = coordinator.status()["coordinator"]["history"]
    done = [r for r in history if r["status"] == "completed"]
    assert len(done) >= 5 and [r["id"] for r in history] == sorted(
        (r["id"] for r in history), reverse=True
    )
    for row in done:
        assert before <= row["triggered_at"] <= runner.clock()
        assert row["duration_secs"] is not None and row["duration_secs"] >= 0
        assert row["tasks_reported"] == 4  # two spout tasks, two bolt tasks
        assert set(row["components"]) == {"left", "right", "count"}
        assert row["components"]["count"]["tasks"] == 2
        assert row["components"]["left"]["bytes"] > 0  # a position is stored every time
        assert row["bytes"] == sum(p["bytes"] for p in row["components"].values())
    assert any(r["components"]["count"]["bytes"] > 0 for r in done)  # words were counted
    # the bolt holds one input back until the other's barrier came (a turn of 5 ms here)
    assert any(r["components"]["count"]["alignment_ms"] > 0 for r in done)
    assert all(r["components"]["left"]["alignment_ms"] == 0 for r in done)


def _row(checkpoint: int, **changes: Any) -> dict[str, Any]:
    return {
        "id": checkpoint,
        "status": "completed",
        "triggered_at": 1_800_000_000.0 + checkpoint,
        "duration_secs": 0.134,
        "alignment_ms": 2.5,
        "bytes": 18_000,
        "tasks_reported": 3,
        "components": {
            "count": {"bytes": 17_000, "alignment_ms": 2.5, "tasks": 2},
            "words": {"bytes": 1_000, "alignment_ms": 0.0, "tasks": 1},
        },
        "reason": None,
    } | changes


def test_status_shows_the_newest_checkpoints_with_duration_alignment_and_size() -> None:
    history = [
        _row(9, status="in_progress", duration_secs=None),
        _row(8, status="abandoned", reason="task 4 declined it"),
        *(_row(k) for k in range(7, 0, -1)),
    ]
    report = make_report()
    report["checkpoints"] = coordinator_status(history=history) | {"waiting_acks": 0}
    text = render(status_view(report, stale_after=30.0))
    table = text[text.index("Recent checkpoints") :]
    lines = [line for line in table.splitlines() if "#" in line]
    assert [line.split()[1] for line in lines] == ["#9", "#8", "#7", "#6", "#5"]
    assert "in progress" in lines[0] and "abandoned: task 4 declined it" in lines[1]
    assert "134 ms" in lines[2] and "2.500 ms" in lines[2] and "18.0 kB" in lines[2]
    assert "count 17.0 kB" in lines[2]
    assert checkpoint_history_table({"checkpoints": coordinator_status()}) is None
