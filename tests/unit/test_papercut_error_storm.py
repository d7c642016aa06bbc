"""Issue 28 (papercut 1): a worker answers ``sparkstorm logs`` while its bolts raise
thousands of errors.

A Spark-hosted worker's writer thread rewrote the whole heartbeat (stats, a pending log
chunk) for every error handed to it and wrote the component's error node as often, with
unbounded waits, so the ``log`` reply queued behind a stream of ZooKeeper writes and the
CLI gave up after 15 s.  Now an error never causes a heartbeat write, errors are written
at most once a second (one write per component), and a reply is written at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from topology.deploy.cluster.waits import reply_to
from topology.deploy.zk.connection import ZnodeTooLarge
from topology.deploy.zk.worker_client import ZkClusterClient

pytestmark = pytest.mark.timeout(30)


class _Zk:
    """Records the writes the client makes; each takes ``latency`` seconds."""

    def __init__(self, latency: float = 0.005) -> None:
        self.latency = latency
        self.beats: list[dict[str, Any]] = []
        self.error_writes: list[tuple[str, int, float | None]] = []

    def beat(self, topology_id: str, worker: int, beat: dict[str, Any], timeout: Any) -> None:
        time.sleep(self.latency)
        self.beats.append(beat)

    def mark_started(self, *args: Any, **kwargs: Any) -> None:
        pass

    def report_errors(
        self, topology_id: str, component: str, new: list[Any], timeout: float | None = None
    ) -> None:
        time.sleep(self.latency)
        self.error_writes.append((component, len(new), timeout))


def _client(zk: _Zk) -> ZkClusterClient:
    client = ZkClusterClient(zk, "wc-1", 0, 1, 5.0, heartbeat_secs=5.0)  # type: ignore[arg-type]
    threading.Thread(target=client._write_loop, daemon=True).start()
    return client


def _error(component: str, i: int) -> dict[str, Any]:
    return {"type": "error", "component": component, "text": "x" * 4000, "time": float(i)}


def test_an_error_storm_costs_a_few_writes_and_a_reply_goes_out_at_once() -> None:
    zk = _Zk()
    client = _client(zk)
    try:
        deadline = time.monotonic() + 1.5
        i = 0
        while time.monotonic() < deadline:  # two noisy components, 20 errors/s each
            for component in ("arity", "keys"):
                client.send(_error(component, i))
            i += 1
            time.sleep(0.05)
        beats_before_reply = len(zk.beats)
        asked = time.monotonic()
        client._reply({"type": "log", "req": 7, "worker": 0, "text": "y" * 100_000})
        while not any(reply_to(b, "log").get("req") == 7 for b in zk.beats):
            assert time.monotonic() - asked < 1.0, "the reply waited behind the errors"
            time.sleep(0.01)
        while sum(n for _c, n, _t in zk.error_writes) < 2 * i:  # none lost: within a second
            assert time.monotonic() - asked < 3.0, "errors were not written"
            time.sleep(0.01)
    finally:
        client._closed.set()
        client._wake.set()
    assert beats_before_reply <= 2  # the first beat (and no other: not one per error)
    per_component: dict[str, int] = {}
    for component, _n, timeout in zk.error_writes:
        per_component[component] = per_component.get(component, 0) + 1
        assert timeout is not None  # bounded: a stuck ZooKeeper call cannot hang the writer
    assert set(per_component) == {"arity", "keys"}
    assert max(per_component.values()) <= 4  # about one a second, not one per error


def test_a_status_reply_does_not_overwrite_a_log_reply_not_yet_written() -> None:
    """Two clients at once (``sparkstorm local``'s progress asks ``status`` every second,
    ``logs`` asks ``log``): each reply stays in the heartbeat under its command."""
    zk = _Zk(latency=0.2)  # a slow ZooKeeper: both replies arrive during one write
    client = _client(zk)
    try:
        time.sleep(0.05)  # the first beat is being written
        client._reply({"type": "log", "req": 7, "worker": 0, "text": "tail"})
        client._reply({"type": "status", "req": 8, "worker": 0, "tasks": {}})
        deadline = time.monotonic() + 5
        while not (zk.beats and reply_to(zk.beats[-1], "status").get("req") == 8):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        client._closed.set()
        client._wake.set()
    last = zk.beats[-1]
    assert reply_to(last, "log")["req"] == 7 and reply_to(last, "log")["text"] == "tail"
    assert reply_to({"reply": {"type": "log", "req": 3}}, "log") == {"type": "log", "req": 3}


def test_a_beat_too_big_for_every_reply_keeps_the_newest() -> None:
    class _Small(_Zk):
        def beat(self, topology_id: str, worker: int, beat: dict[str, Any], timeout: Any) -> None:
            if len(beat.get("replies") or {}) > 1:
                raise ZnodeTooLarge("a ZooKeeper write of 1,200,000 bytes")
            super().beat(topology_id, worker, beat, timeout)

    zk = _Small(latency=0.0)
    client = ZkClusterClient(zk, "wc-1", 0, 1, 5.0)  # type: ignore[arg-type]
    client._reply({"type": "collect", "req": 1, "worker": 0})
    client._write_beat()
    client._reply({"type": "log", "req": 2, "worker": 0})
    client._write_beat()
    assert list(zk.beats[-1]["replies"]) == ["log"]
