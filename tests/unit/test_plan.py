"""Unit tests for the supervision planner: plain data in, actions out, a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from topology.deploy.plan import (
    UNLIMITED,
    Assign,
    Capacity,
    FailTopology,
    History,
    Launch,
    Log,
    Plan,
    RemoveTopology,
    ReportWorker,
    StopWorkers,
    TopologyView,
    UpdateRecord,
    WorkerView,
    launched,
    plan,
    slot_shortage,
)

pytestmark = pytest.mark.timeout(10)

NOW = 1_000.0
GRACE = 10.0


def running(
    tid: str = "wc-1",
    attempt: int = 1,
    workers: int = 2,
    status: str = "ACTIVE",
    views: dict[int, WorkerView] | None = None,
    **extra: Any,
) -> TopologyView:
    """A topology whose ``workers`` workers of ``attempt`` are ready (unless ``views``)."""
    ready = {w: WorkerView(ready=True) for w in range(workers)}
    return TopologyView(
        tid,
        status,
        workers,
        attempt=attempt,
        assigned_workers=workers,
        worker_views={**ready, **(views or {})},
        **extra,
    )


def step(
    views: list[TopologyView],
    history: History | None = None,
    now: float = NOW,
    capacity: Capacity = UNLIMITED,
) -> Plan:
    return plan(views, capacity, history or History(), now, shutdown_grace=GRACE)


def owning(tid: str = "wc-1", attempt: int = 1, ready: tuple[int, ...] = (0, 1)) -> History:
    history = launched(History(), tid, attempt)
    return History(history.attempts, {tid: frozenset(ready)}, history.restarts)


def without_logs(actions: list[Any]) -> list[Any]:
    return [a for a in actions if not isinstance(a, Log)]


# -- submission ---------------------------------------------------------------------------


def test_a_submitted_topology_is_assigned_and_launched_with_its_initial_status() -> None:
    result = step([TopologyView("wc-1", "SUBMITTED", 2, initial_status="INACTIVE")])
    assert result.actions == [
        Assign("wc-1", 2, 1),
        UpdateRecord("wc-1", {"status": "INACTIVE", "launched_at": NOW}),
    ]
    assert result.history.attempts == {"wc-1": 1}
    assert result.history.ready == {"wc-1": frozenset()}


def test_a_submission_without_enough_slots_fails_naming_the_numbers() -> None:
    capacity = Capacity(total=4, used=3, where="spark.master=local[4]")
    result = step([TopologyView("wc-1", "SUBMITTED", 2)], capacity=capacity)
    [failure] = result.actions
    assert isinstance(failure, FailTopology)
    assert "2 worker(s) need 2 task slot(s)" in failure.error
    assert "1 free of 4 (spark.master=local[4])" in failure.error
    assert result.history == History()


def test_slot_shortage_counts_the_slots_a_rebalance_frees() -> None:
    capacity = Capacity(total=4, used=4, where="x")
    assert slot_shortage(3, capacity) is not None
    assert slot_shortage(3, capacity, freed=3) is None
    assert slot_shortage(4, capacity, freed=3) is not None


# -- a worker that died -------------------------------------------------------------------


def test_a_worker_that_died_after_being_ready_is_reported_and_relaunched() -> None:
    died = {1: WorkerView(ready=False, ended=True, error="pid 7 exited with code -9")}
    result = step([running(views=died)], owning())
    assert without_logs(result.actions) == [
        ReportWorker(
            "wc-1", 1, "worker 1 ended: pid 7 exited with code -9; relaunching (restart 1)"
        ),
        Launch("wc-1", 1, 1),
    ]
    assert result.history.restart_count("wc-1", 1) == 1
    assert result.history.restarts[("wc-1", 1)] == (NOW,)

    again = step([running(views=died)], result.history, now=NOW + 5)
    assert without_logs(again.actions)[0].text.endswith("(restart 2)")
    assert again.history.restarts[("wc-1", 1)] == (NOW, NOW + 5)


def test_a_worker_seen_ready_in_an_earlier_round_counts_as_started() -> None:
    first = step([running()], owning(ready=()))
    assert first.actions == []
    assert first.history.ready["wc-1"] == frozenset({0, 1})
    died = {0: WorkerView(ended=True)}
    second = step([running(views=died)], first.history)
    assert Launch("wc-1", 0, 1) in second.actions


def test_a_worker_that_died_before_it_was_ever_ready_fails_the_topology() -> None:
    died = {
        0: WorkerView(ready=False),
        1: WorkerView(ended=True, error="ValueError: bad conf\nTraceback..."),
    }
    result = step([running(views=died)], owning(ready=()))
    assert without_logs(result.actions) == [
        FailTopology("wc-1", "worker 1 failed to start: ValueError: bad conf")
    ]


def test_inactive_topologies_are_supervised_too() -> None:
    died = {0: WorkerView(ended=True)}
    result = step([running(status="INACTIVE", views=died)], owning())
    assert Launch("wc-1", 0, 1) in result.actions


def test_healthy_topologies_need_nothing() -> None:
    assert step([running()], owning()).actions == []
    assert step([TopologyView("x", "FAILED", 1)], owning()).actions == []


# -- killing ------------------------------------------------------------------------------


def test_a_killed_topology_waits_for_kill_at_then_stops_and_is_removed() -> None:
    killed = running(status="KILLED", kill_at=NOW + 30)
    history = owning()
    assert step([killed], history).actions == []
    result = step([killed], history, now=NOW + 30)
    assert result.actions == [StopWorkers("wc-1", grace=GRACE), RemoveTopology("wc-1")]
    assert result.history == History()


def test_killing_one_topology_leaves_the_others_alone() -> None:
    history = launched(owning("a"), "b", 1)
    result = step([running("a", status="KILLED", kill_at=0.0), running("b")], history)
    assert result.actions == [StopWorkers("a", grace=GRACE), RemoveTopology("a")]
    assert result.history.attempts == {"b": 1}


# -- rebalancing --------------------------------------------------------------------------


def test_a_rebalance_deactivates_waits_then_reassigns_with_the_new_worker_count() -> None:
    request = {"workers": 3, "wait": 5}
    first = step([running(rebalance=request)], owning())
    assert first.actions == [
        UpdateRecord(
            "wc-1",
            {
                "status": "REBALANCING",
                "rebalance": {**request, "previous": "ACTIVE", "deactivated_at": NOW},
            },
        )
    ]
    begun = {**request, "previous": "ACTIVE", "deactivated_at": NOW}
    waiting = running(status="REBALANCING", rebalance=begun)
    assert step([waiting], first.history, now=NOW + 4).actions == []
    done = step([waiting], first.history, now=NOW + 5)
    assert done.actions == [
        StopWorkers("wc-1", grace=GRACE),
        Assign("wc-1", 3, 2),
        UpdateRecord("wc-1", {"status": "ACTIVE", "rebalance": None}),
    ]
    assert done.history.attempts == {"wc-1": 2}
    assert done.history.ready == {"wc-1": frozenset()}


def test_a_rebalance_beyond_the_cluster_restores_the_status_with_an_error() -> None:
    begun = {"workers": 5, "wait": 0, "previous": "INACTIVE", "deactivated_at": NOW}
    capacity = Capacity(total=4, used=2, where="spark.master=local[4]")
    result = step([running(status="REBALANCING", rebalance=begun)], owning(), capacity=capacity)
    [update] = result.actions
    assert isinstance(update, UpdateRecord)
    assert update.changes["status"] == "INACTIVE" and update.changes["rebalance"] is None
    assert "5 worker(s) need 5 task slot(s)" in update.changes["error"]
    assert "4 free of 4" in update.changes["error"]  # the topology's own 2 slots count


# -- taking over ----------------------------------------------------------------------------


def test_a_new_leader_takes_over_running_topologies_with_a_new_attempt() -> None:
    fresh = History()  # this nimbus launched nothing
    result = step([running("a", attempt=3), running("b", attempt=1, workers=1)], fresh)
    assert without_logs(result.actions) == [
        StopWorkers("a", keep_assignment=True),
        Assign("a", 2, 4),
        StopWorkers("b", keep_assignment=True),
        Assign("b", 1, 2),
    ]
    assert [a.text for a in result.actions if isinstance(a, Log)] == [
        "taking over a (attempt 3 -> 4)",
        "taking over b (attempt 1 -> 2)",
    ]
    assert result.history.attempts == {"a": 4, "b": 2}
    # the next round sees the new attempts it launched: nothing more to do
    settled = step(
        [running("a", attempt=4), running("b", attempt=1 + 1, workers=1)], result.history
    )
    assert settled.actions == []


def test_a_topology_without_an_assignment_yet_is_left_alone() -> None:
    view = TopologyView("wc-1", "ACTIVE", 2)
    assert step([view]).actions == []
