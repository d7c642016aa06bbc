"""The web UI cannot hurt the cluster (issue 40, item 6), through the commands a user types:
``sparkstorm local --ui`` under an open-file limit of 1,024 (soft and hard: raising the
soft one cannot help) with 1,100 idle connections held open to the UI still counts every
word exactly, stays up and answers once the idle ones are closed; and ``sparkstorm ui``
whose ZooKeeper is stopped and started again on the same port says so on stderr, answers
503 meanwhile, and serves again once it is back — never a traceback."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import end_session, wait_for
from topology.deploy.cluster.zookeeper_server import EmbeddedZooKeeper, free_port

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
URL = re.compile(r"Web UI and REST API at (http://\S+/) ")
OPEN_FILES = 1024
IDLE_CONNECTIONS = 1100


class Run:
    """A ``sparkstorm`` command as a subprocess, its stdout and stderr read as they come."""

    def __init__(self, args: list[str], **popen: Any) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own session: end_session ends all it started
            **popen,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, lines), daemon=True).start()

    @staticmethod
    def _read(stream: Any, lines: list[str]) -> None:
        for raw in stream:
            lines.append(raw.decode(errors="replace"))

    def url(self, timeout: float) -> str:
        found = wait_for(lambda: [m for line in self.out if (m := URL.search(line))], bool, timeout)
        return found[0].group(1)

    def said(self, text: str, where: list[str]) -> bool:
        return any(text in line for line in where)

    def stop(self) -> None:
        end_session(self.proc)

    def exit_status(self, timeout: float) -> int | str:
        """Its exit status, or why there is none after ``timeout`` seconds."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return f"still running after {timeout:g} s"

    def transcript(self) -> str:
        return "".join(self.out[-30:]) + "\n--- stderr ---\n" + "".join(self.err[-30:])


def get(url: str) -> tuple[int, Any]:
    """(status, parsed JSON) of a GET; a refused or reset connection raises OSError."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback only
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def answered(url: str) -> int:
    """The status of a GET of ``url``, or 0 when the connection was refused or cut."""
    try:
        return get(url)[0]
    except (OSError, ValueError, http.client.HTTPException):
        return 0


def connection_stats(base: str) -> dict[str, int]:
    """The UI's own count of its connections (zeros while it cannot be asked)."""
    try:
        return dict(get(base + "api/v1/ui")[1]["connections"])
    except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
        return {"refused": 0, "timed_out": 0}


def emitted(base: str) -> int:
    """What the topology's spouts emitted, as the UI shows it (0 until it can say)."""
    try:
        rows = get(base + "api/v1/topology/summary")[1]["topologies"]
    except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
        return 0
    return int(rows[0].get("emitted") or 0) if rows else 0


@contextlib.contextmanager
def idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections to ``port`` that never send a byte, held until the end.

    Made one after another, each once the kernel has completed the last: made all at once
    they overflow the listen queue, and the connects it drops are retried by TCP seconds
    to a minute later, whenever the machine is slow."""
    held = []
    try:
        for _ in range(count):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        yield held
    finally:
        for sock in held:
            sock.close()


def limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def test_local_with_ui_under_1024_files_survives_1100_idle_connections() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE_CONNECTIONS + 100:  # this test holds the client ends
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    run = Run(
        ["local", "examples/wordcount.py:topology", "--ui", "-c", "ui.port=0", "--duration", "0"],
        preexec_fn=limit_open_files,
    )
    try:
        base = run.url(150)
        port = int(base.rsplit(":", 1)[1].strip("/"))
        with idle_connections(port, IDLE_CONNECTIONS):
            # over the cap: refused at once; the rest: closed once idle for 5 s
            wait_for(lambda: answered(base + "api/v1/ui"), lambda s: s == 200, 60, 0.5)
            connections = wait_for(
                lambda: connection_stats(base),
                lambda c: c["refused"] + c["timed_out"] >= IDLE_CONNECTIONS,
                60,
                0.5,
            )
            assert connections["max"] <= 256 and connections["accept_errors"] == 0
            wait_for(lambda: emitted(base), lambda n: n > 0, 120, 0.5)  # it runs
            assert run.proc.poll() is None, run.transcript()
        run.proc.send_signal(signal.SIGINT)  # --duration 0: drain, verify, exit
        assert run.exit_status(180) == 0, run.transcript()
        assert run.said("Verified:", run.out), run.transcript()
        assert not run.said("Traceback", run.err), run.transcript()
        assert not run.said("Too many open files", run.out + run.err), run.transcript()
    finally:
        run.stop()


def test_ui_rides_out_its_zookeeper_stopped_and_started_again(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "zookeeper"
    data.mkdir()
    zookeeper: EmbeddedZooKeeper | None = EmbeddedZooKeeper(port=port, data_dir=str(data)).start()
    run = Run(["ui", "--zookeeper", f"127.0.0.1:{port}", "--port", "0"])
    try:
        base = run.url(60)
        summary = base + "api/v1/cluster/summary"
        wait_for(lambda: get(summary)[1]["error"], lambda e: e is None, 30, 0.2)
        assert zookeeper is not None
        zookeeper.stop()
        zookeeper = None
        wait_for(lambda: run.said("connection lost", run.err), bool, 60, 0.2)
        status, body = get(base + "api/v1/topology/wc")  # it asks ZooKeeper: 503, not 500
        assert status == 503 and "ZooKeeper" in body["message"], body
        wait_for(lambda: get(summary)[1]["error"], lambda e: e is not None, 30, 0.2)
        zookeeper = EmbeddedZooKeeper(port=port, data_dir=str(data)).start()
        wait_for(lambda: run.said("connection back", run.err), bool, 60, 0.2)
        wait_for(lambda: get(summary)[1]["error"], lambda e: e is None, 30, 0.2)
        assert get(base + "api/v1/topology/wc")[0] == 404  # ZooKeeper answers again
        assert run.proc.poll() is None, run.transcript()
        run.stop()
        assert not run.said("Traceback", run.err), run.transcript()
    finally:
        run.stop()
        if zookeeper is not None:
            zookeeper.stop()
