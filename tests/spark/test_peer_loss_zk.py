"""A cluster worker learns from ZooKeeper that a peer died or was replaced (real ZooKeeper,
no Spark): its heartbeat vanishing becomes a ``lost`` command (the worker fails its
pending trees at once), a new endpoint and data token a ``peers`` command; once the
attempt is stopping, a peer leaving is not a loss."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.spark.helpers import wait_for
from topology import config as cfg
from topology.deploy.zk.state import ZkState
from topology.deploy.zk.worker_client import ZkClusterClient
from topology.runtime.net.data_token import Peer, new_token, token_text

pytestmark = [pytest.mark.spark, pytest.mark.timeout(60)]


def _client(
    zk_conf: dict[str, Any], worker: int, endpoint: str, token: bytes | None = None
) -> ZkClusterClient:
    zk = ZkState(cfg.resolve({**zk_conf, cfg.ZK_SESSION_TIMEOUT_SECS: 4})).connect()
    client = ZkClusterClient(zk, "topo-1", worker, attempt=1, start_timeout=10)
    client.register(worker, endpoint, {"token": token_text(token or new_token())})
    return client


def test_a_peer_whose_session_ends_is_reported_lost_and_its_successor_as_new_peers(
    zk_conf: dict[str, Any],
) -> None:
    with ZkState(cfg.resolve(zk_conf)).connect() as setup:  # a live topology and attempt
        for path, data in (
            (setup.paths.storm("topo-1"), {"status": "ACTIVE"}),
            (setup.paths.assignment("topo-1"), {"attempt": 1, "workers": 0}),
        ):
            setup.client.create(path, json.dumps(data).encode(), makepath=True)
    first = new_token()
    peer = _client(zk_conf, 1, "tcp://127.0.0.1:5001", first)
    me = _client(zk_conf, 0, "tcp://127.0.0.1:5000")
    assert me._peers[1] == Peer("tcp://127.0.0.1:5001", first)
    commands: list[dict[str, Any]] = []

    def seen(kind: str) -> list[dict[str, Any]]:
        commands.extend(me.poll_commands())
        return [c for c in commands if c["cmd"] == kind]

    try:
        assert seen("lost") == [] and seen("peers") == []
        peer.close()  # its session ends: the ephemeral heartbeat goes with it
        assert wait_for(lambda: seen("lost"), 20, "the lost command") == [
            {"cmd": "lost", "worker": 1}
        ]
        successor = new_token()
        peer = _client(zk_conf, 1, "tcp://127.0.0.1:5002", successor)  # relaunched elsewhere
        [peers] = wait_for(lambda: seen("peers"), 20, "the peers command")
        assert peers["endpoints"]["1"] == "tcp://127.0.0.1:5002"
        assert peers["tokens"]["1"] == token_text(successor)  # together with its endpoint
        assert len(seen("lost")) == 1  # the relaunch is not a second loss

        # the attempt ends (kill, rebalance): peers leaving now are stopping, not lost
        with ZkState(cfg.resolve(zk_conf)).connect() as admin:
            admin.client.delete(admin.paths.assignment("topo-1"))
        wait_for(lambda: seen("stop"), 20, "the stop command")
        peer.close()
        wait_for(lambda: 1 not in me._peers, 20, "the peer's heartbeat to go")
        assert len(seen("lost")) == 1
    finally:
        peer.close()
        me.close()
