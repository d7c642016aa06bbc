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

from ..spark.backend import pyspark_jars


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


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


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
    """A ZooKeeper server process, listening on ``host`` (loopback unless told otherwise);
    use as a context manager.

    ``data_dir`` defaults to a temporary directory removed on :meth:`stop`; ``log_path``
    receives the server's output (print it when something fails).  With ``require_auth``
    the server serves only sessions that authenticated (digest): anonymous clients can do
    nothing at all.
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | None = None,
        host: str = "127.0.0.1",
        require_auth: bool = False,
    ) -> None:
        self.port = port or free_port()
        self.host = host
        self.require_auth = require_auth
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="sparkstorm-zk-")
        self.log_path = os.path.join(self.data_dir, "zookeeper.log")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """Where it listens (``host:port``)."""
        return f"{self.host}:{self.port}"

    @property
    def _probe_host(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host

    def _write_config(self) -> str:
        lines = [
            "tickTime=2000",
            f"dataDir={self.data_dir}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            "admin.enableServer=false",
            "maxSessionTimeout=60000",
        ]
        if self.require_auth:
            lines += ["enforce.auth.enabled=true", "enforce.auth.schemes=digest"]
        path = os.path.join(self.data_dir, "zoo.cfg")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def start(self, timeout: float = 30.0) -> EmbeddedZooKeeper:
        """Start the server and wait until it accepts connections."""
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperError("java not found on PATH: the embedded ZooKeeper needs Java 17+")
        if _port_open(self._probe_host, self.port):
            raise ZooKeeperError(f"port {self.port} is already in use")
        classpath = zookeeper_classpath()
        try:  # a --dir that does not exist yet is made, as ZooKeeper itself would
            os.makedirs(self.data_dir, exist_ok=True)
            config = self._write_config()
        except OSError as exc:
            raise ZooKeeperError(
                f"cannot use {self.data_dir!r} as the ZooKeeper data directory: "
                f"{exc.strerror or exc} (choose a writable directory)"
            ) from exc
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                "-cp",
                classpath,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                config,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not _serving(self._probe_host, self.port):
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

    def stop(self, wait: float = 10.0) -> None:
        """Stop the server (by its pid; killed after ``wait`` seconds) and remove a
        temporary data directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(wait)
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
