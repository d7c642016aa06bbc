"""Unit tests for worker supervision: adoption, relaunch with backoff, failed starts,
stuck workers — plain data in, actions out, a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from topology.deploy.cluster.plan import FailTopology, Log
from topology.deploy.worker_plan import (
    AttemptView,
    KillWorker,
    Launch,
    ReportWorker,
    RestartPolicy,
    StopAttempt,
    WorkerHistory,
    WorkerPlan,
    WorkerView,
    pending_restarts,
    supervise,
)

pytestmark = pytest.mark.timeout(10)

NOW = 1_000.0
POLICY = RestartPolicy(base_secs=1.0, max_secs=4.0, reset_secs=60.0, stuck_secs=30.0)
RUNNING = WorkerView(alive=True, ready=True, launched=True)


def attempt(
    views: dict[int, WorkerView] | None = None, number: int = 1, workers: int = 2
) -> AttemptView:
    return AttemptView(
        "wc-1", number, workers, {w: RUNNING for w in range(workers)} | (views or {})
    )


def step(
    view: AttemptView,
    history: WorkerHistory,
    now: float = NOW,
    policy: RestartPolicy = POLICY,
) -> WorkerPlan:
    return supervise(view, history, policy, now, grace=10.0)


def supervising(workers: int = 2, ready: tuple[int, ...] = (0, 1)) -> WorkerHistory:
    """The history of a supervisor that launched every worker of attempt 1."""
    return WorkerHistory(attempt=1, launched=frozenset(range(workers)), ready=frozenset(ready))


def without_logs(actions: list[Any]) -> list[Any]:
    return [a for a in actions if not isinstance(a, Log)]


# -- a new attempt: launch, or adopt what runs ------------------------------------------------


def test_a_fresh_supervisor_launches_every_worker_of_the_attempt() -> None:
    result = step(attempt({0: WorkerView(), 1: WorkerView()}), WorkerHistory())
    assert result.actions == [Launch("wc-1", 0, 1), Launch("wc-1", 1, 1)]
    assert result.history.attempt == 1 and result.history.launched == {0, 1}


def test_a_fresh_supervisor_adopts_workers_whose_heartbeat_is_alive() -> None:
    views = {0: WorkerView(alive=True, ready=True), 1: WorkerView()}
    result = step(attempt(views), WorkerHistory())
    assert without_logs(result.actions) == [Launch("wc-1", 1, 1)]
    assert [a.text for a in result.actions if isinstance(a, Log)] == [
        "wc-1: adopting running worker 0 of attempt 1"
    ]
    assert result.history.launched == {1}


def test_a_fresh_supervisor_adopts_workers_its_backend_still_runs() -> None:
    """A driver that replaced another on the same Spark application (inline drivers) sees
    the running jobs as launched: it must not start a second copy of each worker."""
    views = {
        0: WorkerView(alive=True, ready=True, launched=True),
        1: WorkerView(launched=True),  # still starting: no heartbeat yet
        2: WorkerView(launched=True, ended=True),
    }
    result = step(attempt(views, workers=3), WorkerHistory())
    assert without_logs(result.actions) == [Launch("wc-1", 2, 1)]
    assert result.history.launched == {0, 1, 2}


def test_an_adopted_worker_is_relaunched_once_its_heartbeat_is_gone() -> None:
    adopted = WorkerHistory(attempt=1, launched=frozenset({1}), ready=frozenset({0, 1}))
    result = step(attempt({0: WorkerView(alive=False)}), adopted)
    assert Launch("wc-1", 0, 1) in result.actions


def test_a_new_attempt_stops_the_old_one_and_launches_its_workers() -> None:
    result = step(attempt({0: WorkerView(), 1: WorkerView()}, number=2), supervising())
    assert result.actions == [
        StopAttempt("wc-1", 1, 10.0),
        Launch("wc-1", 0, 2),
        Launch("wc-1", 1, 2),
    ]


# -- deaths -------------------------------------------------------------------------------


def test_a_worker_that_died_after_being_ready_is_reported_and_relaunched_at_once() -> None:
    died = {1: WorkerView(launched=True, ended=True, error="pid 7 exited with code -9")}
    result = step(attempt(died), supervising())
    assert without_logs(result.actions) == [
        ReportWorker(
            "wc-1", 1, "worker 1 ended: pid 7 exited with code -9; relaunching (restart 1)"
        ),
        Launch("wc-1", 1, 1),
    ]
    assert result.history.restarts == {1: (NOW,)}
    assert result.history.pending == {}


def test_a_worker_that_keeps_dying_backs_off_exponentially_up_to_the_cap() -> None:
    died = attempt({1: WorkerView(launched=True, ended=True)})
    history, now, waits = supervising(), NOW, []
    for _ in range(5):
        result = step(died, history, now)
        history = result.history
        if any(isinstance(a, Launch) for a in result.actions):
            waits.append(0.0)
        else:
            due = history.pending[1].due
            waits.append(due - now)
            assert step(died, history, due - 0.01).actions == []  # not before it is due
            history = step(died, history, due).history
            now = due
        now += 0.5
    assert waits == [0.0, 1.0, 2.0, 4.0, 4.0]
    assert history.restart_count(1) == 5


def test_restarts_older_than_the_reset_window_no_longer_count() -> None:
    old = WorkerHistory(
        attempt=1,
        launched=frozenset({0, 1}),
        ready=frozenset({0, 1}),
        restarts={1: (NOW - 500, NOW - 400)},
    )
    result = step(attempt({1: WorkerView(launched=True, ended=True)}), old)
    assert Launch("wc-1", 1, 1) in result.actions


def test_pending_restarts_show_the_reason_and_the_next_start() -> None:
    history = WorkerHistory(
        attempt=1, launched=frozenset({0, 1}), ready=frozenset({0, 1}), restarts={1: (NOW,)}
    )
    died = attempt({1: WorkerView(launched=True, ended=True, error="boom")})
    result = step(died, history, NOW + 1)
    assert pending_restarts(result.history) == {
        1: {"restarts": 1, "reason": "worker 1 ended: boom", "next_start_at": NOW + 2}
    }


def test_a_worker_that_died_before_it_was_ever_ready_fails_the_topology() -> None:
    died = {1: WorkerView(launched=True, ended=True, error="ValueError: bad conf\nTraceback...")}
    result = step(attempt(died), supervising(ready=()))
    assert without_logs(result.actions) == [
        FailTopology("wc-1", "worker 1 failed to start: ValueError: bad conf")
    ]


def test_healthy_workers_need_nothing() -> None:
    assert step(attempt(), supervising()).actions == []


# -- stuck workers --------------------------------------------------------------------------


def test_a_stuck_worker_is_reported_once_per_stall() -> None:
    stuck = attempt(
        {0: WorkerView(**{**RUNNING.__dict__, "stalled_secs": 31.0, "busy_in": "split:3"})}
    )
    first = step(stuck, supervising())
    assert without_logs(first.actions) == [
        ReportWorker("wc-1", 0, "worker 0 stuck in split:3: no executor progress for 31s")
    ]
    assert step(stuck, first.history).actions == []  # same stall: said once
    recovered = step(attempt(), first.history)
    assert recovered.history.stuck == frozenset()
    assert step(stuck, recovered.history).actions != []  # a new stall is reported again


def test_a_stuck_worker_is_killed_when_configured() -> None:
    policy = RestartPolicy(stuck_secs=5.0, kill_stuck=True)
    stuck = attempt({1: WorkerView(**{**RUNNING.__dict__, "stalled_secs": 9.0})})
    result = step(stuck, supervising(), policy=policy)
    assert without_logs(result.actions) == [
        ReportWorker(
            "wc-1", 1, "worker 1 stuck: no executor progress for 9s; killing it to relaunch"
        ),
        KillWorker("wc-1", 1),
    ]
