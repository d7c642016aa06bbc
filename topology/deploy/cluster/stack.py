"""``LocalStack``: the real stack on this machine — ZooKeeper, Spark, a leader nimbus.

Public as :class:`topology.testing.LocalStack` (like kazoo's shipped test harness):
``sparkstorm local`` runs on one, and so does the Spark test tier.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from topology import config as cfg
from topology.errors import SparkstormError
from topology.status import TopologyStatus

from ..process_tree import end_trees
from ..spark.backend import SparkBackend, local_master
from .client import Cluster
from .drivers import ProcessDrivers
from .nimbus import Nimbus
from .zookeeper_server import EmbeddedZooKeeper

#: Seconds drivers get to stop their workers and exit once their topology is killed.
DRIVER_EXIT_SECS = 30.0
#: Seconds :meth:`LocalStack.stop` takes at most when the stack is left by an interrupt
#: (Ctrl-C, or SIGTERM turned into ``SystemExit``): every process it started is gone then.
INTERRUPTED_STOP_SECS = 9.0


class LocalStack:
    """A real ZooKeeper, a leader nimbus and (in ``inline`` driver mode) a Spark backend.

    Parts passed in are shared and left running on exit (a test session's ZooKeeper and
    SparkContext); parts the stack starts itself are stopped.  On exit every topology
    under the stack's ZooKeeper root is killed first, and every driver process its nimbus
    started is waited for (and ended by pid if it lingers), so nothing outlives it.  Left
    by an interrupt (``KeyboardInterrupt``, ``SystemExit``), it stops within
    :data:`INTERRUPTED_STOP_SECS` instead: topologies are marked killed without waiting,
    and every driver and what it started (its Spark JVM, pyspark daemons, workers) is
    ended by pid, with SIGTERM and then SIGKILL.

    Args:
        conf: cluster conf; ``nimbus.driver.mode`` picks drivers as processes (each
            topology its own Spark application; the default) or threads sharing one
            SparkContext (``inline``; the default when ``backend`` is given); ``spark.*``
            keys configure Spark; ``storm.zookeeper.root`` isolates this stack from others
            on the same ZooKeeper.
        zookeeper: a running :class:`EmbeddedZooKeeper` to use instead of starting one.
        backend: a running ``SparkBackend`` to share (implies ``inline``).
        progress: called with a line before each slow step (ZooKeeper, Spark, election),
            and with the nimbus's routine news (its election, said once).

    Example::

        with LocalStack({"topology.workers": 2}) as stack, stack.cluster() as cluster:
            cluster.submit_topology("wc", {"topology.workers": 2}, topology)
    """

    def __init__(
        self,
        conf: dict[str, Any] | None = None,
        zookeeper: EmbeddedZooKeeper | None = None,
        backend: Any = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.conf = dict(conf or {})
        if backend is not None:
            self.conf.setdefault(cfg.NIMBUS_DRIVER_MODE, "inline")
        self.zookeeper = zookeeper
        self.backend = backend
        self.nimbus: Nimbus | None = None
        self._progress = progress or (lambda line: None)
        self._owned: list[Callable[[], None]] = []
        self._nimbus_thread: Any = None

    @property
    def inline(self) -> bool:
        return self.conf.get(cfg.NIMBUS_DRIVER_MODE) == "inline"

    def start(self, elect_timeout: float = 30.0) -> LocalStack:
        """Start what was not passed in, then a nimbus; return once it leads."""
        try:
            if self.zookeeper is None:
                self._progress("Starting ZooKeeper ...")
                # with credentials configured, serve authenticated clients only
                secured = bool(self.conf.get(cfg.ZK_AUTH_SCHEME))
                self.zookeeper = EmbeddedZooKeeper(require_auth=secured).start()
                self._owned.append(self.zookeeper.stop)
            self.conf[cfg.ZK_SERVERS] = ["127.0.0.1"]
            self.conf[cfg.ZK_PORT] = self.zookeeper.port
            if self.backend is not None:  # a shared SparkContext: its master is the truth
                self.conf["spark.master"] = str(self.backend.sc.master)
            self.conf.setdefault("spark.master", local_master(self._workers()))
            if self.inline and self.backend is None:
                self._progress(
                    f"ZooKeeper at {self.zookeeper.address}; starting Spark "
                    f"({self.conf['spark.master']}) ..."
                )
                spark = {k: v for k, v in self.conf.items() if k.startswith("spark.")}
                self.backend = SparkBackend(spark, app_name="sparkstorm-local")
                self._owned.append(self.backend.close)
            elif not self.inline:
                self._progress(
                    f"ZooKeeper at {self.zookeeper.address}; each topology gets its own "
                    f"Spark application ({self.conf['spark.master']})"
                )
            self.nimbus = Nimbus(self.conf, self.backend, announce=self._progress)
            self._nimbus_thread = self.nimbus.start()
            if not self.nimbus.is_leader.wait(elect_timeout):
                raise SparkstormError(f"the local nimbus was not elected within {elect_timeout:g}s")
        except BaseException as exc:
            self.stop(within=INTERRUPTED_STOP_SECS if _interrupt(type(exc)) else None)
            raise
        return self

    def _workers(self) -> int:
        return int(self.conf.get(cfg.TOPOLOGY_WORKERS, 1))

    def cluster(self) -> Cluster:
        """A new :class:`~topology.deploy.cluster.client.Cluster` client of this stack (a context
        manager: ``with stack.cluster() as cluster``)."""
        return Cluster(self.conf)

    def driver_pids(self) -> list[int]:
        """Pids of the driver processes this stack's nimbus started that still run."""
        drivers = self.nimbus.drivers if self.nimbus is not None else None
        return drivers.pids() if isinstance(drivers, ProcessDrivers) else []

    def stop(self, within: float | None = None) -> None:
        """Kill this stack's topologies, stop the nimbus and its drivers, then what the
        stack started.  ``within``: seconds for all of it (an interrupt): topologies are
        only marked killed, and drivers with everything they started are ended by pid."""
        if within is not None:
            with _signals_held():  # a second Ctrl-C must not cut the cleanup short
                self._stop_now(time.monotonic() + within)
            return
        if self.nimbus is not None:
            self._kill_topologies()
            drivers = self.driver_pids()
            self.nimbus.shutdown()
            if self._nimbus_thread is not None:
                self._nimbus_thread.join(10)
            _end_processes(drivers, DRIVER_EXIT_SECS)
            if self.backend is not None:
                for topology_id in self.backend.topologies():  # stragglers of any nimbus
                    self.backend.stop(topology_id, wait=10)
            self.nimbus = None
        while self._owned:
            self._owned.pop()()

    def _stop_now(self, deadline: float) -> None:
        """:meth:`stop` by ``deadline`` (time.monotonic): what the steps cannot finish in
        their share of the time is ended by pid."""
        if self.nimbus is not None:
            # a shared ZooKeeper keeps the topologies' records: mark them killed, so the
            # next nimbus removes them, but do not wait for that
            _bounded(lambda: self._kill_topologies(wait=False), _share(deadline, 0.15))
            drivers = self.driver_pids()
            self.nimbus.shutdown()
            if self._nimbus_thread is not None:
                self._nimbus_thread.join(_share(deadline, 0.1))
            end_trees(drivers, grace=_share(deadline, 0.35), wait=_share(deadline, 0.2))
            self.nimbus = None
        while self._owned:
            close = self._owned.pop()
            if self.zookeeper is not None and close == self.zookeeper.stop:
                self.zookeeper.stop(wait=_share(deadline, 0.5))
                continue
            owned_backend = close == getattr(self.backend, "close", None)
            jvm = _gateway_pid(self.backend) if owned_backend else None
            if not _bounded(close, _share(deadline, 0.5)) and jvm is not None:
                end_trees([jvm], grace=_share(deadline, 0.5), wait=_share(deadline, 1.0))

    def _kill_topologies(self, wait: bool = True) -> None:
        """Kill every topology under the stack's root (``wait``: until it is removed;
        else only mark it killed)."""
        try:
            with self.cluster() as cluster:
                if not wait:
                    for topology_id in cluster.zk.topology_ids():
                        try:
                            cluster.zk.update_record(
                                topology_id, status=TopologyStatus.KILLED, kill_at=time.time()
                            )
                        except Exception:  # gone meanwhile, or not a record of ours
                            pass
                    return
                for topology in cluster.topologies():
                    try:
                        cluster.kill_topology(topology["name"], wait_secs=0, timeout=30)
                    except SparkstormError:  # already gone or failed: ended below
                        pass
        except SparkstormError:  # ZooKeeper gone: the processes are ended below
            pass

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.stop(within=INTERRUPTED_STOP_SECS if _interrupt(exc_type) else None)


def _interrupt(exc_type: type[BaseException] | None) -> bool:
    """Whether leaving with ``exc_type`` means the user wants out now."""
    return exc_type is not None and issubclass(exc_type, (KeyboardInterrupt, SystemExit))


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM inside the block (main thread only), then restore
    their handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in held}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _share(deadline: float, fraction: float) -> float:
    """``fraction`` of the seconds left until ``deadline`` (none when it passed)."""
    return max(0.0, (deadline - time.monotonic()) * fraction)


def _bounded(step: Callable[[], object], seconds: float) -> bool:
    """Run ``step`` on a daemon thread for at most ``seconds``; whether it finished (one
    that did not goes on in the background, and dies with the process)."""
    thread = threading.Thread(target=step, name="stack-stop", daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def _gateway_pid(backend: Any) -> int | None:
    """The pid of an inline backend's Spark JVM (a child of this process), if known."""
    gateway = getattr(getattr(backend, "sc", None), "_gateway", None)
    pid = getattr(getattr(gateway, "proc", None), "pid", None)
    return pid if isinstance(pid, int) else None


def _end_processes(pids: list[int], wait: float) -> None:
    """Wait up to ``wait`` seconds for ``pids`` (children of this process) to exit, then
    SIGTERM and finally SIGKILL the ones that did not."""
    deadline = time.monotonic() + wait
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if sig is not None and _running(pid):
                os.kill(pid, sig)
        while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        deadline = time.monotonic() + 5.0
        if not any(_running(pid) for pid in pids):
            return


def _running(pid: int) -> bool:
    """True while ``pid`` (a child of this process) has not exited; reaps it when it has."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0
