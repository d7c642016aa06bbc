"""How the nimbus starts topology drivers: as processes of their own, or as threads.

* :class:`ProcessDrivers` (``nimbus.driver.mode: process``): each driver is a process in
  a session of its own (``python -m topology.deploy.cluster.topology_driver``), writing its log to
  ``<storm.log.dir>/<topology-id>/driver.log`` (0600); it outlives the nimbus that started
  it.  Its conf, secrets included, reaches it through its stdin, never its command line.
* :class:`InlineDrivers` (``inline``): each driver is a thread of the nimbus sharing the
  nimbus's :class:`~topology.deploy.spark.backend.SparkBackend`; when the nimbus stops,
  its drivers let go of their topologies without stopping the workers, so a standby
  nimbus of the same process (tests) adopts them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any, BinaryIO, Protocol

from topology.runtime.worker_log import topology_log_dir
from topology.user_dirs import LocalDirError, private_opener

from ..shipping import child_env
from .topology_driver import TopologyDriver, WorkerBackend


class DriverLauncher(Protocol):
    """Starts drivers for the nimbus; ``close`` at nimbus exit."""

    def start(self, topology_id: str, generation: int) -> None: ...

    def close(self) -> None: ...


class ProcessDrivers:
    """Drivers as processes of their own (they outlive this nimbus)."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, topology_id: str, generation: int) -> None:
        self._reap()
        with self._log_file(topology_id) as log:
            process = subprocess.Popen(
                [sys.executable, "-P", "-m", "topology.deploy.cluster.topology_driver"],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a nimbus's Ctrl-C or death does not reach it
                env=child_env(PYSPARK_PYTHON=sys.executable),
            )
        launch = {"conf": self.conf, "topology_id": topology_id, "generation": generation}
        assert process.stdin is not None
        process.stdin.write(json.dumps(launch, default=str).encode())
        process.stdin.close()
        self.processes[f"{topology_id}#{generation}"] = process

    def _log_file(self, topology_id: str) -> BinaryIO:
        """The driver's ``driver.log`` (0600, in the topology's private log directory);
        when that directory is refused, /dev/null: the driver runs, the reason is said."""
        try:
            folder = topology_log_dir(self.conf, topology_id)
            return open(folder / "driver.log", "ab", opener=private_opener)
        except (LocalDirError, OSError) as exc:
            print(
                f"[nimbus] topology {topology_id}: its driver runs without a log file: {exc}",
                file=sys.stderr,
                flush=True,
            )
            return open(os.devnull, "ab")

    def _reap(self) -> None:
        for key, process in list(self.processes.items()):
            if process.poll() is not None:
                del self.processes[key]

    def pids(self) -> list[int]:
        """Pids of the drivers this nimbus started that still run."""
        self._reap()
        return [p.pid for p in self.processes.values()]

    def close(self) -> None:
        """Forget the drivers (they keep running: that is the point)."""
        self._reap()


class InlineDrivers:
    """Drivers as threads of this nimbus, on its SparkContext."""

    def __init__(self, conf: dict[str, Any], backend: WorkerBackend) -> None:
        self.conf = conf
        self.backend = backend
        self._stop = threading.Event()
        self.threads: dict[str, threading.Thread] = {}

    def start(self, topology_id: str, generation: int) -> None:
        driver = TopologyDriver(self.conf, topology_id, generation, self.backend)
        thread = threading.Thread(
            target=driver.run, args=(self._stop,), name=f"driver-{topology_id}", daemon=True
        )
        self.threads[f"{topology_id}#{generation}"] = thread
        thread.start()

    def close(self) -> None:
        """Let every driver go (their workers keep running), and wait for them."""
        self._stop.set()
        for thread in self.threads.values():
            thread.join(10)
