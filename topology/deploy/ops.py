"""``ClusterOps``: what both cluster front ends let a caller do with a topology.

:class:`~topology.deploy.local.cluster.LocalCluster` (worker processes on this machine) and
:class:`~topology.deploy.cluster.client.Cluster` (a client of the real cluster, through
ZooKeeper) implement it — mypy checks each against it where it is defined — so a test, a
tool or a CLI helper that only runs, watches and stops a topology is written once, for
either.  Each adds its own operations beside these (``LocalCluster.advance_time``,
``Cluster.rebalance``, ...), and a default value may differ between the two (a
LocalCluster kills at once; a Cluster waits up to the message timeout, as Storm does).

The contract, for every operation: ``name`` is the topology's name as submitted; an
unknown name, a refused request or a worker that does not answer in time raises a
:class:`~topology.errors.SparkstormError` (``ClusterError`` from LocalCluster,
``ClusterOperationError`` from Cluster) whose message names the topology; ``timeout`` is in
seconds of real time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from topology.spec import Topology
    from topology.stats.prometheus import TopologySnapshot


class ClusterOps(Protocol):
    """Submit, steer, observe and kill topologies (see the module docstring)."""

    def submit_topology(self, name: str, conf: dict[str, Any] | None, topology: Topology) -> str:
        """Start ``topology`` under ``name`` with ``conf`` over the cluster's own; return its
        id once every worker runs its tasks (a LocalCluster's id is the name).  Refused for
        a name already running or a worker that fails to start (with its error)."""
        ...

    def activate(self, name: str) -> None:
        """Resume calling ``next_tuple`` on every spout of ``name``."""
        ...

    def deactivate(self, name: str) -> None:
        """Stop calling ``next_tuple`` on the spouts of ``name``; bolts keep executing and
        trees in flight finish."""
        ...

    def kill_topology(self, name: str, wait_secs: float | None = ...) -> None:
        """Deactivate ``name``, wait while it has anything in flight — tuples buffered,
        trees pending, a checkpoint in progress or owing a spout its acks — for
        ``wait_secs`` at most (None: its message timeout), stop every worker; return once
        it is gone and its name is free."""
        ...

    def worker_status(self, name: str, timeout: float = ...) -> list[dict[str, Any]]:
        """Every worker's status reply (counters, queues, per-task stats), asked now."""
        ...

    def results(self, name: str, timeout: float = ...) -> dict[str, dict[int, Any]]:
        """``collect_results()`` of every task that defines it: component -> task ->
        result (what ``topology.testing`` reads)."""
        ...

    def errors(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """The last errors reported per component (``time``, ``task``, ``host``, ``text``),
        oldest first."""
        ...

    def stats(self, name: str, window: str = ...) -> dict[str, Any]:
        """The topology's status report over ``window`` (``10m``, ``3h``, ``1d``, ``all``;
        schema in docs/STATUS.md)."""
        ...

    def snapshot(self, name: str, window: str = ...) -> TopologySnapshot:
        """:meth:`stats` with the worker replies it was built from."""
        ...

    def metrics_snapshots(self) -> list[TopologySnapshot]:
        """Every running topology's all-time snapshot: what the Prometheus endpoint serves.
        A topology killed meanwhile is left out, never an error."""
        ...

    def wait_until_drained(self, name: str, timeout: float = ...) -> None:
        """Block until the spouts stopped emitting and no tuple is queued, pending or in
        flight (two identical looks at every worker's counters); raise after ``timeout``
        saying what it still waited for, or when a worker dies meanwhile."""
        ...

    def worker_logs(
        self,
        name: str,
        worker: int | None = ...,
        offsets: dict[int, int] | None = ...,
        component: str | None = ...,
        max_bytes: int | None = ...,
        timeout: float = ...,
        files: dict[int, int] | None = ...,
    ) -> list[dict[str, Any]]:
        """A chunk of each worker's log (or only ``worker``'s), read by the worker itself;
        ``offsets`` and ``files`` (from the last chunks) continue where they ended."""
        ...

    def set_log_level(
        self, name: str, level: str, revert_after: float | None = ..., timeout: float = ...
    ) -> list[dict[str, Any]]:
        """Set every worker's log level, back to ``topology.worker.log.level`` after
        ``revert_after`` seconds (None: it stays); each worker's reply."""
        ...
