"""LocalCluster: run topologies in real worker processes on this machine.

Each submitted topology gets ``topology.workers`` worker processes (``python -m
topology.deploy.local.worker_main``) exchanging tuples over ZeroMQ on 127.0.0.1, and a
control channel (ZeroMQ ROUTER) serviced by a background thread of this process.  No
ZooKeeper or Spark is involved; the workers are the same
:class:`~topology.runtime.worker.Worker` that runs elsewhere.

Example::

    with LocalCluster() as cluster:
        cluster.submit_topology("wc", {"topology.workers": 2}, topology)
        cluster.wait_until_drained("wc", timeout=60)
        print(cluster.stats("wc"))

Simulated time (Storm's ``withSimulatedTime`` / ``advanceClusterTime``)::

    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {"topology.message.timeout.secs": 30}, topology)
        cluster.advance_time(45)     # every worker has run its timers at 45 s on return

With ``simulated_time=True`` the *topology time* of every worker is a simulated clock that
starts at 0.0 and moves only in :meth:`LocalCluster.advance_time`: tick tuples
(``topology.tick.tuple.freq.secs``), message timeouts (``topology.message.timeout.secs``),
checkpoint intervals and retries, and windowed bolts (their processing time and the tick
that fires them).  Everything else stays on real time, so a topology keeps flowing while
simulated time stands still: the executor loop's pacing (work per pass, batch flushes,
``topology.spout.wait.strategy`` waits between empty ``next_tuple`` calls), backpressure,
the quiet time :meth:`LocalCluster.wait_until_drained` waits for, statistics windows,
control and supervision timeouts, and whatever user code reads itself (``time.time()``).
Complete latencies are 0 on simulated time unless time is advanced meanwhile.

Each worker keeps its own clock and moves it, on a ``time`` control command, only between
two passes of its executor loop (one pass sees one time); a relaunched worker starts at
the cluster's current time.
"""

from __future__ import annotations

import atexit
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from topology import config as cfg
from topology.assignment import Assignment
from topology.names import check_name
from topology.runtime.simulated_time import time_steps
from topology.spec import Topology, describe_components
from topology.stats.prometheus import MetricsServer, TopologySnapshot
from topology.stats.status_report import build_report
from topology.status import TopologyStatus
from topology.ui.auth import UiSettings

from ..drain import merge_results, wait_in_flight, wait_until_drained
from ..limits import check_components
from ..log_requests import WorkerLogAccess
from ..ops import ClusterOps
from ..progress import Progress, Steps
from ..savepoint_restore import restore_savepoint
from ..savepoints import SavepointAccess, Waiting, state_components
from ..worker_plan import pending_restarts
from .attachments import Attachment, attach
from .topology import ClusterError, LocalTopology
from .ui_view import LocalClusterView

if TYPE_CHECKING:
    from topology.ui.server import UiServer

__all__ = ["ClusterError", "LocalCluster"]


class LocalCluster(WorkerLogAccess, SavepointAccess):
    """Runs topologies in local worker processes; use as a context manager.

    ``conf`` is a base configuration merged under each submitted topology's own conf;
    ``simulated_time``: every topology runs on the cluster's simulated clock (see the
    module docstring for what that covers); ``ui_port``: serve the web UI and REST API
    (docs/UI.md) on ``ui.host`` (127.0.0.1) at this port (0: any free one) until
    :meth:`shutdown`, at :attr:`ui_url` — a taken port raises :class:`ClusterError`.

    Args:
        conf: config keys every submitted topology gets, under its own.
        simulated_time: run every topology on the cluster's simulated clock, moved by
            :meth:`advance_time`.
        ui_port: serve the web UI and REST API at this port (0: any free one; None: no UI).

    Raises:
        ClusterError: the metrics or UI port is taken.
        ConfigError: a value of ``conf`` breaks its key's rule.

    Example: making one starts nothing (workers start with ``submit_topology``, which
    takes seconds: see README.md for a whole run); a call that cannot be honoured raises
    at once:

        >>> with LocalCluster({"topology.workers": 2}) as cluster:
        ...     cluster.submit_topology("wc", {}, object())
        Traceback (most recent call last):
        ...
        TypeError: submit_topology('wc'): expected a Topology from create_topology(), got object
    """

    def __init__(
        self,
        conf: dict[str, Any] | None = None,
        simulated_time: bool = False,
        ui_port: int | None = None,
    ) -> None:
        self._base_conf = dict(conf or {})
        #: The simulated time in seconds (None: the cluster runs on real time).
        self._time: float | None = 0.0 if simulated_time else None
        self._topologies: dict[str, LocalTopology] = {}
        #: The Prometheus endpoint, when ``sparkstorm.metrics.port`` is in ``conf``.
        self.metrics: MetricsServer | None = None
        resolved = cfg.resolve(self._base_conf, where="LocalCluster")
        port, host = resolved[cfg.METRICS_PORT], resolved[cfg.METRICS_HOST]
        if port is not None:
            try:
                self.metrics = MetricsServer(self.metrics_snapshots, port, host)
            except OSError as exc:
                raise ClusterError(
                    f"{cfg.METRICS_PORT}={port}: no metrics endpoint on {host}: {exc.strerror}"
                ) from None
        #: Topology -> what this process keeps beside it (:mod:`.attachments`), closed
        #: when it is killed.
        self._attachments: dict[str, list[Attachment]] = {}
        #: The web UI (docs/UI.md) when ``ui_port`` is given: at :attr:`ui_url`.
        self.ui: UiServer | None = None
        if ui_port is not None:
            try:
                self.ui = _start_ui(self, resolved, ui_port)
            except BaseException:
                if self.metrics is not None:
                    self.metrics.close()
                raise
        atexit.register(self.shutdown)

    def __enter__(self) -> LocalCluster:
        return self

    @property
    def ui_url(self) -> str | None:
        """The web UI's address (``http://127.0.0.1:PORT/``), or None without ``ui_port``."""
        return self.ui.url if self.ui is not None else None

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def submit_topology(
        self,
        name: str,
        conf: dict[str, Any] | None,
        topology: Topology,
        from_savepoint: str | None = None,
        allow_non_restored_state: bool = False,
    ) -> str:
        """Start a topology in worker processes of this machine; return once every worker
        runs its tasks.

        Args:
            name: the topology's name (unique among the running ones).
            conf: its config, over the cluster's ``conf`` (None: nothing of its own).
            topology: what ``TopologyBuilder.create_topology()`` returned.
            from_savepoint: start from that savepoint's state, checked first
                (:mod:`topology.deploy.savepoint_restore`).
            allow_non_restored_state: drop the savepoint's state that no component of
                ``topology`` takes, instead of refusing it.

        Returns:
            The topology's id (its name).

        Raises:
            TypeError: ``topology`` is not a :class:`~topology.spec.Topology`.
            ClusterError: a topology of that name runs already, or a worker did not start
                (a component's ``open`` / ``prepare`` that raised is a
                :class:`~topology.errors.ComponentStartError`).
            ConfigError: a config value breaks its key's rule.
        """
        if not isinstance(topology, Topology):
            raise TypeError(
                f"submit_topology({name!r}): expected a Topology from create_topology(), got "
                f"{type(topology).__name__}"
            )
        check_name("topology", name)
        if name in self._topologies:
            raise ClusterError(f"a topology named {name!r} is already running")
        merged = cfg.resolve(
            {**self._base_conf, **(conf or {}), cfg.TOPOLOGY_NAME: name}, where=f"topology {name!r}"
        )
        check_components(topology, merged)
        running = LocalTopology(name, topology, merged, simulated_time=self._time)
        if from_savepoint is not None:
            try:
                restore_savepoint(
                    from_savepoint, topology, merged, running.state_id, allow_non_restored_state
                )
            except BaseException:
                running.server.close()
                raise
        self._topologies[name] = running
        self._attachments[name] = attach(topology)
        try:
            running.launch()
            running.wait_started(merged[cfg.WORKER_START_TIMEOUT_SECS])
        except BaseException:
            self._topologies.pop(name, None)
            self._detach(name)
            raise
        return name

    @property
    def simulated_time(self) -> float | None:
        """The cluster's simulated time in seconds, or None when it runs on real time."""
        return self._time

    def advance_time(self, seconds: float, step: float = 1.0, timeout: float = 10.0) -> float:
        """Move simulated time forward by ``seconds`` in steps of at most ``step`` seconds
        (Storm's ``advanceClusterTime``); return the new time.

        After each step every worker of every topology has run its timers at that step's
        time — tick tuples due were executed, trees past their timeout failed — before the
        next step is taken, so a tick every 10 s fires three times over ``advance_time(30)``
        (with ``step`` <= 10).  What those cause downstream (a tick bolt's emits, a spout's
        replay) is still flowing when this returns: wait for it with :class:`Capture`,
        :meth:`results` or :meth:`wait_until_drained`.

        Args:
            seconds: how far to move the clock.
            step: the largest step.
            timeout: real seconds a worker has to answer each step.

        Returns:
            The new simulated time, in seconds.

        Raises:
            ClusterError: the cluster does not simulate time, or a worker did not answer
                within ``timeout``.
        """
        if self._time is None:
            raise ClusterError(
                "advance_time: this LocalCluster runs on real time; create it with "
                "LocalCluster(simulated_time=True)"
            )
        for reading in time_steps(self._time, seconds, step):
            for running in list(self._topologies.values()):
                running.advance_time(reading, timeout)
            self._time = reading
        return self._time

    def _get(self, name: str) -> LocalTopology:
        try:
            return self._topologies[name]
        except KeyError:
            known = ", ".join(sorted(self._topologies)) or "none"
            raise ClusterError(f"no topology named {name!r} (running: {known})") from None

    def activate(self, name: str) -> None:
        """Resume ``next_tuple`` on every spout of a topology.

        Args:
            name: the topology's name.

        Raises:
            ClusterError: no topology of that name.
        """
        running = self._get(name)
        running.active = True
        running.send_all({"cmd": "activate"})

    def deactivate(self, name: str) -> None:
        """Stop calling ``next_tuple`` on the spouts of a topology (bolts keep draining).

        Args:
            name: the topology's name.

        Raises:
            ClusterError: no topology of that name.
        """
        running = self._get(name)
        running.active = False
        running.send_all({"cmd": "deactivate"})

    def restarts(self, name: str) -> dict[int, int]:
        """How often each worker of a topology was relaunched after dying.

        Args:
            name: the topology's name.

        Returns:
            Worker index -> relaunches.

        Raises:
            ClusterError: no topology of that name.
        """
        return self._get(name).restarts()

    def worker_pids(self, name: str) -> list[int]:
        """The process ids of a topology's workers.

        Args:
            name: the topology's name.

        Returns:
            The pids, by worker index.

        Raises:
            ClusterError: no topology of that name.
        """
        return [p.pid for p in self._get(name).processes]

    def endpoints(self, name: str) -> dict[str, Any]:
        """Where the topology listens: each worker's data endpoint (``workers``) and the
        control one (``control``); and each worker's data token (``tokens``: the bytes a
        frame must start with to be accepted, for tests that speak to a worker as its peers
        do).

        Args:
            name: the topology's name.

        Returns:
            ``{"workers": {index: endpoint}, "control": endpoint, "tokens": {index: token}}``.

        Raises:
            ClusterError: no topology of that name.
        """
        running = self._get(name)
        return {
            "workers": dict(running.endpoints),
            "control": running.server.endpoint,
            "tokens": dict(running.tokens),
        }

    def assignment(self, name: str) -> Assignment:
        """Which tasks each worker of a topology runs.

        Args:
            name: the topology's name.

        Returns:
            The assignment (``worker_tasks``, ``component_tasks``...).

        Raises:
            ClusterError: no topology of that name.
        """
        return self._get(name).assignment

    def errors(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """The errors components reported (the last ones of each).

        Args:
            name: the topology's name.

        Returns:
            Component -> its errors, each a dict with the time, task, host and text.

        Raises:
            ClusterError: no topology of that name.
        """
        return {c: list(e) for c, e in self._get(name).errors.items()}

    def worker_status(self, name: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Every worker's counters (queues, emits, acks, tasks...).

        Args:
            name: the topology's name.
            timeout: seconds each worker has to answer.

        Returns:
            One dict per worker.

        Raises:
            ClusterError: no topology of that name, or a worker did not answer.
        """
        return self._get(name).request("status", timeout)

    def stats(self, name: str, window: str = "10m") -> dict[str, Any]:
        """A topology's status report (what ``sparkstorm status`` shows).

        Args:
            name: the topology's name.
            window: the statistics window: ``"10m"``, ``"3h"``, ``"1d"`` or ``"all"``.

        Returns:
            The report (see :mod:`topology.stats.status_report` for the schema).

        Raises:
            ClusterError: no topology of that name, or a worker did not answer.
        """
        return self.snapshot(name, window).report

    def metrics_snapshots(self) -> list[TopologySnapshot]:
        """Every running topology's all-time report (what the Prometheus endpoint serves).

        Returns:
            One snapshot per running topology.
        """
        out = []
        for name in list(self._topologies):
            try:  # a worker that does not answer counts as what it carries: never less
                out.append(self.snapshot(name, "all", timeout=2.0, carried=True))
            except (ClusterError, KeyError):  # killed meanwhile
                continue
        return out

    def snapshot(
        self, name: str, window: str = "10m", timeout: float = 10.0, carried: bool = False
    ) -> TopologySnapshot:
        """:meth:`stats` with the worker replies it was built from.

        Args:
            name: the topology's name.
            window: as for :meth:`stats`.
            timeout: seconds each worker has to answer.
            carried: a worker that does not answer counts as what it carries, instead of
                raising.

        Returns:
            The report and the replies.

        Raises:
            ClusterError: no topology of that name, or (without ``carried``) a worker did
                not answer.
        """
        running = self._get(name)
        if carried:
            replies = running.status_or_carried(timeout)
        else:
            replies = running.request("status", timeout=timeout)
        summary = {
            "name": name,
            "id": name,
            "status": TopologyStatus.ACTIVE if running.active else TopologyStatus.INACTIVE,
            "uptime_secs": max((r.get("uptime_secs", 0.0) for r in replies), default=0.0),
            "workers": running.assignment.num_workers,
            "workers_alive": sum(1 for p in running.processes if p.poll() is None),
            "tasks": sum(len(t) for t in running.assignment.worker_tasks),
        }
        beats = {
            r["worker"]: {
                "pid": r["pid"],
                "endpoint": running.endpoints.get(r["worker"]),  # its port is shown
                "beat_at": r["time"],
                "stats_at": r["time"],
                "stalled_secs": r.get("stalled_secs"),  # a reply the executor could not give
                "busy_in": r.get("busy_in"),
            }
            for r in replies
            if not r.get("stand_in")
        }
        report = build_report(
            summary,
            describe_components(running.topology),
            replies,
            beats,
            self.errors(name),
            window,
            supervision=pending_restarts(running.history),
        )
        return TopologySnapshot(report, replies)

    def _worker_request(
        self, name: str, cmd: str, timeout: float, **args: Any
    ) -> list[dict[str, Any]]:
        return self._get(name).request(cmd, timeout, **args)

    def results(self, name: str, timeout: float = 30.0) -> dict[str, dict[int, Any]]:
        """What the testing components of a topology collected (their ``collect_results()``).

        Args:
            name: the topology's name.
            timeout: seconds each worker has to answer.

        Returns:
            Component -> task -> result.

        Raises:
            ClusterError: no topology of that name, or a worker did not answer.
        """
        return merge_results(self._get(name).request("collect", timeout))

    def wait_until_drained(
        self, name: str, timeout: float = 60.0, interval: float = 0.05, advance_secs: float = 0.0
    ) -> None:
        """Block until spouts stopped emitting and no tuple is queued or in flight.

        ``advance_secs`` (simulated time only): advance the clock this much before every
        look, as Storm's ``completeTopology`` does, so trees nobody acks time out and
        windows fire while it waits (the run's simulated length then depends on how long
        draining takes in real time).

        Quiescence is detected with two consecutive identical snapshots of every worker's
        counters in which every active spout has emitted nothing for
        ``topology.drain.quiet.secs``, what each worker sent to each peer has arrived, every
        transferred tuple has been executed and nothing is buffered or pending.  After a
        worker restart (whose lost tuples never balance the counters) five identical
        snapshots with nothing buffered or pending are required instead.

        Args:
            name: the topology's name.
            timeout: seconds to wait at most.
            interval: seconds between two looks.
            advance_secs: see above (simulated time only).

        Raises:
            ClusterError: no topology of that name; ``timeout`` passed (the message says
                what it still waited for); or a worker died.
        """
        running = self._get(name)

        def check() -> None:
            if running.failed.is_set():
                raise ClusterError(f"topology {name!r}: {'; '.join(running.fatal.values())}")
            if advance_secs:
                self.advance_time(advance_secs, step=advance_secs)

        try:
            wait_until_drained(
                lambda: running.request("status", timeout=10.0),
                lambda: not running.restarts(),
                check,
                timeout,
                interval,
                f"topology {name!r}",
                running.conf[cfg.TOPOLOGY_DRAIN_QUIET_SECS],
                late=(ClusterError,),  # check() sees a dead worker
            )
        except TimeoutError as exc:
            raise ClusterError(str(exc)) from None

    def kill_topology(
        self, name: str, wait_secs: float | None = 0.0, *, progress: Progress = None
    ) -> None:
        """Stop a topology: deactivate it, wait while anything is in flight, then stop every
        worker.

        Args:
            name: the topology's name.
            wait_secs: the longest wait for tuples in flight (None: the message timeout;
                :func:`~topology.deploy.drain.wait_in_flight`).
            progress: called with each step's message (None: silent).

        Raises:
            ClusterError: no topology of that name.
        """
        running = self._get(name)
        running.deactivate_all()
        wait = running.conf[cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS] if wait_secs is None else wait_secs
        steps = Steps(progress)
        if wait > 0:
            steps.say(f"{name!r} deactivated: in-flight tuples have up to {wait:g}s to finish")
            wait_in_flight(
                lambda: running.request("status", timeout=2.0),
                wait,
                exact=lambda: not running.restarts(),
                steps=steps,
            )
        steps.say(f"stopping the workers of {name!r}")
        running.stop(grace=running.conf[cfg.WORKER_SHUTDOWN_SECS])
        del self._topologies[name]
        self._detach(name)

    def _state_of(self, name: str) -> tuple[dict[str, Any], str, bool]:  # SavepointAccess
        running = self._get(name)
        record = {
            "name": name,
            "conf": running.conf,
            "components": state_components(running.topology),
        }
        return record, running.state_id, running.active

    def _savepoints_conf(self) -> dict[str, Any]:
        return self._base_conf

    def _waiting(self, conf: Mapping[str, Any]) -> Waiting | None:
        """On simulated time, checkpoints come only as the clock moves: move it an interval
        at each look."""
        if self._time is None:
            return None
        interval = float(conf[cfg.CHECKPOINT_INTERVAL_MS]) / 1000.0
        return Waiting(tick=lambda: self.advance_time(interval, step=interval))

    def _detach(self, name: str) -> None:
        for attachment in self._attachments.pop(name, []):
            attachment.close()

    def topologies(self) -> list[str]:
        """The running topologies.

        Returns:
            Their names, sorted.
        """
        return sorted(self._topologies)

    def shutdown(self) -> None:
        """Kill every topology; safe to call twice."""
        if self.ui is not None:
            self.ui.stop()
        if self.metrics is not None:
            self.metrics.close()
        for name in list(self._topologies):
            try:
                self.kill_topology(name)
            except Exception:  # shutting down anyway: make sure processes are gone
                running = self._topologies.pop(name, None)
                self._detach(name)
                if running is not None:
                    for proc in running.processes:
                        if proc.poll() is None:
                            proc.kill()


#: mypy checks that LocalCluster offers every operation of :class:`ClusterOps`.
_OPS: type[ClusterOps] = LocalCluster


def _start_ui(cluster: LocalCluster, conf: dict[str, Any], port: int) -> UiServer:
    """The web UI of ``cluster`` on ``ui.host``:``port``, serving (the ``ui`` extra); any
    failure to start it (a missing extra, a bad ``ui.*`` key, a taken port, a server that
    did not start) is a :class:`ClusterError` saying so."""
    try:
        from topology.ui.server import UiServer
    except ImportError as exc:
        raise ClusterError(
            f"LocalCluster(ui_port={port}): the web UI needs {exc.name}: "
            "pip install 'sparkstorm[ui]'"
        ) from None
    host = conf[cfg.UI_HOST]
    try:
        return UiServer(LocalClusterView(cluster), UiSettings.from_conf(conf), port=port).start()
    except OSError as exc:
        raise ClusterError(f"ui_port={port}: no web UI on {host}: {exc.strerror}") from None
    except Exception as exc:  # a bad ui.* key, a server that did not start
        raise ClusterError(f"ui_port={port}: no web UI on {host}: {exc}") from exc
