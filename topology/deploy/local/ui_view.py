"""A :class:`LocalCluster` as the web UI sees it (:class:`topology.ui.source.ClusterView`).

``LocalCluster(ui_port=...)`` serves the UI over it; so can a test or a notebook::

    from topology.ui.server import UiServer
    server = UiServer(LocalClusterView(cluster), port=0).start()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topology.spec import describe_components
from topology.stats.prometheus import TopologySnapshot
from topology.ui.source import PollRound

from .topology import ClusterError

if TYPE_CHECKING:
    from topology.ui.source import ClusterView, PollRound, TopologyInfo

    from .cluster import LocalCluster

#: Seconds the poller waits for a LocalCluster's workers to answer.
POLL_TIMEOUT_SECS = 2.0
#: Conf keys of a ZooKeeper, left out of the conf shown (a LocalCluster uses none).
ZOOKEEPER_KEYS = "storm.zookeeper."


class LocalClusterView:
    """The topologies of one :class:`LocalCluster` (its own methods for every action)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._cluster = cluster

    @property
    def ops(self) -> LocalCluster:
        return self._cluster

    def topology_names(self) -> list[str]:
        return self._cluster.topologies()

    def describe(self, name: str) -> TopologyInfo:
        running = self._cluster._get(name)  # same room: the running topology's own record
        return {
            "id": name,
            "components": describe_components(running.topology),
            # what its workers run with: no ZooKeeper keys (a LocalCluster uses none)
            "conf": {k: v for k, v in running.conf.items() if not k.startswith(ZOOKEEPER_KEYS)},
        }

    def nimbuses(self) -> dict[str, Any] | None:
        return None

    def poll_round(self) -> PollRound:
        """The topologies now; each poll asks its workers (as ``stats`` does)."""
        return PollRound(self.topology_names(), None, self._poll)

    def _poll(self, name: str) -> TopologySnapshot:
        return self._cluster.snapshot(name, "10m", timeout=POLL_TIMEOUT_SECS)

    def rebalance(
        self,
        name: str,
        workers: int | None,
        wait_secs: float | None,
        components: dict[str, int] | None = None,
    ) -> None:
        self._cluster._get(name)  # an unknown name says so first
        raise ClusterError(
            f"rebalance of {name!r}: a LocalCluster cannot rebalance (its workers are fixed "
            "at submit); kill the topology and submit it with another topology.workers"
        )


#: mypy checks that LocalClusterView is what the UI takes.
_VIEW: type[ClusterView] = LocalClusterView
