"""``end_trees``: a child of this process and everything it started are ended by pid —
SIGTERM first, SIGKILL for what ignores it — even a grandchild in a session of its own
(real processes; no names involved)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topology.deploy.process_tree import descendants, end_trees, running

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc"),
]

#: A child that starts a grandchild in a session of its own (as a JVM or a pyspark daemon
#: may); the grandchild ignores SIGTERM, then prints its pid; both wait.
PARENT = """
import subprocess, sys, time
subprocess.Popen(
    [sys.executable, "-c",
     "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
     "print(os.getpid(), flush=True); time.sleep(60)"],
    start_new_session=True,
)
time.sleep(60)
"""


def test_a_child_and_a_grandchild_that_ignores_sigterm_are_both_ended() -> None:
    child = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    grandchild = None
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        assert descendants([child.pid]) == {grandchild}
        began = time.monotonic()
        assert end_trees([child.pid], grace=0.5, wait=5.0) == set()
        assert 0.5 <= time.monotonic() - began < 5.0  # SIGKILL came after the grace
        assert not running(child.pid) and not running(grandchild)
    finally:
        if grandchild is not None and running(grandchild):
            os.kill(grandchild, signal.SIGKILL)  # only when the test failed
        child.kill()
        child.wait()


def test_nothing_to_end_returns_at_once() -> None:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert end_trees([done.pid], grace=5.0) == set()
