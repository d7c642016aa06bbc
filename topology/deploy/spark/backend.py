"""Workers as long-running Spark tasks: the only module that imports pyspark.

Each worker is one Spark job of one task, started from its own driver thread under a job
group ``sparkstorm/<topology-id>/<worker>/<attempt>``; the task runs
:func:`topology.deploy.spark.worker_runner.run_worker_from_zookeeper` and holds its task slot for
its whole life.  Spark retries a crashed task (``spark.task.maxFailures``, or
``local[N,F]``); when the job still fails, the backend reports the worker as ended and its
supervisor decides what next.  Stopping a worker cancels its job group (workers also stop
by themselves when ZooKeeper says so).

Also here, because they are about Spark: how a topology's own Spark application is sized
(:func:`spark_app_conf`), a standalone master's free cores, and pyspark's jar directory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import threading
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topology import config as cfg
from topology.config import is_secret_key
from topology.errors import SparkstormError

from ..cluster.plan import Capacity
from .worker_runner import run_worker_from_zookeeper

#: Port of a standalone master's web UI, whose ``/json`` tells its cores.
STANDALONE_UI_PORT = 8080


def pyspark_jars() -> Path:
    """The directory of jars shipped in the pyspark wheel (it holds zookeeper-*.jar)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkstormError("pyspark is not installed: pip install pyspark")
    return Path(spec.origin).resolve().parent / "jars"


def local_master(workers: int) -> str:
    """A local master with a slot per worker (at least the cores) and 3 task attempts."""
    return f"local[{max(os.cpu_count() or 1, workers)},3]"


def spark_app_conf(
    base: dict[str, Any], topology_conf: dict[str, Any], workers: int
) -> dict[str, Any]:
    """The ``spark.*`` conf of one topology's own application.

    ``base`` (the nimbus's ``spark.*`` keys) under the ``spark.*`` keys the topology sets to
    something other than their default (a topology conf holds every default), then
    sized so every worker gets an executor of its own: each executor runs exactly one task
    (``spark.task.cpus`` = ``spark.executor.cores``, default 1), and the application asks
    for ``workers`` executors (``spark.cores.max`` on standalone, ``spark.executor.instances``
    on YARN and Kubernetes) unless the topology says otherwise.  One executor lost takes
    down only its own worker.
    """
    defaults = cfg.defaults()
    spark = {k: v for k, v in base.items() if k.startswith("spark.")}
    spark.update(
        {
            k: v
            for k, v in topology_conf.items()
            if k.startswith("spark.") and (k not in defaults or v != defaults[k])
        }
    )
    master = str(spark.get("spark.master") or "local[*]")
    if master.startswith("local"):
        if master in ("local", "local[*]"):
            spark["spark.master"] = local_master(workers)
        return loopback_driver(spark)
    cores = int(spark.setdefault("spark.executor.cores", 1))
    spark.setdefault("spark.task.cpus", cores)
    spark.setdefault("spark.dynamicAllocation.enabled", "false")
    if master.startswith("spark://"):
        spark.setdefault("spark.cores.max", cores * workers)
    else:
        spark.setdefault("spark.executor.instances", workers)
    return spark


def loopback_driver(spark: dict[str, Any]) -> dict[str, Any]:
    """In local mode nothing outside this machine talks to the driver: it listens on
    loopback only (unless the conf says otherwise)."""
    if str(spark.get("spark.master", "")).startswith("local"):
        spark.setdefault("spark.driver.host", "127.0.0.1")
        spark.setdefault("spark.driver.bindAddress", "127.0.0.1")
    return spark


def standalone_capacity(master: str, executor_cores: int = 1, timeout: float = 3.0) -> Capacity:
    """Free worker slots of a standalone master (``spark://host:port``), from its web UI's
    ``/json`` (cores, cores in use); a slot is ``executor_cores`` cores."""
    hosts = master.removeprefix("spark://").split(",")
    host = hosts[0].rsplit(":", 1)[0]
    url = f"http://{host}:{STANDALONE_UI_PORT}/json/"
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - http only
        info = json.load(response)
    total = int(info.get("cores", 0)) // max(1, executor_cores)
    used = int(info.get("coresused", 0)) // max(1, executor_cores)
    return Capacity(total, used, f"spark.master={master}, {info.get('aliveworkers', '?')} hosts")


@dataclass
class _Launched:
    thread: threading.Thread
    group: str
    attempt: int
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


def executor_id(pid: int | None = None) -> str:
    """The Spark executor this Python worker serves: its JVM's ``--executor-id``, found by
    walking up the parent processes (PySpark does not tell its workers), or ``driver`` in
    local mode, where the driver's JVM runs the tasks."""
    pid = os.getppid() if pid is None else pid
    for _ in range(8):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        if b"--executor-id" in args:
            return args[args.index(b"--executor-id") + 1].decode()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 1:
            break
    return os.environ.get("SPARK_EXECUTOR_ID", "driver")


def _spark_task(launches: Any) -> Any:
    """Runs inside the Spark executor's Python worker."""
    from pyspark import TaskContext  # noqa: PLC0415 - executor side

    for launch in launches:
        ctx = TaskContext.get()
        launch["task_info"] = {
            "executor": executor_id(),
            "spark_task_attempt": ctx.taskAttemptId() if ctx else None,
            "spark_stage": ctx.stageId() if ctx else None,
        }
        yield run_worker_from_zookeeper(launch)


class SparkBackend:
    """Launches and stops workers as Spark tasks on one SparkContext.

    ``spark_conf`` holds the ``spark.*`` keys (``spark.master`` at least).  The Python that
    runs the driver also runs the tasks (``PYSPARK_PYTHON``), so workers find the same
    packages.
    """

    def __init__(self, spark_conf: dict[str, Any], app_name: str = "sparkstorm") -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark import SparkConf, SparkContext

        conf = SparkConf().setAppName(app_name)
        conf.set("spark.ui.enabled", "false")
        spark_conf = loopback_driver(dict(spark_conf))
        #: The ``spark.*`` keys this application was started with (what its workers run on).
        self.spark_conf: dict[str, Any] = dict(spark_conf)
        conf.set("spark.ui.showConsoleProgress", "false")
        secrets = {k: v for k, v in spark_conf.items() if is_secret_key(k)}
        for key, value in spark_conf.items():
            if key not in secrets:
                conf.set(key, str(value))
        # pyspark starts its JVM with the conf on spark-submit's command line, which every
        # user of the machine can read: start it without the secret-looking keys, which
        # then reach the context's conf through the gateway (read when the context starts)
        SparkContext._ensure_initialized(conf=conf)
        for key, value in secrets.items():
            conf.set(key, str(value))
        self.sc = SparkContext.getOrCreate(conf)
        self.sc.setLogLevel("ERROR")
        self._launched: dict[tuple[str, int], _Launched] = {}
        self._lock = threading.Lock()

    # -- capacity --------------------------------------------------------------------------

    def total_slots(self) -> int:
        """Task slots of the cluster (``defaultParallelism``: cores in local mode)."""
        return int(self.sc.defaultParallelism)

    def used_slots(self) -> int:
        with self._lock:
            return sum(1 for launched in self._launched.values() if not launched.done.is_set())

    def capacity(self) -> Capacity:
        """Slots of the Spark cluster, those held by running workers, and the master URL."""
        return Capacity(self.total_slots(), self.used_slots(), f"spark.master={self.sc.master}")

    def executors(self) -> int:
        """Executors registered with this application (the driver excluded in cluster
        mode; local mode's single executor is the driver)."""
        registered = int(self.sc._jsc.sc().getExecutorMemoryStatus().size())
        return registered if str(self.sc.master).startswith("local") else max(0, registered - 1)

    # -- workers ---------------------------------------------------------------------------

    def launch(self, launch: dict[str, Any]) -> None:
        """Start worker ``launch["worker"]`` of ``launch["topology_id"]`` (returns at once)."""
        key = (launch["topology_id"], launch["worker"])
        group = f"sparkstorm/{key[0]}/{key[1]}/{launch['attempt']}"
        launched = _Launched(threading.Thread(), group, int(launch["attempt"]))

        def run() -> None:
            try:
                self.sc.setJobGroup(group, f"sparkstorm worker {key[1]} of {key[0]}", True)
                self.sc.parallelize([launch], 1).mapPartitions(_spark_task).collect()
            except Exception as exc:  # the job failed after Spark's own retries
                launched.error = _short_error(exc)
            finally:
                launched.done.set()

        launched.thread = threading.Thread(target=run, name=f"spark-{group}", daemon=True)
        with self._lock:
            self._launched[key] = launched
        launched.thread.start()

    def topologies(self) -> set[str]:
        """Ids of the topologies with worker jobs launched here (running or not yet reaped)."""
        with self._lock:
            return {key[0] for key in self._launched}

    def launched(self, topology_id: str, worker: int, attempt: int) -> bool:
        """Whether this backend launched that worker of that attempt (so it knows its job)."""
        with self._lock:
            found = self._launched.get((topology_id, worker))
        return found is not None and found.attempt == attempt

    def ended(self, topology_id: str, worker: int) -> tuple[bool, str | None]:
        """(True, error or None) when the worker's Spark job has finished."""
        with self._lock:
            launched = self._launched.get((topology_id, worker))
        if launched is None:
            return True, None
        return launched.done.is_set(), launched.error

    def kill(self, topology_id: str, worker: int) -> None:
        """Cancel one worker's job now (its supervisor sees it ended and relaunches it)."""
        with self._lock:
            launched = self._launched.get((topology_id, worker))
        if launched is not None and not launched.done.is_set():
            self.sc.cancelJobGroup(launched.group)

    def stop(
        self,
        topology_id: str,
        worker: int | None = None,
        wait: float = 10.0,
        grace: float = 0.0,
        attempt: int | None = None,
    ) -> None:
        """Stop the Spark jobs of one worker (or all of a topology, or all of one attempt)
        and wait for them.

        Jobs get ``grace`` seconds to end by themselves (workers stop when their assignment
        goes away) before they are cancelled.
        """
        with self._lock:
            targets = [
                (key, launched)
                for key, launched in self._launched.items()
                if key[0] == topology_id
                and (worker is None or key[1] == worker)
                and (attempt is None or launched.attempt == attempt)
            ]
        deadline = time.monotonic() + grace
        for _, launched in targets:
            launched.done.wait(max(0.0, deadline - time.monotonic()))
        for _, launched in targets:
            if not launched.done.is_set():
                self.sc.cancelJobGroup(launched.group)
        for key, launched in targets:
            launched.done.wait(wait)
            with self._lock:
                if self._launched.get(key) is launched:
                    del self._launched[key]

    def close(self) -> None:
        for topology_id in self.topologies():
            self.stop(topology_id, wait=5.0)
        self.sc.stop()


def _short_error(exc: BaseException) -> str:
    """What a Spark job failure says about the worker: the Python traceback inside it when
    there is one, else Spark's own reason — never the JVM's stack frames."""
    return spark_failure_reason("".join(traceback.format_exception_only(type(exc), exc)))


def spark_failure_reason(text: str) -> str:
    """The Python-side reason in the text of a failed Spark job (see :func:`_short_error`)."""
    lines = [line for line in text.splitlines() if line.strip()]
    python_tb = [i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    if python_tb:
        tail = lines[python_tb[-1] :]
        frames = [line for line in tail if not line.lstrip().startswith(("at ", "... "))]
        return "\n".join(frames[-25:])
    attempts = re.search(r"failed (\d+) times", text)
    prefix = f"its Spark task failed {attempts.group(1)} time(s): " if attempts else ""
    if "Python worker exited unexpectedly" in text:
        return prefix + "the Python worker process exited unexpectedly (killed, or crashed)"
    causes = re.findall(r"(?:Exception|Error): ([^\n]+)", text)
    reason = causes[-1] if causes else (lines[0] if lines else "unknown")
    return prefix + reason.strip()
