"""A :class:`Cluster` client as the web UI sees it (:class:`topology.ui.source.ClusterView`):
what ``sparkstorm ui`` and ``sparkstorm local --ui`` serve."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topology.stats.prometheus import TopologySnapshot

from .client import Cluster

if TYPE_CHECKING:
    from topology.ui.source import ClusterView, TopologyInfo


class ClusterClientView:
    """The topologies recorded in the ZooKeeper of a connected :class:`Cluster`."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    @property
    def ops(self) -> Cluster:
        return self._cluster

    def topology_names(self) -> list[str]:
        zk = self._cluster.zk
        names = []
        for topology_id in zk.topology_ids():
            record = zk.read_record(topology_id)
            if record is not None:
                names.append(str(record["name"]))
        return sorted(names)

    def describe(self, name: str) -> TopologyInfo:
        topology_id = self._cluster.topology_id(name)
        record = self._cluster.zk.read_record(topology_id) or {}
        return {
            "id": topology_id,
            "components": dict(record.get("components") or {}),
            "conf": dict(record.get("conf") or {}),
        }

    def nimbuses(self) -> dict[str, Any] | None:
        return self._cluster.nimbuses()

    def poll(self, name: str) -> TopologySnapshot:
        """The report from the workers' last heartbeats (published every
        ``topology.stats.interval.secs``): no request to the workers."""
        return self._cluster.snapshot(name, "10m", fresh=False)

    def rebalance(self, name: str, workers: int, wait_secs: float | None) -> None:
        self._cluster.rebalance(name, workers, wait_secs)


#: mypy checks that ClusterClientView is what the UI takes.
_VIEW: type[ClusterView] = ClusterClientView
