"""Logging is configured once per process: a formatted stderr handler, kazoo at WARNING
with its reconnect chatter passed once a minute."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import topology.logs as logs
from cli.main import cli
from topology.logs import ChatterLimit, configure_logging

pytestmark = pytest.mark.timeout(30)

REPO = Path(__file__).resolve().parents[2]


def record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("kazoo.client", logging.WARNING, __file__, 1, msg, args, None)


def test_reconnect_chatter_passes_once_per_interval_and_counts_the_rest() -> None:
    now = [0.0]
    limit = ChatterLimit(interval=60.0, clock=lambda: now[0])
    assert limit.filter(record("Connection dropped: %s", "refused"))
    for t in (1.0, 30.0, 59.0):
        now[0] = t
        assert not limit.filter(record("Connection dropped: %s", "refused"))
    assert limit.filter(record("Transition to CONNECTING"))  # another kind: its own budget
    now[0] = 61.0
    again = record("Connection dropped: %s", "refused")
    assert limit.filter(again)
    assert again.getMessage() == "Connection dropped: refused (3 more like it in the last 60s)"
    now[0] = 200.0
    quiet = record("Connection dropped: %s", "refused")
    assert limit.filter(quiet) and quiet.getMessage() == "Connection dropped: refused"


def test_other_lines_always_pass() -> None:
    limit = ChatterLimit(interval=60.0, clock=lambda: 0.0)
    assert all(limit.filter(record("Session has expired")) for _ in range(3))


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], logging.Logger]]:
    """Call it (in the test: pytest gives the root logger handlers of its own for the
    test's call) to get the root logger as an unconfigured process has it; all restored."""
    root = logging.getLogger()
    kazoo = logging.getLogger("kazoo.client")
    monkeypatch.setattr(logs, "_configured", False)
    monkeypatch.setattr(kazoo, "filters", [])
    level, kazoo_level = root.level, kazoo.level
    kazoo.setLevel(logging.NOTSET)

    def unconfigured() -> logging.Logger:
        monkeypatch.setattr(root, "handlers", [])
        return root

    yield unconfigured
    root.setLevel(level)
    kazoo.setLevel(kazoo_level)


def test_configure_logging_sets_up_stderr_and_kazoo_once(
    fresh: Callable[[], logging.Logger],
) -> None:
    root = fresh()
    configure_logging("info")
    assert len(root.handlers) == 1 and root.level == logging.INFO
    kazoo = logging.getLogger("kazoo.client")
    assert kazoo.level == logging.WARNING
    assert [type(f) for f in kazoo.filters] == [ChatterLimit]
    configure_logging("debug")
    assert len(root.handlers) == 1 and root.level == logging.INFO
    assert len(kazoo.filters) == 1


def test_an_application_that_configured_logging_keeps_its_handlers(
    fresh: Callable[[], logging.Logger],
) -> None:
    root = fresh()
    mine = logging.NullHandler()
    root.handlers.append(mine)
    configure_logging()
    assert root.handlers == [mine]


def test_every_cli_command_configures_logging(fresh: Callable[[], logging.Logger]) -> None:
    root = fresh()
    result = CliRunner().invoke(cli, ["version"])
    assert result.exit_code == 0, result.output
    assert logs._configured and len(root.handlers) == 1


def test_a_process_logs_one_formatted_line_for_a_burst_of_kazoo_chatter() -> None:
    code = (
        "import logging\n"
        "from topology.logs import configure_logging\n"
        "configure_logging()\n"
        "log = logging.getLogger('kazoo.client')\n"
        "log.info('Connecting to 127.0.0.1:2181')\n"
        "for _ in range(50):\n"
        "    log.warning('Connection dropped: %s', 'socket connection error')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(logs.LEVEL_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert " WARNING kazoo.client [" in lines[0]
    assert lines[0].endswith("]: Connection dropped: socket connection error")
