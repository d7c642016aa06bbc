"""``Cluster``: submit and operate topologies through ZooKeeper and a running Nimbus.

The same operations as :class:`~topology.deploy.local.cluster.LocalCluster`, for topologies whose
workers are long-running Spark tasks launched by the leader nimbus::

    with Cluster({"storm.zookeeper.servers": ["zk1"]}) as cluster:
        cluster.submit_topology("wc", {"topology.workers": 2}, topology)
        cluster.deactivate("wc")
        cluster.kill_topology("wc", wait_secs=30)
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from topology import config as cfg
from topology.assignment import task_counts
from topology.deploy.zk.state import ZkState
from topology.names import check_name
from topology.redaction import redact
from topology.spec import Topology
from topology.stats.carry import newest, stand_ins
from topology.stats.prometheus import TopologySnapshot
from topology.stats.status_report import build_report, stale_secs
from topology.status import LIVE, TopologyStatus

from ..drain import DRAIN_QUIET_SECS, merge_results, wait_until_drained
from ..limits import (
    assignment_bytes,
    check_components,
    json_bytes,
    node_size_problem,
    worker_count_problem,
)
from ..log_requests import WorkerLogAccess
from ..ops import ClusterOps
from ..progress import Progress
from ..rescale import Rebalanced, rebalance_refusal, rebalanced
from ..savepoint_restore import restore_savepoint
from ..savepoints import SavepointAccess, state_components
from ..security import refuse_insecure, sign_record
from ..shipping import dumps, module_paths, topology_objects
from .waits import (
    ClusterOperationError,
    Workers,
    current_beats,
    looking,
    running_workers,
    wait_rebalanced,
    wait_removed,
    wait_replies,
    wait_running,
)

_counter = itertools.count(1)


class Cluster(WorkerLogAccess, SavepointAccess):
    """A client of the cluster recorded in ZooKeeper (``storm.zookeeper.*`` in ``conf``).

    Use it as a context manager (or call :meth:`connect`): it connects to ZooKeeper then,
    not when it is made.

    Args:
        conf: config keys, ``storm.zookeeper.servers`` and ``storm.zookeeper.port`` above
            all (the rest from conf/defaults.yaml).

    Raises:
        ConfigError: a value of ``conf`` breaks its key's rule.

    Example::

        with Cluster({"storm.zookeeper.servers": ["zk1"]}) as cluster:
            cluster.submit_topology("wc", {"topology.workers": 2}, topology)

    Making one checks the config and connects to nothing:

        >>> cluster = Cluster({"storm.zookeeper.servers": ["zk1.example.com"]})
        >>> Cluster({"storm.zookeeper.port": "x"})
        Traceback (most recent call last):
        ...
        topology.errors.ConfigError: cluster: storm.zookeeper.port must be a port number, got 'x'
    """

    def __init__(self, conf: dict[str, Any] | None = None) -> None:
        self.conf = cfg.resolve(conf or {}, where="cluster")
        self.zk = ZkState(self.conf)
        self._request_ids = itertools.count(int(time.time() * 1000))

    def connect(self) -> Cluster:
        """Connect to ZooKeeper (``with Cluster(conf) as cluster`` does it).

        Returns:
            This client, connected.
        """
        self.zk.connect()
        return self

    def close(self) -> None:
        """Close the ZooKeeper session."""
        self.zk.close()

    def __enter__(self) -> Cluster:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lookup ----------------------------------------------------------------------------

    def topology_id(self, name: str) -> str:
        """The id a running topology was recorded under.

        Args:
            name: the topology's name.

        Returns:
            Its id (``<name>-<n>-<time>``).

        Raises:
            ClusterOperationError: no topology of that name.
        """
        topology_id = self.zk.find_by_name(name)
        if topology_id is None:
            running = ", ".join(t["name"] for t in self.topologies()) or "none"
            raise ClusterOperationError(f"no topology named {name!r} (running: {running})")
        return topology_id

    def topologies(self) -> list[dict[str, Any]]:
        """One summary per topology: id, name, status, workers, tasks, uptime, rates, and its
        conf with the values of secret-looking keys redacted (:func:`redaction.redact`, with the
        topology's and this client's ``sparkstorm.redact.patterns``).

        Returns:
            One dict per topology recorded in ZooKeeper.
        """
        out = []
        for topology_id in self.zk.topology_ids():
            record = self.zk.read_record(topology_id)
            if record is None:
                continue
            beats = self.zk.heartbeats(topology_id)
            stale = stale_secs(record["conf"])
            launched = record.get("launched_at")
            uptime = time.time() - launched if launched else 0.0
            out.append(
                {
                    "id": topology_id,
                    "name": record["name"],
                    "status": record["status"],
                    "workers": record["conf"][cfg.TOPOLOGY_WORKERS],
                    "workers_alive": running_workers(self.zk, topology_id, beats, stale),
                    "tasks": sum(c["tasks"] for c in record["components"].values()),
                    "uptime_secs": round(uptime, 1),
                    "error": record.get("error"),
                    "conf": redact(record["conf"], self.conf[cfg.REDACT_PATTERNS]),
                    # rates only while spouts run: an inactive topology emits nothing, however
                    # much its last 10 minutes hold
                    **_spout_rates(
                        beats.values() if record["status"] == TopologyStatus.ACTIVE else [], uptime
                    ),
                }
            )
        return out

    def leader(self) -> str | None:
        """The leading nimbus.

        Returns:
            Its id, or None when no nimbus runs.
        """
        return self.zk.leader()

    # -- lifecycle -------------------------------------------------------------------------

    def submit_topology(
        self,
        name: str,
        conf: dict[str, Any] | None,
        topology: Topology,
        timeout: float = 120.0,
        active: bool = True,
        insecure: bool = False,
        from_savepoint: str | None = None,
        allow_non_restored_state: bool = False,
    ) -> str:
        """Record ``topology`` for the leader nimbus and return once every worker runs.

        With a cluster secret in this client's conf, the code and conf are signed; the
        cluster's own credentials are never recorded with the topology.

        Args:
            name: the topology's name (unique among the running ones).
            conf: its config (None: nothing of its own).
            topology: what ``TopologyBuilder.create_topology()`` returned.
            timeout: seconds to wait for every worker to run.
            active: start with the spouts active (else: ``activate`` it later).
            insecure: submit even without a cluster secret to a ZooKeeper off loopback.
            from_savepoint: start from that savepoint's state (checked first).
            allow_non_restored_state: drop the savepoint's state no component takes.

        Returns:
            The topology's id.

        Raises:
            ClusterOperationError: not a Topology, a duplicate name, no nimbus, too few
                slots, workers that fail to start (with their error), or no secret for a
                ZooKeeper off loopback (unless ``insecure``).
            ConfigError: a config value breaks its key's rule.
        """
        if not isinstance(topology, Topology):
            raise ClusterOperationError(
                f"expected a Topology from create_topology(), got {type(topology).__name__}"
            )
        refuse_insecure(self.conf, "submit a topology", insecure)
        check_name("topology", name)
        if self.zk.find_by_name(name) is not None:
            raise ClusterOperationError(f"a topology named {name!r} is already running")
        if self.leader() is None:
            raise ClusterOperationError(
                "no nimbus is running: start one with `sparkstorm nimbus` "
                f"(ZooKeeper {self.zk.hosts}, root {self.zk.paths.root})"
            )
        merged = cfg.resolve(
            cfg.without_credentials({**(conf or {}), cfg.TOPOLOGY_NAME: name}),
            where=f"topology {name!r}",
        )
        merged = cfg.without_credentials(merged)
        check_components(topology, merged)
        topology_id = f"{name}-{next(_counter)}-{int(time.time())}"
        record = {
            "name": name,
            "status": TopologyStatus.SUBMITTED,
            "initial_status": TopologyStatus.ACTIVE if active else TopologyStatus.INACTIVE,
            "conf": merged,
            "components": state_components(topology),  # with their uids and kinds of state
            "module_paths": module_paths(topology_objects(topology)),
            "submitted_at": time.time(),
        }
        code = dumps(topology)
        record = sign_record(cfg.cluster_secret(self.conf), record, code)
        _refuse_oversized(name, merged, topology, record)
        if from_savepoint is not None:
            restore_savepoint(
                from_savepoint, topology, merged, topology_id, allow_non_restored_state
            )
        self.zk.create_topology(topology_id, record, code)
        wait_running(
            self.zk,
            topology_id,
            name,
            timeout,
            lambda: self.kill_topology(name, wait_secs=0, timeout=30),
        )
        return topology_id

    def current_beats(self, topology_id: str) -> dict[int, dict[str, Any]]:
        """The heartbeats of the workers of the topology's current assignment attempt.

        Args:
            topology_id: the topology's id (see :meth:`topology_id`).

        Returns:
            Worker index -> its last heartbeat.
        """
        return current_beats(self.zk, topology_id)

    def activate(self, name: str) -> None:
        """Resume ``next_tuple`` on every spout of a topology.

        Args:
            name: the topology's name.

        Raises:
            ClusterOperationError: no topology of that name.
        """
        self.zk.update_record(self.topology_id(name), status=TopologyStatus.ACTIVE)

    def deactivate(self, name: str) -> None:
        """Stop calling ``next_tuple`` on the spouts of a topology; tuples in flight finish.

        Args:
            name: the topology's name.

        Raises:
            ClusterOperationError: no topology of that name.
        """
        self.zk.update_record(self.topology_id(name), status=TopologyStatus.INACTIVE)

    def rebalance(
        self,
        name: str,
        workers: int | None = None,
        wait_secs: float | None = None,
        timeout: float = 180.0,
        progress: Progress = None,
        components: Mapping[str, int] | None = None,
    ) -> Rebalanced:
        """Reassign to ``workers`` workers (None: as many as now) and run each component of
        ``components`` (component id -> task count, Storm's ``rebalance -e``) as that many
        tasks: deactivate, wait while anything is in flight (``wait_secs`` at most;
        default: the message timeout), relaunch, restore the status; keyed state and spout
        positions move to the new tasks through the checkpoint.  ``progress`` hears each
        step (draining with a countdown, relaunching, workers ready).

        Refused at once (nothing written) for a worker count out of ``1..MAX_WORKERS`` and
        what :func:`topology.deploy.rescale.rebalance_refusal` refuses (components, state,
        znode size, a ``local[N]`` master's slots); the nimbus checks again, and its own
        capacity, before anything is deactivated.

        Args:
            name: the topology's name.
            workers: the new worker count (None: as many as now).
            wait_secs: the longest wait for tuples in flight (default: the message timeout).
            timeout: seconds to wait for the relaunched workers.
            progress: called with each step's message (None: silent).
            components: component id -> its new task count.

        Returns:
            What changed (:class:`~topology.deploy.rescale.Rebalanced`).

        Raises:
            ClusterOperationError: no topology of that name, nothing to change, a refused
                change (the message says why), or workers that do not come back in time.
        """
        problem = None if workers is None else worker_count_problem(workers)
        if problem is None and workers is None and not components:
            problem = "nothing to change: give --workers N and/or --component NAME=COUNT"
        if problem is not None:
            raise ClusterOperationError(f"rebalance of {name!r}: {problem}")
        record = self.zk.read_record(topology_id := self.topology_id(name))
        workers = record["conf"][cfg.TOPOLOGY_WORKERS] if workers is None else workers
        components = dict(components or {})
        problem = rebalance_refusal(name, record, workers, components, self.conf)
        if problem is not None:
            raise ClusterOperationError(f"rebalance of {name!r}: {problem}")
        outcome = rebalanced(record, workers, components)
        before = (self.zk.read_assignment(topology_id) or {}).get("attempt", 0)
        wait = record["conf"][cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS] if wait_secs is None else wait_secs
        request: dict[str, Any] = {"workers": workers, "wait": wait}
        if components:
            request["components"] = components
        self.zk.update_record(topology_id, rebalance=request)
        if progress is not None:
            progress(f"rebalance of {name!r} {outcome.describe()} asked of the nimbus")
        looking = self._looking(topology_id, name)
        wait_rebalanced(
            self.zk, topology_id, name, workers, before, wait, timeout, progress, looking
        )
        return outcome

    def kill_topology(
        self,
        name: str,
        wait_secs: float | None = None,
        timeout: float = 120.0,
        progress: Progress = None,
    ) -> None:
        """Deactivate, wait while anything is in flight (``wait_secs`` at most; default:
        the message timeout), stop the workers and remove every znode of the topology;
        return when it is gone.

        Args:
            name: the topology's name.
            wait_secs: the longest wait for tuples in flight (default: the message timeout).
            timeout: seconds to wait, past ``wait_secs``, for it to be gone.
            progress: called with each step's message: deactivated, what in-flight tuples
                still wait for, stopping (None: silent).

        Raises:
            ClusterOperationError: no topology of that name, or it is not gone in time.
        """
        topology_id = self.topology_id(name)
        record = self.zk.read_record(topology_id)
        wait = record["conf"][cfg.TOPOLOGY_MESSAGE_TIMEOUT_SECS] if wait_secs is None else wait_secs
        self.zk.update_record(topology_id, status=TopologyStatus.KILLED, kill_at=time.time() + wait)
        if progress is not None:
            progress(
                f"{name!r} deactivated: in-flight tuples have up to {wait:g}s to finish, "
                "then its workers stop"
            )
        looking = self._looking(topology_id, name)
        wait_removed(self.zk, topology_id, name, wait + timeout, progress, looking)

    def _looking(self, topology_id: str, name: str) -> Workers:
        """How a wait looks at the topology's workers (:func:`.waits.looking`)."""
        return looking(self.zk, topology_id, partial(self._request, topology_id, name, "status"))

    def _state_of(self, name: str) -> tuple[dict[str, Any], str, bool]:  # SavepointAccess
        record = self.zk.read_record(topology_id := self.topology_id(name))
        return record, topology_id, record["status"] == TopologyStatus.ACTIVE

    # -- observation -----------------------------------------------------------------------

    def request(
        self, name: str, cmd: str, timeout: float = 15.0, **args: Any
    ) -> list[dict[str, Any]]:
        """Ask every current worker of a topology something.

        Args:
            name: the topology's name.
            cmd: ``"status"``, ``"collect"``, ``"log"`` or ``"log_level"``.
            timeout: seconds each worker has to answer.
            **args: the command's arguments.

        Returns:
            Every worker's reply.

        Raises:
            ClusterOperationError: no topology of that name, or a worker did not answer.
        """
        return self._request(self.topology_id(name), name, cmd, timeout, **args)

    def _request(
        self, topology_id: str, name: str, cmd: str, timeout: float, **args: Any
    ) -> list[dict[str, Any]]:
        request: dict[str, Any] = {"id": next(self._request_ids), "cmd": cmd}
        if args:
            request["args"] = args
        return wait_replies(self.zk, topology_id, name, request, timeout)

    def worker_status(self, name: str, timeout: float = 15.0) -> list[dict[str, Any]]:
        """Every worker's counters (queues, emits, acks, tasks...).

        Args:
            name: the topology's name.
            timeout: seconds each worker has to answer.

        Returns:
            One dict per worker.

        Raises:
            ClusterOperationError: no topology of that name, or a worker did not answer.
        """
        return self.request(name, "status", timeout)

    def _worker_request(
        self, name: str, cmd: str, timeout: float, **args: Any
    ) -> list[dict[str, Any]]:
        return self.request(name, cmd, timeout, **args)

    def results(self, name: str, timeout: float = 15.0) -> dict[str, dict[int, Any]]:
        """What the testing components of a topology collected (their ``collect_results()``).

        Args:
            name: the topology's name.
            timeout: seconds each worker has to answer.

        Returns:
            Component -> task -> result.

        Raises:
            ClusterOperationError: no topology of that name, or a worker did not answer.
        """
        return merge_results(self.request(name, "collect", timeout))

    def errors(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """The errors components reported (the last ones of each).

        Args:
            name: the topology's name.

        Returns:
            Component -> its errors, each a dict with the time, task, host and text.

        Raises:
            ClusterOperationError: no topology of that name.
        """
        return self.zk.errors(self.topology_id(name))

    def stats(self, name: str, window: str = "10m", fresh: bool = True) -> dict[str, Any]:
        """The topology's status report (schema in :mod:`topology.stats.status_report`).

        Args:
            name: the topology's name.
            window: the statistics window: ``"10m"``, ``"3h"``, ``"1d"`` or ``"all"``.
            fresh: ask every worker now (1.5 s at most); a worker that does not answer in
                time (busy in user code) is shown with the stats from its last heartbeat.
                False: the last heartbeats only.

        Returns:
            The report.

        Raises:
            ClusterOperationError: no topology of that name.
        """
        return self.snapshot(name, window, fresh).report

    def metrics_snapshots(self) -> list[TopologySnapshot]:
        """Every topology's all-time report from its last heartbeats (no request to the
        workers): what the Prometheus endpoint serves.

        Returns:
            One snapshot per topology.
        """
        out = []
        for summary in self.topologies():
            try:  # a worker without stats counts as what it carries (``snapshot``)
                out.append(self.snapshot(summary["name"], "all", fresh=False, summary=summary))
            except (ClusterOperationError, KeyError):  # killed between the two reads
                continue
        return out

    def snapshot(
        self,
        name: str,
        window: str = "10m",
        fresh: bool = True,
        summary: dict[str, Any] | None = None,
        nimbus: dict[str, Any] | None = None,
    ) -> TopologySnapshot:
        """:meth:`stats` with the worker replies it was built from (``summary``: this
        topology's entry of :meth:`topologies`, and ``nimbus``: :meth:`nimbuses`, when the
        caller has them already — one poll of every topology reads each once).

        Args:
            name: the topology's name.
            window: as for :meth:`stats`.
            fresh: as for :meth:`stats`.
            summary: this topology's entry of :meth:`topologies`, if the caller has it.
            nimbus: what :meth:`nimbuses` returned, if the caller has it.

        Returns:
            The report and the replies.

        Raises:
            ClusterOperationError: no topology of that name.
        """
        topology_id = _summary_id(summary, name) or self.topology_id(name)
        record = self.zk.read_record(topology_id)
        assignment = self.zk.read_assignment(topology_id) or {"attempt": -1, "workers": 0}
        beats = self.zk.heartbeats(topology_id, attempt=assignment["attempt"])
        replies = {w: b["stats"] for w, b in beats.items() if "stats" in b}
        if fresh and record and record.get("status") in LIVE:
            try:
                fresh_replies = self._request(topology_id, name, "status", 1.5)
                replies.update({r["worker"]: r for r in fresh_replies})
            except ClusterOperationError:
                pass
        missing = set(range(int(assignment["workers"]))) - set(replies)
        if missing and record:  # dead or just relaunched: what it carries, never less
            carried = newest(self.zk.carried_stats(topology_id))
            replies |= stand_ins(assignment, record["components"], carried, missing, time.time())
        if summary is None or summary.get("id") != topology_id:
            [summary] = [t for t in self.topologies() if t["id"] == topology_id] or [{}]
        summary = {
            k: summary.get(k)
            for k in ("name", "id", "status", "uptime_secs", "workers", "workers_alive", "tasks")
        }
        driver = self.zk.driver(topology_id) or {}
        supervision = {int(w): info for w, info in (driver.get("workers") or {}).items()}
        ordered = [replies[w] for w in sorted(replies)]
        report = build_report(
            summary,
            record["components"] if record else {},
            ordered,
            beats,
            self.zk.errors(topology_id),
            window,
            supervision=supervision,
        ) | {"nimbus": nimbus if nimbus is not None else self.nimbuses()}
        # nodes this client ignored (not this user's identity's alone, or not a record of
        # ours): each is logged once; docs/SECURITY.md
        report["zookeeper_ignored"] = self.zk.ignored
        return TopologySnapshot(report, ordered)

    def nimbuses(self) -> dict[str, Any]:
        """The nimbuses in the election.

        Returns:
            ``{"leader": id or None, "standbys": [id, ...]}``.
        """
        contenders = [str(c) for c in self.zk.election("?").contenders()]
        return {"leader": contenders[0] if contenders else None, "standbys": contenders[1:]}

    def _still_there(self, name: str) -> None:
        """Raise :class:`ClusterOperationError` when ``name`` is no longer running."""
        self.topology_id(name)

    def wait_until_drained(self, name: str, timeout: float = 60.0) -> None:
        """Block until spouts stopped emitting and nothing is queued, pending or in flight.

        Args:
            name: the topology's name.
            timeout: seconds to wait at most.

        Raises:
            ClusterOperationError: no topology of that name, or ``timeout`` passed.
        """
        topology_id = self.topology_id(name)
        looking = self._looking(topology_id, name)
        try:
            wait_until_drained(
                lambda: self.worker_status(name),
                looking.exact,
                lambda: self._still_there(name),
                timeout,
                0.1,
                f"topology {name!r}",
                self.zk.read_record(topology_id)["conf"].get(
                    cfg.TOPOLOGY_DRAIN_QUIET_SECS, DRAIN_QUIET_SECS
                ),
                late=(ClusterOperationError,),
            )
        except TimeoutError as exc:
            raise ClusterOperationError(str(exc)) from None


#: mypy checks that Cluster offers every operation of :class:`ClusterOps`.
_OPS: type[ClusterOps] = Cluster


def _summary_id(summary: dict[str, Any] | None, name: str) -> str | None:
    """The id in ``summary`` (an entry of :meth:`Cluster.topologies`) when it is the live
    topology ``name``'s (saving the lookup by name, which reads every record)."""
    if summary is None or summary.get("name") != name or not summary.get("id"):
        return None
    return None if summary.get("status") == TopologyStatus.KILLED else str(summary["id"])


def _refuse_oversized(
    name: str, conf: dict[str, Any], topology: Topology, record: dict[str, Any]
) -> None:
    """Refuse (before anything is written) a record or an assignment over the znode limit."""
    for problem in (
        node_size_problem(f"the record of topology {name!r} (its conf)", json_bytes(record)),
        node_size_problem(
            f"the assignment of {name!r}",
            assignment_bytes(task_counts(topology, conf), conf[cfg.TOPOLOGY_WORKERS]),
        ),
    ):
        if problem is not None:
            raise ClusterOperationError(problem + "; submit a smaller conf or topology")


def _spout_rates(beats: Any, uptime: float) -> dict[str, float]:
    """Spout emitted / acked / failed per second over the last 10 minutes (or the uptime,
    when shorter), from the stats workers publish in their heartbeats (none: 0)."""
    totals = {"emitted": 0, "acked": 0, "failed": 0}
    for beat in beats:
        for task in (beat.get("stats") or {}).get("tasks", {}).values():
            if task.get("kind") == "spout":
                window = task["windows"]["600"]
                totals["emitted"] += sum(window["emitted"].values())
                totals["acked"] += window["acked"]
                totals["failed"] += window["failed"]
    seconds = min(600.0, max(uptime, 1.0))
    return {f"{key}_per_sec": round(value / seconds, 1) for key, value in totals.items()}
