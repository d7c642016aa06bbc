"""Unit tests for quiescence detection over worker status replies (pure data)."""

from __future__ import annotations

from typing import Any

import pytest

from topology.deploy.drain import (
    checkpoint_busy,
    drain_snapshot,
    rolled_back,
    wait_in_flight,
    wait_until_drained,
)
from topology.deploy.progress import Steps, Update

pytestmark = pytest.mark.timeout(10)


def reply(transferred: int, executed: int, rollbacks: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "spout_emits": 10,
        "buffered": 0,
        "system": {"transferred": 0, "executed": 0},
        "tasks": {"1": {"transferred": {"default": transferred}, "executed": executed}},
    }
    if rollbacks is not None:
        out["checkpoints"] = {"rollbacks": rollbacks}
    return out


def polls(replies: list[dict[str, Any]]) -> tuple[list[int], Any]:
    calls = [0]

    def status() -> list[dict[str, Any]]:
        calls[0] += 1
        return replies

    return calls, status


def test_balanced_counters_drain_after_two_equal_snapshots() -> None:
    calls, status = polls([reply(5, 5)])
    wait_until_drained(status, lambda: True, lambda: None, 5, 0, "t")
    assert calls[0] == 2


class Late(Exception):
    pass


def test_a_late_status_answer_is_a_busy_look_not_a_failure() -> None:
    """A worker slow to answer on a loaded machine: the wait goes on (the look after it
    starts over), and only the drain's own timeout ends it."""
    answers: list[Any] = [Late("0/2 workers answered"), [reply(5, 5)], Late("1/2"), [reply(5, 5)]]
    answers += [[reply(5, 5)]] * 3
    calls = [0]

    def status() -> list[dict[str, Any]]:
        calls[0] += 1
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    wait_until_drained(status, lambda: True, lambda: None, 5, 0, "t", late=(Late,))
    assert calls[0] == 5  # the late answer between two equal looks breaks the pair

    def never() -> list[dict[str, Any]]:
        raise Late("0/2 workers answered 'status' within 15s")

    with pytest.raises(TimeoutError, match=r"waiting for: a status answer \(0/2 workers"):
        wait_until_drained(never, lambda: True, lambda: None, 0.05, 0.01, "t", late=(Late,))

    def broken() -> list[dict[str, Any]]:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):  # anything else is not a late answer
        wait_until_drained(broken, lambda: True, lambda: None, 5, 0, "t", late=(Late,))


def test_unbalanced_counters_never_drain_while_exact() -> None:
    assert drain_snapshot([reply(5, 4)]).snapshot is None
    _, status = polls([reply(5, 4)])
    with pytest.raises(
        TimeoutError,
        match=r"t did not drain within 0.2s \(waiting for: 5 tuples transferred, 4 executed\)",
    ):
        wait_until_drained(status, lambda: True, lambda: None, 0.2, 0.01, "t")


def test_a_worker_that_rolled_back_makes_the_counters_inexact() -> None:
    """Tuples dropped by a rollback are never executed: wait for five equal snapshots
    instead of balanced counters."""
    assert not rolled_back([reply(5, 4, rollbacks=0)])
    assert rolled_back([reply(5, 4, rollbacks=0), reply(1, 1, rollbacks=2)])
    calls, status = polls([reply(5, 4, rollbacks=1)])
    wait_until_drained(status, lambda: True, lambda: None, 5, 0, "t")
    assert calls[0] == 5


def test_a_spout_that_emitted_recently_is_not_drained() -> None:
    """Balanced counters between two emits of a paced spout are not the end."""
    busy = {**reply(5, 5), "spouts_quiet_secs": 0.1}
    assert drain_snapshot([busy], quiet=0.5).snapshot is None
    assert drain_snapshot([{**busy, "spouts_quiet_secs": 0.6}], quiet=0.5).snapshot == (10, 5, 5)
    assert drain_snapshot([{**busy, "spouts_quiet_secs": None}], quiet=0.5).snapshot == (10, 5, 5)


def test_drain_waits_until_every_spout_has_been_quiet() -> None:
    quiet = iter([0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2])
    seen: list[float] = []

    def status() -> list[dict[str, Any]]:
        seen.append(next(quiet))
        return [{**reply(5, 5), "spouts_quiet_secs": seen[-1]}, reply(1, 1)]

    wait_until_drained(status, lambda: True, lambda: None, 5, 0, "t", quiet=0.5)
    assert seen == [0.0, 0.2, 0.4, 0.6, 0.8]  # two drained snapshots, both quiet


def linked(worker: int, sent: dict[str, int], received: dict[str, int]) -> dict[str, Any]:
    return {**reply(5, 5), "worker": worker, "links": {"sent": sent, "received": received}}


def test_every_peer_link_must_balance_even_when_the_totals_do() -> None:
    """Worker 0 sent 7 tuples to worker 1, which has received 5: two are still on the wire
    (the totals balance by coincidence: worker 1 executed two tuples of its own)."""
    replies = [linked(0, {"1": 7}, {"1": 3}), linked(1, {"0": 3}, {"0": 5})]
    drain = drain_snapshot(replies)
    assert drain.snapshot is None
    assert drain.waiting_for == "worker 0 -> 1: 7 sent, 5 received"
    replies[1]["links"]["received"]["0"] = 7
    assert drain_snapshot(replies).snapshot == (20, 10, 10)
    # after a restart (inexact) the links are not compared: lost tuples never balance
    replies[1]["links"]["received"]["0"] = 2
    assert drain_snapshot(replies, exact=False).snapshot == (20, 10, 10)


def test_the_timeout_says_what_drain_was_waiting_for() -> None:
    _, status = polls([{**reply(5, 5), "spouts_quiet_secs": 0.1, "worker": 1}])
    with pytest.raises(TimeoutError, match=r"waiting for: worker 1's spouts emitted 0.10s ago"):
        wait_until_drained(status, lambda: True, lambda: None, 0.05, 0.01, "t", quiet=0.5)
    _, status = polls([{**reply(5, 5), "buffered": 3}])
    with pytest.raises(TimeoutError, match=r"waiting for: 3 tuples or frames buffered"):
        wait_until_drained(status, lambda: True, lambda: None, 0.05, 0.01, "t")


def test_pending_trees_are_named_by_spout_task_and_worker() -> None:
    spout = {"component": "orders", "transferred": {}, "executed": 0}
    replies = [
        {**reply(5, 5), "worker": 0, "tasks": {"3": {**spout, "pending": 2}}},
        {
            **reply(5, 5),
            "worker": 1,
            "tasks": {str(t): {**spout, "pending": 1} for t in range(4, 9)},
        },
    ]
    waiting_for = drain_snapshot(replies).waiting_for
    assert waiting_for.startswith("7 tuple trees pending (orders task 3 on worker 0: 2; ")
    assert waiting_for.endswith("orders task 6 on worker 1: 1; 2 more)")


def test_in_process_workers_report_links_that_balance_once_everything_arrived() -> None:
    """Worker 0's frames to worker 1 count on both ends: unbalanced while in flight."""
    from tests.unit.test_executor import topology as numbers_topology
    from topology.runtime.inprocess import InProcessRunner

    runner = InProcessRunner(numbers_topology(bolts=2), {"topology.workers": 2})
    runner.start()
    runner.activate()
    sender = next(w for w in (0, 1) if runner.worker(w).spouts)  # the spout's worker
    for _ in range(3):  # emit and send; the peer has not read its socket yet
        runner.worker(sender).executor.turn()
    in_flight = drain_snapshot(runner.status())
    assert in_flight.snapshot is None
    assert in_flight.waiting_for.startswith(f"worker {sender} -> {1 - sender}: ")
    runner.turn(5)
    [link] = [r["links"] for r in runner.status() if r["worker"] == sender]
    assert sum(link["sent"].values()) > 0
    assert drain_snapshot(runner.status()).snapshot is not None


class Clock:
    """Simulated monotonic seconds: ``sleep`` moves them."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, secs: float) -> None:
        self.now += secs


def stopped(pending: int = 0, **fields: Any) -> dict[str, Any]:
    """A worker of a deactivated topology (its spouts stopped) with ``pending`` trees."""
    spout = {"component": "orders", "transferred": {}, "executed": 0, "pending": pending}
    return {**reply(5, 5), "worker": 0, "spouts_quiet_secs": None, "tasks": {"3": spout}, **fields}


def test_a_deactivated_topology_is_busy_until_its_spouts_stop_and_its_checkpoints_settle() -> None:
    assert drain_snapshot([stopped()], deactivated=True).snapshot is not None
    assert drain_snapshot([{**stopped(), "spouts_quiet_secs": 9.0}], deactivated=True) == (
        None,
        "worker 0's spouts to stop",
    )
    assert drain_snapshot([stopped(2)], deactivated=True).waiting_for.startswith(
        "2 tuple trees pending (orders task 3 on worker 0: 2)"
    )
    # checkpoint traffic goes on while deactivated: the snapshot leaves system counts out
    busy_system = {**stopped(), "system": {"transferred": 40, "executed": 38}}
    assert drain_snapshot([busy_system], deactivated=True).snapshot == (10, 0, 0)
    assert drain_snapshot([busy_system]).snapshot is None  # a drain counts them

    def checkpointing(**state: Any) -> list[dict[str, Any]]:
        coordinator = {"recovering": False, "in_progress": False, **state}
        worker = {"waiting_acks": state.pop("waiting_acks", 0), "coordinator": coordinator}
        return [stopped(checkpoints=worker)]

    assert checkpoint_busy(checkpointing()) is None
    assert checkpoint_busy(checkpointing(in_progress=True)) == "the checkpoint in progress"
    assert checkpoint_busy(checkpointing(recovering=True)) == "a recovery to a checkpoint"
    assert checkpoint_busy(checkpointing(waiting_acks=1200)) == (
        "1,200 spout msg ids acked when the next checkpoint completes"
    )
    assert checkpoint_busy([stopped(checkpoints={"paused": True})]) == "a recovery to a checkpoint"
    assert drain_snapshot(checkpointing(in_progress=True)).snapshot is not None  # drains too


def test_an_idle_deactivated_topology_is_left_after_two_looks() -> None:
    clock, said = Clock(), []
    looks = iter([[stopped()]] * 2)
    steps = Steps(said.append, every=0.0, clock=clock)
    idle = wait_in_flight(
        lambda: next(looks), 30.0, steps=steps, interval=0.25, clock=clock, sleep=clock.sleep
    )
    assert idle and clock.now == 0.25
    assert said[-1] == "nothing in flight after 0.2s"


def test_pending_trees_are_waited_for_and_the_wait_says_what_it_waits_for() -> None:
    clock, said = Clock(), []
    pending = iter([40, 12, 3, 0, 0])
    steps = Steps(said.append, every=0.0, clock=clock)
    idle = wait_in_flight(
        lambda: [stopped(next(pending))],
        30.0,
        steps=steps,
        interval=0.5,
        clock=clock,
        sleep=clock.sleep,
    )
    assert idle and clock.now == 2.0
    assert said[0].startswith("waiting for 40 tuple trees pending") and said[0].endswith("30s left")
    assert isinstance(said[0], Update)
    assert said[-1] == "nothing in flight after 2.0s"


def test_the_wait_ends_at_its_bound_or_when_it_is_over_anyway() -> None:
    clock = Clock()
    busy = wait_in_flight(lambda: [stopped(5)], 3.0, interval=0.25, clock=clock, sleep=clock.sleep)
    assert not busy and clock.now == 3.0  # bounded by the timeout, as before

    clock = Clock()

    def silent() -> list[dict[str, Any]]:
        raise TimeoutError("1/2 workers answered")

    assert not wait_in_flight(silent, 2.0, interval=0.5, clock=clock, sleep=clock.sleep)
    assert clock.now == 2.0  # a worker that does not answer may be working: busy

    looks = []
    over = iter([True, True, False])
    assert not wait_in_flight(
        lambda: looks.append(1) or [stopped(5)],
        30.0,
        still=lambda: next(over),
        sleep=lambda s: None,
    )
    assert len(looks) == 2  # the nimbus moved on: no more looks


def test_after_a_restart_the_counters_must_hold_still_for_five_looks() -> None:
    clock = Clock()
    looks = [0]

    def status() -> list[dict[str, Any]]:
        looks[0] += 1
        return [stopped()]

    assert wait_in_flight(status, 30.0, exact=lambda: False, clock=clock, sleep=clock.sleep)
    assert looks[0] == 5
