"""``sparkstorm local --kill-worker-at``: which worker it kills and what it says (a real
process stands in for the worker; the cluster's answers are plain data)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from cli.local import _kill_last_worker

pytestmark = pytest.mark.timeout(30)


class Beats:
    """The two calls ``_kill_last_worker`` makes on a Cluster."""

    def __init__(self, beats: dict[int, dict[str, Any]]) -> None:
        self.beats = beats

    def topology_id(self, name: str) -> str:
        return f"{name}-1-1"

    def current_beats(self, topology_id: str) -> dict[int, dict[str, Any]]:
        assert topology_id == "wc-1-1"
        return self.beats


def test_the_highest_numbered_worker_is_killed_with_sigkill() -> None:
    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])]
    sleepers.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]))
    try:
        beats = {0: {"pid": sleepers[0].pid}, 1: {"pid": sleepers[1].pid}}
        message = _kill_last_worker(Beats(beats), "wc")  # type: ignore[arg-type]
        assert f"Killed worker 1 (pid {sleepers[1].pid}) with SIGKILL" in message
        assert sleepers[1].wait(10) == -9
        assert sleepers[0].poll() is None  # the other worker lives on
    finally:
        for proc in sleepers:
            proc.kill()
            proc.wait()


def test_no_running_worker_is_said_and_nothing_is_killed() -> None:
    message = _kill_last_worker(Beats({}), "wc")  # type: ignore[arg-type]
    assert "no worker of the topology is running; nothing killed" in message
