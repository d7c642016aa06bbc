"""Issue 40: ``kill`` and ``rebalance`` on a cluster wait only while the deactivated
topology has something in flight (bounded by the wait asked, the message timeout by
default), then tell the nimbus to go on; and ``workers_alive`` counts the workers that
run, not the heartbeats a killed process left behind."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from topology.deploy.cluster import waits
from topology.deploy.cluster.waits import Workers, running_workers
from topology.status import TopologyStatus

pytestmark = pytest.mark.timeout(30)

IDLE = {
    "worker": 0,
    "spout_emits": 5,
    "buffered": 0,
    "tasks": {},
    "system": {"transferred": 0, "executed": 0},
    "spouts_quiet_secs": None,
}


class _Zk:
    """A topology record, its assignment and heartbeats, and a nimbus that acts on each
    read: it removes a killed topology once ``kill_at`` passed and moves a rebalancing
    one once its wait is over."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record: dict[str, Any] | None = record
        self.attempt = 1
        self.amended: list[dict[str, Any]] = []

    def _nimbus(self) -> None:
        record = self.record
        if record is None:
            return
        if record["status"] == TopologyStatus.KILLED and record["kill_at"] <= time.time():
            self.record = None
        request = record.get("rebalance")
        if request and time.time() >= request["deactivated_at"] + request["wait"]:
            self.record = {**record, "status": request["previous"], "rebalance": None}
            self.attempt += 1

    def read_record(self, topology_id: str) -> dict[str, Any] | None:
        self._nimbus()
        return None if self.record is None else dict(self.record)

    def amend_record(
        self, topology_id: str, amend: Callable[[dict[str, Any]], dict[str, Any] | None]
    ) -> dict[str, Any] | None:
        if self.record is None or (changes := amend(dict(self.record))) is None:
            return None
        self.amended.append(changes)
        self.record = {**self.record, **changes}
        return self.record

    def read_assignment(self, topology_id: str) -> dict[str, Any]:
        return {"attempt": self.attempt, "workers": 1}

    def heartbeats(self, topology_id: str, attempt: int | None = None) -> dict[int, Any]:
        return {0: {"ready": True, "attempt": self.attempt}}

    def topology_leftovers(self, topology_id: str) -> bool:
        self._nimbus()
        return self.record is not None

    def remove_topology(self, topology_id: str) -> None:
        self.record = None


class _Looking(Workers):
    """Workers whose status replies are ``replies``, one per look (``taken`` counts)."""

    def __init__(self, *replies: list[dict[str, Any]]) -> None:
        self.taken = 0

        def status() -> list[dict[str, Any]]:
            self.taken += 1
            return replies[self.taken - 1]

        super().__init__(status, lambda: True)


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits.time, "sleep", lambda secs: None)
    monkeypatch.setattr("topology.deploy.drain.IN_FLIGHT_LOOK_SECS", 0.0)


def test_a_kill_with_nothing_in_flight_stops_the_workers_at_once() -> None:
    zk = _Zk({"status": TopologyStatus.KILLED, "kill_at": time.time() + 30})
    lines: list[str] = []
    started = time.monotonic()
    waits.wait_removed(zk, "t-1", "t", 60.0, lines.append, _Looking([IDLE], [IDLE]))  # type: ignore[arg-type]
    assert time.monotonic() - started < 5
    assert zk.amended == [{"kill_at": 0.0}] and zk.record is None
    assert lines[0].startswith("nothing in flight after ")


def test_a_kill_waits_for_pending_trees_then_stops_the_workers() -> None:
    pending = {**IDLE, "tasks": {"3": {"transferred": {}, "executed": 0, "pending": 4}}}
    zk = _Zk({"status": TopologyStatus.KILLED, "kill_at": time.time() + 30})
    looks = _Looking([pending], [pending], [pending], [IDLE], [IDLE])
    waits.wait_removed(zk, "t-1", "t", 60.0, None, looks)  # type: ignore[arg-type]
    assert zk.amended == [{"kill_at": 0.0}] and looks.taken == 5


def test_a_kill_whose_time_is_up_looks_at_no_worker() -> None:
    zk = _Zk({"status": TopologyStatus.KILLED, "kill_at": time.time() - 1})

    def status() -> list[dict[str, Any]]:
        raise AssertionError("a worker was asked")

    waits.wait_removed(zk, "t-1", "t", 60.0, None, Workers(status, lambda: True))  # type: ignore[arg-type]
    assert zk.amended == [] and zk.record is None


def test_a_rebalance_with_nothing_in_flight_moves_at_once_and_only_its_own_request() -> None:
    began = time.time()
    request = {"workers": 2, "wait": 30.0, "previous": "ACTIVE", "deactivated_at": began}
    zk = _Zk({"status": TopologyStatus.REBALANCING, "rebalance": request})
    lines: list[str] = []
    started = time.monotonic()
    waits.wait_rebalanced(
        zk,
        "t-1",
        "t",
        1,
        1,
        30.0,
        60.0,
        lines.append,
        _Looking([IDLE], [IDLE]),  # type: ignore[arg-type]
    )
    assert time.monotonic() - started < 5
    assert zk.amended == [{"rebalance": {**request, "wait": 0}}] and zk.attempt == 2
    assert [line for line in lines if line.startswith("nothing in flight after ")]

    # the nimbus moved on (another request began) between the last look and the cut
    other = {**request, "deactivated_at": began + 1}
    zk = _Zk({"status": TopologyStatus.REBALANCING, "rebalance": request})
    record = dict(zk.record or {})
    zk.record = {"status": TopologyStatus.REBALANCING, "rebalance": other}
    waits._drain_rebalance(zk, "t-1", record, 30.0, _Looking([IDLE], [IDLE]), waits.Steps(None))  # type: ignore[arg-type]
    assert zk.amended == [] and zk.record["rebalance"] == other


class _Beats:
    def __init__(self, supervised: dict[str, Any]) -> None:
        self.supervised = supervised

    def read_assignment(self, topology_id: str) -> dict[str, Any]:
        return {"attempt": 2, "workers": 5}

    def driver(self, topology_id: str) -> dict[str, Any]:
        return {"workers": self.supervised}


def test_workers_alive_counts_ready_fresh_workers_of_the_attempt_not_waiting_to_restart() -> None:
    now = time.time()
    beats = {
        0: {"ready": True, "attempt": 2, "beat_at": now},
        1: {"ready": True, "attempt": 2, "beat_at": now - 60},  # killed: its beat is stale
        2: {"ready": True, "attempt": 2, "beat_at": now},  # dead, relaunch due in 4 s
        3: {"ready": False, "attempt": 2, "beat_at": now},  # relaunched, starting
        4: {"ready": True, "attempt": 1, "beat_at": now},  # a worker of the last attempt
    }
    zk = _Beats({"2": {"restarts": 1, "next_start_at": now + 4}, "3": {"restarts": 1}})
    assert running_workers(zk, "t-1", beats, 15.0) == 1  # type: ignore[arg-type]
    assert running_workers(_Beats({}), "t-1", {}, 15.0) == 0  # type: ignore[arg-type]
