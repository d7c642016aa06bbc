"""SIGTERM to ``sparkstorm local`` ends every process it started — ZooKeeper, the topology's
driver, its Spark JVM, pyspark daemons and workers — within 10 s, even when a second
SIGTERM comes while it stops.  The same run checks that secret-looking ``-c`` values are
on the command line of none of these processes, the CLI's own included
(docs/SECURITY.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
#: What ``sparkstorm local`` must take at most, from SIGTERM until nothing of it runs.
STOP_SECS = 10.0


def _stat(pid: int) -> list[str] | None:
    """The fields after the command name in /proc/<pid>/stat, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"  # a zombie has ended


def _processes() -> dict[int, list[str]]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z":  # zombies have ended
                out[int(entry.name)] = fields
    return out


def _descendants(root: int) -> set[int]:
    """Every live process below ``root``, by walking parent pids (no names involved)."""
    children: dict[int, set[int]] = {}
    for pid, fields in _processes().items():
        children.setdefault(int(fields[1]), set()).add(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), set()) - found:
            found.add(child)
            todo.append(child)
    return found


def _in_session(sid: int) -> set[int]:
    """Live processes of session ``sid`` (fields: state, ppid, pgrp, session, ...)."""
    return {pid for pid, fields in _processes().items() if int(fields[3]) == sid}


def _describe(pids: set[int]) -> list[str]:
    out = []
    for pid in sorted(pids):
        try:
            out.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:120]!r}")
        except OSError:
            continue
    return out


def _showing(pids: set[int], text: bytes) -> list[str]:
    """The command lines among ``pids``' ones that contain ``text``."""
    found = []
    for pid in sorted(pids):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if text in line:
            found.append(f"{pid}: {line[:300]!r}")
    return found


#: Given with -c: a token, a Spark secret (the Spark JVM's own conf) and a topology's key.
SECRET = b"SECRETVALUE"
SECRETS = [
    "-c",
    "ui.admin.token=SECRETVALUE-ui-0123456789",
    "-c",
    "spark.authenticate.secret=SECRETVALUE-spark",
    "--conf=db.password=SECRETVALUE-db",
]


def test_sigterm_to_sparkstorm_local_ends_every_process_it_started_within_10s() -> None:
    command = [sys.executable, "-m", "cli.main", "local", "examples/wordcount.py:topology"]
    proc = subprocess.Popen(
        [*command, "--duration", "60", *SECRETS],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own session: everything it starts can be found
    )
    submitted = threading.Event()
    output: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            output.append(raw.decode(errors="replace"))
            if "Finished submitting topology" in output[-1]:
                submitted.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    tree: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not submitted.wait(0.2):
            assert proc.poll() is None, "".join(output)
            assert time.monotonic() < deadline, "not submitted in 120s:\n" + "".join(output)
        # running: the driver, its Spark JVM and a pyspark daemon exist
        tree = _descendants(proc.pid)
        assert len(tree) >= 3, _describe(tree)
        everything = tree | _in_session(proc.pid) | {proc.pid}
        assert _showing(everything, b"java") and _showing(everything, b"topology_driver")
        assert not _showing(everything, SECRET), _showing(everything, SECRET)
        assert b"ui.admin.token=****" in Path(f"/proc/{proc.pid}/cmdline").read_bytes()

        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        # an impatient second signal while it stops must not cut the cleanup short
        try:
            proc.wait(0.5)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(max(0.0, sent + STOP_SECS - time.monotonic()))
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {STOP_SECS:g}s after SIGTERM:\n" + "".join(output[-20:]))
        left: set[int] = set()
        while time.monotonic() < sent + STOP_SECS:
            left = {pid for pid in tree if _alive(pid)} | _in_session(proc.pid)
            if not left:
                break
            time.sleep(0.1)
        assert not left, f"left running after SIGTERM: {_describe(left)}"
        assert proc.returncode == 128 + signal.SIGTERM
    finally:
        for pid in {pid for pid in tree if _alive(pid)} | _in_session(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)  # only what this test started
            except ProcessLookupError:
                pass
        proc.wait()
        reader.join(5)
