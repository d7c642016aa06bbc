"""How a supervisor treats a worker's death: a fatal error fails the start only for a
worker never ready in the attempt, and the reason ``status`` shows names the exit code,
the signal or the error's last line (plain data, no processes)."""

from __future__ import annotations

import pytest

from topology.deploy.local.topology import REASON_LINES, exit_reason
from topology.deploy.worker_plan import (
    AttemptView,
    Launch,
    RestartPolicy,
    WorkerHistory,
    WorkerView,
    fails_start,
    pending_restarts,
    supervise,
)

pytestmark = pytest.mark.timeout(10)

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "bolt.py", line 9, in execute\n'
    "    raise WorkerCrash('boom')\n"
    "crash.WorkerCrash: boom"
)


def test_only_a_worker_never_ready_in_the_attempt_fails_the_start() -> None:
    fresh = WorkerHistory(attempt=1, launched=frozenset({0, 1}))
    assert fails_start(1, ready_now=False, history=fresh)
    assert not fails_start(1, ready_now=True, history=fresh)  # it had been running
    # relaunched, and its new process fails while starting: relaunched again (backoff)
    ran = WorkerHistory(attempt=1, launched=frozenset({0, 1}), ready=frozenset({1}))
    assert not fails_start(1, ready_now=False, history=ran)


def test_a_relaunched_worker_that_fails_to_start_is_relaunched_after_a_backoff() -> None:
    policy = RestartPolicy(base_secs=1.0, max_secs=4.0, reset_secs=60.0)
    history = WorkerHistory(
        attempt=1, launched=frozenset({0, 1}), ready=frozenset({0, 1}), restarts={1: (100.0,)}
    )
    died = WorkerView(launched=True, ended=True, error="pid 8 exited with code 1: E: x")
    view = AttemptView("t", 1, 2, {0: WorkerView(True, True, True), 1: died})
    result = supervise(view, history, policy, 100.5)
    assert not any(isinstance(a, Launch) for a in result.actions)
    assert pending_restarts(result.history)[1]["next_start_at"] == 101.5


def test_a_signal_is_named() -> None:
    assert exit_reason(7, -9, None, None) == "pid 7 killed by SIGKILL"
    assert exit_reason(7, -15, TRACEBACK, None) == "pid 7 killed by SIGTERM"


def test_an_error_puts_its_last_line_first_and_last() -> None:
    reason = exit_reason(7, 1, TRACEBACK, "ignored")
    lines = reason.splitlines()
    assert lines[0] == "pid 7 exited with code 1: crash.WorkerCrash: boom"
    assert lines[1:] == TRACEBACK.splitlines()
    assert lines[-1] == "crash.WorkerCrash: boom"  # the line `status` shows


def test_a_long_traceback_is_cut_to_its_end() -> None:
    long = "\n".join(f"  frame {i}" for i in range(100)) + "\nValueError: deep"
    lines = exit_reason(7, 1, long, None).splitlines()
    assert len(lines) == 1 + REASON_LINES
    assert lines[-1] == "ValueError: deep"


def test_without_an_error_the_code_and_the_startup_line() -> None:
    assert exit_reason(7, 0, None, None) == "pid 7 exited with code 0"
    assert exit_reason(7, 1, "", "ModuleNotFoundError: x") == (
        "pid 7 exited with code 1: ModuleNotFoundError: x"
    )


# -- a process the backend replaced (Spark retried the worker's task) ---------------------


def _seen(process: str, error: str | None = None) -> AttemptView:
    running = WorkerView(alive=True, ready=True, launched=True)
    worker = WorkerView(True, True, True, error=error, process=process)
    return AttemptView("t", 1, 2, {0: running, 1: worker})


def test_a_process_the_backend_replaced_counts_as_a_restart_with_its_reason() -> None:
    policy = RestartPolicy()
    history = WorkerHistory(attempt=1, launched=frozenset({0, 1}), ready=frozenset({0, 1}))
    history = supervise(_seen("pid 7 on h"), history, policy, 100.0).history
    assert history.processes == {1: "pid 7 on h"} and history.restarts == {}
    # the error is the dead process's own record, as the driver looks it up
    result = supervise(_seen("pid 9 on h", "ValueError: boom"), history, policy, 101.0)
    assert not any(isinstance(a, Launch) for a in result.actions)  # the backend did it
    assert pending_restarts(result.history) == {
        1: {
            "restarts": 1,
            "reason": "worker 1 ended (pid 7 on h): ValueError: boom",
            "next_start_at": None,
        }
    }
    assert result.history.restarts == {}  # not in the backoff: the backend retried by itself
    assert supervise(_seen("pid 9 on h"), result.history, policy, 102.0).actions == []


def test_the_process_a_supervisor_launched_itself_is_not_counted_twice() -> None:
    policy = RestartPolicy()
    history = WorkerHistory(attempt=1, launched=frozenset({0, 1}), ready=frozenset({0, 1}))
    history = supervise(_seen("pid 7 on h"), history, policy, 100.0).history
    dead = AttemptView(
        "t", 1, 2, {0: WorkerView(True, True, True), 1: WorkerView(launched=True, ended=True)}
    )
    history = supervise(dead, history, policy, 101.0).history  # relaunched at once
    assert history.restart_count(1) == 1
    history = supervise(_seen("pid 7 on h"), history, policy, 101.5).history  # stale beat
    history = supervise(_seen("pid 8 on h"), history, policy, 102.0).history  # its launch
    assert history.restart_count(1) == 1
    assert history.processes[1] == "pid 8 on h"
