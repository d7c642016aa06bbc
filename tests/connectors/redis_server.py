"""A real redis-server for the connector tests: on a free 127.0.0.1 port, in a temporary
directory, without persistence (``--save '' --appendonly no``) unless asked; stopped by pid.

:class:`RedisServer` can also be stopped and started again on the same port mid-test (the
outage test does, with ``persistent=True`` so the data survives).  The session fixture
``redis_server`` skips when the binary is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BINARY = "redis-server"
MISSING = "redis-server not found: install the Debian package redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server process in ``directory`` (``persistent``: an append-only file
    synced at every write, so a restart finds everything)."""

    def __init__(self, directory: Path, *, port: int | None = None, persistent: bool = False):
        self.directory = directory
        self.port = port or free_port()
        self.persistent = persistent
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        binary = shutil.which(BINARY)
        if binary is None:
            pytest.skip(MISSING)
        persistence = ["--appendonly", "yes", "--appendfsync", "always"]
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += persistence if self.persistent else ["--appendonly", "no"]
        args += ["--dir", str(self.directory)]
        log = open(self.directory / f"redis-{self.port}.log", "ab")
        try:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}: {args}")
            time.sleep(0.02)

    def answers(self) -> bool:
        """The server replies to PING (and is not loading its data)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                s.sendall(b"PING\r\n")
                return s.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGTERM, grace: float = 5.0) -> None:
        """Stop the process by its pid (SIGKILL after ``grace`` seconds) and reap it."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, sig)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server shared by the session's tests (flush what you use)."""
    if shutil.which(BINARY) is None:
        pytest.skip(MISSING)
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        server.start()
        yield server
    finally:
        server.stop()
