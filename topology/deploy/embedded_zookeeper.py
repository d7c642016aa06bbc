"""A real ZooKeeper server started from the jars inside the pyspark wheel.

``java -cp "<pyspark>/jars/*" org.apache.zookeeper.server.ZooKeeperServerMain PORT DIR``:
no separate install.  Used by ``sparkstorm dev-zookeeper``, ``sparkstorm local`` and the
test suite; production points ``storm.zookeeper.servers`` at a real ensemble.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time

from topology.errors import SparkstormError

from .spark_backend import pyspark_jars


class ZooKeeperError(SparkstormError):
    """ZooKeeper could not be started or reached; the message says what to check."""


def zookeeper_classpath() -> str:
    """The classpath of the ZooKeeper server jars inside the pyspark wheel."""
    try:
        jars = pyspark_jars()
    except SparkstormError as exc:
        raise ZooKeeperError(str(exc)) from None
    if not any(jars.glob("zookeeper-*.jar")):
        raise ZooKeeperError(f"no zookeeper-*.jar in {jars}: is this a full pyspark install?")
    return os.path.join(jars, "*")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


#: A ZooKeeper ConnectRequest (protocol 0, no zxid, 4 s timeout, new session, empty
#: password, not read-only), length-prefixed as on the wire.
_CONNECT = struct.pack(">iqiqi16sB", 0, 0, 4000, 0, 16, b"\0" * 16, 0)
_HANDSHAKE = struct.pack(">i", len(_CONNECT)) + _CONNECT


def _serving(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when a ZooKeeper server at ``host:port`` answers a session handshake (an open
    port alone is not enough: the server listens before it can serve)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(_HANDSHAKE)
            return len(s.recv(64)) >= 4
    except OSError:
        return False


class EmbeddedZooKeeper:
    """A ZooKeeper server process on 127.0.0.1; use as a context manager.

    ``data_dir`` defaults to a temporary directory removed on :meth:`stop`; ``log_path``
    receives the server's output (print it when something fails).
    """

    def __init__(self, port: int | None = None, data_dir: str | None = None) -> None:
        self.port = port or free_port()
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="sparkstorm-zk-")
        self.log_path = os.path.join(self.data_dir, "zookeeper.log")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> EmbeddedZooKeeper:
        """Start the server and wait until it accepts connections."""
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperError("java not found on PATH: the embedded ZooKeeper needs Java 17+")
        if _port_open(self.port):
            raise ZooKeeperError(f"port {self.port} is already in use")
        classpath = zookeeper_classpath()
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                "-cp",
                classpath,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(self.port),
                self.data_dir,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not _serving("127.0.0.1", self.port):
            if self.process.poll() is not None:
                raise ZooKeeperError(
                    f"ZooKeeper exited with code {self.process.returncode}:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise ZooKeeperError(f"ZooKeeper did not listen on {self.port} within {timeout:g}s")
            time.sleep(0.05)
        return self

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server (by its pid) and remove a temporary data directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedZooKeeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
