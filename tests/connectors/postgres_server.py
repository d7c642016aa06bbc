"""A real PostgreSQL for the connector tests: ``initdb`` in a temporary directory, started
with ``pg_ctl`` on a free 127.0.0.1 port (trust authentication, unix socket in the
directory), run as an unprivileged user when the tests run as root (PostgreSQL refuses
root): ``postgres`` when that user exists, else ``nobody``.  Session-scoped; stopped by
``pg_ctl`` — and by the postmaster's pid if that fails — even when the tests fail.

Tests get a :class:`PostgresServer`: ``dsn`` to connect, ``stop()`` / ``start()`` to take
the server away and bring it back on the same port.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

SKIP = "PostgreSQL binaries (initdb, pg_ctl) not found: install the Debian package postgresql"


def find_binaries() -> str | None:
    """The directory of ``initdb`` and ``pg_ctl`` (PATH, then Debian's versioned dirs)."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    return next((d for d in dirs if os.path.exists(os.path.join(d, "initdb"))), None)


def _version(path: str) -> float:
    try:
        return float(path.split("/")[-2])
    except ValueError:
        return 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    bindir: str
    root: str  # the temporary directory: data/, the socket and the log
    port: int
    user: str | None  # run as this user (None: as ourselves)

    @property
    def data(self) -> str:
        return os.path.join(self.root, "data")

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        command = [os.path.join(self.bindir, args[0]), *args[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    def init(self) -> None:
        done = self._run(
            "initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
            "--locale=C", "--no-sync",
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c timezone=UTC"
        )
        log = os.path.join(self.root, "server.log")
        done = self._run(
            "pg_ctl", "start", "-D", self.data, "-w", "-t", "60", "-l", log, "-o", options
        )
        if done.returncode:
            text = open(log).read() if os.path.exists(log) else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stdout}{done.stderr}{text[-2000:]}")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``pg_ctl stop -m mode``); the data stays for :meth:`start`."""
        done = self._run("pg_ctl", "stop", "-D", self.data, "-m", mode, "-w", "-t", "30")
        if done.returncode and self.pid() is not None:
            raise RuntimeError(f"pg_ctl stop failed: {done.stdout}{done.stderr}")

    def pid(self) -> int | None:
        """The postmaster's pid while it runs."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                pid = int(f.readline())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def kill(self) -> None:
        """Stop at any cost: pg_ctl immediate, then SIGKILL the postmaster."""
        pid = self.pid()
        if pid is None:
            return
        try:
            self._run("pg_ctl", "stop", "-D", self.data, "-m", "immediate", "-w", "-t", "10")
        except subprocess.TimeoutExpired:
            pass
        if self.pid() is not None:
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)


class Unavailable(RuntimeError):
    """No PostgreSQL can run here; the message names what to install."""


def _server_user() -> str | None:
    """Who runs PostgreSQL: ourselves, or an unprivileged user when we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise Unavailable("running as root and no unprivileged user (postgres, nobody) to run it")


@contextlib.contextmanager
def running_postgres(prefix: str = "sparkstorm-pg-") -> Iterator[PostgresServer]:
    """A PostgreSQL in a temporary directory on a free port, stopped (by pid if need be) and
    removed at the end; :class:`Unavailable` when it cannot run here."""
    bindir = find_binaries()
    if bindir is None:
        raise Unavailable(SKIP)
    user = _server_user()
    root = tempfile.mkdtemp(prefix=prefix)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    server = PostgresServer(bindir, root, free_port(), user)
    try:
        server.init()
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop()
        server.kill()  # by the postmaster's pid when pg_ctl did not stop it
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        with running_postgres() as server:
            yield server
    except Unavailable as exc:
        pytest.skip(str(exc))
