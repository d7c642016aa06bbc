"""The Prometheus endpoint of a ZooKeeper-recorded cluster (served by each nimbus)."""

from __future__ import annotations

from typing import Any

from topology.stats.prometheus import MetricsServer

from .client import Cluster


class ClusterMetrics:
    """Serves ``/metrics`` for every topology under the ZooKeeper root of ``conf``, from
    the statistics the workers publish in their heartbeats (a scrape asks no worker).

    It keeps a ZooKeeper session of its own; :meth:`close` ends it and the endpoint.
    """

    def __init__(self, conf: dict[str, Any], port: int, host: str = "127.0.0.1") -> None:
        self._cluster = Cluster(conf).connect()
        try:
            self._server = MetricsServer(self._cluster.metrics_snapshots, port, host)
        except BaseException:
            self._cluster.close()
            raise

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def port(self) -> int:
        return self._server.port

    def close(self) -> None:
        self._server.close()
        self._cluster.close()
