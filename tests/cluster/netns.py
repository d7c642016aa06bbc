"""Several hosts on one machine: Linux network namespaces on a private bridge.

:class:`VirtualHosts` creates one namespace per host, each with its own address on a
bridge that lives in a hub namespace of its own, so no address is added to the machine's
own namespace and all test traffic stays inside the namespaces it made (and their
loopback).  Processes run in a host with :meth:`VirtualHosts.spawn`; each gets the host's
name (a UTS namespace of its own) and ``SPARK_LOCAL_IP`` / ``SPARK_LOCAL_HOSTNAME`` set
to the host's address, so Spark never needs name resolution, and ``JAVA_TOOL_OPTIONS``
set to :data:`LIGHT_JVM`.  :meth:`VirtualHosts.destroy`
ends every process it started (by pid) and deletes every namespace.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

#: Every JVM a host runs (ZooKeeper, Spark's daemons, drivers, executors and the launchers
#: in between) compiles with C1 only and collects with one thread: a test JVM lives for
#: minutes and relays bytes, so a full JIT and a parallel GC cost the two cores more CPU
#: than they save.  Spark and ZooKeeper behave the same.
LIGHT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no iproute2, no permission)."""


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {result.stderr.strip()}")


def check_available() -> str | None:
    """Why namespaces cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "iproute2 (ip) and util-linux (unshare) are needed"
    probe = f"sscheck{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except NetnsUnavailable as exc:
        return f"cannot create a network namespace: {exc}"
    _ip("netns", "del", probe)
    return None


class VirtualHosts:
    """Hosts ``names`` on ``subnet``.0/24; host ``i`` (from 0) gets ``subnet``.``10 + i``."""

    def __init__(self, names: Sequence[str], subnet: str = "10.213.7", log_dir: Path | None = None):
        self.prefix = f"ss{os.getpid() % 100000}"
        self.subnet = subnet
        self.names = list(names)
        self.address = {name: f"{subnet}.{10 + i}" for i, name in enumerate(self.names)}
        self.log_dir = log_dir or Path("/tmp") / f"{self.prefix}-logs"
        self.processes: list[subprocess.Popen[bytes]] = []
        self._made: list[str] = []

    def namespace(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    @property
    def hub(self) -> str:
        return f"{self.prefix}-hub"

    def create(self) -> VirtualHosts:
        """Make the hub with its bridge, then each host on it; undo everything on failure."""
        try:
            _ip("netns", "add", self.hub)
            self._made.append(self.hub)
            _ip("-n", self.hub, "link", "set", "lo", "up")
            _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.hub, "link", "set", "br0", "up")
            for i, host in enumerate(self.names):
                ns = self.namespace(host)
                _ip("netns", "add", ns)
                self._made.append(ns)
                _ip("-n", ns, "link", "set", "lo", "up")
                port = f"p{i}"
                _ip(
                    "-n",
                    self.hub,
                    "link",
                    "add",
                    port,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    ns,
                )
                _ip("-n", self.hub, "link", "set", port, "master", "br0", "up")
                _ip("-n", ns, "addr", "add", f"{self.address[host]}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
        except BaseException:
            self.destroy()
            raise
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return self

    def spawn(
        self,
        host: str,
        args: Sequence[str],
        log: str | None = None,
        env: dict[str, str] | None = None,
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
        cwd: str | None = None,
        stdout: int | None = None,
    ) -> subprocess.Popen[bytes]:
        """Run ``args`` on ``host`` (its own network and host name); output to ``log``
        (standard output to ``stdout`` instead when given, e.g. a pipe)."""
        address = self.address[host]
        full_env = {
            **os.environ,
            "JAVA_TOOL_OPTIONS": os.environ.get("JAVA_TOOL_OPTIONS", LIGHT_JVM),
            "SPARK_LOCAL_IP": address,
            "SPARK_LOCAL_HOSTNAME": address,
            **(env or {}),
        }
        command = [
            "ip",
            "netns",
            "exec",
            self.namespace(host),
            "unshare",
            "--uts",
            "sh",
            "-c",
            f'hostname {host} && exec "$@"',
            "sh",
            *args,
        ]
        out = open(self.log_dir / (log or f"{host}.log"), "ab")  # noqa: SIM115 - kept by Popen
        process = subprocess.Popen(
            command,
            stdin=stdin,
            stdout=out if stdout is None else stdout,
            stderr=subprocess.STDOUT if stdout is None else out,
            env=full_env,
            cwd=cwd,
        )
        out.close()
        self.processes.append(process)
        return process

    def run(
        self, host: str, args: Sequence[str], timeout: float = 60.0, cwd: str | None = None
    ) -> str:
        """Run ``args`` on ``host`` to completion; return its output (raise on failure)."""
        result = subprocess.run(
            ["ip", "netns", "exec", self.namespace(host), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args)} on {host} failed:\n{result.stdout}{result.stderr}"
            )
        return result.stdout

    def pids_in(self, host: str) -> set[int]:
        """Every process whose network namespace is ``host``'s (read from /proc)."""
        target = os.stat(f"/run/netns/{self.namespace(host)}").st_ino
        found = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.stat(entry / "ns" / "net").st_ino == target:
                        found.add(int(entry.name))
                except OSError:
                    continue
        return found

    def destroy(self) -> None:
        """End every process in the namespaces (only ours live there), then delete them."""
        for ns in list(self._made):
            host = ns.removeprefix(f"{self.prefix}-")
            try:
                pids = self.pids_in(host) if host in self.address else set()
            except OSError:
                pids = set()
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                deadline = time.monotonic() + 5
                while pids and time.monotonic() < deadline:
                    pids = {p for p in pids if _alive(p)}
                    time.sleep(0.1)
        for process in self.processes:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for ns in reversed(self._made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._made.clear()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
