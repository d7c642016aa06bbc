"""A sparkstorm cluster across virtual hosts: what the cluster tier and ``bench/chaos.py``
run on.

Hosts (network namespaces, :mod:`tests.cluster.netns`):

* ``zk1``, ``zk2``, ``zk3`` — a 3-node ZooKeeper ensemble (pyspark's jars);
* ``master`` — the Spark standalone master;
* ``nimbus1``, ``nimbus2`` — a leader and a standby ``sparkstorm nimbus``; topology
  drivers run on the leader's host;
* ``h1``, ``h2`` — Spark standalone workers, whose executors host the topology workers;
* ``client`` — where ``sparkstorm`` commands and the tests' probes run.

Every process is started through :class:`~tests.cluster.netns.VirtualHosts`, which ends
them by pid and deletes every namespace in :meth:`ClusterStack.destroy`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cluster.netns import VirtualHosts
from topology.deploy.spark.backend import pyspark_jars

REPO = Path(__file__).resolve().parents[2]
ZK_NODES = ("zk1", "zk2", "zk3")
SPARK_HOSTS = ("h1", "h2")
HOSTS = (*ZK_NODES, "master", "nimbus1", "nimbus2", *SPARK_HOSTS, "client")
ROOT = "/sparkstorm"
#: Short ZooKeeper sessions so that expiry tests do not take long.
SESSION_SECS = 8
#: The cluster is secured: a cluster secret (signatures, CURVE) and ZooKeeper credentials.
SECURITY = {
    "sparkstorm.cluster.secret": "multi-host-tier-cluster-secret",
    "storm.zookeeper.auth.scheme": "digest",
    "storm.zookeeper.auth.payload": "sparkstorm:multi-host-tier",
}


class ClusterStack:
    """The cluster above, in ``workdir`` (logs, ZooKeeper data, Spark work dirs)."""

    def __init__(self, workdir: Path, worker_cores: int = 2) -> None:
        self.workdir = workdir
        self.hosts = VirtualHosts(HOSTS, log_dir=workdir / "logs")
        self.address = self.hosts.address
        self.worker_cores = worker_cores
        self.zookeeper: dict[str, subprocess.Popen[bytes]] = {}
        self.nimbus: dict[str, subprocess.Popen[bytes]] = {}
        self.jars = str(pyspark_jars())
        self._prober: subprocess.Popen[bytes] | None = None

    # -- addresses and configuration ---------------------------------------------------------

    @property
    def zk_servers(self) -> str:
        return ",".join(f"{self.address[n]}:2181" for n in ZK_NODES)

    @property
    def master_url(self) -> str:
        return f"spark://{self.address['master']}:7077"

    def conf_args(self) -> list[str]:
        """``-c key=value`` options every sparkstorm command here gets."""
        conf = {
            "storm.zookeeper.servers": json.dumps([f"{self.address[n]}:2181" for n in ZK_NODES]),
            "storm.zookeeper.root": ROOT,
            "storm.zookeeper.session.timeout.secs": SESSION_SECS,
            "storm.zookeeper.connection.timeout.secs": 15,
            "storm.log.dir": str(self.workdir / "logs"),
            "spark.master": self.master_url,
            "spark.executor.memory": "512m",
            "spark.executor.cores": 1,
            "spark.task.maxFailures": 4,
            **SECURITY,
        }
        return [arg for key, value in conf.items() for arg in ("-c", f"{key}={value}")]

    # -- start and stop -------------------------------------------------------------------

    def start(self) -> ClusterStack:
        """Every host and process, in dependency order; returns when a nimbus leads and
        both Spark workers have registered."""
        self.hosts.create()
        try:
            for node in ZK_NODES:
                self.start_zookeeper(node)
            self._start_spark()
            self.wait_for(lambda: self.probe("ready"), 120, "the ZooKeeper quorum")
            self.start_nimbus("nimbus1")
            self.wait_for(lambda: self.probe("leader"), 120, "a leader nimbus")
            self.start_nimbus("nimbus2")
            self.wait_for(lambda: len(self.probe("contenders")) == 2, 60, "the standby nimbus")
            self.wait_for(self._spark_workers_alive, 120, "both Spark workers")
        except BaseException:
            self.destroy()
            raise
        return self

    def start_zookeeper(self, node: str) -> None:
        data = self.workdir / node
        data.mkdir(parents=True, exist_ok=True)
        (data / "myid").write_text(str(ZK_NODES.index(node) + 1))
        servers = "\n".join(
            f"server.{i + 1}={self.address[n]}:2888:3888" for i, n in enumerate(ZK_NODES)
        )
        config = data / "zoo.cfg"
        config.write_text(
            f"tickTime=1000\ninitLimit=10\nsyncLimit=5\ndataDir={data}\nclientPort=2181\n"
            f"clientPortAddress={self.address[node]}\nadmin.enableServer=false\n"
            f"maxSessionTimeout=60000\n{servers}\n"
        )
        self.zookeeper[node] = self.hosts.spawn(
            node,
            [
                "java",
                "-Xmx128m",
                "-cp",
                f"{self.jars}/*",
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(config),
            ],
            log=f"{node}.log",
        )

    def stop_zookeeper(self, node: str) -> None:
        """Kill one ZooKeeper node (its data stays for a restart)."""
        process = self.zookeeper.pop(node)
        _kill_tree(self.hosts, node, process.pid)
        process.wait(10)

    def _start_spark(self) -> None:
        spark_home = str(Path(self.jars).parent)
        # pyspark's wheel has no RELEASE file: name the Scala version for the launcher.
        env = {
            "SPARK_HOME": spark_home,
            "SPARK_SCALA_VERSION": "2.13",
            "PYSPARK_PYTHON": sys.executable,
        }
        self.hosts.spawn(
            "master",
            [
                "java",
                "-Xmx256m",
                "-cp",
                f"{self.jars}/*",
                "org.apache.spark.deploy.master.Master",
                "--host",
                self.address["master"],
                "--port",
                "7077",
                "--webui-port",
                "8080",
            ],
            log="spark-master.log",
            env=env,
        )
        for host in SPARK_HOSTS:
            work = self.workdir / f"spark-{host}"
            work.mkdir(parents=True, exist_ok=True)
            self.hosts.spawn(
                host,
                [
                    "java",
                    "-Xmx256m",
                    "-cp",
                    f"{self.jars}/*",
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    self.address[host],
                    "--cores",
                    str(self.worker_cores),
                    "--memory",
                    "2g",
                    "--work-dir",
                    str(work),
                    "--webui-port",
                    "8081",
                    self.master_url,
                ],
                log=f"spark-{host}.log",
                env=env,
            )

    def _spark_workers_alive(self) -> bool:
        script = (
            "import json,urllib.request;"
            f"print(json.load(urllib.request.urlopen('http://{self.address['master']}:8080/json/'))"
            "['aliveworkers'])"
        )
        try:
            return int(self.hosts.run("client", [sys.executable, "-c", script]).strip()) >= 2
        except (RuntimeError, ValueError):
            return False

    def start_nimbus(self, host: str) -> subprocess.Popen[bytes]:
        process = self.hosts.spawn(
            host,
            [sys.executable, "-m", "cli.main", "nimbus", *self.conf_args()],
            log=f"{host}.log",
            cwd=str(REPO),
        )
        self.nimbus[host] = process
        return process

    def destroy(self) -> None:
        self.hosts.destroy()

    # -- acting on hosts --------------------------------------------------------------------

    def sparkstorm(self, *args: str, timeout: float = 300.0) -> str:
        """Run a ``sparkstorm`` command on the client host; its output."""
        command = [sys.executable, "-m", "cli.main", *args, *self.conf_args()]
        return self.hosts.run("client", command, timeout=timeout, cwd=str(REPO))

    def probe(self, question: str, *args: str, timeout: float = 120.0) -> Any:
        """Ask :mod:`tests.cluster.probe` on the client host; the answer, or None when
        ZooKeeper could not be asked (within ``timeout``)."""
        prober = self._serving_prober()
        assert prober.stdin is not None and prober.stdout is not None
        try:
            prober.stdin.write(json.dumps([question, *args]).encode() + b"\n")
            prober.stdin.flush()
            ready, _, _ = select.select([prober.stdout], [], [], timeout)
            line = prober.stdout.readline() if ready else b""
        except OSError:
            line = b""
        if not line:  # no answer in time: a fresh prober for the next question
            self._end_prober()
            return None
        return json.loads(line).get("answer")

    def _serving_prober(self) -> subprocess.Popen[bytes]:
        if self._prober is None or self._prober.poll() is not None:
            command = [sys.executable, "-m", "tests.cluster.probe", "--serve"]
            self._prober = self.hosts.spawn(
                "client", [*command, self.zk_servers, ROOT], log="probe.log",
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(REPO),
            )  # fmt: skip
        return self._prober

    def _end_prober(self) -> None:
        if self._prober is not None:
            _kill_tree(self.hosts, "client", self._prober.pid)
            self._prober.wait(10)
            self._prober = None

    def disconnect(self, host: str) -> None:
        """Take ``host`` off the network (its processes live on, unreachable)."""
        self.hosts.run(host, ["ip", "link", "set", "eth0", "down"])

    def reconnect(self, host: str) -> None:
        self.hosts.run(host, ["ip", "link", "set", "eth0", "up"])
        self.hosts.run(host, ["ip", "addr", "replace", f"{self.address[host]}/24", "dev", "eth0"])

    def executor_pids(self, host: str) -> set[int]:
        """Pids of the Spark executor JVMs on ``host``."""
        return {
            pid
            for pid in self.hosts.pids_in(host)
            if b"CoarseGrainedExecutorBackend" in _cmdline(pid)
        }

    def leader_host(self) -> str | None:
        """The host of the leading nimbus (from its identifier, ``host:pid:id``)."""
        leader = self.probe("leader")
        return str(leader).split(":")[0] if leader else None

    @staticmethod
    def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
            time.sleep(interval)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _kill_tree(hosts: VirtualHosts, host: str, pid: int) -> None:
    """SIGKILL ``pid`` and what it started on ``host`` (the ``ip netns exec`` wrapper execs
    the command, so ``pid`` is the process itself)."""
    for child in hosts.pids_in(host):
        if child == pid or _parent(child) == pid:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1
