"""Helpers shared by the integration tests (process checks, polling, result shaping)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

#: Every integration topology runs in two worker processes.
WORKERS = 2
CONF: dict[str, Any] = {"topology.workers": WORKERS}
#: The failure policy before dead letters: an input whose code raised is failed at once (for
#: the tests of what a fail does).
FAIL_AT_ONCE: dict[str, Any] = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T], done: Callable[[T], bool], timeout: float, interval: float = 0.05
) -> T:
    """Call ``probe`` until ``done(value)`` holds; return that value or fail at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout:g}s; last value: {value!r}")
        time.sleep(interval)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid`` from /proc, or None when it does not exist."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer exists (exited and reaped).

    A zombie child of ours still counts as present: its exit was never collected.  A pid
    that exists but belongs to someone else's child was reused and counts as gone.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = _stat(pid)
    return stat is None or stat[1] != os.getpid()


def child_pids() -> set[int]:
    """Pids (zombies included) whose parent is this process."""
    me = os.getpid()
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == me:
                out.add(int(entry.name))
    return out


def tasks_by_component(status: list[dict[str, Any]]) -> dict[str, dict[int, int]]:
    """component -> {task id: worker index}, from ``worker_status`` replies."""
    out: dict[str, dict[int, int]] = {}
    for reply in status:
        for task, info in reply["tasks"].items():
            out.setdefault(info["component"], {})[int(task)] = reply["worker"]
    return out


def seen_values(results: dict[int, Any]) -> dict[int, list[Any]]:
    """task -> values recorded by a :class:`~tests.integration.components.Recorder`."""
    return {task: [entry[3] for entry in r["seen"]] for task, r in results.items()}


def kill_worker(cluster: Any, name: str, worker: int) -> None:
    """SIGKILL worker ``worker`` of topology ``name`` and wait until it was restarted."""
    import signal

    os.kill(cluster.worker_pids(name)[worker], signal.SIGKILL)
    wait_for(lambda: cluster.restarts(name).get(worker, 0), bool, 30)


def end_session(proc: subprocess.Popen[bytes], sig: int = signal.SIGINT, grace: float = 30) -> None:
    """Stop ``proc`` (started with ``start_new_session=True``) with ``sig``, waiting up to
    ``grace`` seconds, then SIGKILL whatever of its session is left: a test that times out
    or a command that hangs on shutdown never leaves its drivers, JVMs or workers behind."""
    try:
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the session is empty already
