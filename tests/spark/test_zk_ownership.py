"""Nodes found under the root on a real ZooKeeper (local identity, no credentials): a root
or fixed parent that is someone else's fails the connection in one line naming it and the
fix; what an older version left open is tightened where that is safe; a record others
could have written is ignored, counted and logged once, and replaced when sparkstorm
writes it (topology/deploy/zk/ownership.py)."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl, make_digest_acl

from topology import config as cfg
from topology.deploy.cluster.zookeeper_server import EmbeddedZooKeeper
from topology.deploy.zk.connection import ZooKeeperNotAuthorized
from topology.deploy.zk.local_identity import identity_path
from topology.deploy.zk.state import ZkState

pytestmark = [pytest.mark.spark, pytest.mark.timeout(60)]

OPEN = [make_acl("world", "anyone", all=True)]
READ = make_acl("world", "anyone", read=True)
RECORD = {"name": "old", "status": "ACTIVE", "conf": {"topology.workers": 1}, "components": {}}
ASSIGNMENT = {"attempt": 1, "workers": 1, "component_tasks": {}, "worker_tasks": [[]]}


@pytest.fixture
def conf(zookeeper: EmbeddedZooKeeper) -> dict[str, Any]:
    return cfg.resolve(
        {
            "storm.zookeeper.servers": ["127.0.0.1"],
            "storm.zookeeper.port": zookeeper.port,
            "storm.zookeeper.root": f"/test-{uuid.uuid4().hex[:12]}",
            "storm.zookeeper.connection.timeout.secs": 5,
        }
    )


@pytest.fixture
def anonymous(zookeeper: EmbeddedZooKeeper) -> Iterator[KazooClient]:
    client = KazooClient(hosts=f"127.0.0.1:{zookeeper.port}")
    client.start(10)
    yield client
    client.stop()
    client.close()


def _owner(conf: dict[str, Any]) -> ZkState:
    state = ZkState(conf)
    if state.owner_acl is None:
        pytest.skip(f"no local ZooKeeper identity here ({identity_path()})")
    return state


@pytest.mark.parametrize("whose", ["readable", "another identity's", "a parent"])
def test_a_root_or_parent_of_someone_else_fails_the_connection_naming_it_and_the_fix(
    conf: dict[str, Any], anonymous: KazooClient, whose: str
) -> None:
    root = conf[cfg.ZK_ROOT]
    if whose == "readable":  # everyone may read it, only ZooKeeper's anonymous "owner" change it
        anonymous.create(root, acl=[READ])
        at_fault = root
    elif whose == "another identity's":
        anonymous.create(root, acl=[make_digest_acl("someone-else", "pw", all=True)])
        at_fault = root
    else:  # an open root (an older version's) whose storms node someone else took
        anonymous.create(root, acl=OPEN)
        at_fault = f"{root}/storms"
        anonymous.create(at_fault, acl=[make_digest_acl("someone-else", "pw", all=True)])
    state = _owner(conf)
    with pytest.raises(ZooKeeperNotAuthorized) as failure:
        state.connect()
    message = str(failure.value)
    assert "\n" not in message and f"node {at_fault} " in message
    assert "set storm.zookeeper.root to a path of your own" in message


def test_the_root_itself_is_refused(conf: dict[str, Any]) -> None:
    with pytest.raises(ZooKeeperNotAuthorized, match="storm.zookeeper.root is /"):
        _owner({**conf, cfg.ZK_ROOT: "/"}).connect()


def test_nodes_planted_in_the_election_and_the_drivers_while_the_root_was_open_go(
    conf: dict[str, Any], anonymous: KazooClient
) -> None:
    """Someone who created the root open before the owner's first connection, and left a
    persistent lock in the election and a driver's claim, would keep every nimbus from
    leading and that topology's driver from starting: the connection that takes the root
    back deletes them."""
    root = conf[cfg.ZK_ROOT]
    anonymous.create(f"{root}/nimbus/leader/x__lock__0000000000", b"", acl=OPEN, makepath=True)
    anonymous.create(f"{root}/drivers/t-1", b"{}", acl=OPEN, makepath=True)
    state = _owner(conf)
    state.connect()
    try:
        assert state.client.get_children(f"{root}/nimbus/leader") == []
        assert state.leader() is None and state.drivers() == set()
        assert state.claim_driver("t-1", {"host": "h", "pid": 1})
        with pytest.raises(NoAuthError):
            anonymous.create(f"{root}/nimbus/leader/y__lock__0000000001", b"")
    finally:
        state.close()


def test_what_an_older_version_left_is_tightened_or_ignored_and_counted(
    conf: dict[str, Any], anonymous: KazooClient, caplog: Any
) -> None:
    state = _owner(conf)
    paths, tid = state.paths, "old-1-1"
    assert state.owner_acl is not None
    older = state.owner_acl + [READ]  # what earlier versions gave a record and its code
    # an older version's tree: every parent open, the record and code readable by all
    for path in paths.skeleton:
        anonymous.create(path, acl=OPEN)
    state.client.start(10)
    state.client.create(paths.code(tid), b"", acl=older)
    state.client.create(paths.code_chunk(tid, 0), b"code", acl=older)
    state.client.create(paths.storm(tid), json.dumps(RECORD).encode(), acl=older)
    anonymous.create(paths.assignment(tid), json.dumps(ASSIGNMENT).encode(), acl=OPEN)
    anonymous.create(f"{paths.workerbeats(tid)}/0", b"{}", acl=OPEN, makepath=True)
    anonymous.create(paths.storm("junk-1-1"), json.dumps(RECORD).encode(), acl=OPEN)
    anonymous.create(paths.storm("open-1-1"), json.dumps(RECORD).encode(), acl=OPEN)
    anonymous.create(paths.code_chunk("open-1-1", 0), b"evil", acl=OPEN, makepath=True)
    state.client.stop()
    try:
        state.connect()
        for path in paths.skeleton:  # the parents are this identity's alone now
            assert state.client.get_acls(path)[0] == state.owner_acl, path

        caplog.set_level(logging.WARNING, logger="topology.deploy.zk.state")
        for _ in range(3):  # polls: each node is named once
            assert state.read_record(tid) == RECORD  # tightened as it is read
            assert state.read_assignment(tid) is None
            assert state.read_record("junk-1-1") is None
        assert state.client.get_acls(paths.storm(tid))[0] == state.owner_acl
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 2 and all("writable by others" in line for line in lines)
        assert state.ignored == 2
        assert state.unowned(tid) is None  # its code was readable by others only: tightened
        assert "writable by others" in str(state.unowned("open-1-1"))

        assert state.ownership is not None
        tightened, left = state.ownership.tighten_tree()
        assert state.client.get_acls(paths.workerbeats(tid))[0] == state.owner_acl
        assert tightened >= 1
        assert paths.assignment(tid) in left and paths.storm("open-1-1") in left
        assert f"{paths.workerbeats(tid)}/0" in left  # a heartbeat others could have written
        assert "writable by others" in str(state.unowned("open-1-1"))  # never laundered

        state.write_assignment(tid, ASSIGNMENT)  # sparkstorm's write replaces the open node
        assert state.client.get_acls(paths.assignment(tid))[0] == state.owner_acl
        assert state.read_assignment(tid) == ASSIGNMENT
        assert state.ignored == 1  # the junk record only
    finally:
        state.close()


def test_without_a_secret_nobody_else_reads_or_changes_a_topology(
    conf: dict[str, Any], anonymous: KazooClient
) -> None:
    """Every node a topology's submission creates, parents included, is this user's
    identity's alone; a topology whose nodes others could write is refused."""
    state = _owner(conf).connect()
    try:
        record = {"name": "mine", "status": "SUBMITTED", "conf": {}, "components": {}}
        state.create_topology("mine-1-1", record, b"code")
        paths = state.paths
        assert state.unowned("mine-1-1") is None
        for path in (paths.code_chunk("mine-1-1", 0), paths.storm("mine-1-1"), paths.root):
            assert state.client.get_acls(path)[0] == state.owner_acl
        for path in (paths.code_chunk("mine-1-1", 0), paths.storm("mine-1-1"), paths.storms):
            with pytest.raises(NoAuthError):
                anonymous.get(path)
        # a topology an older sparkstorm without an identity wrote (open nodes) is not run
        state.client.create(paths.code_chunk("theirs-1-1", 0), b"evil", acl=OPEN, makepath=True)
        state.client.create(paths.storm("theirs-1-1"), json.dumps(record).encode(), acl=OPEN)
        problem = state.unowned("theirs-1-1")
        assert problem is not None and "writable by others" in problem
    finally:
        state.close()
