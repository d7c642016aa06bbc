"""Long-running commands ride out a lost ZooKeeper connection (issue 40, item 6): the lines
on stderr, the live view of ``sparkstorm local`` going on through ``ConnectionLoss`` and
``SessionExpiredError``, steps that must happen waiting for the connection; and the soft
open-file limit raised to the hard one at start."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from rich.console import Console

from cli import reconnect
from cli.common import UNLIMITED_OPEN_FILES, open_file_target
from cli.local import _finish, _watch
from cli.reconnect import ConnectionNotice, retrying
from topology.deploy.cluster.client import ClusterOperationError

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reconnect, "RETRY_PAUSE_SECS", 0.01)


def test_one_line_when_the_connection_is_lost_and_one_when_it_is_back() -> None:
    lines: list[str] = []
    notice = ConnectionNotice("127.0.0.1:2181", echo=lines.append)
    for connected in (True, False, False, False, True, True, False, True):
        notice(connected)
    lost = "connection lost; reconnecting (the topologies keep running)"
    back = "connection back"
    assert (
        lines
        == [f"ZooKeeper at 127.0.0.1:2181: {lost}", f"ZooKeeper at 127.0.0.1:2181: {back}"] * 2
    )


class Zk:
    """The ``zk`` of a fake cluster: connected at once."""

    hosts = "127.0.0.1:2181"
    waits = 0

    def wait_connected(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return True


class Flaky:
    """A fake :class:`Cluster` whose calls fail as a lost ZooKeeper connection makes them
    fail, ``failures`` times each (first ``ConnectionLoss``, then ``SessionExpiredError``)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: dict[str, int] = {}
        self.zk = Zk()

    def _call(self, what: str, result: Any) -> Any:
        n = self.calls[what] = self.calls.get(what, 0) + 1
        if n <= self.failures:
            raise ConnectionLoss() if n % 2 else SessionExpiredError()
        return result

    def worker_status(self, name: str, timeout: float = 15.0) -> list[dict[str, Any]]:
        task = {"component": "split", "emitted": {"default": 3}, "transferred": {}, "acked": 3}
        return self._call("worker_status", [{"tasks": {"1": task}}])

    def deactivate(self, name: str) -> None:
        self._call("deactivate", None)

    def wait_until_drained(self, name: str, timeout: float) -> None:
        self._call("wait_until_drained", None)

    def results(self, name: str) -> dict[str, Any]:
        return self._call("results", {"split": {1: "r"}})

    def errors(self, name: str) -> dict[str, Any]:
        return self._call("errors", {})

    def stats(self, name: str, window: str) -> dict[str, Any]:
        return self._call("stats", {"spouts": [], "bolts": []})

    def kill_topology(self, name: str, wait_secs: float) -> None:
        self._call("kill_topology", None)


def quiet_console() -> Console:
    return Console(file=io.StringIO(), width=120)


def test_the_live_view_goes_on_while_zookeeper_is_away() -> None:
    cluster = Flaky(failures=2)
    kills: list[int] = []

    def kill() -> str:
        kills.append(1)
        if len(kills) == 1:
            raise ConnectionLoss()
        return "killed"

    console = quiet_console()
    _watch(cluster, "wc", 3.5, console, (0.5, kill))  # type: ignore[arg-type]
    assert cluster.calls["worker_status"] >= 3  # two lost, then figures again
    assert kills == [1, 1]  # tried again on the next round, then done
    assert "killed" in console.file.getvalue()  # type: ignore[attr-defined]


def test_a_worker_restarting_still_says_so() -> None:
    class Restarting(Flaky):
        def worker_status(self, name: str, timeout: float = 15.0) -> list[dict[str, Any]]:
            raise ClusterOperationError("worker 1 is starting")

    console = quiet_console()
    _watch(Restarting(0), "wc", 1.2, console, None)  # type: ignore[arg-type]
    assert "waiting for workers" in console.file.getvalue()  # type: ignore[attr-defined]


def test_the_last_steps_wait_for_zookeeper_and_each_happens_once() -> None:
    cluster = Flaky(failures=2)
    results, errors, _ = _finish(cluster, "wc", quiet_console())  # type: ignore[arg-type]
    assert results == {"split": {1: "r"}} and errors == {}
    assert set(cluster.calls.values()) == {3}  # two failures, then the call that did it
    assert cluster.zk.waits == 2 * len(cluster.calls)


def test_a_step_gives_up_once_its_time_is_up_and_a_bug_is_not_retried() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 10.0
        return now[0]

    def lost() -> None:
        raise ConnectionLoss()

    cluster = Flaky(failures=0)
    with pytest.raises(ConnectionLoss):
        retrying(lost, cluster, within=35.0, clock=clock)  # type: ignore[arg-type]
    assert cluster.zk.waits == 2

    calls: list[int] = []

    def bug() -> None:
        calls.append(1)
        raise KeyError("x")

    with pytest.raises(KeyError):
        retrying(bug, cluster)  # type: ignore[arg-type]
    assert calls == [1]


# -- the open-file limit ---------------------------------------------------------------


def test_the_soft_open_file_limit_goes_to_the_hard_one() -> None:
    infinity = -1
    assert open_file_target(1024, 4096, infinity) == 4096
    assert open_file_target(1024, infinity, infinity) == UNLIMITED_OPEN_FILES
    assert open_file_target(8192, 4096, infinity) == 8192  # never lowered
    assert open_file_target(infinity, infinity, infinity) == infinity


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_NOFILE as Linux has it")
def test_a_long_running_command_raises_its_soft_limit_at_start() -> None:
    import resource

    def limit(soft: int, hard: int) -> Callable[[], None]:
        return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    code = (
        "import resource; from cli.common import raise_open_file_limit; "
        "raise_open_file_limit(); print(resource.getrlimit(resource.RLIMIT_NOFILE))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        preexec_fn=limit(512, 2048),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert out.strip() == "(2048, 2048)"


def test_the_connection_says_each_change_but_not_its_own_closing() -> None:
    from topology import config as cfg
    from topology.deploy.zk.connection import ZkConnection

    conf = cfg.resolve({"storm.zookeeper.servers": ["zk.invalid"]}, where="test")
    zk = ZkConnection(conf)  # never started: no connection is made
    changes: list[bool] = []
    zk.on_connection_change(changes.append)
    for state in ("SUSPENDED", "CONNECTED", "LOST", "CONNECTED"):
        zk._on_state(state)
    zk.close()
    zk._on_state("LOST")  # what stopping the client reports
    assert changes == [False, True, False, True]
