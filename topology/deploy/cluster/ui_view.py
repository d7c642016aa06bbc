"""A :class:`Cluster` client as the web UI sees it (:class:`topology.ui.source.ClusterView`):
what ``sparkstorm ui`` and ``sparkstorm local --ui`` serve.

Every call, the cluster's own operations included, turns a ZooKeeper that stopped
answering into :class:`~topology.deploy.zk.connection.ZooKeeperUnavailable` (an
:class:`~topology.errors.Unavailable`: the UI answers 503 and goes on), never kazoo's
own exceptions; the client reconnects meanwhile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from topology.stats.prometheus import TopologySnapshot
from topology.ui.source import PollRound

from .client import Cluster
from .effective_conf import effective_conf

if TYPE_CHECKING:
    from topology.ui.source import ClusterView, PollRound, TopologyInfo, UiOps

F = TypeVar("F", bound=Callable[..., Any])


class _ReachableOps:
    """``cluster``'s operations, each raising ``ZooKeeperUnavailable`` instead of kazoo's
    connection errors (:meth:`ZkConnection.reachable`)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._cluster, name)
        if not callable(attr):
            return attr
        zk = self._cluster.zk

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            with zk.reachable():
                return attr(*args, **kwargs)

        return call


def _reachable(method: F) -> F:
    """A :class:`ClusterClientView` method raising ``ZooKeeperUnavailable`` instead of
    kazoo's connection errors."""

    @functools.wraps(method)
    def call(self: ClusterClientView, *args: Any, **kwargs: Any) -> Any:
        with self._cluster.zk.reachable():
            return method(self, *args, **kwargs)

    return cast(F, call)


class ClusterClientView:
    """The topologies recorded in the ZooKeeper of a connected :class:`Cluster`."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._ops = _ReachableOps(cluster)

    @property
    def ops(self) -> UiOps:
        return self._ops

    @_reachable
    def topology_names(self) -> list[str]:
        zk = self._cluster.zk
        names = []
        for topology_id in zk.topology_ids():
            record = zk.read_record(topology_id)
            if record is not None:
                names.append(str(record["name"]))
        return sorted(names)

    @_reachable
    def describe(self, name: str) -> TopologyInfo:
        topology_id = self._cluster.topology_id(name)
        zk = self._cluster.zk
        record = zk.read_record(topology_id) or {}
        conf = effective_conf(record.get("conf") or {}, zk.driver(topology_id), self._cluster.conf)
        return {
            "id": topology_id,
            "components": dict(record.get("components") or {}),
            "conf": conf,
        }

    @_reachable
    def nimbuses(self) -> dict[str, Any] | None:
        return self._cluster.nimbuses()

    def poll_round(self) -> PollRound:
        """One poll: :meth:`Cluster.topologies` and the nimbuses read once for all the
        topologies; each topology's poll asks its workers now, as ``sparkstorm status``
        does (``fresh``: a worker that does not answer in 1.5 s is shown from its last
        heartbeat), reusing that summary and that election."""
        zk = self._cluster.zk
        with zk.reachable():
            summaries = {str(t["name"]): t for t in self._cluster.topologies()}
            nimbus = self._cluster.nimbuses()

        def poll(name: str) -> TopologySnapshot:
            with zk.reachable():
                return self._cluster.snapshot(
                    name, "10m", fresh=True, summary=summaries.get(name), nimbus=nimbus
                )

        return PollRound(sorted(summaries), nimbus, poll)

    @_reachable
    def rebalance(
        self,
        name: str,
        workers: int | None,
        wait_secs: float | None,
        components: dict[str, int] | None = None,
    ) -> None:
        self._cluster.rebalance(name, workers, wait_secs, components=components)


#: mypy checks that ClusterClientView is what the UI takes.
_VIEW: type[ClusterView] = ClusterClientView
