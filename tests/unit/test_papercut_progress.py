"""Issue 28 (papercut 6): ``kill`` and ``rebalance`` say what they wait for as they wait,
instead of printing nothing for the whole message timeout (30 s by default).  Issue 40:
each step once where lines cannot be rewritten (a pipe), a live line in a terminal."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner

from cli import operations
from cli.main import cli
from cli.progress import CLEAR_LINE, WaitLines
from topology.deploy import progress
from topology.deploy.cluster import waits
from topology.deploy.progress import Steps, Update
from topology.deploy.rescale import Rebalanced
from topology.deploy.shipping import child_env
from topology.status import TopologyStatus

pytestmark = pytest.mark.timeout(30)


class _Zk:
    """Just what the waits read: a record, an assignment, heartbeats, leftovers — each
    read advancing a scripted sequence of states."""

    def __init__(self, records: list[dict[str, Any] | None], attempts: list[int]) -> None:
        self.records = records
        self.attempts = attempts
        self.removed = False
        self.reads = 0

    def read_record(self, topology_id: str) -> dict[str, Any] | None:
        self.reads += 1
        return self.records[min(self.reads, len(self.records)) - 1]

    def read_assignment(self, topology_id: str) -> dict[str, Any]:
        attempt = self.attempts[min(self.reads, len(self.attempts)) - 1]
        return {"attempt": attempt, "workers": 1}

    def heartbeats(self, topology_id: str, attempt: int | None = None) -> dict[int, Any]:
        ready = self.reads >= len(self.records)
        return {0: {"ready": ready, "attempt": attempt}}

    def topology_leftovers(self, topology_id: str) -> bool:
        return not self.removed

    def remove_topology(self, topology_id: str) -> None:
        self.removed = True


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "UPDATE_EVERY_SECS", 0.0)
    monkeypatch.setattr(waits.time, "sleep", lambda secs: None)


def test_a_kill_counts_down_then_says_it_stops_the_workers() -> None:
    kill_at = time.time() + 20
    killed = {"status": TopologyStatus.KILLED, "kill_at": kill_at}
    zk = _Zk([killed, killed, {**killed, "kill_at": 0.0}, None], [1])
    lines: list[str] = []
    waits.wait_removed(zk, "wc-1", "wc", 10.0, lines.append)  # type: ignore[arg-type]
    assert lines[0].startswith("in-flight tuples finishing: ")
    assert lines[0].endswith("s left")
    assert lines[-2:] == [
        "stopping the workers of 'wc'",
        "stopping the workers of 'wc' and removing it",
    ]


def test_a_rebalance_says_draining_relaunching_and_ready() -> None:
    draining = {"status": TopologyStatus.REBALANCING, "rebalance": {"workers": 1}}
    zk = _Zk([draining, draining, {"status": TopologyStatus.ACTIVE}], [1, 1, 2])
    lines: list[str] = []
    waits.wait_rebalanced(zk, "wc-1", "wc", 1, 1, 30.0, 10.0, lines.append)  # type: ignore[arg-type]
    assert lines[0] == "'wc' deactivated: in-flight tuples have up to 30s to finish"
    assert lines[1].startswith("draining: ") and isinstance(lines[1], Update)
    assert lines[-2:] == [
        "relaunching 'wc' on 1 worker(s)",
        "relaunching 'wc' on 1 worker(s): 1/1 ready",
    ]
    assert not isinstance(lines[-2], Update) and isinstance(lines[-1], Update)


class _Cluster:
    def kill_topology(self, name: str, wait_secs: float | None, progress: Any = None) -> None:
        progress("'wc' deactivated: in-flight tuples have 30s to finish, then its workers stop")
        steps = Steps(progress, every=0.0)
        for left in (25, 20, 15, 10, 5):  # the updates of one step
            steps.count_down("in-flight tuples finishing", left)
        progress("stopping the workers of 'wc'")

    def rebalance(
        self,
        name: str,
        workers: int,
        wait: float | None,
        progress: Any = None,
        components: Any = None,
    ) -> Rebalanced:
        progress("relaunching 'wc' on 1 worker(s): 0/1 ready")
        return Rebalanced(workers)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def session(config: Any) -> Iterator[_Cluster]:
        yield _Cluster()

    monkeypatch.setattr(operations, "cluster_session", session)


def test_the_commands_print_each_step_once_on_stderr_before_the_result(cluster: None) -> None:
    """Piped (CliRunner's stderr is no terminal): one line per step, none per update."""
    result = CliRunner().invoke(cli, ["kill", "wc"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "'wc' deactivated: in-flight tuples have 30s to finish, then its workers stop...",
        "stopping the workers of 'wc'...",
    ]
    assert result.stdout == "Killed topology: wc\n"
    result = CliRunner().invoke(cli, ["rebalance", "wc", "-n", "1"])
    assert result.exit_code == 0, result.output
    assert "relaunching 'wc' on 1 worker(s): 0/1 ready..." in result.stderr


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_updates_on_one_live_line_cleared_before_the_next_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "60")  # a live line longer than the terminal is cut
    terminal = _Terminal()
    lines = WaitLines(terminal)
    lines("'wc' deactivated")
    lines(Update("waiting for 3 tuple trees pending: 25s left"))
    lines(Update("waiting for 1 tuple tree pending: 24s left"))
    lines("stopping the workers of 'wc'")
    lines(Update("1/2 ready"))
    lines(Update("x" * 100))
    lines.close()
    assert terminal.getvalue() == (
        "'wc' deactivated...\n"
        f"{CLEAR_LINE}waiting for 3 tuple trees pending: 25s left..."
        f"{CLEAR_LINE}waiting for 1 tuple tree pending: 24s left..."
        f"{CLEAR_LINE}stopping the workers of 'wc'...\n"
        f"{CLEAR_LINE}1/2 ready...{CLEAR_LINE}{'x' * 56}...{CLEAR_LINE}"
    )


def test_a_piped_kill_prints_its_wait_line_once_from_a_real_process(tmp_path: Any) -> None:
    """The CLI in a subprocess with stderr on a pipe: the countdown of a 3 s wait (updates
    every 0.05 s here) prints nothing but its step."""
    script = tmp_path / "piped.py"
    script.write_text(
        "import sys\n"
        "from cli.progress import wait_lines\n"
        "from topology.deploy.progress import Steps\n"
        "with wait_lines() as say:\n"
        "    say('waiting 3 s for in-flight tuples')\n"
        "    steps = Steps(say, every=0.0)\n"
        "    for left in range(30, 0, -1):\n"
        "        steps.count_down('in-flight tuples finishing', left / 10)\n"
        "    say('stopping the workers')\n"
        "print('Killed topology: wc')\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
        env=child_env(),
    )
    assert done.stderr.splitlines() == [
        "waiting 3 s for in-flight tuples...",
        "stopping the workers...",
    ]
    assert done.stdout == "Killed topology: wc\n"
