"""Unit tests for quiescence detection over worker status replies (pure data)."""

from __future__ import annotations

from typing import Any

import pytest

from topology.deploy.drain import drain_snapshot, rolled_back, wait_until_drained

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
