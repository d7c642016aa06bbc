"""Issue 28 (papercut 7): ``status NAME`` with ZooKeeper down prints its one-line error
only, not two kazoo WARNING lines before it ("Connection dropped", "Failed connecting to
Zookeeper within the connection retry policy")."""

from __future__ import annotations

import logging
import socket

import pytest

from topology import config as cfg
from topology.deploy.zk.connection import ZkConnection, ZooKeeperUnavailable

pytestmark = pytest.mark.timeout(30)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connecting_to_a_zookeeper_that_is_down_logs_nothing_of_kazoo(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conf = cfg.resolve(
        {
            cfg.ZK_SERVERS: ["127.0.0.1"],
            cfg.ZK_PORT: _closed_port(),
            cfg.ZK_CONNECTION_TIMEOUT_SECS: 1.0,
        }
    )
    caplog.set_level(logging.DEBUG, logger="kazoo")
    with pytest.raises(ZooKeeperUnavailable, match="cannot reach ZooKeeper at 127.0.0.1:"):
        ZkConnection(conf).connect()
    kazoo = [
        r for r in caplog.records if r.name.startswith("kazoo") and r.levelno >= logging.WARNING
    ]
    assert kazoo == []
    # the filter is gone afterwards: a running client's later warnings are not hidden
    assert not logging.getLogger("kazoo.client").filters or all(
        type(f).__name__ != "_BelowError" for f in logging.getLogger("kazoo.client").filters
    )
