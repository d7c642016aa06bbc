"""Unit tests for the nimbus's planner: plain data in, actions out, a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from topology.deploy.cluster.plan import (
    UNLIMITED,
    Assign,
    Capacity,
    DriverPolicy,
    FailTopology,
    History,
    Log,
    Plan,
    RemoveTopology,
    ReportDriver,
    StartDriver,
    StopDriver,
    TopologyView,
    Unassign,
    UpdateRecord,
    plan,
    slot_shortage,
)

pytestmark = pytest.mark.timeout(10)

NOW = 1_000.0
POLICY = DriverPolicy(base_secs=1.0, max_secs=8.0, reset_secs=60.0, start_secs=30.0)


def running(
    tid: str = "wc-1",
    attempt: int = 1,
    workers: int = 2,
    status: str = "ACTIVE",
    alive: bool = True,
    **extra: Any,
) -> TopologyView:
    """A topology with an assignment whose driver is ``alive``."""
    return TopologyView(
        tid,
        status,
        workers,
        attempt=attempt,
        assigned_workers=workers,
        driver_alive=alive,
        **extra,
    )


def step(
    views: list[TopologyView],
    history: History | None = None,
    now: float = NOW,
    capacity: Capacity = UNLIMITED,
) -> Plan:
    return plan(views, capacity, history or History(), now, POLICY)


def started(tid: str = "wc-1", at: float = NOW - 100, registered: bool = True) -> History:
    """The history of a nimbus that started ``tid``'s driver at ``at``."""
    history = History().driver_started(tid, at)
    return History(history.started, frozenset({tid}) if registered else frozenset(), {}, {})


def without_logs(actions: list[Any]) -> list[Any]:
    return [a for a in actions if not isinstance(a, Log)]


# -- submission ---------------------------------------------------------------------------


def test_a_submitted_topology_is_assigned_and_its_driver_started() -> None:
    result = step([TopologyView("wc-1", "SUBMITTED", 2, initial_status="INACTIVE")])
    assert result.actions == [
        Assign("wc-1", 2, 1),
        StartDriver("wc-1"),
        UpdateRecord("wc-1", {"status": "INACTIVE", "launched_at": NOW}),
    ]
    assert result.history.started == {"wc-1": NOW}
    assert result.history.registered == frozenset()


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


# -- drivers: adopted while alive, restarted with backoff when gone ----------------------------


def test_a_new_leader_adopts_topologies_whose_driver_is_alive() -> None:
    fresh = History()  # this nimbus started nothing
    result = step([running("a", attempt=3), running("b", workers=1)], fresh)
    assert result.actions == []
    assert result.history.registered == {"a", "b"}


def test_a_new_leader_starts_a_driver_that_is_gone_at_once() -> None:
    result = step([running(alive=False)], History())
    assert result.actions == [StartDriver("wc-1")]
    assert result.history.started == {"wc-1": NOW}
    assert result.history.restarts == {}  # not a restart of anything this nimbus started


def test_a_starting_driver_is_given_time_to_register() -> None:
    history = started(at=NOW - 10, registered=False)
    assert step([running(alive=False)], history).actions == []
    late = step([running(alive=False)], history, now=NOW - 10 + POLICY.start_secs)
    assert without_logs(late.actions)[-1] == StartDriver("wc-1")


def test_a_driver_that_died_is_restarted_then_backs_off() -> None:
    first = step([running(alive=False)], started())
    assert without_logs(first.actions) == [
        ReportDriver("wc-1", "the driver of wc-1 is gone; restarting it"),
        StartDriver("wc-1"),
    ]
    assert first.history.restarts == {"wc-1": (NOW,)}
    seen = step([running(alive=True)], first.history, now=NOW + 5)  # it registered
    assert seen.actions == []
    second = step([running(alive=False)], seen.history, now=NOW + 6)
    assert without_logs(second.actions) == [
        ReportDriver("wc-1", "the driver of wc-1 is gone; restarting it in 1s")
    ]
    assert step([running(alive=False)], second.history, now=NOW + 6.5).actions == []
    third = step([running(alive=False)], second.history, now=NOW + 7)
    assert third.actions == [StartDriver("wc-1")]
    assert third.history.restarts == {"wc-1": (NOW, NOW + 7)}


def test_backoff_doubles_up_to_its_cap_and_forgets_old_restarts() -> None:
    assert [POLICY.delay(n) for n in range(6)] == [0.0, 1.0, 2.0, 4.0, 8.0, 8.0]
    old = History({"wc-1": NOW - 200}, frozenset({"wc-1"}), {"wc-1": (NOW - 300, NOW - 200)}, {})
    result = step([running(alive=False)], old)
    assert StartDriver("wc-1") in result.actions  # restarts older than reset_secs: no wait


def test_a_failed_topologys_driver_is_stopped() -> None:
    assert step([running(status="FAILED", alive=True)]).actions == [StopDriver("wc-1")]
    assert step([running(status="FAILED", alive=False)]).actions == []


# -- killing ------------------------------------------------------------------------------


def test_a_killed_topology_waits_for_kill_at_then_is_unassigned_and_removed() -> None:
    killed = running(status="KILLED", kill_at=NOW + 30)
    history = started()
    assert step([killed], history).actions == []
    result = step([killed], history, now=NOW + 30)
    assert result.actions == [Unassign("wc-1"), StopDriver("wc-1"), RemoveTopology("wc-1")]
    assert result.history == History()


def test_killing_one_topology_leaves_the_others_alone() -> None:
    history = started("a").driver_started("b", NOW)
    result = step([running("a", status="KILLED", kill_at=0.0), running("b")], history)
    assert result.actions == [Unassign("a"), StopDriver("a"), RemoveTopology("a")]
    assert set(result.history.started) == {"b"}


# -- rebalancing --------------------------------------------------------------------------


def test_a_rebalance_deactivates_waits_then_reassigns_and_restarts_the_driver() -> None:
    request = {"workers": 3, "wait": 5}
    first = step([running(rebalance=request)], started())
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
        StopDriver("wc-1"),
        Assign("wc-1", 3, 2),
        StartDriver("wc-1"),
        UpdateRecord("wc-1", {"status": "ACTIVE", "rebalance": None}),
    ]
    assert done.history.started["wc-1"] == NOW + 5


def test_a_rebalance_beyond_the_cluster_restores_the_status_with_an_error() -> None:
    begun = {"workers": 5, "wait": 0, "previous": "INACTIVE", "deactivated_at": NOW}
    capacity = Capacity(total=4, used=2, where="spark.master=local[4]")
    result = step([running(status="REBALANCING", rebalance=begun)], started(), capacity=capacity)
    [update] = result.actions
    assert isinstance(update, UpdateRecord)
    assert update.changes["status"] == "INACTIVE" and update.changes["rebalance"] is None
    assert "5 worker(s) need 5 task slot(s)" in update.changes["error"]
    assert "4 free of 4" in update.changes["error"]  # the topology's own 2 slots count


def test_a_rescale_assigns_the_new_task_counts_with_the_next_attempt() -> None:
    request = {"workers": 2, "wait": 0, "components": {"count": 4}}
    first = step([running(rebalance=request)], started())
    [begin] = first.actions
    assert isinstance(begin, UpdateRecord) and begin.changes["status"] == "REBALANCING"
    assert begin.changes["rebalance"]["components"] == {"count": 4}
    begun = {**request, "previous": "ACTIVE", "deactivated_at": NOW}
    done = step([running(status="REBALANCING", rebalance=begun)], first.history)
    assert done.actions == [
        StopDriver("wc-1"),
        Assign("wc-1", 2, 2, {"count": 4}),
        StartDriver("wc-1"),
        UpdateRecord("wc-1", {"status": "ACTIVE", "rebalance": None}),
    ]


def test_a_refused_rescale_changes_nothing_and_says_why() -> None:
    why = "component 'count' keeps its state per task (task: ...)"
    request = {"workers": 2, "wait": 0, "components": {"count": 4}}
    result = step([running(rebalance=request, rescale_problem=why)], started())
    assert result.actions == [UpdateRecord("wc-1", {"rebalance": None, "error": why})]


def test_a_rescale_changed_by_hand_while_draining_restores_the_status() -> None:
    why = "topology 'wc' has no component 'nope' (its components: count, words)"
    begun = {"workers": 2, "wait": 0, "components": {"nope": 4}}
    begun |= {"previous": "INACTIVE", "deactivated_at": NOW}
    view = running(status="REBALANCING", rebalance=begun, rescale_problem=why)
    result = step([view], started())
    assert result.actions == [
        UpdateRecord("wc-1", {"status": "INACTIVE", "rebalance": None, "error": why})
    ]


def test_a_topology_without_an_assignment_yet_is_left_alone() -> None:
    view = TopologyView("wc-1", "ACTIVE", 2, driver_alive=False)
    assert step([view]).actions == []
