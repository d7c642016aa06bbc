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
    assert drain_snapshot([reply(5, 4)]) is None
    _, status = polls([reply(5, 4)])
    with pytest.raises(TimeoutError, match="t did not drain within 0.2s"):
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
    assert drain_snapshot([busy], quiet=0.5) is None
    assert drain_snapshot([{**busy, "spouts_quiet_secs": 0.6}], quiet=0.5) == (10, 5, 5)
    assert drain_snapshot([{**busy, "spouts_quiet_secs": None}], quiet=0.5) == (10, 5, 5)


def test_drain_waits_until_every_spout_has_been_quiet() -> None:
    quiet = iter([0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2])
    seen: list[float] = []

    def status() -> list[dict[str, Any]]:
        seen.append(next(quiet))
        return [{**reply(5, 5), "spouts_quiet_secs": seen[-1]}, reply(1, 1)]

    wait_until_drained(status, lambda: True, lambda: None, 5, 0, "t", quiet=0.5)
    assert seen == [0.0, 0.2, 0.4, 0.6, 0.8]  # two drained snapshots, both quiet
