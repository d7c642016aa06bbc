"""A worker's start-up stderr: kept for the parent until the worker takes over its stderr."""

from __future__ import annotations

import subprocess
import sys

import pytest

from topology.deploy.local.startup_stderr import StartupStderr
from topology.deploy.shipping import child_env

pytestmark = pytest.mark.timeout(60)

TAKES_OVER = (
    "import sys; sys.stderr.write('early\\n'); sys.stderr.flush(); "
    "from topology.deploy.local.startup_stderr import restore_stderr; restore_stderr(); "
    "sys.stderr.write('later\\n')"
)


def _run(code: str, startup: StartupStderr) -> int:
    try:
        proc = subprocess.Popen([sys.executable, "-c", code], **startup.popen_kwargs(child_env()))
    finally:
        startup.spawned()
    return proc.wait(timeout=30)


def test_a_process_that_dies_early_leaves_its_last_line_for_the_parent() -> None:
    startup = StartupStderr()
    code = _run("import sys; sys.stderr.write('first\\nwhy it died\\n\\n'); sys.exit(3)", startup)
    assert code == 3
    assert startup.last_line() == "why it died"
    startup.close()


def test_a_process_that_takes_over_writes_to_the_parents_stderr_early_lines_included(
    capfd: pytest.CaptureFixture[str],
) -> None:
    startup = StartupStderr()
    assert _run(TAKES_OVER, startup) == 0
    assert capfd.readouterr().err.splitlines() == ["early", "later"]
    assert startup.last_line() == "early"  # only what came before the take-over
    startup.close()


def test_nothing_written_means_no_reason() -> None:
    startup = StartupStderr()
    assert _run("pass", startup) == 0
    assert startup.last_line() is None
    startup.close()
